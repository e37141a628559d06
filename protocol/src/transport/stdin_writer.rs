//! Writing messages to a child's stdin without a thread hand-off per call.
//!
//! The obvious design — queue every message for a writer task — costs a
//! task wake-up per message, and on a multi-thread runtime that wake-up
//! usually lands on the other worker: one more context switch on every
//! call's path (`benches/call_latency.rs` measured three per call where a
//! bare client has one). So [`StdinOutbound::send`] writes the line straight
//! to the pipe when nothing is queued: the pipe is non-blocking and a line
//! usually fits. Only what does not fit — a full pipe, a huge message —
//! goes to the writer task, and from then on everything queues behind it
//! until it has caught up, so lines never interleave or reorder.
//!
//! A message sent while others are under way ([`Outbound::send_json_in_company`]:
//! a call while other calls wait for their answers) is queued for the
//! writer instead. Under load that is the cheaper way: the server actor
//! handles a burst of calls before the writer runs, so the burst goes out
//! in one write and the server reads it in one read (`call_latency`, 32
//! callers: Warden's `write`s per call, wake-ups included, fell from 1.2
//! to 0.5, the test server's `read`s from 0.29 to 0.13), and a lone call
//! still pays no hand-off.
//!
//! The raw descriptor is written only under the lock, and only while the
//! writer has not closed it: the writer marks the state closed, under the
//! same lock, before it drops stdin.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::AsyncWriteExt as _;
use tokio::process::ChildStdin;
use tokio::sync::{mpsc, oneshot};

use super::{Outbound, TransportError};
use crate::jsonrpc::Message;

/// What the sending side and the writer task share.
#[derive(Debug)]
struct WriteState {
    /// False once the writer has stopped and stdin is (about to be) closed.
    open: bool,
    /// Buffers handed to the writer and not yet fully written.
    queued: usize,
}

/// The sending half: writes directly when it can, queues otherwise.
pub(crate) struct StdinOutbound {
    fd: RawFd,
    state: Arc<Mutex<WriteState>>,
    queue: mpsc::UnboundedSender<Vec<u8>>,
}

/// Starts the writer task for `stdin`; it runs until `stop` fires, the
/// sending half is dropped, or a write fails (its result says why).
pub(crate) fn spawn(
    stdin: ChildStdin,
    stop: oneshot::Receiver<()>,
) -> (StdinOutbound, tokio::task::JoinHandle<Option<String>>) {
    let state = Arc::new(Mutex::new(WriteState { open: true, queued: 0 }));
    let (queue, queued) = mpsc::unbounded_channel();
    let outbound = StdinOutbound { fd: stdin.as_raw_fd(), state: state.clone(), queue };
    let writer = tokio::spawn(write_queued(stdin, queued, stop, state));
    (outbound, writer)
}

fn lock(state: &Mutex<WriteState>) -> MutexGuard<'_, WriteState> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Outbound for StdinOutbound {
    fn send(&self, message: Message) -> Result<(), TransportError> {
        self.send_json(serde_json::to_vec(&message).expect("a JSON-RPC message always serialises"))
    }

    fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError> {
        self.send_line(json, Delivery::AtOnce)
    }

    /// Always queued: the writer task takes everything queued by the time
    /// it runs, so a burst of calls reaches the server in a few writes
    /// rather than one each, and the server reads it in a few reads.
    fn send_json_in_company(&self, json: Vec<u8>) -> Result<(), TransportError> {
        self.send_line(json, Delivery::Queued)
    }
}

/// How a line goes to the pipe.
#[derive(PartialEq)]
enum Delivery {
    /// Written now when nothing is queued before it.
    AtOnce,
    /// Handed to the writer task.
    Queued,
}

impl StdinOutbound {
    fn send_line(&self, json: Vec<u8>, how: Delivery) -> Result<(), TransportError> {
        let mut line = json;
        line.push(b'\n');
        let mut state = lock(&self.state);
        if !state.open {
            return Err(TransportError::Closed);
        }
        if how == Delivery::AtOnce && state.queued == 0 {
            let written = write_now(self.fd, &line);
            if written == line.len() {
                return Ok(());
            }
            line.drain(..written);
        }
        // Pushed under the lock, so queued lines keep the order of `send`s.
        state.queued += 1;
        self.queue.send(line).map_err(|_| TransportError::Closed)
    }
}

/// Writes as much of `bytes` as the pipe takes right now, without waiting.
/// Errors (a full pipe, a dead reader) write nothing more; the writer task
/// then waits for room or reports the error.
fn write_now(fd: RawFd, bytes: &[u8]) -> usize {
    let mut written = 0;
    while written < bytes.len() {
        let rest = &bytes[written..];
        // SAFETY: `fd` is open (checked under the lock, which the writer
        // takes before closing it) and `rest` is valid for `rest.len()` bytes.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n > 0 {
            written += n as usize;
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            break;
        }
    }
    written
}

async fn write_queued(
    mut stdin: ChildStdin,
    mut queued: mpsc::UnboundedReceiver<Vec<u8>>,
    mut stop: oneshot::Receiver<()>,
    state: Arc<Mutex<WriteState>>,
) -> Option<String> {
    let mut failure = None;
    loop {
        let first = tokio::select! {
            biased;
            _ = &mut stop => break,
            buffer = queued.recv() => match buffer {
                Some(buffer) => buffer,
                None => break,
            },
        };
        // Take everything already waiting and write it in one go.
        let mut batch = first;
        let mut count = 1;
        while let Ok(more) = queued.try_recv() {
            batch.extend_from_slice(&more);
            count += 1;
        }
        if let Err(error) = stdin.write_all(&batch).await {
            failure = Some(format!("writing to the server's stdin failed: {error}"));
            break;
        }
        lock(&state).queued -= count;
    }
    lock(&state).open = false;
    if failure.is_none() {
        let _ = stdin.shutdown().await;
    }
    failure
}

#[cfg(test)]
mod tests;
