//! A front session over newline-delimited JSON: MCP's stdio transport.
//!
//! It serves `warden mcp --no-daemon` on stdin/stdout, and a bridge
//! connection the `mcp` op upgraded (which is how `warden mcp` reaches the
//! daemon: it copies its stdin and stdout to that connection, and this code
//! in the daemon is the server). One reader, one writer task, a request
//! task per request: a slow call never holds up the next line.
//!
//! Bad input never ends the session: a line that is not JSON is answered
//! with a parse error (id null), a line over the limit with an error naming
//! the limit (and the rest of it skipped). When the input ends, the session
//! closes: calls still running are cancelled upstream, and the answers
//! already made are written before the writer stops.

use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;

use super::session::{code, error, Received, Session};
use super::view::View;
use super::Front;

/// How many messages wait for the writer before request tasks wait too.
const OUTBOX_DEPTH: usize = 256;

/// Serves one session until `input` ends.
pub(crate) async fn serve<R, W>(front: Arc<Front>, view: View, mut input: R, mut output: W, max_line: usize)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = Session::new(front, view);
    let (outbox, mut outgoing) = mpsc::channel::<Value>(OUTBOX_DEPTH);
    let writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    });
    let notifier = session.spawn_notifier(outbox.clone());
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_bounded(&mut input, &mut line, max_line).await {
            Ok(Read::Line) => {}
            Ok(Read::TooLong) => {
                let problem = format!("the message is longer than {max_line} bytes, the most this front reads");
                if outbox.send(error(&Value::Null, code::INVALID_REQUEST, &problem)).await.is_err() {
                    break;
                }
                continue;
            }
            Ok(Read::End) | Err(_) => break,
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message = match serde_json::from_slice::<Value>(&line) {
            Ok(message) => message,
            Err(problem) => {
                let problem = format!("not JSON: {problem}");
                if outbox.send(error(&Value::Null, code::PARSE_ERROR, &problem)).await.is_err() {
                    break;
                }
                continue;
            }
        };
        match session.receive(message, outbox.clone()) {
            Received::Answered(answer) => {
                if outbox.send(answer).await.is_err() {
                    break;
                }
            }
            // Each request in a task of its own: a slow call never holds up the next line.
            Received::Request(pending) => {
                let outbox = outbox.clone();
                tokio::spawn(async move {
                    if let Some(answer) = pending.await {
                        let _ = outbox.send(answer).await;
                    }
                });
            }
            Received::Accepted => {}
        }
    }
    tracing::debug!(session = %session.who(), "front session's input ended");
    session.close().await;
    notifier.abort();
    drop(outbox);
    let _ = writer.await;
}

enum Read {
    Line,
    TooLong,
    End,
}

/// Reads one line into `line` (without its newline), keeping at most `max`
/// bytes; a longer line is read to its end and reported, not kept.
async fn read_bounded<R: AsyncBufRead + Unpin>(input: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Read> {
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Read::TooLong
            } else if line.is_empty() {
                Read::End
            } else {
                Read::Line
            });
        }
        let (chunk, newline) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (&available[..at], true),
            None => (available, false),
        };
        if !too_long && line.len() + chunk.len() > max {
            too_long = true;
            line.clear();
        }
        if !too_long {
            line.extend_from_slice(chunk);
        }
        let consumed = chunk.len() + usize::from(newline);
        input.consume(consumed);
        if newline {
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}
