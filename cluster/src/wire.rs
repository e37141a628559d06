//! What nodes send each other, as JSON: a call and its reply, a node's
//! heartbeat, a server's catalog entry, a cancellation.
//!
//! Every message a peer sends is decoded as untrusted input: a message
//! that does not decode is answered (or logged) with what was wrong and
//! never ends anything but itself.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool call for a node's server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct CallRequest {
    /// The call's id, the same on every attempt: a node that has run it
    /// (or is running it) answers that run instead of running it again.
    pub(crate) id: String,
    /// The tool's name on its server, as the catalog lists it.
    pub(crate) tool: String,
    /// Its arguments.
    #[serde(default)]
    pub(crate) arguments: Map<String, Value>,
    /// The caller's `_meta` (a trace's `traceparent`, among others).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) meta: Map<String, Value>,
    /// How long the caller waits, in milliseconds.
    pub(crate) timeout_ms: u64,
    /// The node the call entered the cluster at, which admitted it.
    pub(crate) from: String,
    /// Not a tool call but a read of the server's resources, prompts or
    /// completions: the method (`resources/read`, …) and its params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) request: Option<(String, Value)>,
}

/// What a server offers besides tools, as the catalog says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Offers {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
    pub(crate) completions: bool,
    /// Subscriptions to its resources (older nodes: none).
    #[serde(default)]
    pub(crate) subscribe: bool,
}

/// The requests of a remote server relayed through the cluster: reads
/// only, so each may be repeated on another node when its outcome is
/// unknown. Subscriptions go their own way ([`Hold`]).
pub(crate) const RELAYED: [&str; 6] = [
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

/// How a call ended, as far as the node that ran it knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Outcome {
    /// It did not reach the server: repeating it elsewhere is safe.
    NotRun,
    /// It may or may not have taken effect (a timeout, a crash mid-call).
    Unknown,
    /// The server answered with an error.
    Failed,
}

/// The answer to a [`CallRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CallReply {
    /// The tool's result (its secrets redacted by the node that ran it).
    Result(Value),
    /// Why there is none.
    Error {
        /// Whether the call ran.
        outcome: Outcome,
        /// What went wrong, for the caller to read.
        message: String,
    },
}

/// A node's heartbeat: the value of its key in the nodes bucket, put
/// again well inside its TTL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Heartbeat {
    /// The node's name.
    pub(crate) node: String,
    /// Its Warden version.
    pub(crate) version: String,
    /// The servers it exports.
    pub(crate) exports: Vec<String>,
    /// When it joined, in seconds since the Unix epoch.
    pub(crate) joined: u64,
}

/// What one node's server offers: the value of `NODE.SERVER` in the
/// catalog bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CatalogEntry {
    /// The node.
    pub(crate) node: String,
    /// The server.
    pub(crate) server: String,
    /// The protocol version the node's connection to it speaks.
    #[serde(default)]
    pub(crate) protocol_version: Option<String>,
    /// What the server says it is.
    #[serde(default)]
    pub(crate) server_info: Option<Value>,
    /// Its tools, as MCP tool definitions named as on their server (after
    /// the node's own filters and renames).
    pub(crate) tools: Vec<Value>,
    /// What else it offers, relayed on request (older nodes: nothing).
    #[serde(default)]
    pub(crate) offers: Offers,
}

/// "Stop running call `id`": its caller has gone.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Cancel {
    /// The call's id.
    pub(crate) id: String,
}

/// "Node `node` holds (or lets go of) a subscription to `uri` of your
/// `server`": answered with a [`CallReply`] (`Result({})` once the
/// server is subscribed).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Hold {
    pub(crate) server: String,
    pub(crate) uri: String,
    /// The node that holds it.
    pub(crate) node: String,
    /// `true`: subscribe; `false`: let go.
    pub(crate) subscribe: bool,
}

/// What an exported server said that importing nodes pass on to their
/// clients: `notifications/resources/updated` (its `uri` only) or a
/// resource or prompt list change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Notice {
    pub(crate) method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) uri: Option<String>,
}
