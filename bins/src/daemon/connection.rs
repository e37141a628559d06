//! One client connection: lines in, answers out, in order.
//!
//! The connection's task reads one request line at a time. Requests run
//! concurrently — a slow call does not hold up a `ping` on another
//! connection, and this connection's later calls are already running while
//! it waits — but answers are written in the order the requests came, so a
//! pipelining client can match them without ids: requests in flight sit in
//! an ordered set, and an answer is written when every earlier one has
//! been. The set is bounded, which bounds how far a client can run ahead of
//! its answers (reading pauses until an answer goes out).
//!
//! What a bad client cannot do:
//!
//! - skip the token: a wrong or missing token is answered `unauthorized`,
//!   and the connection is closed; so is one that sends no token in time,
//!   and it never holds one of the daemon's slots ([`super::admission`]);
//! - hold a connection open doing nothing: idle connections are closed;
//! - break the connection with bad JSON, an unknown op or a wrong field
//!   type: each gets its structured error and the next line is read;
//! - make the daemon buffer without bound: a line over
//!   [`MAX_REQUEST_BYTES`] is answered `too_large` as soon as the limit is
//!   passed, the rest of it is read and thrown away (briefly, so the answer
//!   is not lost to a TCP reset), and the connection is closed;
//! - leave work behind: the connection is read while its requests run, and
//!   when it ends (EOF, a reset, a write that fails) every call and read it
//!   started is cancelled — upstream too, and out of the approval queue —
//!   as if the client had sent `cancel` for each ([`cancel`]). A client
//!   that shuts down its sending half has left, as hyper's server treats
//!   it by default: it must keep the connection open until its answers
//!   came;
//! - disturb other calls: `cancel`, naming a request's `id`, reaches only
//!   requests of its own connection.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use warden_protocol::{
    run_heavy, BridgeError, BridgeErrorCode as Code, BridgeRequestLine, BridgeResponseLine, MAX_REQUEST_BYTES,
};

use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

mod cancel;
mod in_flight;

use cancel::{ends_with_its_client, Cancellable, Running};
use in_flight::InFlight;

use super::admission::{Arrival, Busy, MAX_CONNECTIONS, MAX_UNPROVEN_LINE_BYTES, PROVE_WITHIN};
use super::ops::{Answered, Ops};
use super::questions::Notices;
use super::token;

/// How many requests one connection may have unanswered.
const PIPELINE_DEPTH: usize = 256;

/// How long the rest of an oversized line is read and discarded before the
/// connection is closed.
const DISCARD_LIMIT: Duration = Duration::from_secs(2);

/// The size from which a tool's result is written from a value
/// ([`Answer::answered`]): where serde_json's escape loop, a byte at a
/// time, costs more than building the value.
const LARGE_RESULT: usize = 16 * 1024;

/// One answer line, and what happens after it is written.
#[derive(Debug)]
struct Answer {
    line: String,
    /// Close the connection after this answer.
    close: bool,
    /// Stop the daemon after this answer.
    then_shutdown: bool,
    /// The cancellable request it answers, no longer running.
    ends: Option<Running>,
}

impl Answer {
    fn error(id: Option<&Value>, error: &BridgeError) -> Answer {
        let line = BridgeResponseLine { ok: false, id, result: None, error: Some(error) }.to_line();
        Answer { line, close: false, then_shutdown: false, ends: None }
    }

    /// `result`, written into a line sized up front for it.
    fn result(id: Option<&Value>, result: &Value) -> Answer {
        let line = BridgeResponseLine { ok: true, id, result: Some(result), error: None }.to_value_line();
        Answer { line, close: false, then_shutdown: false, ends: None }
    }

    /// An op's answer, written into a line sized up front for it: a large
    /// tool result from a value (its strings moved into it, then copied in
    /// runs: `json_write.rs`), a small one by its own `Serialize`, with no
    /// value built first (a value's maps cost allocations on every call).
    fn answered(id: Option<&Value>, answered: Answered) -> Answer {
        let len_hint = answered.len_hint();
        // A large result's writing is done off the worker (`run_heavy`).
        run_heavy(len_hint, || Answer::written(id, answered, len_hint))
    }

