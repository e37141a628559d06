//! Where an attempt goes, read off the Registry's snapshots: a tool call
//! to its server's running actor when that server lists the tool, a
//! server's own request to its running actor; a wait for the next
//! snapshot through a restart (within the call's deadline); an error
//! saying why otherwise — a server still on its first start, failed,
//! waiting for a login, or a name nobody lists.

use std::sync::Arc;
use std::time::Duration;

use ractor::ActorId;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use super::Resolved;
use crate::error::CallError;
use crate::registry::{ServerState, Snapshot, ToolEntry};
use crate::server_actor::ServerRef;
use crate::server_settings::ServerSettings;

/// What to do with a call given one snapshot.
pub(super) enum Route<T> {
    /// Send it here.
    Go(T),
    /// Wait for the next snapshot.
    Wait,
    /// Give up with this error.
    Fail(CallError),
}

/// Where one attempt of a tool call goes.
pub(super) struct Target {
    pub(super) server: ServerRef,
    /// The tool's entry, shared with the snapshot (not its names copied):
    /// the server's own name for it, and whether it is a wrapper.
    pub(super) tool: Arc<ToolEntry>,
    /// Whether the call may be repeated if the server crashes running it.
    pub(super) repeatable: bool,
    /// The tool must run as a task (`execution.taskSupport: "required"`).
    pub(super) as_task: bool,
}

/// What one attempt waits for.
pub(super) struct Wait<'a> {
    pub(super) name: &'a str,
    pub(super) server: &'a str,
    /// Step 1's finding, for a first attempt.
    pub(super) resolved: Option<Resolved<'a>>,
    /// The actor the previous attempt lost its call to.
    pub(super) failed_actor: Option<ActorId>,
    pub(super) deadline: Instant,
    /// The request's timeout, which the deadline ends.
    pub(super) timeout: Duration,
    pub(super) settings: &'a ServerSettings,
}

/// How a snapshot routes an attempt: [`tool_route`] or [`server_route`].
type Router<T> = fn(&Snapshot, &Wait<'_>) -> Route<T>;

/// Waits until the server can take the call, or says why it cannot. The
/// latest snapshot decides most calls at once; only a wait (a restart, a
/// registry not yet told of a crash) needs the snapshot channel.
pub(super) async fn wait_for_route<T>(
    snapshots: &watch::Receiver<Arc<Snapshot>>,
    wait: Wait<'_>,
    route: Router<T>,
) -> Result<T, CallError> {
    let routed = route(&snapshots.borrow(), &wait);
    match routed {
        Route::Go(target) => Ok(target),
        Route::Fail(error) => Err(error),
        // Boxed: its timer and channel futures would otherwise make every
        // call's future larger (moved whole on every call).
        Route::Wait => Box::pin(wait_for_next_route(snapshots.clone(), wait, route)).await,
    }
}

/// Waits for snapshots until one routes the call, within its deadline.
async fn wait_for_next_route<T>(
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    wait: Wait<'_>,
    route: Router<T>,
) -> Result<T, CallError> {
    let Wait { name, server, deadline, .. } = wait;
    loop {
        let routed = route(&snapshots.borrow_and_update(), &wait);
        match routed {
            Route::Go(target) => return Ok(target),
            Route::Fail(error) => return Err(error),
            Route::Wait => {}
        }
        match tokio::time::timeout_at(deadline, snapshots.changed()).await {
            Ok(Ok(())) => {}
            // The Registry is gone: Warden is shutting down.
            Ok(Err(_)) => return Err(unavailable(&snapshots.borrow(), name)),
            Err(_) => {
                let timeout = wait.timeout;
                return Err(CallError::RestartTimeout { server: server.to_string(), name: name.to_string(), timeout });
            }
        }
    }
}

/// Where a tool call goes: its server must be running and list the tool.
pub(super) fn tool_route(snapshot: &Snapshot, wait: &Wait<'_>) -> Route<Target> {
    let Wait { name, server, failed_actor, settings, .. } = *wait;
    let Some(entry) = snapshot.servers.get(server) else {
        return Route::Fail(CallError::UnknownTool { name: name.to_string() });
    };
    match &entry.status.state {
        ServerState::Running => match (&entry.actor, wait.tool_in(snapshot)) {
            // The snapshot still names the actor that just failed: the
            // Registry has not heard yet.
            (Some(to), _) if Some(to.actor.get_id()) == failed_actor => Route::Wait,
            (Some(to), Some(tool)) => Route::Go(Target {
                server: to.clone(),
                tool: Arc::clone(tool),
                // Wrappers only read; the server's tools as configured.
                repeatable: tool.primitive_tool.is_some()
                    || crate::server_settings::repeatable(settings.crash_retry, &tool.tool),
                as_task: tool
                    .tool
                    .extra
                    .get("execution")
                    .and_then(|execution| execution.get("taskSupport"))
                    .and_then(Value::as_str)
                    == Some("required"),
            }),
            // The restarted server no longer lists the tool.
            (Some(_), None) => Route::Fail(CallError::UnknownTool { name: name.to_string() }),
            (None, _) => Route::Wait,
        },
        ServerState::Restarting { .. } => Route::Wait,
        ServerState::Starting if failed_actor.is_none() => Route::Fail(unavailable(snapshot, name)),
        ServerState::Starting => Route::Wait,
        ServerState::Failed { .. } | ServerState::NeedsLogin { .. } => Route::Fail(unavailable(snapshot, name)),
    }
}

impl Wait<'_> {
    /// The tool's entry in `snapshot`: step 1's when step 1 read this very
    /// snapshot (a lookup would find the same), else looked up.
    fn tool_in<'s>(&'s self, snapshot: &'s Snapshot) -> Option<&'s Arc<ToolEntry>> {
        match self.resolved {
            Some(resolved) if std::ptr::eq(snapshot, resolved.snapshot) => Some(resolved.entry),
            _ => snapshot.tools.get(self.name),
        }
    }
}

