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
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::mpsc;
use warden_protocol::{ErrorCode, ErrorObject, Frame, LineReader};

use super::json_text::json_text;
use super::session::{error_answer, Received, Session};
use super::view::View;
use super::Front;

/// How many messages wait for the writer before request tasks wait too.
const OUTBOX_DEPTH: usize = 256;

/// Serves one session until `input` ends.
pub async fn serve<R, W>(front: Arc<Front>, view: View, input: R, mut output: W, max_line: usize)
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let session = Session::new(front, view);
    let (outbox, mut outgoing) = mpsc::channel::<Value>(OUTBOX_DEPTH);
    let writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            let line = json_text(&message, b"", b"\n");
            drop(message);
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    });
    if let Some(lone_client) = &session.inner.front.lone_client {
        lone_client.bind(Arc::new(session.clone()), outbox.clone());
    }
    let notifier = session.spawn_notifier(outbox.clone());
    // The transports' own framer: bounded lines, the rest of a long one skipped.
    let mut input = LineReader::new(input, max_line);
    loop {
        let read = match input.next_frame().await {
            Ok(Some(Frame::Line(line))) => match serde_json::from_str::<Value>(&line) {
                Ok(message) => Ok(message),
                Err(problem) => Err(ErrorObject::new(ErrorCode::PARSE_ERROR, format!("not JSON: {problem}"))),
            },
            Ok(Some(Frame::Oversized { .. })) => Err(ErrorObject::new(
                ErrorCode::INVALID_REQUEST,
                format!("the message is longer than {max_line} bytes, the most this front reads"),
            )),
            Ok(Some(Frame::NotUtf8 { .. })) => {
                Err(ErrorObject::new(ErrorCode::PARSE_ERROR, "not JSON: the line is not UTF-8".to_string()))
            }
            Ok(None) | Err(_) => break,
        };
        let message = match read {
            Ok(message) => message,
            Err(problem) => {
                if outbox.send(error_answer(&Value::Null, problem)).await.is_err() {
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
            Received::Accepted | Received::NotHere => {}
        }
    }
    tracing::debug!(session = %session.who(), "front session's input ended");
    session.close().await;
    notifier.abort();
    if let Some(lone_client) = &session.inner.front.lone_client {
        lone_client.unbind();
    }
    drop(outbox);
    // The last answers go out; a task still holding the outbox (a call
    // its server never answers) does not keep the process alive.
    if tokio::time::timeout(WRITER_DRAIN, writer).await.is_err() {
        tracing::debug!(session = %session.who(), "front session's last answers abandoned after {WRITER_DRAIN:?}");
    }
}

/// How long a finished session's writer may take to send what is left.
const WRITER_DRAIN: std::time::Duration = std::time::Duration::from_secs(5);