    fn written(id: Option<&Value>, answered: Answered, len_hint: usize) -> Answer {
        match answered {
            Answered::Tool(result) if len_hint >= LARGE_RESULT => Answer::result(id, &Value::from(result)),
            Answered::Value(value) => Answer::result(id, &value),
            small => {
                let line =
                    BridgeResponseLine { ok: true, id, result: Some(&small), error: None }.to_line_sized(len_hint);
                Answer { line, close: false, then_shutdown: false, ends: None }
            }
        }
    }
}

/// Where a connection stands with [`Admission`](super::admission::Admission).
enum Standing {
    /// No request with the token yet: it must send one before `by`.
    Unproven { arrival: Arrival, by: Instant },
    /// It sent the token and holds a slot (released when the connection ends).
    Proven(#[allow(dead_code)] OwnedSemaphorePermit),
    /// It sent the token when every slot was taken; it is being closed.
    Refused,
}

impl Standing {
    /// The token checked out: an unproven connection takes a slot.
    fn prove(&mut self) -> Result<(), Busy> {
        match std::mem::replace(self, Standing::Refused) {
            Standing::Unproven { arrival, .. } => *self = Standing::Proven(arrival.prove()?),
            standing => *self = standing,
        }
        Ok(())
    }
}

/// Serves one connection until the client closes it (or breaks a rule).
///
/// One task does everything: it reads the next line, drives the requests
/// in flight, and writes each answer when its turn comes. A task per
/// request and a writer task would cost two extra wake-ups per call, which
/// on a busy machine is most of what the bridge adds to a call.
///
/// `read` and `write` are the two halves of a TCP connection or of one on
/// the Unix socket: the protocol is the same.
pub(crate) async fn serve<R, W>(read: R, mut write: W, ops: Arc<Ops>, arrival: Arrival)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let _open = ops.bridge_metrics.connection();
    let mut reader = BufReader::new(read);
    // The line being read survives a `select!` that picks an answer instead.
    let mut partial = Vec::new();
    let mut in_flight: InFlight<Answer> = InFlight::default();
    let mut standing = Standing::Unproven { arrival, by: Instant::now() + PROVE_WITHIN };
    // When the last whole line came or answer went: an idle connection
    // (nothing in flight) must send its next line within the idle limit.
    let mut last_progress = Instant::now();
    let mut reading = true;
    let mut writing = true;
    // Notice lines of calls in flight (what waits for a person), written
    // as they come, ahead of the answers.
    let (notices, mut notice_lines) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut cancellable = Cancellable::default();
    while reading || !in_flight.is_empty() {
        let (deadline, limit) = match &standing {
            Standing::Unproven { by, .. } => (*by, MAX_UNPROVEN_LINE_BYTES),
            Standing::Proven(_) => (last_progress + ops.connection_idle, MAX_REQUEST_BYTES),
            Standing::Refused => (Instant::now(), MAX_UNPROVEN_LINE_BYTES),
        };
        let evicted = async {
            match &mut standing {
                Standing::Unproven { arrival, .. } => {
                    let _ = (&mut arrival.evicted).await;
                }
                Standing::Proven(_) | Standing::Refused => std::future::pending().await,
            }
        };
        tokio::select! {
            // Answers first: they reach the client sooner and free room.
            biased;
            Some(line) = notice_lines.recv(), if writing => {
                if write.write_all(line.as_bytes()).await.is_err() {
                    (reading, writing) = (false, false);
                    client_left(&mut cancellable);
                }
            }
            Some(answer) = in_flight.next(), if !in_flight.is_empty() => {
                last_progress = Instant::now();
                cancellable.ended(&answer);
                if !writing {
                    // Asked for by a client that left before its answer.
                    if answer.then_shutdown {
                        ops.shutdown.trigger("asked to shut down (the `shutdown` op)");
                    }
                } else if !deliver(&mut write, &answer, &ops).await {
                    (reading, writing) = (false, false);
                    if !answer.close {
                        client_left(&mut cancellable);
                    }
                }
            }
            () = evicted, if reading => {
                tracing::debug!("closed an unproven connection to make room for a newer one");
                reading = false;
            }
            () = tokio::time::sleep_until(deadline), if reading && in_flight.is_empty() => {
                reading = false;
                if let Standing::Unproven { .. } = standing {
                    let error = BridgeError::new(
                        Code::UNAUTHORIZED,
                        format!(
                            "no request with the `token` within {} s of connecting; the connection is closed",
                            PROVE_WITHIN.as_secs()
                        ),
                    );
                    let answer = Answer { close: true, ..Answer::error(None, &error) };
                    let _ = deliver(&mut write, &answer, &ops).await;
                } else {
                    tracing::debug!("closed a connection idle for {:.0} s", ops.connection_idle.as_secs_f64());
                    let _ = write.shutdown().await;
                }
            }
            line = read_line(&mut reader, &mut partial, limit), if reading && in_flight.len() < PIPELINE_DEPTH => {
                last_progress = Instant::now();
                let answer: in_flight::Pending<Answer> = match line {
                    Ok(Line::Text(line)) => match prepare(&ops, &line, &mut standing) {
                        Prepared::Answer(answer) => {
                            reading = !answer.close;
                            Box::pin(std::future::ready(answer))
                        }
                        Prepared::Run { request, id } => {
                            let notices = Notices { lines: notices.clone(), id: id.clone() };
                            let ends_with_client = ends_with_its_client(&request);
                            cancellable.wrap(ends_with_client, id.clone(), run(Arc::clone(&ops), request, id, notices))
                        }
                        Prepared::Cancel { id, target } => {
                            Box::pin(std::future::ready(cancellable.cancel(id.as_ref(), &target)))
                        }
                        Prepared::Mcp { id, agent, server } if in_flight.is_empty() => {
                            return upgrade(&ops, reader, write, id, agent, server).await;
                        }
                        Prepared::Mcp { id, .. } => {
                            let error = BridgeError::new(
                                Code::INVALID_REQUEST,
                                "`mcp` must be sent when no other request is in flight on the connection",
                            );
                            Box::pin(std::future::ready(Answer::error(id.as_ref(), &error)))
                        }
                    },
                    Ok(Line::TooLarge) => {
                        let message = match standing {
                            Standing::Proven(_) => {
                                format!("the request is longer than {limit} bytes; the connection is closed")
                            }
                            Standing::Unproven { .. } | Standing::Refused => format!(
                                "the first request on a connection may be at most {limit} bytes (send a `ping` \
                                 with the token first); the connection is closed"
                            ),
                        };
                        // Read the rest of the line (briefly) so the answer is
                        // not lost to a reset when the connection closes.
                        partial.clear();
                        let _ = tokio::time::timeout(DISCARD_LIMIT, discard_line(&mut reader)).await;
                        reading = false;
                        let error = BridgeError::new(Code::TOO_LARGE, message);
                        Box::pin(std::future::ready(Answer { close: true, ..Answer::error(None, &error) }))
                    }
                    Ok(Line::NotUtf8) => {
                        let error = BridgeError::new(Code::PARSE_ERROR, "the request is not UTF-8 text, so not JSON");
                        Box::pin(std::future::ready(Answer::error(None, &error)))
                    }
                    Ok(Line::End) => {
                        (reading, writing) = (false, false);
                        client_left(&mut cancellable);
                        continue;
                    }
                    Err(error) => {
                        (reading, writing) = (false, false);
                        log_read_failure(&error);
                        client_left(&mut cancellable);
                        continue;
                    }
                };
                in_flight.push_back(answer);
            }
        }
    }
}

