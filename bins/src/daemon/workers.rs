//! How many worker threads the daemon runs on: `[daemon] workers`.
//!
//! The runtime is built before any command runs (`main.rs`), so for
//! `warden serve` the config is read for this one setting first. A config
//! that cannot be read here gives the default, one worker per core: the
//! daemon reads it again as it starts and reports what is wrong then, with
//! its exit code.

use warden_config::{Discovered, WardenConfig};

use crate::cli::Command;

/// The worker threads `command` asks for: `Some` only for `warden serve`
/// with a config that sets `workers`.
pub(crate) fn workers(command: &Command) -> Option<usize> {
    let Command::Serve { config, .. } = command else { return None };
    match WardenConfig::discover(config.as_deref()).ok()? {
        Discovered::Loaded { config, .. } => config.daemon.workers.map(|workers| workers as usize),
        _ => None,
    }
}

/// What the start line says of the threads the daemon runs on.
pub(crate) fn described() -> String {
    let workers = tokio::runtime::Handle::try_current().map(|handle| handle.metrics().num_workers()).unwrap_or(1);
    format!("{workers} worker thread{}", if workers == 1 { "" } else { "s" })
}
