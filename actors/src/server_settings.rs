//! One server's limits, timeouts and restart schedule.
//!
//! Kept apart from the actors that use them: the ServerActor reads the
//! limits, the ServerSupervisor the restart schedule, and the `Warden` handle
//! the call timeout and what may be repeated after a crash.

use std::sync::Arc;
use std::time::Duration;

use warden_config::{
    CrashRetry, ProtocolChoice, ServerConfig, WardenConfig, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT,
};
use warden_protocol::{Authorizer, Tool};

/// How many pages of a paginated list (`tools/list`, and the resource and
/// prompt lists the primitive tools read) Warden follows before it stops:
/// a server that hands out cursors forever must not loop Warden.
pub(crate) const MAX_LIST_PAGES: usize = 100;

/// Limits, timeouts and the restart schedule of one server.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    /// How long one call may take, restarts included.
    pub call_timeout: Duration,
    /// How long handshake plus discovery may take.
    pub startup_timeout: Duration,
    /// How many calls are sent to the server at once.
    pub max_in_flight: usize,
    /// Consecutive restarts before the server is failed (0: never restart).
    pub max_restarts: u32,
    /// The first restart's delay; each further one doubles it.
    pub first_restart_delay: Duration,
    /// What may be repeated after a crash mid-call.
    pub crash_retry: CrashRetry,
    /// The most text a wrapper tool (or a rendered result) hands a model.
    pub output_limit: usize,
    /// A `url` server's OAuth side, whose tokens the leak checks know.
    pub oauth: Option<Arc<Authorizer>>,
    /// Which of its tools exist for callers, and under what names.
    pub tools: ToolShaping,
    /// Which MCP revision to speak (`protocol_version`).
    pub protocol: ProtocolChoice,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            max_in_flight: 64,
            max_restarts: 5,
            first_restart_delay: Duration::from_secs(1),
            crash_retry: CrashRetry::Safe,
            output_limit: warden_policy::DEFAULT_OUTPUT_LIMIT,
            oauth: None,
            tools: ToolShaping::default(),
            protocol: ProtocolChoice::Auto,
        }
    }
}

impl ServerSettings {
    /// The backoff before restart number `attempt` (1-based): the first
    /// restart's delay, doubled each time (1 s, 2 s, 4 s... by default).
    pub fn backoff(&self, attempt: u32) -> Duration {
        self.first_restart_delay.saturating_mul(1 << attempt.saturating_sub(1).min(20))
    }

    /// A configured server's limits, timeouts and restart schedule.
    pub fn of(server: &ServerConfig, config: &WardenConfig, oauth: Option<Arc<Authorizer>>) -> ServerSettings {
        let defaults = ServerSettings::default();
        // HTTP servers are not restarted: their errors go to the caller.
        let max_restarts = if server.url.is_some() { 0 } else { server.max_restarts.unwrap_or(defaults.max_restarts) };
        ServerSettings {
            call_timeout: config.call_timeout(),
            startup_timeout: server.startup_timeout(),
            max_restarts,
            first_restart_delay: server
                .restart_delay_secs
                .map(Duration::from_secs_f64)
                .unwrap_or(defaults.first_restart_delay),
            crash_retry: server.retry_after_crash.as_deref().and_then(CrashRetry::parse).unwrap_or_default(),
            output_limit: config.output_limit_bytes,
            oauth,
            tools: ToolShaping::of(server),
            protocol: server
                .protocol_version
                .as_deref()
                .and_then(|version| ProtocolChoice::parse(version).ok())
                .unwrap_or_default(),
            ..defaults
        }
    }
}

/// Whether a call to `tool` may be repeated under `policy` after a crash
/// mid-call.
pub(crate) fn repeatable(policy: CrashRetry, tool: &Tool) -> bool {
    let hints = tool.annotations.as_ref();
    let read_only = hints.is_some_and(|hints| hints.read_only_hint == Some(true));
    let idempotent = hints.is_some_and(|hints| hints.idempotent_hint == Some(true));
    policy.allows(read_only, idempotent)
}

mod shaping;
pub use shaping::{ShapedTools, ToolShaping};

#[cfg(test)]
mod tests;
