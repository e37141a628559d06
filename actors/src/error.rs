//! What can go wrong with a call, in words a host can show a person or a
//! model.
//!
//! Each variant is a different situation with a different right reaction:
//! an unknown tool is a mistake, a starting server is worth a retry, a
//! failed server needs a person, a timeout may or may not have had effects.
//! Hosts match on the variant; people read the message.

use std::time::Duration;

use warden_config::CrashRetry;

/// Why a tool call did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool has that name.
    #[error("unknown tool '{name}': no running server lists it")]
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
    /// The tool's server waits for a person to log in (OAuth).
    #[error("server '{server}' {reason}, so '{name}' is unavailable until someone logs in to it")]
    NeedsLogin {
        /// The server.
        server: String,
        /// The tool asked for.
        name: String,
        /// Why it needs one.
        reason: String,
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
    /// The call's time ran out while its server was coming back from a
    /// crash.
    #[error("'{name}' timed out after {} waiting for server '{server}' to come back from a crash", secs(*.timeout))]
    RestartTimeout {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// The timeout that ran out.
        timeout: Duration,
    },
    /// A call to a server of another cluster node came back without a
    /// result; the message says why and whether it ran.
    #[error("'{name}' (server '{server}', on another node of the cluster): {message}")]
    Remote {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What happened, and whether the call ran.
        message: String,
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
    /// The server answered "input required" (MCP 2026-07-28) and what it
    /// asked for could not be given: Warden does not offer it, nobody
    /// answered, or the server kept asking.
    #[error("server '{server}' needs more input to answer '{name}', and it could not be given: {problem}")]
    InputNotGiven {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What went wrong.
        problem: String,
    },
    /// The server needs the person to open a URL first (-32042, "URL
    /// elicitation required"); Warden asks and, when they did, calls again
    /// once. The caller sees this only when that retry asks again.
    #[error("server '{server}' needs a URL opened before '{name}' can run: {message}")]
    UrlElicitationRequired {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// The server's message.
        message: String,
        /// The URL elicitations it asked for (`error.data.elicitations`).
        elicitations: Vec<serde_json::Value>,
    },
    /// The server needed a URL opened and the person did not.
    #[error("server '{server}' needs a URL opened before '{name}' can run, and {outcome}")]
    UrlElicitationNotDone {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What happened, in words ("the person declined to open https://…").
        outcome: String,
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
    /// The server's answer was over its `max_message_bytes` and was not read.
    #[error("server '{server}' answered '{name}', but the answer {detail}")]
    AnswerTooLarge {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// Its size and the limit, and what to do.
        detail: String,
    },
    /// The server went down before it answered. When `delivered` is false
    /// the request never reached it, and repeating the call is safe.
    #[error("server '{server}' went away during '{name}': {reason}")]
    ServerGone {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What happened to it.
        reason: String,
        /// Whether the request may have reached the server.
        delivered: bool,
    },
    /// Warden stopped the server while the call ran: it shut down, or a
    /// reload removed or restarted the server (after waiting, bounded, for
    /// its calls in flight).
    #[error(
        "'{name}' was not finished: Warden stopped server '{server}' while it ran (Warden shut down, or a reload \
         removed or restarted the server)"
    )]
    ServerStopped {
        /// The server.
        server: String,
        /// The tool.
        name: String,
    },
    /// The server crashed after it had the request and before it answered,
    /// and the server's `retry_after_crash` does not allow repeating it.
    #[error(
        "server '{server}' crashed while running '{name}' ({reason}); the call was not repeated because {}, so it may \
         or may not have taken effect{}",
        not_repeated_because(*.policy).0,
        not_repeated_because(*.policy).1
    )]
    CrashedMidCall {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// What happened to the server.
        reason: String,
        /// The server's `retry_after_crash`, which said no.
        policy: CrashRetry,
    },
    /// The stream that was to carry the server's answer broke before it
    /// did and could not be resumed (HTTP: the request is lost with it),
    /// and the call was not sent again: the server's `retry_after_crash`
    /// does not allow repeating it ([`CallError::StreamBrokenRepeatedly`]
    /// when it did, and the stream broke every time).
    #[error(
        "the answer stream of server '{server}' broke while it ran '{name}' ({reason}); the call was not repeated \
         because {}, so it may or may not have taken effect{}",
        not_repeated_because(*.policy).0,
        not_repeated_because(*.policy).1
    )]
    StreamBroken {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// How it broke.
        reason: String,
        /// The server's `retry_after_crash`.
        policy: CrashRetry,
    },
    /// The answer stream broke every time a call safe to repeat was sent.
    #[error(
        "the answer stream of server '{server}' broke each of the {times} times Warden sent '{name}' (the tool is \
         safe to repeat; the last time: {reason}), so Warden gave up; it may have taken effect"
    )]
    StreamBrokenRepeatedly {
        /// The server.
        server: String,
        /// The tool.
        name: String,
        /// How it broke the last time.
        reason: String,
        /// How many times it was sent.
        times: u32,
    },
    /// Warden was shut down before the call.
    #[error("'{name}' was not run: Warden has shut down (its servers are stopped)")]
    ShutDown {
        /// What was asked.
        name: String,
    },
    /// No task an earlier process left has this key.
    #[error("no task left by an earlier daemon has the key '{key}'")]
    UnknownTask {
        /// The key asked for.
        key: String,
    },
    /// A request named a server that is not configured.
    #[error("unknown server '{server}'{}", known_servers(.known))]
    UnknownServer {
        /// The server asked for.
        server: String,
        /// The servers that are configured.
        known: Vec<String>,
    },
    /// A server's answer held secrets and its policy says `leaks = "block"`.
    #[error(
        "Warden withheld the answer to '{name}': it contained {} (leaks = \"block\" for this server)",
        kinds.join(", ")
    )]
    Withheld {
        /// What was asked.
        name: String,
        /// What was found.
        kinds: Vec<String>,
    },
    /// The agent named with the call is not configured.
    #[error("unknown agent '{agent}'; agents are configured as [[agents]] entries in the config{}", known_agents(.known))]
    UnknownAgent {
        /// The agent asked for.
        agent: String,
        /// The agents that are configured.
        known: Vec<String>,
    },
    /// The tool profile asked for is not configured.
    #[error("unknown tool profile '{profile}'; profiles are [tool_profiles.NAME] tables in the config{}", known_profiles(.known))]
    UnknownProfile {
        /// The profile asked for.
        profile: String,
        /// The profiles that are configured.
        known: Vec<String>,
    },
    /// The tool is outside the agent's allowlist.
    #[error(
        "agent '{agent}' may not use '{name}': it is not in the agent's allowed_tools; add the name (or a glob such as \
         '{glob}') to allowed_tools if it should be"
    )]
    NotAllowed {
        /// The agent.
        agent: String,
        /// The tool.
        name: String,
        /// A glob covering the tool's server, built with the config's
        /// `[naming]` separator (`srv__*`, or `srv_*` under `_`).
        glob: String,
    },
    /// A person (or rule) denied the call.
    #[error("'{name}' was not run: {by} denied it: {reason}")]
    ApprovalDenied {
        /// The tool.
        name: String,
        /// Who decided.
        by: String,
        /// Their reason.
        reason: String,
    },
    /// Nobody answered the approval request in time.
    #[error("'{name}' was not run: it needs approval and nobody answered within {}", secs(*.after))]
    ApprovalTimedOut {
        /// The tool.
        name: String,
        /// How long it waited.
        after: Duration,
    },
    /// The call needs approval and nobody can give it.
    #[error(
        "'{name}' was not run: it needs approval ({reason}) and no approver is attached; attach an approver, or set \
         its approval to \"never\" in security.tool_policies"
    )]
    NoApprover {
        /// The tool.
        name: String,
        /// Why it needs approval.
        reason: String,
    },
    /// The arguments carry a secret Warden must not hand to a server.
    #[error(
        "'{name}' was not sent: its arguments contain {} ({}); Warden does not pass secrets to servers. If this tool \
         must receive it, set leaks = \"off\" for it in security.tool_policies",
        kinds.join(", "),
        where_found(.paths)
    )]
    SecretInArguments {
        /// The tool.
        name: String,
        /// What was found: a secret's label or a credential shape.
        kinds: Vec<String>,
        /// Where in the arguments (JSON pointers).
        paths: Vec<String>,
    },
}