/// The client is gone: what it alone was waiting for is cancelled, so
/// nothing runs, holds a server's slot or waits for a person on behalf of
/// nobody.
fn client_left(cancellable: &mut Cancellable) {
    let cancelled = cancellable.client_left();
    if cancelled > 0 {
        tracing::info!("a bridge client left with {cancelled} request(s) running; they are cancelled");
    }
}

/// Runs one request to its answer line.
async fn run(ops: Arc<Ops>, request: warden_protocol::BridgeRequest, id: Option<Value>, notices: Notices) -> Answer {
    let outcome = ops.run(request, notices).await;
    let answer = match outcome.result {
        Ok(answered) => Answer::answered(id.as_ref(), answered),
        Err(error) => Answer::error(id.as_ref(), &error),
    };
    Answer { then_shutdown: outcome.then_shutdown, ..answer }
}

/// Writes one answer and does what it says after; false once the
/// connection is closed (by the answer, or because the client is gone).
async fn deliver<W: AsyncWrite + Unpin>(write: &mut W, answer: &Answer, ops: &Ops) -> bool {
    if write.write_all(answer.line.as_bytes()).await.is_err() {
        return false;
    }
    if answer.then_shutdown {
        let _ = write.flush().await;
        ops.shutdown.trigger("asked to shut down (the `shutdown` op)");
    }
    if answer.close {
        let _ = write.shutdown().await;
        return false;
    }
    true
}

