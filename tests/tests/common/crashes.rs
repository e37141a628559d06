//! Helpers for the suites that crash scripted servers: what Warden says
//! of a dead server, states to wait for, calls timed in virtual time.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use warden_actors::{CallError, CrashRetry, ServerState, Warden};
use warden_protocol::{MemoryPeer, Request};

use super::{next_request, status, SRV};

/// How the scripted server dies.
pub(crate) const EXIT: &str = "the server process exited with code 1";
/// Why Warden says a running server went down.
pub(crate) const CLOSED: &str = "the connection closed: the server process exited with code 1";
/// Why Warden says a starting server went down.
pub(crate) const DIED_STARTING: &str = "it stopped before it was ready: the server process exited with code 1";

pub(crate) fn secs(secs: f64) -> Duration {
    Duration::from_secs_f64(secs)
}

/// What a caller reads when its call was lost in a crash.
pub(crate) fn crashed_mid_call(name: &str, reason: &str) -> CallError {
    CallError::CrashedMidCall { server: SRV.into(), name: name.into(), reason: reason.into(), policy: CrashRetry::Safe }
}

pub(crate) fn is_restarting(attempt: u32) -> impl FnMut(&ServerState) -> bool {
    move |state| matches!(state, ServerState::Restarting { attempt: a, .. } if *a == attempt)
}

pub(crate) fn is_running(state: &ServerState) -> bool {
    *state == ServerState::Running
}

/// `srv`'s state as `warden status` prints it.
pub(crate) fn state_text(warden: &Warden) -> String {
    status(warden, SRV).state.to_string()
}

/// Runs `name` and returns its outcome with the instant it ended.
pub(crate) async fn timed_call(
    warden: &Warden,
    name: &str,
    arguments: Value,
) -> (Result<warden_protocol::CallToolResult, CallError>, Instant) {
    let outcome = warden.call_tool(name, arguments).await;
    (outcome, Instant::now())
}

/// Takes `count` `tools/call` requests, in whatever order they come.
pub(crate) async fn tool_calls(peer: &mut MemoryPeer, count: usize) -> Vec<Request> {
    let mut requests = Vec::new();
    for _ in 0..count {
        requests.push(next_request(peer, "tools/call").await);
    }
    requests
}

/// The server's own name of the tool a `tools/call` asks for.
pub(crate) fn tool_name(request: &Request) -> &str {
    request.params.as_ref().and_then(|params| params["name"].as_str()).expect("tools/call names its tool")
}
