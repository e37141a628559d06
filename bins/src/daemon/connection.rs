//! One client connection: lines in, answers out, in order.
//!
//! The reader takes one request line at a time. Requests are answered
//! concurrently — a slow call does not hold up a `ping` behind it on
//! another connection, nor on this one — but answers are written in the
//! order the requests came, so a pipelining client can match them without
//! ids: each request gets a place in an ordered queue (a oneshot receiver)
//! and the writer waits on the places one after another. The queue is
//! bounded, which bounds how far a client can run ahead of its answers.
//!
//! What a bad client cannot do:
//!
//! - skip the token: a wrong or missing token is answered `unauthorized`,
//!   and the connection is closed;
//! - break the connection with bad JSON, an unknown op or a wrong field
//!   type: each gets its structured error and the next line is read;
//! - make the daemon buffer without bound: a line over
//!   [`MAX_REQUEST_BYTES`] is answered `too_large` as soon as the limit is
//!   passed, the rest of it is read and thrown away (briefly, so the answer
//!   is not lost to a TCP reset), and the connection is closed;
//! - disturb other calls by leaving: calls it started run to the end (their
//!   effects happen either way; stopping them halfway would be worse), and
//!   their answers are dropped.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use warden_protocol::{BridgeError, BridgeErrorCode as Code, BridgeRequestLine, BridgeResponseLine, MAX_REQUEST_BYTES};

use super::ops::Ops;
use super::token;

/// How many requests one connection may have unanswered.
const PIPELINE_DEPTH: usize = 256;

/// How long the rest of an oversized line is read and discarded before the
/// connection is closed.
const DISCARD_LIMIT: Duration = Duration::from_secs(2);

/// One answer line, and what happens after it is written.
#[derive(Debug)]
struct Answer {
    line: String,
    /// Close the connection after this answer.
    close: bool,
    /// Stop the daemon after this answer.
    then_shutdown: bool,
}

impl Answer {
    fn error(id: Option<&Value>, error: &BridgeError) -> Answer {
        let line = BridgeResponseLine { ok: false, id, result: None, error: Some(error) }.to_line();
        Answer { line, close: false, then_shutdown: false }
    }
}

/// Serves one connection until the client closes it (or breaks a rule).
pub(crate) async fn serve(stream: TcpStream, ops: Arc<Ops>) {
    let _ = stream.set_nodelay(true);
    let (read, write) = stream.into_split();
    let (places, queue) = mpsc::channel(PIPELINE_DEPTH);
    let writer = tokio::spawn(write_answers(write, queue, Arc::clone(&ops)));
    let mut reader = BufReader::new(read);
    let mut requests = JoinSet::new();
    loop {
        let line = match read_line(&mut reader, MAX_REQUEST_BYTES).await {
            Ok(Line::Text(line)) => line,
            Ok(Line::TooLarge) => {
                let error = BridgeError::new(
                    Code::TOO_LARGE,
                    format!("the request is longer than {MAX_REQUEST_BYTES} bytes; the connection is closed"),
                );
                let answer = Answer { close: true, ..Answer::error(None, &error) };
                let (place, answered) = oneshot::channel();
                let _ = place.send(answer);
                if places.send(answered).await.is_ok() {
                    let _ = tokio::time::timeout(DISCARD_LIMIT, discard_line(&mut reader)).await;
                }
                break;
            }
            Ok(Line::NotUtf8) => {
                let error = BridgeError::new(Code::PARSE_ERROR, "the request is not UTF-8 text, so not JSON");
                let (place, answered) = oneshot::channel();
                let _ = place.send(Answer::error(None, &error));
                if places.send(answered).await.is_err() {
                    break;
                }
                continue;
            }
            Ok(Line::End) | Err(_) => break,
        };
        // Keep the set small on a long-lived connection.
        while requests.try_join_next().is_some() {}
        let (place, answered) = oneshot::channel();
        if places.send(answered).await.is_err() {
            break; // the writer has stopped: the client is gone
        }
        match prepare(&ops, &line) {
            Prepared::Answer(answer) => {
                let close = answer.close;
                let _ = place.send(answer);
                if close {
                    break;
                }
            }
            Prepared::Run { request, id } => {
                let ops = Arc::clone(&ops);
                requests.spawn(async move {
                    let outcome = ops.run(request).await;
                    let (result, error) = match &outcome.result {
                        Ok(result) => (Some(&**result), None),
                        Err(error) => (None, Some(error)),
                    };
                    let line = BridgeResponseLine { ok: error.is_none(), id: id.as_ref(), result, error }.to_line();
                    let _ = place.send(Answer { line, close: false, then_shutdown: outcome.then_shutdown });
                });
            }
        }
    }
    drop(places);
    // Calls already started finish even if the client has left.
    while requests.join_next().await.is_some() {}
    let _ = writer.await;
}