enum Prepared {
    Answer(Answer),
    Run { request: warden_protocol::BridgeRequest, id: Option<Value> },
    Mcp { id: Option<Value>, agent: Option<String>, server: Option<String> },
    Cancel { id: Option<Value>, target: Value },
}

/// The `mcp` op: answers it, then serves the connection as an MCP session
/// (`front::lines`) until the client closes it. The open session keeps the
/// daemon from exiting idle under a connected client.
async fn upgrade<R, W>(
    ops: &Arc<Ops>,
    reader: BufReader<R>,
    mut write: W,
    id: Option<Value>,
    agent: Option<String>,
    server: Option<String>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let view = warden_front::view::View::of(&ops.warden, agent.as_deref(), server.as_deref(), ops.resource_tools);
    let view = match view {
        Ok(view) => view,
        Err(problem) => {
            let error = BridgeError::new(Code::INVALID_REQUEST, problem.to_string());
            let _ = deliver(&mut write, &Answer { close: true, ..Answer::error(id.as_ref(), &error) }, ops).await;
            return;
        }
    };
    let upgraded = Answer::result(id.as_ref(), &serde_json::json!({"mcp": true}));
    if write.write_all(upgraded.line.as_bytes()).await.is_err() {
        return;
    }
    let _session = ops.activity.begin_session();
    tracing::info!("a bridge connection became an MCP session ({})", view.who());
    warden_front::lines::serve(Arc::clone(&ops.front), view, reader, write, ops.max_message_bytes).await;
}

/// Everything that can be answered without waiting: envelope, token, op.
fn prepare(ops: &Ops, line: &str, standing: &mut Standing) -> Prepared {
    // A large request (a file's content as arguments) is decoded off the
    // worker (`run_heavy`).
    let envelope = match run_heavy(line.len(), || BridgeRequestLine::parse(line)) {
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
    if let Err(Busy) = standing.prove() {
        let error = BridgeError::new(
            Code::BUSY,
            format!("the daemon already serves {MAX_CONNECTIONS} connections; retry in a moment"),
        );
        return Prepared::Answer(Answer { close: true, ..Answer::error(envelope.id.as_ref(), &error) });
    }
    ops.activity.touch();
    ops.bridge_metrics.request(envelope.op());
    let id = envelope.id.clone();
    match envelope.into_request() {
        Ok(warden_protocol::BridgeRequest::Mcp { agent, server }) => Prepared::Mcp { id, agent, server },
        Ok(warden_protocol::BridgeRequest::Cancel { request }) => Prepared::Cancel { id, target: request },
        Ok(request) => Prepared::Run { request, id },
        Err(error) => Prepared::Answer(Answer::error(id.as_ref(), &error)),
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
///
/// Cancel-safe: what was read of the line so far is kept in `line`, so a
/// `select!` that drops this future loses nothing.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, line: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.iter().all(u8::is_ascii_whitespace) { Line::End } else { text(std::mem::take(line)) });
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
            return Ok(text(std::mem::take(line)));
        }
    }
}

/// A connection that could not be read is closed; the daemon's log says
/// why unless the client simply left (a reset or a broken pipe), so a
/// daemon whose connections all end at once is not a silent mystery.
fn log_read_failure(error: &std::io::Error) {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    if matches!(error.kind(), BrokenPipe | ConnectionAborted | ConnectionReset | UnexpectedEof) {
        tracing::debug!("a bridge client left mid-request ({error})");
    } else {
        tracing::warn!(
            "a bridge connection could not be read ({error}); it is closed and its calls in flight are cancelled"
        );
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
