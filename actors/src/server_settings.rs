//! One server's limits, timeouts and restart schedule.
//!
//! Kept apart from the actors that use them: the ServerActor reads the
//! limits, the ServerSupervisor the restart schedule, and the `Warden` handle
//! the call timeout and what may be repeated after a crash.

use std::time::Duration;

use warden_protocol::Tool;

/// What Warden may repeat after a server crashed while a call was running
/// on it (the server had the request; nobody knows whether it acted on it).
/// A call whose request never reached the server is always repeated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrashRetry {
    /// Only tools the server annotates `readOnlyHint` or `idempotentHint`.
    #[default]
    Safe,
    /// Every tool: the server's tools are all safe to repeat.
    Always,
    /// None: a crash mid-call is always the caller's to handle.
    Never,
}

impl CrashRetry {
    /// Reads the config spelling: `safe`, `always` or `never`.
    pub fn parse(text: &str) -> Option<CrashRetry> {
        match text {
            "safe" => Some(CrashRetry::Safe),
            "always" => Some(CrashRetry::Always),
            "never" => Some(CrashRetry::Never),
            _ => None,
        }
    }

    /// Whether a call to `tool` may be repeated after a crash mid-call.
    pub fn allows(self, tool: &Tool) -> bool {
        match self {
            CrashRetry::Always => true,
            CrashRetry::Never => false,
            CrashRetry::Safe => tool
                .annotations
                .as_ref()
                .is_some_and(|hints| hints.read_only_hint == Some(true) || hints.idempotent_hint == Some(true)),
        }
    }
}

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
    pub restart_delay: Duration,
    /// What may be repeated after a crash mid-call.
    pub crash_retry: CrashRetry,
    /// The most text a wrapper tool (or a rendered result) hands a model.
    pub output_limit: usize,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            call_timeout: crate::config::DEFAULT_CALL_TIMEOUT,
            startup_timeout: crate::config::DEFAULT_STARTUP_TIMEOUT,
            max_in_flight: 64,
            max_restarts: 5,
            restart_delay: Duration::from_secs(1),
            crash_retry: CrashRetry::Safe,
            output_limit: warden_policy::DEFAULT_OUTPUT_LIMIT,
        }
    }
}

impl ServerSettings {
    /// The delay before restart number `attempt` (1-based): 1 s, 2 s, 4 s...
    pub fn restart_delay(&self, attempt: u32) -> Duration {
        self.restart_delay.saturating_mul(1 << attempt.saturating_sub(1).min(20))
    }
}
