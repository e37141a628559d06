//! `warden status --watch`: the daemon, every server (state, pid, uptime,
//! restarts, tools, calls, last error) and whatever waits for a person
//! (approvals, servers' questions), redrawn every second until Ctrl-C.
//! On a terminal the screen is redrawn in place; otherwise each refresh
//! is a block of plain lines with the time, for a log.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{json, Value};
use warden_protocol::ServerReport;

use super::remote::connect;
use crate::cli::Common;
use crate::render;

/// How often the view is refreshed.
const REFRESH: Duration = Duration::from_secs(1);

/// A `status` answer.
#[derive(Debug, Deserialize)]
struct Status {
    daemon: Value,
    servers: Vec<ServerReport>,
}

pub(super) async fn watch(common: &Common, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    let terminal = std::io::stdout().is_terminal();
    // Listening from here on, for the whole loop: a Ctrl-C that comes while
    // a frame is fetched or printed is not lost (a listener made afresh
    // at each wait missed those, and the handler kept SIGINT from ending
    // the process).
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    loop {
        let frame = async {
            let status: Status = client.request_as(json!({"op": "status"})).await?;
            let pending: Value = client.request_as(json!({"op": "pending"})).await?;
            anyhow::Ok((status, pending))
        };
        let frame = tokio::select! {
            frame = frame => frame,
            _ = interrupt.recv() => return Ok(ExitCode::SUCCESS),
        };
        let (status, pending) = match frame {
            Ok(frame) => frame,
            Err(error) => {
                eprintln!("the daemon stopped answering ({error}); `warden status` starts it again");
                return Ok(ExitCode::FAILURE);
            }
        };
        let mut text = render::daemon_lines(&status.daemon);
        text += &render::status_table(&status.servers);
        text += &render::approvals(&pending);
        if terminal {
            // Home, clear: the view replaces itself.
            print!("\x1b[H\x1b[2J{text}\nrefreshing every second; Ctrl-C to stop\n");
        } else {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0);
            println!("--- at {now} (unix time)\n{text}");
        }
        tokio::select! {
            _ = tokio::time::sleep(REFRESH) => {}
            _ = interrupt.recv() => return Ok(ExitCode::SUCCESS),
        }
    }
}