/// Where a request of the server's own goes: only the server's state
/// matters.
pub(super) fn server_route(snapshot: &Snapshot, wait: &Wait<'_>) -> Route<ServerRef> {
    let Some(entry) = snapshot.servers.get(wait.server) else {
        return Route::Fail(CallError::UnknownTool { name: wait.name.to_string() });
    };
    let names = || (wait.server.to_string(), wait.name.to_string());
    match (&entry.status.state, &entry.actor) {
        (ServerState::Running, Some(to)) if Some(to.actor.get_id()) != wait.failed_actor => Route::Go(to.clone()),
        (ServerState::Running, _) | (ServerState::Restarting { .. }, _) => Route::Wait,
        (ServerState::Starting, _) if wait.failed_actor.is_some() => Route::Wait,
        (ServerState::Starting, _) => {
            let (server, name) = names();
            Route::Fail(CallError::ServerStarting { server, name })
        }
        (ServerState::Failed { reason }, _) => {
            let (server, name) = names();
            Route::Fail(CallError::ServerFailed { server, name, reason: reason.clone() })
        }
        (ServerState::NeedsLogin { reason }, _) => {
            let (server, name) = names();
            Route::Fail(CallError::NeedsLogin { server, name, reason: reason.clone() })
        }
    }
}

/// The most useful error for a name that cannot be called right now.
pub(crate) fn unavailable(snapshot: &Snapshot, name: &str) -> CallError {
    let Some((server, _)) = snapshot.names.split(name) else {
        return CallError::UnknownTool { name: name.to_string() };
    };
    let (server, name) = (server.to_string(), name.to_string());
    match snapshot.servers.get(&server).map(|entry| &entry.status.state) {
        Some(ServerState::Starting) => CallError::ServerStarting { server, name },
        Some(ServerState::Failed { reason }) => CallError::ServerFailed { server, name, reason: reason.clone() },
        Some(ServerState::NeedsLogin { reason }) => CallError::NeedsLogin { server, name, reason: reason.clone() },
        // A name its server does not list: it never came up (so it may yet
        // have the tool), or it did and does not have it.
        Some(ServerState::Restarting { .. }) if !entry_ran(snapshot, &server) => {
            CallError::ServerStarting { server, name }
        }
        Some(ServerState::Running | ServerState::Restarting { .. }) | None => CallError::UnknownTool { name },
    }
}

fn entry_ran(snapshot: &Snapshot, server: &str) -> bool {
    snapshot.servers.get(server).is_some_and(|entry| entry.ran)
}
