//! The bridge protocol: how a client talks to a running `warden serve`.
//!
//! Newline-delimited JSON over a loopback TCP connection. Each line a client
//! sends is one request object; the daemon answers each with exactly one
//! line, in the order the requests came, so a client may pipeline many
//! requests on one connection (or send one and close). Every request names
//! its operation in `op` and carries the token from the daemon's lockfile;
//! an optional `id` (any JSON value) is echoed in the answer, for clients
//! that want to match answers to requests themselves.
//!
//! ```text
//! {"op":"call_tool","token":"…","id":7,"server":"git","tool":"status","args":{}}
//! {"ok":true,"id":7,"result":{"content":[{"type":"text","text":"clean"}]}}
//! {"ok":false,"id":8,"error":{"code":"unknown_tool","message":"unknown tool 'git__nope'; …"}}
//! ```
//!
//! Parsing is split in two on purpose. [`RequestLine::parse`] reads only the
//! envelope (`token`, `id`), so the daemon checks the token before it says
//! anything about the request: a caller without the token learns that it is
//! unauthorised and nothing else, not even which operations exist.
//! [`RequestLine::into_request`] then decodes the operation strictly: an
//! unknown `op`, a field of the wrong type or a misspelt field is a
//! structured error naming it, because a typo like `arg` for `args`
//! silently ignored is a call made with no arguments.
//!
//! Everything here is pure serde; the daemon (`bins/src/daemon/`) and the
//! CLI's client (`bins/src/client/`) share it. `docs/bridge-protocol.md` is
//! the reference for people writing other clients.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::jsonrpc::json_kind;

mod call_tool;
mod errors;
mod response;
pub use call_tool::CallToolOp;
pub use errors::{BridgeError, BridgeErrorCode};
pub use response::{Response, ResponseLine};

/// The largest request line the daemon reads: 16 MiB, the same bound as a
/// message from a server. A longer line is answered `too_large` and the
/// connection is closed, since the rest of the stream cannot be trusted to
/// start at a line boundary the client meant.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// A request line's envelope, read before the operation is looked at.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestLine {
    /// Echoed in the answer when present.
    pub id: Option<Value>,
    /// The token the client sent, if it sent a string.
    pub token: Option<String>,
    /// The rest of the object: `op` and its fields.
    body: Map<String, Value>,
}

impl RequestLine {
    /// Reads one line's envelope. The error comes with whatever `id` could
    /// be read, so even a rejected request's answer can be matched.
    pub fn parse(line: &str) -> Result<RequestLine, (Option<Value>, BridgeError)> {
        let value: Value = serde_json::from_str(line).map_err(|error| {
            (None, BridgeError::new(BridgeErrorCode::PARSE_ERROR, format!("the request is not JSON: {error}")))
        })?;
        let Value::Object(mut body) = value else {
            let message = format!("a request is a JSON object with an `op`, not {}", json_kind(&value));
            return Err((None, BridgeError::new(BridgeErrorCode::INVALID_REQUEST, message)));
        };
        let id = body.remove("id");
        let token = match body.remove("token") {
            Some(Value::String(token)) => Some(token),
            _ => None,
        };
        Ok(RequestLine { id, token, body })
    }

    /// The `op` it names, as sent (empty when it has none or not a string).
    pub fn op(&self) -> &str {
        self.body.get("op").and_then(Value::as_str).unwrap_or_default()
    }

    /// The operation, decoded strictly.
    pub fn into_request(self) -> Result<Request, BridgeError> {
        let op = match self.body.get("op") {
            Some(Value::String(op)) => op.clone(),
            Some(other) => {
                let message = format!("`op` must be a string, not {}", json_kind(other));
                return Err(BridgeError::new(BridgeErrorCode::INVALID_REQUEST, message));
            }
            None => {
                return Err(BridgeError::new(
                    BridgeErrorCode::INVALID_REQUEST,
                    "the request has no `op`; see docs/bridge-protocol.md for the operations",
                ))
            }
        };
        if !Request::OPS.contains(&op.as_str()) {
            let message = format!("unknown op '{op}'; the operations are: {}", Request::OPS.join(", "));
            return Err(BridgeError::new(BridgeErrorCode::UNKNOWN_OP, message));
        }
        let invalid = |error: serde_json::Error| {
            BridgeError::new(BridgeErrorCode::INVALID_REQUEST, format!("op '{op}': {error}"))
        };
        let request = if op == "call_tool" {
            // Straight into its fields (`bridge/call_tool.rs`).
            let mut body = self.body;
            body.remove("op");
            Request::CallTool(serde_json::from_value(Value::Object(body)).map_err(invalid)?)
        } else {
            serde_json::from_value(Value::Object(self.body)).map_err(invalid)?
        };
        request.check()?;
        Ok(request)
    }
}

