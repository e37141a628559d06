//! What can go wrong with a call, in words a host can show a person or a
//! model.
//!
//! Each variant is a different situation with a different right reaction:
//! an unknown tool is a mistake, a starting server is worth a retry, a
//! failed server needs a person, a timeout may or may not have had effects.
//! Hosts match on the variant; people read the message.

use std::time::Duration;

/// Why a tool call did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has that name.
    #[error("unknown tool '{name}'; `warden tools` lists the tools available")]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The tool's server has not finished starting.
    #[error("server '{server}' is still starting; retry '{name}' in a moment")]
    ServerStarting {
        /// The server.
        server: String,
        /// The tool asked for.
        name: String,
    },
    /// The tool's server failed and is not running.
    #[error("server '{server}' failed, so '{name}' is unavailable: {reason}")]
    ServerFailed {
        /// The server.
        server: String,
        /// The tool asked for.
        name: String,
        /// Why the server failed.
        reason: String,
    },
    /// The arguments are not a JSON object.
    #[error("arguments for '{name}' must be a JSON object, not {found}")]
    InvalidArguments {
        /// The tool.
        name: String,
        /// What was given instead.
        found: &'static str,
    },
    /// The call took longer than its timeout. If it had been sent, the
    /// server was asked to cancel it; if it was still waiting for a free
    /// slot, the server never heard of it.
    #[error(
        "'{name}' timed out after {}; {}",
        secs(*.timeout),
        if *.sent { "the server was asked to cancel it" } else { "it was never sent: the server's other calls used every slot" }
    )]
    Timeout {
        /// The tool.
        name: String,
        /// The timeout that ran out.
        timeout: Duration,
        /// Whether the request had reached the server's connection.
        sent: bool,
    },
    /// The server answered with a JSON-RPC error.
    #[error("server '{server}' refused '{name}': {message} (JSON-RPC error {code})")]
    Server {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The server's answer is not a `tools/call` result.
    #[error("server '{server}' answered '{name}' with something that is not a tool result: {problem}")]
    BadResult {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What was wrong with it.
        problem: String,
    },
    /// The connection ended before the answer came.
    #[error("server '{server}' went away during '{name}': {reason}")]
    ServerGone {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What happened to it.
        reason: String,
    },
}

/// A duration as people write it: `5 s`, `1.5 s`.
pub(crate) fn secs(duration: Duration) -> String {
    let secs = duration.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs} s")
    }
}
