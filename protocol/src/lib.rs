//! The wire side of Warden: everything needed to talk to one MCP server,
//! and nothing about actors.
//!
//! - [`jsonrpc`](Message): the JSON-RPC 2.0 envelope — requests, notifications,
//!   responses and errors, with ids that are strings or numbers and
//!   [`ErrorCode`] constants. Parsing is strict about the envelope and lenient
//!   about everything inside it.
//! - [`mcp`](InitializeResult): the MCP payloads Warden reads (`initialize`,
//!   `tools/list`, `tools/call`, content blocks). Every struct keeps the
//!   fields it does not model in an `extra` map, so a server's `_meta`,
//!   `outputSchema`, annotations and any future field reach the host intact.
//! - [`modern`](Envelope): MCP 2026-07-28 as a client speaks it — the
//!   per-request `_meta` envelope, judging a `server/discover` probe, and
//!   the interim `input_required` answers of multi-round-trip requests.
//! - [`framing`](LineReader): newline-delimited messages with a maximum size.
//!   An oversized or broken line is reported and skipped, never fatal.
//! - [`heavy_work`](run_heavy): large messages handled without stalling the
//!   runtime — reading loops yield, one-piece steps (decoding, scanning,
//!   writing a message) leave the worker to the runtime's other tasks.
//! - [`transport`](Connector): how a server is reached. A [`Connector`] opens
//!   a [`Connection`] and pushes whatever arrives into an [`EventSink`]; the
//!   caller writes [`Message`]s into the connection without ever waiting on
//!   I/O. [`StdioConnector`] spawns a child process; [`HttpConnector`]
//!   POSTs each message to a Streamable HTTP endpoint (or speaks the
//!   legacy HTTP+SSE transport to a server that predates it);
//!   [`memory_pair`] gives tests a scripted peer. A stdio server's stderr
//!   reaches the log within a per-server budget (`stderr_budget.rs`); the
//!   HTTP transport's files are listed in `transport/http.rs`.
//! - [`sse`](SseParser): an incremental `text/event-stream` parser for
//!   Streamable HTTP, keeping the last event id and `retry` interval a
//!   resuming client needs. An oversized event is reported and skipped.
//! - [`elicitation`](ElicitRequest): what a server asks a person
//!   (`elicitation/create`): the form schema's allowed subset, answers
//!   checked against it with defaults filled in, URL mode.
//! - [`bridge`](BridgeRequest): the wire types of the daemon's bridge
//!   protocol (newline-delimited JSON requests and answers over TCP, with
//!   named error codes), shared by `warden serve` and its clients.

mod bridge;
mod elicitation;
mod framing;
mod heavy_work;
mod json_len;
mod json_write;
mod jsonrpc;
mod log_level;
mod mcp;
mod modern;
#[cfg(test)]
mod properties;
mod sse;
mod transport;

pub use bridge::{
    AnswerAction, BridgeError, BridgeErrorCode, CallToolOp as BridgeCallTool, GrantSpec, Request as BridgeRequest,
    RequestLine as BridgeRequestLine, Response as BridgeResponse, ResponseLine as BridgeResponseLine, ResultFormat,
    ServerReport, ToolListing, MAX_REQUEST_BYTES,
};
pub use elicitation::{
    url_host, AnswerError as ElicitAnswerError, Choice, ElicitModes, ElicitReply, ElicitRequest, Field, FieldKind,
    FormSchema, RequestError as ElicitRequestError, TextFormat,
};
pub use framing::{Frame, LineReader, DEFAULT_MAX_MESSAGE_BYTES, HEAD_BYTES};
pub use heavy_work::{run_heavy, HEAVY_BYTES};
pub use json_len::{json_len_hint, members_len_hint};
pub use json_write::{write_json, write_json_object, write_json_string};
pub use jsonrpc::{
    json_kind, ErrorCode, ErrorObject, Message, Notification, ParseError, RawResponse, Request, RequestId, Response,
};
pub use log_level::LogLevel;
pub use mcp::{
    CallToolParams, CallToolResult, ContentBlock, Implementation, InitializeParams, InitializeResult, ListToolsParams,
    ListToolsResult, ResourceContents, ServerCapabilities, Tool, ToolAnnotations, LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
};
pub use modern::{
    header_decoded, header_params, header_text, is_modern, judge_discover, mutual_modern_version, param_headers,
    retry_params, unsupported_versions, DiscoverResult, Envelope, HeaderParam, InputRequired, Verdict,
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LATEST_MODERN_VERSION, LOG_LEVEL_KEY, MODERN_PROTOCOL_VERSIONS,
    PROTOCOL_VERSION_KEY, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY, TASKS_EXTENSION,
};
pub use sse::{SseEvent, SseItem, SseParser};
pub use transport::{
    http_client, memory_pair, raise_open_file_limit, restore_open_file_limit, AnswerTaker, AuthFailure, Authorizer,
    Backlog, Challenge, Closer, ConnectFuture, Connection, Connector, EventSink, HttpClient, HttpConnector, HttpSpec,
    HttpTransport, LoggedIn, LoginUi, MemoryConnector, MemoryPeer, OAuthError, OpenFileLimit, Outbound, Queued,
    StderrTail, StdioConnector, StdioSpec, TransportError, TransportEvent, AUTH_REQUIRED, HTTP_TRANSPORT_ERROR,
    STREAM_BROKEN,
};