/// One operation, with its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Operations without fields are empty structs, not unit variants: serde
// ignores unknown fields next to a unit variant's tag, `deny_unknown_fields`
// or not.
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Request {
    /// Is the daemon there? Answers its version and pid.
    Ping {},
    /// The daemon's own state and every server's.
    Status {
        /// Wait until no server is still starting before answering.
        #[serde(default)]
        settle: bool,
    },
    /// Every tool of every running server.
    ListTools {
        /// Wait until no server is still starting before answering.
        #[serde(default)]
        settle: bool,
        /// The tools this agent may see (its allowlist), as a model is
        /// handed them.
        #[serde(default)]
        agent: Option<String>,
        /// The tool profile they are shown at (`full`, `summary`,
        /// `brief`, or a configured one); default: the agent's own.
        #[serde(default)]
        profile: Option<String>,
    },
    /// Every running tool's resolved policy, each field with its source.
    ToolPolicies {
        /// Wait until no server is still starting before answering.
        #[serde(default)]
        settle: bool,
    },
    /// A tool's input schema, by server and the server's own tool name.
    GetSchema {
        /// The server.
        server: String,
        /// The server's name for the tool.
        tool: String,
    },
    /// The tools that best match what the caller wants done (tool
    /// search): `{"tools": [{"name", "score", "reason", "definition"}]}`,
    /// best first.
    FindTools {
        /// What the caller wants done, in words.
        query: String,
        /// How many to return (1–20; default 5).
        #[serde(default)]
        limit: Option<usize>,
        /// Among the tools this agent may call (default: every tool).
        #[serde(default)]
        agent: Option<String>,
    },
    /// A tool's whole definition, by namespaced name.
    DescribeTool {
        /// `server__tool`.
        name: String,
    },
    /// Runs a tool, named either by `server` + `tool` or by `name`.
    CallTool(CallToolOp),
    /// The approvals waiting for a person.
    Approvals {},
    /// Approves one waiting call.
    Approve {
        /// The approval's id, as `approvals` lists it.
        approval: String,
        /// Also let later calls run unasked (not tools whose approval is
        /// `always`).
        #[serde(default)]
        grant: Option<GrantSpec>,
    },
    /// Denies one waiting call.
    Deny {
        /// The approval's id, as `approvals` lists it.
        approval: String,
        /// Told to the caller.
        #[serde(default)]
        reason: Option<String>,
    },
    /// Everything waiting for a person: approvals and servers' questions.
    Pending {},
    /// The server-side tasks an earlier daemon's calls left, each with
    /// what its server says of it now.
    Tasks {},
    /// What a left task's server says of it; once it has ended, with its
    /// result (or error), and it is forgotten.
    FetchTask {
        /// The task's key, as `tasks` lists it.
        key: String,
    },
    /// Answers a server's question (an elicitation).
    Answer {
        /// The question's id, as `pending` lists it.
        question: String,
        /// What the person did.
        action: AnswerAction,
        /// With `accept` of a form: the fields, as a JSON object (empty
        /// fields take their defaults).
        #[serde(default)]
        content: Option<Value>,
    },
    /// Re-reads the config file.
    Reload {},
    /// Starts a server again that is not running (one waiting for a
    /// login, once `warden login` saved its tokens); a running one is left
    /// alone. Answers the server's state once it settled.
    Reconnect {
        /// The server.
        server: String,
    },
    /// Turns the connection into an MCP session: after the answer, every
    /// line both ways is one MCP message (what `warden mcp` speaks).
    Mcp {
        /// The agent whose allowlist and profile apply; absent: the host's view.
        #[serde(default)]
        agent: Option<String>,
        /// Serve only this server, under its own names.
        #[serde(default)]
        server: Option<String>,
    },
    /// Cancels a request still running on this same connection (a
    /// `call_tool`, say): it is answered `cancelled`, and a call its server
    /// was running is cancelled there too (`notifications/cancelled`).
    Cancel {
        /// The `id` the request was sent with.
        request: Value,
    },
    /// Stops the daemon gracefully.
    Shutdown {},
}

