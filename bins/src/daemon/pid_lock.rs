//! `daemon.pid.lock`: at most one daemon per state directory.
//!
//! The daemon takes an exclusive, non-blocking `flock` on this file before
//! it does anything else, and holds it until it has removed its lockfile and
//! shut its servers down. The kernel drops the lock when the process dies,
//! however it dies, so the lock (unlike a pid in a file) cannot go stale.
//! Two CLIs that both find no daemon may both start one: the second cannot
//! take the lock and exits quietly, and both CLIs find the first one's
//! lockfile. The file is opened close-on-exec, so the MCP servers the daemon
//! starts do not inherit the lock and keep it after the daemon is gone.

use std::fs::File;
use std::io::Write as _;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

/// The held lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub(crate) struct PidLock {
    file: File,
}

/// Takes the lock if nobody holds it; `None` when somebody does.
pub(crate) fn try_lock(path: &Path) -> std::io::Result<Option<PidLock>> {
    let file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)?;
    // SAFETY: flock on a descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let error = std::io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::EWOULDBLOCK) => Ok(None),
            _ => Err(error),
        };
    }
    Ok(Some(PidLock { file }))
}

impl PidLock {
    /// Writes this process's id into the file, for people looking.
    pub(crate) fn record_pid(&mut self) {
        let _ = self.file.set_len(0);
        let _ = writeln!(self.file, "{}", std::process::id());
    }
}

/// True while a daemon holds the lock (it is running, starting or stopping).
pub(crate) fn is_held(path: &Path) -> bool {
    matches!(try_lock(path), Ok(None))
}

#[cfg(test)]
mod tests;
