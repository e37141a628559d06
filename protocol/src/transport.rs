//! How Warden reaches a server, whatever the wire.
//!
//! A [`Connector`] knows how to reach one server (a command line or a
//! URL) and can do it again after a crash. [`Connector::connect`] opens a
//! [`Connection`] and from then on pushes everything the server says into
//! the [`EventSink`] it was given: messages, lines that were not messages,
//! and finally [`TransportEvent::Closed`] with the reason. The one
//! exception is an answer an [`AnswerTaker`] takes straight from the reader
//! (a call waiting on it, decoded from the line itself).
//!
//! The sink is a plain callback rather than a channel so that the owner (a
//! server actor) receives events straight into its mailbox, with no pump
//! task in between. [`Connection::send`] only queues: the write happens on
//! the transport's own task, so an actor that sends never waits on a pipe.
//! What arrives is paced the other way: [`Connector::connect_paced`] gives
//! the reader a [`Backlog`] it waits on while its deliveries are unhandled
//! (`backlog.rs`), so a flooding server fills its own pipe, not Warden.

mod backlog;
mod fd_limit;
mod http;
mod memory;
mod stderr_budget;
mod stdin_writer;
mod stdio;
mod too_large;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::framing::Frame;
use crate::jsonrpc::{answer_head, Message, RawResponse};

pub use backlog::{Backlog, Queued};
pub use fd_limit::{raise_open_file_limit, restore_open_file_limit, OpenFileLimit};
pub(crate) use http::{error_chain, oauth_connector};
pub use http::{
    http_client, AuthFailure, Authorizer, Challenge, HttpClient, HttpConnector, HttpSpec, HttpTransport, LoggedIn,
    LoginUi, OAuthError, AUTH_REQUIRED, HTTP_TRANSPORT_ERROR, STREAM_BROKEN,
};
pub use memory::{memory_pair, MemoryConnector, MemoryPeer};
pub use stdio::{StdioConnector, StdioSpec};

/// Something that happened on a connection.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportEvent {
    /// A JSON-RPC message from the server.
    Message(Message),
    /// A successful response from the server, its `result` unparsed: how
    /// transports deliver most responses (see [`RawResponse::parse`]). Error
    /// responses, and responses a test peer sends as a [`Message`], arrive
    /// as [`TransportEvent::Message`].
    Response(RawResponse),
    /// A request from the server that arrived on the stream of one of
    /// Warden's own requests (Streamable HTTP): it belongs to that request
    /// — an elicitation during a tool call is that call's question.
    RequestDuring {
        /// The server's request.
        request: crate::jsonrpc::Request,
        /// The id of Warden's request whose stream carried it.
        during: crate::jsonrpc::RequestId,
    },
    /// A notification that arrived on the stream of one of Warden's own
    /// requests (Streamable HTTP): a log message there is that request's
    /// (2026-07-28 sends a request's log messages only with it).
    NotificationDuring {
        /// The server's notification.
        notification: crate::jsonrpc::Notification,
        /// The id of Warden's request whose stream carried it.
        during: crate::jsonrpc::RequestId,
    },
    /// Output that was not a JSON-RPC message; it was skipped.
    Malformed {
        /// What was wrong, with the start of the offending text.
        problem: String,
    },
    /// Something failed without losing the connection: an HTTP request
    /// that got an error status, no answer, or an unusable one. A request
    /// that was waiting has already been answered with an error response;
    /// this is for the server's status and logs.
    Fault {
        /// What failed, in words.
        problem: String,
    },
    /// The server refused Warden's authorization and no refresh could
    /// help (OAuth): a request waiting has been answered with an
    /// [`AUTH_REQUIRED`](crate::AUTH_REQUIRED) error already; this tells the
    /// owner to put the server in `needs_login` (or to fail it).
    AuthRequired {
        /// What is needed, and why.
        failure: crate::AuthFailure,
    },
    /// The connection is gone; nothing more will arrive.
    Closed {
        /// Why, for people: exit status, signal, I/O error.
        reason: String,
    },
    /// Events that arrived together, in order: under load a server's
    /// answers come several to a read, and one message for all of them
    /// costs the owner one mailbox round instead of one each. Never empty,
    /// never nested, never holds `Closed`.
    Batch(Vec<TransportEvent>),
}

/// Where a connection delivers its events. Called from the transport's own
/// tasks; it must not block.
pub type EventSink = Arc<dyn Fn(TransportEvent) + Send + Sync>;

