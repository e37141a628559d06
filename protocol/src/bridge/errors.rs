//! The bridge's errors: a code clients match on, and a message people read.

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An error code: a short `snake_case` word clients match on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BridgeErrorCode(pub Cow<'static, str>);

impl BridgeErrorCode {
    /// The `token` is missing or wrong. Nothing else is said, and the
    /// connection is closed.
    pub const UNAUTHORIZED: BridgeErrorCode = code("unauthorized");
    /// The request was cancelled (the `cancel` op) before it finished.
    pub const CANCELLED: BridgeErrorCode = code("cancelled");
    /// The line is not JSON.
    pub const PARSE_ERROR: BridgeErrorCode = code("parse_error");
    /// The JSON is not a request: not an object, no `op`, a field of the
    /// wrong type, or a field the operation does not take.
    pub const INVALID_REQUEST: BridgeErrorCode = code("invalid_request");
    /// `op` names no operation.
    pub const UNKNOWN_OP: BridgeErrorCode = code("unknown_op");
    /// The line is longer than [`MAX_REQUEST_BYTES`]; the connection is closed.
    pub const TOO_LARGE: BridgeErrorCode = code("too_large");
    /// The daemon has as many connections as it takes; try again later.
    pub const BUSY: BridgeErrorCode = code("busy");
    /// The daemon is shutting down and takes no new work.
    pub const SHUTTING_DOWN: BridgeErrorCode = code("shutting_down");
    /// The operation exists in the protocol but not yet in this daemon.
    pub const NOT_AVAILABLE: BridgeErrorCode = code("not_available");
    /// No tool has that name (or that server has no such tool).
    pub const UNKNOWN_TOOL: BridgeErrorCode = code("unknown_tool");
    /// The tool's server has not finished starting; retry in a moment.
    pub const SERVER_STARTING: BridgeErrorCode = code("server_starting");
    /// The tool's server failed and is not running.
    pub const SERVER_FAILED: BridgeErrorCode = code("server_failed");
    /// The tool's server needs a person to log in (OAuth), or more scope
    /// for this call: `warden login SERVER`, then call again.
    pub const NEEDS_LOGIN: BridgeErrorCode = code("needs_login");
    /// The server went away (or crashed) during the call.
    pub const SERVER_GONE: BridgeErrorCode = code("server_gone");
    /// The server answered the call with a JSON-RPC error.
    pub const SERVER_ERROR: BridgeErrorCode = code("server_error");
    /// The server's answer was not a tool result.
    pub const BAD_RESULT: BridgeErrorCode = code("bad_result");
    /// The arguments are not a JSON object.
    pub const INVALID_ARGUMENTS: BridgeErrorCode = code("invalid_arguments");
    /// The call ran out of time.
    pub const TIMEOUT: BridgeErrorCode = code("timeout");
    /// The call named an agent that is not configured.
    pub const UNKNOWN_AGENT: BridgeErrorCode = code("unknown_agent");
    /// The tool is outside the agent's allowlist.
    pub const NOT_ALLOWED: BridgeErrorCode = code("not_allowed");
    /// The call needs approval and nobody can give it.
    pub const NEEDS_APPROVAL: BridgeErrorCode = code("needs_approval");
    /// A person (or rule) denied the call.
    pub const APPROVAL_DENIED: BridgeErrorCode = code("approval_denied");
    /// Nobody answered the approval request in time.
    pub const APPROVAL_TIMED_OUT: BridgeErrorCode = code("approval_timed_out");
    /// The arguments carry a secret Warden does not pass to servers.
    pub const SECRET_IN_ARGUMENTS: BridgeErrorCode = code("secret_in_arguments");
    /// Anything else that stopped a call.
    pub const CALL_FAILED: BridgeErrorCode = code("call_failed");
    /// `approve`/`deny` named no waiting approval.
    pub const UNKNOWN_APPROVAL: BridgeErrorCode = code("unknown_approval");
    /// `answer` named no waiting question.
    pub const UNKNOWN_QUESTION: BridgeErrorCode = code("unknown_question");
    /// `answer`: the answer does not fit the question, which still waits.
    pub const ANSWER_REFUSED: BridgeErrorCode = code("answer_refused");
    /// `reload`: the config file does not load; the running config stays.
    pub const CONFIG_INVALID: BridgeErrorCode = code("config_invalid");
    /// `reload`: the config loads but changes what cannot change while the
    /// daemon runs (`[naming]`); the running config stays.
    pub const RELOAD_REFUSED: BridgeErrorCode = code("reload_refused");

    /// The code's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

const fn code(text: &'static str) -> BridgeErrorCode {
    BridgeErrorCode(Cow::Borrowed(text))
}

impl fmt::Display for BridgeErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The `error` member of a failed answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct BridgeError {
    /// What kind of failure, for programs.
    pub code: BridgeErrorCode,
    /// What happened and what to do, for people.
    pub message: String,
}

impl BridgeError {
    /// An error with this code and message.
    pub fn new(code: BridgeErrorCode, message: impl Into<String>) -> BridgeError {
        BridgeError { code, message: message.into() }
    }
}
