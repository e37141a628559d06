//! Find the running daemon, or start one and wait for it.
//!
//! A lockfile alone proves nothing: the daemon may have been SIGKILLed, the
//! machine rebooted, or the pid reused. So a client believes a lockfile
//! only when its pid is alive, somebody holds the single-instance lock, and
//! its address accepts a connection. When the pid is dead or nobody holds
//! the lock, the lockfile is stale: it is removed (under that lock, so a
//! live daemon's file is never touched) and a daemon is started. When the
//! lock is held but there is no lockfile, or its address refuses, a daemon
//! is starting or stopping: the client waits for it.
//!
//! Two clients that start a daemon at the same moment each start one; the
//! loser cannot take the lock and exits quietly, and both clients find the
//! winner's lockfile. The wait is bounded ([`SPAWN_PATIENCE`]); a daemon
//! that exits with an error ends it at once. Either way the error quotes
//! the daemon's last log lines.

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use tokio::time::Instant;

use super::connection::Client;
use super::spawn;
use crate::daemon::lockfile::{pid_alive, Lockfile};
use crate::daemon::pid_lock;
use crate::daemon::state_dir::StateDir;
use crate::usage::{UsageError, NO_CONFIG};

/// How long a client waits for a daemon it started to publish its lockfile.
/// The daemon publishes as soon as it listens (servers start afterwards),
/// so this covers a slow machine, not slow servers.
const SPAWN_PATIENCE: Duration = Duration::from_secs(20);

/// How often the lockfile is looked at while waiting.
const POLL: Duration = Duration::from_millis(20);

/// The most daemons one client starts (after a lost race whose winner then
/// went away, say) before giving up.
const MAX_SPAWNS: u32 = 3;

/// Log lines quoted when a daemon does not come up.
const LOG_LINES: usize = 15;

/// Why no daemon could be reached.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FindError {
    /// The daemon exited or never published its lockfile.
    #[error("the warden daemon could not be started: {problem}; its last log lines ({log}):\n{tail}\nfix the problem above, or run the command with --no-daemon to skip the daemon")]
    NotStarted {
        /// What happened.
        problem: String,
        /// Where the log is.
        log: String,
        /// Its last lines.
        tail: String,
    },
    /// Starting the process failed.
    #[error("the warden daemon could not be started: {0}; run the command with --no-daemon to skip the daemon")]
    Spawn(std::io::Error),
}

/// What a probe of the state directory found.
enum Probe {
    Ready(Client),
    /// A lockfile whose daemon is gone.
    Stale,
    /// A daemon holds the lock but is not answering yet (or any more);
    /// its lockfile, if it has one.
    Busy(Option<Lockfile>),
    /// No daemon and no lockfile.
    Nothing,
}

/// The running daemon, if there is one; never starts one.
pub(crate) async fn running(state: &StateDir) -> Option<Client> {
    match probe(state).await {
        Probe::Ready(client) => Some(client),
        Probe::Stale => {
            remove_stale(state);
            None
        }
        Probe::Busy(_) | Probe::Nothing => None,
    }
}

/// `client`, a running daemon's connection, for `config`: its config
/// checked against the one asked for, and said with `verbose` (`started`:
/// this command started it).
pub(crate) fn adopt(client: Client, config: Option<&Path>, verbose: bool, started: bool) -> anyhow::Result<Client> {
    check_config(&client, config)?;
    if verbose {
        let how = if started { "started" } else { "using" };
        eprintln!(
            "[warden: {how} daemon pid {} on {} for {}]",
            client.lockfile.pid,
            client.endpoint,
            client.lockfile.config.display()
        );
    }
    Ok(client)
}

/// The running daemon, started first (for `config`, absolute) if none runs.
/// With `config` `None`, only a running daemon will do.
pub(crate) async fn connect(state: &StateDir, config: Option<&Path>, verbose: bool) -> anyhow::Result<Client> {
    state.create()?;
    let deadline = Instant::now() + SPAWN_PATIENCE;
    let mut child: Option<Child> = None;
    let mut spawns = 0;
    loop {
        let mut unresponsive = None;
        match probe(state).await {
            Probe::Ready(client) => return adopt(client, config, verbose, child.is_some()),
            Probe::Stale => remove_stale(state),
            Probe::Busy(lockfile) => unresponsive = lockfile,
            Probe::Nothing => {}
        }
        if let Some(running) = &mut child {
            if let Ok(Some(status)) = running.try_wait() {
                if !status.success() {
                    return Err(not_started(state, format!("it exited with {status}")).into());
                }
                // Exit 0: it lost the race for the lock; the winner is found
                // above, or, if the winner is gone too, another is started.
                child = None;
            }
        }
        if child.is_none() && !pid_lock::is_held(&state.pid_lock()) && Lockfile::read(&state.lockfile()).is_none() {
            let Some(config) = config else {
                return Err(UsageError(NO_CONFIG.into()).into());
            };
            if spawns == MAX_SPAWNS {
                return Err(not_started(state, format!("{MAX_SPAWNS} daemons started and none stayed")).into());
            }
            spawns += 1;
            child = Some(spawn::daemon(state, config).map_err(FindError::Spawn)?);
        }
        if Instant::now() >= deadline {
            if let Some(lockfile) = unresponsive {
                return Err(anyhow::anyhow!(
                    "the warden daemon (pid {pid}) does not accept connections on {address}; end it with `kill {pid}` \
                     and retry, or run the command with --no-daemon",
                    pid = lockfile.pid,
                    address = lockfile.address
                ));
            }
            let problem = format!("it did not publish its lockfile within {} s", SPAWN_PATIENCE.as_secs());
            return Err(not_started(state, problem).into());
        }
        tokio::time::sleep(POLL).await;
    }
}

async fn probe(state: &StateDir) -> Probe {
    let held = || pid_lock::is_held(&state.pid_lock());
    let Some(lockfile) = Lockfile::read(&state.lockfile()) else {
        return if held() { Probe::Busy(None) } else { Probe::Nothing };
    };
    // A live daemon holds the lock from before it writes its lockfile until
    // after it removes it: a lockfile nobody holds the lock for is stale,
    // whatever its pid now names (pids are reused, after a reboot say).
    if !pid_alive(lockfile.pid) || !held() {
        return Probe::Stale;
    }
    match Client::connect(lockfile.clone()).await {
        Ok(client) => Probe::Ready(client),
        // Listening is the last thing a daemon stops doing before it
        // removes its lockfile; wait for it to finish.
        Err(_) => Probe::Busy(Some(lockfile)),
    }
}

/// Removes a stale lockfile, holding the single-instance lock so that a
/// live daemon's lockfile is never the one removed.
fn remove_stale(state: &StateDir) {
    if let Ok(Some(_lock)) = pid_lock::try_lock(&state.pid_lock()) {
        tracing::info!("removing a stale lockfile {}", state.lockfile().display());
        let _ = std::fs::remove_file(state.lockfile());
    }
}

/// A daemon serving another config is not silently used for this one.
fn check_config(client: &Client, config: Option<&Path>) -> anyhow::Result<()> {
    match config {
        Some(config) if config != client.lockfile.config => Err(UsageError(format!(
            "the running warden daemon (pid {}) serves {}, not {}; stop it with `warden stop`, or run this command \
             with --no-daemon",
            client.lockfile.pid,
            client.lockfile.config.display(),
            config.display()
        ))
        .into()),
        _ => Ok(()),
    }
}

fn not_started(state: &StateDir, problem: String) -> FindError {
    FindError::NotStarted { problem, log: state.log().display().to_string(), tail: spawn::log_tail(state, LOG_LINES) }
}