/// What a person did with a question (`answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerAction {
    /// Submitted the form (`content`), or agreed to open the URL.
    Accept,
    /// Submitted the form with every field's default.
    Defaults,
    /// Said no.
    Decline,
    /// Dismissed it.
    Cancel,
}

/// A grant handed out with an approval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantSpec {
    /// A tool name or glob; absent for the approved call's tool.
    #[serde(default)]
    pub tools: Option<String>,
    /// How long it lasts, in minutes; absent for the daemon's lifetime.
    #[serde(default)]
    pub minutes: Option<f64>,
    /// For the approved call's agent only.
    #[serde(default)]
    pub this_agent_only: bool,
}

/// How `call_tool` answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultFormat {
    /// The MCP `tools/call` result, as the server sent it.
    #[default]
    Raw,
    /// `{"text": …, "is_error": …}`: rendered for a model, bounded by the
    /// server's `output_limit_bytes`.
    Text,
}

impl Request {
    /// Every operation's name.
    pub const OPS: &'static [&'static str] = &[
        "ping",
        "status",
        "list_tools",
        "tool_policies",
        "get_schema",
        "describe_tool",
        "find_tools",
        "call_tool",
        "approvals",
        "approve",
        "deny",
        "pending",
        "tasks",
        "fetch_task",
        "answer",
        "reload",
        "reconnect",
        "shutdown",
        "mcp",
        "cancel",
    ];

    /// For `call_tool`, the checks serde cannot make: exactly one way of
    /// naming the tool, and object arguments.
    fn check(&self) -> Result<(), BridgeError> {
        let invalid = |message: String| Err(BridgeError::new(BridgeErrorCode::INVALID_REQUEST, message));
        if let Request::Answer { action, content: Some(content), .. } = self {
            return match (action, content) {
                (AnswerAction::Accept, Value::Object(_)) | (_, Value::Null) => Ok(()),
                (AnswerAction::Accept, other) => {
                    invalid(format!("op 'answer': `content` must be a JSON object of fields, not {}", json_kind(other)))
                }
                (_, _) => invalid("op 'answer': `content` goes only with `\"action\": \"accept\"`".into()),
            };
        }
        let Request::CallTool(CallToolOp { server, tool, name, args, .. }) = self else { return Ok(()) };
        match (server, tool, name) {
            (Some(_), Some(_), None) | (None, None, Some(_)) => {}
            _ => {
                return invalid(
                    "op 'call_tool': name the tool either with `server` and `tool`, or with `name` (`server__tool`)"
                        .into(),
                )
            }
        }
        match args {
            None | Some(Value::Null) | Some(Value::Object(_)) => Ok(()),
            Some(other) => invalid(format!("op 'call_tool': `args` must be a JSON object, not {}", json_kind(other))),
        }
    }
}

/// One tool in a `list_tools` or `describe_tool` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolListing {
    /// The namespaced name: `server__tool`.
    pub name: String,
    /// The server that provides it.
    pub server: String,
    /// The tool as the server listed it.
    pub tool: crate::mcp::Tool,
}

/// One server in a `status` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerReport {
    /// Its configured name.
    pub name: String,
    /// `starting`, `running`, `restarting` or `failed`.
    pub state: String,
    /// The state in words, with the reason and the restart schedule.
    pub detail: String,
    /// Why it failed, or why it is restarting.
    #[serde(default)]
    pub error: Option<String>,
    /// While restarting: which consecutive restart this is.
    #[serde(default)]
    pub restart_attempt: Option<u32>,
    /// How many of its tools are registered.
    pub tools: usize,
    /// The protocol version it agreed to.
    #[serde(default)]
    pub protocol_version: Option<String>,
    /// What it says it is.
    #[serde(default)]
    pub server_info: Option<crate::mcp::Implementation>,
    /// Problems worth a person's attention.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The last error of a server that keeps running (an HTTP request that
    /// failed, say).
    #[serde(default)]
    pub last_error: Option<String>,
    /// Its process, while a stdio server is connected.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Seconds since its current connection finished the handshake.
    #[serde(default)]
    pub uptime_secs: Option<u64>,
    /// How many times it was restarted.
    #[serde(default)]
    pub restarts: u32,
    /// How many tool calls it has had, whatever their outcome.
    #[serde(default)]
    pub calls: u64,
    /// For a server of other nodes in the cluster: the nodes that serve it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
}

impl ServerReport {
    /// True when it has failed for good.
    pub fn is_failed(&self) -> bool {
        self.state == "failed"
    }
}

#[cfg(test)]
mod tests;