enum Prepared {
    Answer(Answer),
    Run { request: warden_protocol::BridgeRequest, id: Option<Value> },
}

/// Everything that can be answered without waiting: envelope, token, op.
fn prepare(ops: &Ops, line: &str) -> Prepared {
    let envelope = match BridgeRequestLine::parse(line) {
        Ok(envelope) => envelope,
        Err((id, error)) => return Prepared::Answer(Answer::error(id.as_ref(), &error)),
    };
    if !token::matches(envelope.token.as_deref(), &ops.lockfile.token) {
        let error = BridgeError::new(
            Code::UNAUTHORIZED,
            "missing or wrong `token`; it is in the daemon's lockfile (daemon.json in Warden's state directory)",
        );
        tracing::warn!("refused a request without the right token");
        return Prepared::Answer(Answer { close: true, ..Answer::error(envelope.id.as_ref(), &error) });
    }
    ops.activity.touch();
    let id = envelope.id.clone();
    match envelope.into_request() {
        Ok(request) => Prepared::Run { request, id },
        Err(error) => Prepared::Answer(Answer::error(id.as_ref(), &error)),
    }
}

/// Writes the answers in request order.
async fn write_answers(mut write: OwnedWriteHalf, mut queue: mpsc::Receiver<oneshot::Receiver<Answer>>, ops: Arc<Ops>) {
    while let Some(answered) = queue.recv().await {
        // A request task that panicked leaves its place empty: skip it
        // rather than hang the connection.
        let Ok(answer) = answered.await else { continue };
        if write.write_all(answer.line.as_bytes()).await.is_err() {
            return;
        }
        if answer.then_shutdown {
            let _ = write.flush().await;
            ops.shutdown.trigger("asked to shut down (the `shutdown` op)");
        }
        if answer.close {
            let _ = write.shutdown().await;
            return;
        }
    }
}

/// One read from the stream.
enum Line {
    Text(String),
    /// Longer than the limit; the reader stopped inside it.
    TooLarge,
    /// A whole line that is not UTF-8 (so not JSON either).
    NotUtf8,
    End,
}

/// Reads up to the next newline, giving up as soon as the line passes `max`
/// bytes. Blank lines are skipped; a last line without a newline counts.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.iter().all(u8::is_ascii_whitespace) { Line::End } else { text(line) });
        }
        let (chunk, newline) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        if line.len() + chunk.len() > max {
            return Ok(Line::TooLarge);
        }
        line.extend_from_slice(chunk);
        let consumed = chunk.len() + usize::from(newline);
        reader.consume(consumed);
        if newline {
            if line.iter().all(u8::is_ascii_whitespace) {
                line.clear();
                continue;
            }
            return Ok(text(line));
        }
    }
}

fn text(line: Vec<u8>) -> Line {
    match String::from_utf8(line) {
        Ok(line) => Line::Text(line),
        Err(_) => Line::NotUtf8,
    }
}

/// Reads and drops bytes up to the next newline (or the end).
async fn discard_line<R: AsyncBufRead + Unpin>(reader: &mut R) {
    loop {
        let Ok(available) = reader.fill_buf().await else { return };
        if available.is_empty() {
            return;
        }
        let (consumed, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        reader.consume(consumed);
        if done {
            return;
        }
    }
}