/// Takes the answers its owner waits for straight from the reader, before
/// they become events: the reader found a successful answer's id and its
/// `result` object ([`answer_head`]), and hands over the result's text,
/// not yet checked as JSON. A taker that decodes it and passes it on
/// returns `true`; `false` (not an id it waits for, or a result that does
/// not decode) leaves the line to become an event as usual, which says
/// what is wrong with it as it always did. Called from the reader's task,
/// in the order lines arrive; it must not block.
///
/// This is how a call's answer is read once: before, the envelope parse
/// checked the whole result and copied it out, and the caller decoded the
/// copy again (about a tenth of an embedded call's instructions).
pub trait AnswerTaker: Send + Sync {
    /// Takes the answer to request `id`, whose result is `result`.
    fn take_answer(&self, id: i64, result: &str) -> bool;
}

/// What [`Connector::connect`] returns.
pub type ConnectFuture = Pin<Box<dyn Future<Output = Result<Connection, TransportError>> + Send>>;

/// A graceful close, run when the connection is closed.
pub type Closer = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Opens connections to one server.
pub trait Connector: Send + Sync + 'static {
    /// Opens a new connection whose events go to `sink`.
    fn connect(&self, sink: EventSink) -> ConnectFuture;

    /// Opens a new connection whose events go to `sink`, its reader
    /// pausing while `backlog` is full: the sink marks each delivery with
    /// [`Backlog::enter`] and drops the mark once it is handled. Transports
    /// that read on their own (stdio, HTTP) honour it; the default
    /// ignores it. Answers `taker` takes skip the sink: stdio offers it
    /// every plain answer, Streamable HTTP the answers to the requests it
    /// POSTs (a JSON body or an event of the request's stream), the
    /// others none.
    fn connect_paced(
        &self,
        sink: EventSink,
        backlog: Arc<Backlog>,
        taker: Option<Arc<dyn AnswerTaker>>,
    ) -> ConnectFuture {
        let _ = (backlog, taker);
        self.connect(sink)
    }

    /// Whether a connection may start with a `server/discover` probe to
    /// find out which MCP era the server speaks (every transport but the
    /// legacy HTTP+SSE one, which predates the probe).
    fn probes_era(&self) -> bool {
        true
    }

    /// What the server at the other end is (its command, or its URL), to
    /// remember across runs which era it speaks; `None`: nothing to
    /// remember it by.
    fn identity(&self) -> Option<String> {
        None
    }

    /// Whether the server goes on running when Warden's process dies (an
    /// HTTP server does; a stdio server is Warden's child and dies too),
    /// so that a task it runs may be picked up by the next process.
    fn survives_warden(&self) -> bool {
        false
    }
}

/// Why a connection could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The server's process could not be started.
    #[error("could not start `{command}`: {source}; check `command` (is it installed and on PATH?) and `cwd`")]
    Spawn {
        /// The program.
        command: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The server's URL cannot be used (or its configured headers cannot).
    #[error("cannot connect to {url}: {problem}")]
    Url {
        /// The URL as configured.
        url: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The connection is already closed.
    #[error("the connection to the server is closed")]
    Closed,
}

/// Where a connection's outgoing messages go. `send` must not block: it
/// writes or queues, and reports only a connection that is already gone.
pub trait Outbound: Send + Sync + 'static {
    /// Writes or queues one message.
    fn send(&self, message: Message) -> Result<(), TransportError>;

    /// Writes or queues one message the caller already serialised (one
    /// line of JSON, no newline): the hot path, which lets callers build a
    /// request's text without building its JSON tree.
    fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError>;

    /// [`Outbound::send_json`] for a message sent while others are under
    /// way: it may wait a moment to go out together with those sent right
    /// after it. By default it goes at once.
    fn send_json_in_company(&self, json: Vec<u8>) -> Result<(), TransportError> {
        self.send_json(json)
    }
}

impl Outbound for mpsc::UnboundedSender<Message> {
    fn send(&self, message: Message) -> Result<(), TransportError> {
        mpsc::UnboundedSender::send(self, message).map_err(|_| TransportError::Closed)
    }

    fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError> {
        let text = String::from_utf8(json).expect("serialised JSON is UTF-8");
        let message = Message::parse(&text).expect("a pre-serialised message is valid JSON-RPC");
        Outbound::send(self, message)
    }
}

