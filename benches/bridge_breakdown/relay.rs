//! The relay floor: the cheapest process that does what the daemon does
//! between its clients and a server — many connections, one server, each
//! answer back to the connection that asked.
//!
//! Each request line is decoded, given a relay-wide id and written to the
//! one test server; the task reading the server's answers decodes each,
//! puts the caller's id back and writes it to the caller's connection
//! itself (no task in between). That is what any multiplexing process
//! must do — read a line, learn its id, write a line, each way — and
//! nothing else: no token, no policy, no ordering, no audit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

type Writer = Arc<tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// The one server all connections share, and who waits for what.
pub(super) struct Relay {
    stdin: tokio::sync::Mutex<ChildStdin>,
    /// Relay-wide id → the connection that asked, and its own id.
    waiting: Mutex<HashMap<u64, (Writer, Value)>>,
    next_id: AtomicU64,
}

impl Relay {
    /// A relay over an initialized server's pipes; its answers are read
    /// and routed by a task of its own.
    pub(super) fn start(stdin: ChildStdin, stdout: BufReader<ChildStdout>) -> Arc<Relay> {
        let relay = Arc::new(Relay {
            stdin: tokio::sync::Mutex::new(stdin),
            waiting: Mutex::default(),
            next_id: AtomicU64::new(1),
        });
        tokio::spawn(Arc::clone(&relay).route_answers(stdout));
        relay
    }

    /// Serves one connection (TCP or a Unix socket) until it closes.
    pub(super) async fn serve<S: AsyncRead + AsyncWrite + Send + 'static>(self: Arc<Relay>, stream: S) {
        let (read, write) = tokio::io::split(stream);
        let write: Writer = Arc::new(tokio::sync::Mutex::new(Box::new(write)));
        let mut lines = BufReader::new(read);
        let mut line = String::new();
        while lines.read_line(&mut line).await.is_ok_and(|n| n > 0) {
            let Ok(mut request) = serde_json::from_str::<Value>(&line) else { return };
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            let theirs = std::mem::replace(&mut request["id"], Value::from(id));
            self.waiting.lock().expect("never poisoned").insert(id, (Arc::clone(&write), theirs));
            let mut out = serde_json::to_vec(&request).expect("a JSON value serialises");
            out.push(b'\n');
            if self.stdin.lock().await.write_all(&out).await.is_err() {
                return;
            }
            line.clear();
        }
    }

    /// Reads the server's answers and writes each to its connection.
    async fn route_answers(self: Arc<Relay>, mut stdout: BufReader<ChildStdout>) {
        let mut line = String::new();
        while stdout.read_line(&mut line).await.is_ok_and(|n| n > 0) {
            if let Ok(mut answer) = serde_json::from_str::<Value>(&line) {
                let asked =
                    answer["id"].as_u64().and_then(|id| self.waiting.lock().expect("never poisoned").remove(&id));
                if let Some((write, theirs)) = asked {
                    answer["id"] = theirs;
                    let mut out = serde_json::to_vec(&answer).expect("a JSON value serialises");
                    out.push(b'\n');
                    let _ = write.lock().await.write_all(&out).await;
                }
            }
            line.clear();
        }
    }
}
