//! `daemon.json`: how a client finds the running daemon.
//!
//! Written by the daemon once its listener is bound (not after its servers
//! have started: servers start in the background, and a client's first call
//! waits for them), removed when it exits. It says where the daemon listens,
//! which config it serves, and the token every request must carry, so it is
//! `0600` and written atomically — a temporary file in the same directory,
//! then `rename` — so a client never reads half of one.
//!
//! A lockfile can outlive its daemon (SIGKILL, a crash, a reboot). Clients
//! treat one as stale when its pid is gone or nobody holds the daemon's
//! single-instance lock ([`super::pid_lock`]), and remove it only while they
//! hold that lock themselves, so they never delete a live daemon's file.

use std::fmt;
use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a running daemon publishes.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Lockfile {
    /// The daemon's process id.
    pub(crate) pid: u32,
    /// Where the bridge listens.
    pub(crate) address: SocketAddr,
    /// The bridge's Unix socket, when it has one: the same protocol as
    /// `address`, cheaper per request, and reachable only by the user who
    /// owns the state directory. Absent from older daemons' lockfiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) socket: Option<PathBuf>,
    /// When the daemon started, in seconds since the Unix epoch.
    pub(crate) started_at: u64,
    /// The daemon's `warden` version.
    pub(crate) version: String,
    /// The secret every request carries.
    pub(crate) token: String,
    /// The config file it serves (absolute).
    pub(crate) config: PathBuf,
}

impl fmt::Debug for Lockfile {
    // Hand-written so that the token never reaches a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lockfile")
            .field("pid", &self.pid)
            .field("address", &self.address)
            .field("socket", &self.socket)
            .field("started_at", &self.started_at)
            .field("version", &self.version)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Lockfile {
    /// The lockfile at `path`; `None` when there is none, or when it cannot
    /// be read as one (a half-written file from an older version, say),
    /// which the caller then treats as stale.
    pub(crate) fn read(path: &Path) -> Option<Lockfile> {
        let text = std::fs::read_to_string(path).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes it to `path` atomically with mode `0600`.
    pub(crate) fn write(&self, path: &Path) -> std::io::Result<()> {
        let temporary = path.with_extension(format!("json.{}.tmp", self.pid));
        let mut file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temporary)?;
        let text = serde_json::to_string_pretty(self).expect("a lockfile always serialises");
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    }

    /// Removes the lockfile at `path` if it is this daemon's own.
    pub(crate) fn remove_if_ours(path: &Path, pid: u32) {
        if Lockfile::read(path).is_some_and(|lockfile| lockfile.pid == pid) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// True while a process with this id exists and has not exited.
///
/// A detached daemon's parent is whatever reaps orphans (init, a
/// container's first process), and some reap late: a daemon that exited
/// stays a zombie meanwhile (seen: a second), which signal 0 still finds.
/// `warden stop` would wait for the reaper; a zombie counts as gone.
pub(crate) fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 checks existence and permission; nothing is sent.
    let outcome = unsafe { libc::kill(pid, 0) };
    // EPERM: it exists but belongs to someone else.
    let exists = outcome == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && !is_zombie(pid)
}

/// Whether `/proc` says the process has exited and waits to be reaped
/// (false where there is no `/proc`).
fn is_zombie(pid: libc::pid_t) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // `pid (comm) state ...`: the name may hold spaces and parentheses, so
    // the state follows the last `)`.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) == Some("Z")
}

#[cfg(test)]
mod tests;