/// An open connection: send messages, read the stderr tail, close it.
pub struct Connection {
    outbound: Arc<dyn Outbound>,
    closer: Option<Closer>,
    stderr: StderrTail,
    pid: Option<u32>,
}

impl Connection {
    /// A connection whose messages go to `outbound`, closed by `closer`.
    pub fn new(outbound: Box<dyn Outbound>, closer: Closer, stderr: StderrTail) -> Self {
        Connection { outbound: Arc::from(outbound), closer: Some(closer), stderr, pid: None }
    }

    /// Where its messages go, for senders besides the connection's owner
    /// (a server actor's callers write their own requests).
    pub fn outbound(&self) -> Arc<dyn Outbound> {
        Arc::clone(&self.outbound)
    }

    /// The same connection, known to run in process `pid`.
    pub fn with_pid(mut self, pid: Option<u32>) -> Self {
        self.pid = pid;
        self
    }

    /// The server's process id (stdio servers), for `status`.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Queues a message for the server. Fails only when the connection is
    /// already gone.
    pub fn send(&self, message: Message) -> Result<(), TransportError> {
        self.outbound.send(message)
    }

    /// Queues a message already serialised as one line of JSON (no newline).
    pub fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError> {
        self.outbound.send_json(json)
    }

    /// [`Connection::send_json`] for a message sent while others are under
    /// way (see [`Outbound::send_json_in_company`]).
    pub fn send_json_in_company(&self, json: Vec<u8>) -> Result<(), TransportError> {
        self.outbound.send_json_in_company(json)
    }

    /// The server's last stderr lines (empty for transports without one).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr.lines()
    }

    /// Closes the connection gracefully and waits until it is closed.
    pub async fn close(mut self) {
        if let Some(closer) = self.closer.take() {
            closer.await;
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

/// The last lines a server wrote to stderr, kept so a failed start can say
/// what the server said before it died.
#[derive(Debug, Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
}

impl StderrTail {
    /// How many lines are kept.
    pub const LINES: usize = 20;
    /// How much of one line is kept.
    pub const LINE_CHARS: usize = 400;

    /// Remembers a line, forgetting the oldest past [`StderrTail::LINES`].
    pub fn push(&self, line: &str) {
        let mut lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if lines.len() == Self::LINES {
            lines.pop_front();
        }
        lines.push_back(excerpt(line, Self::LINE_CHARS));
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        lines.iter().cloned().collect()
    }
}

/// Turns one frame of server output into an event.
pub(crate) fn frame_to_event(frame: Frame) -> TransportEvent {
    match frame {
        Frame::Line(line) => line_to_event(&line),
        Frame::Oversized { bytes, limit, head, tail } => {
            match too_large::answer_too_large(bytes, limit, &head, &tail) {
                Some(answer) => TransportEvent::Message(answer),
                None => TransportEvent::Malformed {
                    problem: format!("a {bytes}-byte line is over the message size limit ({limit} bytes)"),
                },
            }
        }
        Frame::NotUtf8 { bytes } => TransportEvent::Malformed { problem: format!("a {bytes}-byte line is not UTF-8") },
    }
}

/// Whether `taker` took `line` as an answer it waits for.
pub(crate) fn taken(taker: Option<&dyn AnswerTaker>, line: &str) -> bool {
    taken_id(taker, line, || {}).is_some()
}

/// The id of the request whose answer `taker` took from `text`, if it did.
/// `first` runs before it is offered, only when `text` is an answer.
pub(crate) fn taken_id(taker: Option<&dyn AnswerTaker>, text: &str, first: impl FnOnce()) -> Option<i64> {
    let taker = taker?;
    let head = answer_head(text)?;
    first();
    taker.take_answer(head.id, &text[head.result]).then_some(head.id)
}

/// The event one line makes (what it holds is copied out of it).
pub(crate) fn line_to_event(line: &str) -> TransportEvent {
    if let Some(response) = RawResponse::parse(line) {
        return TransportEvent::Response(response);
    }
    match Message::parse(line) {
        Ok(message) => TransportEvent::Message(message),
        Err(error) => TransportEvent::Malformed { problem: format!("{error} (line starts: `{}`)", excerpt(line, 80)) },
    }
}

/// At most `max` characters of `text`, cut on a character boundary, with `…`
/// when something was cut.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
