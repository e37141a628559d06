//! VS Code's `${input:ID}`, asked for at the terminal.
//!
//! VS Code prompts for an `inputs` entry when a server needs it; Warden
//! reads `${input:ID}` from the environment variable `ID` (upper snake
//! case). When a command that loads the config runs at a terminal and
//! such a variable is unset, the person is asked once, here, before
//! anything starts, and the answer is set as that variable in this
//! process: so the config loads, and a daemon this command starts inherits
//! it (the daemon never asks: it has no terminal). Each question says
//! which variable skips it next time. Elsewhere (a script, a service)
//! nothing is asked, and the load error names the variable to set.
//!
//! A `password` input is typed without echo; Ctrl-C at that prompt puts
//! the terminal back before the process ends.

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::OnceLock;

use super::ask::read_line;
use crate::cli::{Cli, Command, ConfigBranch, ConfigCommand};

/// Asks for the unset inputs of the config `cli`'s command loads. Runs
/// before the async runtime, while this is the process's only thread (so
/// setting a variable cannot race with a reader).
pub(crate) fn ask_before_start(cli: &Cli) {
    let Some(config) = config_loaded_by(&cli.command) else { return };
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return;
    }
    let Some(path) = warden_config::config_file(config) else { return };
    for input in warden_config::unset_inputs(&path, &|name| std::env::var(name).ok()) {
        let about = input.description.as_deref().map(|about| format!(" ({about})")).unwrap_or_default();
        eprintln!("{} asks for input '{}'{about}", path.display(), input.id);
        let prompt = format!("  value (or set ${} to skip this question): ", input.variable);
        let Some(value) = (if input.password { read_hidden(&prompt) } else { read_line(&prompt) }) else { return };
        if value.is_empty() {
            continue; // The load says which variable is missing.
        }
        // SAFETY (in spirit; `set_var` is safe in this edition): no other
        // thread exists yet, so none reads the environment meanwhile.
        std::env::set_var(&input.variable, value);
        eprintln!("  kept as ${} for this command and any daemon it starts", input.variable);
    }
}

/// The `--config` of a command that loads the config here, or `None` for
/// one that does not (and so needs no inputs).
fn config_loaded_by(command: &Command) -> Option<Option<&Path>> {
    match command {
        Command::Tools { common, .. }
        | Command::Call { common, .. }
        | Command::Schema { common, .. }
        | Command::Find { common, .. }
        | Command::Status { common, .. }
        | Command::Login { common, .. }
        | Command::Logout { common, .. } => Some(common.config.as_deref()),
        Command::Serve { config, .. }
        | Command::Config(ConfigBranch::Config { command: ConfigCommand::Check { config, .. } }) => {
            Some(config.as_deref())
        }
        _ => None,
    }
}

/// The terminal's settings while echo is off, for the Ctrl-C handler.
static SAVED: OnceLock<libc::termios> = OnceLock::new();

/// [`read_line`] with echo off.
fn read_hidden(prompt: &str) -> Option<String> {
    // SAFETY: tcgetattr fills the struct; the handler only restores it
    // (tcsetattr and _exit are async-signal-safe).
    unsafe {
        let mut settings: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut settings) != 0 {
            return read_line(prompt);
        }
        let saved = *SAVED.get_or_init(|| settings);
        extern "C" fn restore_and_exit(_: libc::c_int) {
            if let Some(saved) = SAVED.get() {
                unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
            }
            unsafe { libc::_exit(130) };
        }
        let previous = libc::signal(libc::SIGINT, restore_and_exit as *const () as libc::sighandler_t);
        settings.c_lflag &= !libc::ECHO;
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &settings);
        let line = read_line(prompt);
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved);
        libc::signal(libc::SIGINT, previous);
        eprintln!();
        line
    }
}