impl CallError {
    /// The server a login would let this call through: one waiting for a
    /// login, or one that refused the call for want of authorization
    /// (`AUTH_REQUIRED`: no tokens, or not enough scope). A host adds its
    /// own way of logging in to the message.
    pub fn needs_login_to(&self) -> Option<&str> {
        match self {
            CallError::NeedsLogin { server, .. } => Some(server),
            CallError::Server { server, code, .. } if *code == warden_protocol::AUTH_REQUIRED.0 => Some(server),
            _ => None,
        }
    }
}

fn known_agents(known: &[String]) -> String {
    if known.is_empty() {
        " (none are configured)".into()
    } else {
        format!(" (configured: {})", known.join(", "))
    }
}

fn known_servers(known: &[String]) -> String {
    if known.is_empty() {
        "; no servers are configured".into()
    } else {
        format!("; the configured servers are {}", known.join(", "))
    }
}

fn known_profiles(known: &[String]) -> String {
    if known.is_empty() {
        " (none are configured)".into()
    } else {
        format!(" (configured: {})", known.join(", "))
    }
}

fn where_found(paths: &[String]) -> String {
    let paths: Vec<&str> = paths.iter().map(|path| if path.is_empty() { "/" } else { path.as_str() }).collect();
    format!("at {}", paths.join(", "))
}

/// Why a call was not repeated after a crash, and what would change that.
fn not_repeated_because(policy: CrashRetry) -> (&'static str, &'static str) {
    match policy {
        CrashRetry::Never => ("the server's `retry_after_crash` is \"never\"", ""),
        CrashRetry::Safe | CrashRetry::Always => (
            "the tool is not marked read-only or idempotent",
            " (set `retry_after_crash = \"always\"` on the server to repeat such calls)",
        ),
    }
}

/// A duration as people write it: `5 s`, `1.5 s`.
pub(crate) fn secs(duration: Duration) -> String {
    let text = format!("{:.3}", duration.as_secs_f64());
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Why a grant was not added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// The tool pattern does not compile.
    #[error("{0}")]
    BadPattern(String),
    /// Warden is shutting down.
    #[error("Warden is shutting down; the grant was not added")]
    Stopped,
}
