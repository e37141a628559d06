//! The `[daemon]` table: how `warden serve` listens and when it leaves.
//!
//! ```toml
//! [daemon]
//! listen = "127.0.0.1:0"        # a random loopback port (the default)
//! idle_timeout_minutes = 5      # exit after this long without requests (0: never)
//! allow_non_loopback = false    # true to listen on another interface
//! connection_idle_secs = 300     # close a client connection idle this long
//! log_max_mb = 10                # rotate daemon.log past this size
//! log_files = 3                  # rotated logs kept (daemon.log.1 … .3)
//! workers = 2                    # the daemon's threads (left out: one per core)
//! ```
//!
//! The bridge hands out every tool of every server to whoever has the token,
//! so it listens on loopback only unless the user says, in the config, that
//! they mean otherwise: a `listen = "0.0.0.0:…"` copied from somewhere is an
//! error that says how to allow it, not a daemon quietly open to the network.
//! The idle timeout is a float so tests (and impatient users) can use
//! seconds.
//!
//! `workers` is how many threads run the daemon's own work (tokio's worker
//! threads; the servers are processes of their own). One per core by
//! default, so a daemon under many clients uses the machine. One worker
//! saves the hand-offs between workers: on a 2-core machine a bridge call
//! cost the daemon about a quarter less CPU (`benches/bridge_latency.rs`
//! with `WARDEN_BENCH_DAEMON_WORKERS=1`), and since large messages leave
//! the worker (`protocol/src/heavy_work.rs`) a 10 MB result no longer
//! holds up the other calls (`benches/head_of_line.rs`); what it gives up
//! is a second core for Warden's own work under load.

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

/// The `[daemon]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// The address the bridge listens on; port 0 picks a free one.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// Minutes without a request (and without a call in flight) before the
    /// daemon exits.
    #[serde(default = "default_idle_timeout_minutes")]
    pub idle_timeout_minutes: f64,
    /// Allow a `listen` address that is not loopback.
    #[serde(default)]
    pub allow_non_loopback: bool,
    /// Seconds a client connection with no request in flight may go
    /// without sending a line before it is closed.
    #[serde(default = "default_connection_idle_secs")]
    pub connection_idle_secs: f64,
    /// The size in MiB past which `daemon.log` is rotated.
    #[serde(default = "default_log_max_mb")]
    pub log_max_mb: f64,
    /// How many rotated logs are kept beside `daemon.log`.
    #[serde(default = "default_log_files")]
    pub log_files: u32,
    /// The daemon's worker threads; `None`: one per core.
    #[serde(default)]
    pub workers: Option<u32>,
}

/// The most worker threads `workers` may ask for: more than any machine
/// Warden runs on has cores; a typo of a few zeros is an error.
const MAX_WORKERS: u32 = 1024;

/// The default for `idle_timeout_minutes`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The default for `connection_idle_secs`.
const DEFAULT_CONNECTION_IDLE: Duration = Duration::from_secs(5 * 60);

fn default_connection_idle_secs() -> f64 {
    DEFAULT_CONNECTION_IDLE.as_secs_f64()
}

fn default_log_max_mb() -> f64 {
    10.0
}

fn default_log_files() -> u32 {
    3
}

fn default_listen() -> String {
    "127.0.0.1:0".into()
}

fn default_idle_timeout_minutes() -> f64 {
    DEFAULT_IDLE_TIMEOUT.as_secs_f64() / 60.0
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            listen: default_listen(),
            idle_timeout_minutes: default_idle_timeout_minutes(),
            allow_non_loopback: false,
            connection_idle_secs: default_connection_idle_secs(),
            log_max_mb: default_log_max_mb(),
            log_files: default_log_files(),
            workers: None,
        }
    }
}

impl DaemonConfig {
    /// The checked listen address.
    pub fn listen_addr(&self) -> Result<SocketAddr, (&'static str, String)> {
        checked_listen("daemon", &self.listen, "127.0.0.1:0", self.allow_non_loopback)
    }

    /// How long without requests before the daemon exits; `None` for
    /// `idle_timeout_minutes = 0`: never (a daemon run as a service).
    pub fn idle_timeout(&self) -> Option<Duration> {
        (self.idle_timeout_minutes > 0.0).then(|| Duration::from_secs_f64(self.idle_timeout_minutes * 60.0))
    }

    /// How long an idle client connection is kept.
    pub fn connection_idle(&self) -> Duration {
        Duration::from_secs_f64(self.connection_idle_secs)
    }

    /// The size in bytes past which `daemon.log` is rotated.
    pub fn log_max_bytes(&self) -> u64 {
        (self.log_max_mb * 1024.0 * 1024.0) as u64
    }

    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        self.listen_addr()?;
        let minutes = self.idle_timeout_minutes;
        if !(minutes.is_finite() && minutes >= 0.0) {
            return Err((
                "daemon.idle_timeout_minutes",
                format!("must be a number of minutes (0: never exit on idleness), not {minutes}"),
            ));
        }
        let positive = [
            ("daemon.connection_idle_secs", self.connection_idle_secs, "seconds"),
            ("daemon.log_max_mb", self.log_max_mb, "MiB"),
        ];
        for (field, value, unit) in positive {
            if !(value.is_finite() && value > 0.0) {
                return Err((field, format!("must be a positive number of {unit}, not {value}")));
            }
        }
        if self.log_files == 0 {
            return Err(("daemon.log_files", "must be at least 1 (the rotated log kept beside daemon.log)".into()));
        }
        if let Some(workers) = self.workers.filter(|workers| !(1..=MAX_WORKERS).contains(workers)) {
            return Err((
                "daemon.workers",
                format!("must be from 1 to {MAX_WORKERS} threads (leave it out for one per core), not {workers}"),
            ));
        }
        Ok(())
    }
}

/// `listen` of table `[table]` as an address, refused when it is not
/// loopback unless `allow_non_loopback` says the user means it: whoever
/// reaches it with a token can run every tool. `example` is shown in the
/// error for text that is no address.
pub(crate) fn checked_listen(
    table: &'static str,
    listen: &str,
    example: &str,
    allow_non_loopback: bool,
) -> Result<SocketAddr, (&'static str, String)> {
    let field = match table {
        "daemon" => "daemon.listen",
        "metrics" => "metrics.listen",
        _ => "front.listen",
    };
    let addr: SocketAddr = listen
        .parse()
        .map_err(|_| (field, format!("must be an IP address and port such as \"{example}\", not \"{listen}\"")))?;
    if !addr.ip().is_loopback() && !allow_non_loopback {
        return Err((
            field,
            format!(
                "is {addr}, which is not a loopback address: anyone who can reach it and has the token can run \
                 every tool; set `allow_non_loopback = true` in [{table}] if you mean it"
            ),
        ));
    }
    Ok(addr)
}
