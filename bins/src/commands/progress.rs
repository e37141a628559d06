//! What a command shows while the servers start: nothing when they are
//! quick, else one line per server on stderr.
//!
//! A command that needs the servers waits until each one runs or has
//! failed. A server that crashes on start is retried with backoff, and a
//! remote one may take seconds to answer; a silent wait would look like a
//! hang. After [`PATIENCE`]:
//!
//! - on a terminal, one live line per server (starting → running with its
//!   tool count, restarting with the reason, failed with its error),
//!   redrawn in place, left on screen in their final state;
//! - otherwise (a script, a log), a plain line whenever a server's state
//!   changes, and again every [`REPEAT`] while one stays on its way.
//!
//! Both say how to end the wait (Ctrl-C). Either way stdout stays clean.

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use warden_protocol::ServerReport;

/// How long the servers get before the wait is shown (under the issue's
/// "says so within a second").
const PATIENCE: Duration = Duration::from_millis(700);

/// How often a plain log repeats a server still on its way.
const REPEAT: Duration = Duration::from_secs(10);

/// The startup display of one command.
pub(super) struct StartupProgress {
    began: Instant,
    terminal: bool,
    /// Terminal: how many lines the last drawing took (to redraw over).
    drawn: usize,
    /// Plain: the last line said of each server, and when.
    said: HashMap<String, (String, Instant)>,
}

impl StartupProgress {
    /// Starts the clock; live lines when stderr is a terminal.
    pub(super) fn new() -> StartupProgress {
        StartupProgress::with(std::io::stderr().is_terminal())
    }

    fn with(terminal: bool) -> StartupProgress {
        StartupProgress { began: Instant::now(), terminal, drawn: 0, said: HashMap::new() }
    }

    /// The servers as they are now, while some are still on their way.
    pub(super) fn observe(&mut self, servers: &[ServerReport]) {
        let text = self.render(servers, false);
        eprint!("{text}");
        let _ = std::io::stderr().flush();
    }

    /// Every server has settled: the final lines, if the wait was shown.
    pub(super) fn finish(&mut self, servers: &[ServerReport]) {
        if self.drawn > 0 || !self.said.is_empty() {
            eprint!("{}", self.render(servers, true));
        }
    }

    /// What to write to stderr for this view of the servers.
    fn render(&mut self, servers: &[ServerReport], done: bool) -> String {
        let waited = self.began.elapsed();
        if !done && waited < PATIENCE {
            return String::new();
        }
        if self.terminal {
            // Back up over the last drawing, if there was one.
            let mut text = if self.drawn > 0 { format!("\x1b[{}A", self.drawn) } else { String::new() };
            let width = terminal_width();
            let waiting = servers.iter().filter(|server| on_its_way(server)).count();
            let header = if done {
                format!("servers started in {:.1} s", waited.as_secs_f64())
            } else {
                format!("waiting for {waiting} of {} servers to start (Ctrl-C stops waiting)", servers.len())
            };
            for line in std::iter::once(header).chain(servers.iter().map(|server| server_line(server, waited))) {
                text += &format!("\r\x1b[2K{}\n", fit(&line, width));
            }
            self.drawn = servers.len() + 1;
            return text;
        }
        let mut text = String::new();
        let now = Instant::now();
        for server in servers {
            let line = server_line(server, waited);
            let state = plain_state(server);
            // A server that was quick is not mentioned; one that was said
            // to be on its way is followed to its end.
            let say = match self.said.get(&server.name) {
                None => on_its_way(server),
                Some((said, at)) => *said != state || (on_its_way(server) && now.duration_since(*at) >= REPEAT),
            };
            if say {
                text += &format!("warden: {}\n", line.trim_start());
                self.said.insert(server.name.clone(), (state, now));
            }
        }
        if !done && !text.is_empty() {
            text += "warden: (Ctrl-C stops waiting)\n";
        }
        text
    }
}

/// Not yet running nor failed for good.
fn on_its_way(server: &ServerReport) -> bool {
    matches!(&*server.state, "starting" | "restarting")
}

/// What a plain log compares to know a server's state changed (the
/// detail without its timings, which change every poll).
fn plain_state(server: &ServerReport) -> String {
    format!("{}:{}", server.state, server.error.as_deref().unwrap_or_default())
}

/// One server's line: a mark, its name, its state in words.
fn server_line(server: &ServerReport, waited: Duration) -> String {
    let (mark, words) = match &*server.state {
        "running" => ("✓", format!("running, {} tool{}", server.tools, if server.tools == 1 { "" } else { "s" })),
        "starting" => ("…", format!("starting ({:.0} s)", waited.as_secs_f64())),
        "restarting" => ("↻", server.detail.clone()),
        "needs_login" => ("!", format!("{} — run `warden login {}`", server.detail, server.name)),
        _ => ("✗", server.detail.clone()),
    };
    format!("  {mark} {:<16} {words}", server.name)
}

/// At most `width` characters, so a long error never wraps and breaks the
/// redraw.
fn fit(line: &str, width: usize) -> String {
    crate::render::cut(line, width.saturating_sub(1))
}

/// The terminal's width in columns (80 when it cannot be asked).
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ writes one winsize into the struct given.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let asked = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) };
    if asked == 0 && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        80
    }
}

#[cfg(test)]
mod tests;
