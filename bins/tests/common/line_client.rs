//! A line client of a stdio MCP server (`warden mcp`, or any other):
//! lines written to its stdin, its stdout read on a thread so a wait for
//! an answer is bounded (30 s) instead of hanging the suite.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::Home;

/// A `warden mcp` child and its stdout lines.
pub(crate) struct LineClient {
    pub(crate) child: std::process::Child,
    lines: mpsc::Receiver<Value>,
}

impl LineClient {
    pub(crate) fn start(home: &Home, args: &[&str]) -> LineClient {
        let mut command = home.command(args);
        command.arg("--config").arg(&home.config).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        LineClient::spawn(command)
    }

    pub(crate) fn spawn(mut command: Command) -> LineClient {
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not MCP ({e}): {line}"));
                if sender.send(value).is_err() {
                    return;
                }
            }
        });
        LineClient { child, lines }
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message for which `wanted` holds (others are skipped).
    pub(crate) fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let message = self.lines.recv_timeout(Duration::from_secs(30)).expect("an answer within 30 s");
            if wanted(&message) {
                return message;
            }
        }
    }

    pub(crate) fn answer(&mut self, id: i64) -> Value {
        self.until(|message| message["id"] == id)
    }
}
