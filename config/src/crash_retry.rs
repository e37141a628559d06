//! `retry_after_crash`: what may be repeated after a server crashed while
//! a call was running on it.

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

    /// Whether a call may be repeated after a crash mid-call, given what the
    /// tool's annotations say of it.
    pub fn allows(self, read_only: bool, idempotent: bool) -> bool {
        match self {
            CrashRetry::Always => true,
            CrashRetry::Never => false,
            CrashRetry::Safe => read_only || idempotent,
        }
    }
}
