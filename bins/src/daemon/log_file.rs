//! `daemon.log`, kept to a size.
//!
//! A detached daemon's stdout and stderr are `daemon.log` (the CLI opens it
//! before the daemon starts, so even a failure to start lands there). The
//! daemon's log lines go to its stderr through [`RotatingLog`], which counts
//! what it writes; past `[daemon] log_max_mb` it shifts `daemon.log` to
//! `daemon.log.1` (and `.1` to `.2`, …, keeping `log_files`), opens a new
//! `daemon.log` (`0600`) and puts it in place of stdout and stderr, so a
//! panic message or anything else the process prints follows into the new
//! file. The log's size is then bounded by about `log_max_mb × (log_files +
//! 1)`, whatever the servers write.

use std::io::Write;
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The daemon's log file, rotated by size. Clones share the file.
#[derive(Debug, Clone)]
pub(crate) struct RotatingLog {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    written: u64,
    max_bytes: u64,
    keep: u32,
}

/// The defaults until the config is read (`[daemon]`'s own defaults).
const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
const DEFAULT_KEEP: u32 = 3;

impl RotatingLog {
    /// The log at `path`, which is already this process's stderr.
    pub(crate) fn new(path: PathBuf) -> RotatingLog {
        let written = std::fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0);
        let inner = Inner { path, written, max_bytes: DEFAULT_MAX_BYTES, keep: DEFAULT_KEEP };
        RotatingLog { inner: Arc::new(Mutex::new(inner)) }
    }

    /// Applies the config's limits.
    pub(crate) fn set_limits(&self, max_bytes: u64, keep: u32) {
        let mut inner = self.lock();
        inner.max_bytes = max_bytes.max(1);
        inner.keep = keep.max(1);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Shifts `path` to `path.1`, `path.1` to `path.2`, …, dropping the one
/// past `keep`.
pub(crate) fn shift(path: &Path, keep: u32) {
    let numbered = |n: u32| PathBuf::from(format!("{}.{n}", path.display()));
    let _ = std::fs::remove_file(numbered(keep));
    for n in (1..keep).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    let _ = std::fs::rename(path, numbered(1));
}

impl Inner {
    fn rotate(&mut self) {
        shift(&self.path, self.keep);
        // Counted from zero either way: a file that cannot be opened must not
        // shift the kept logs again at every line.
        self.written = 0;
        let Ok(file) = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&self.path) else {
            // Keep writing where we were: a log too big beats no log.
            return;
        };
        // SAFETY: dup2 onto the process's own stdout and stderr; both stay
        // open (the new file replaces the old one atomically).
        unsafe {
            libc::dup2(file.as_raw_fd(), libc::STDOUT_FILENO);
            libc::dup2(file.as_raw_fd(), libc::STDERR_FILENO);
        }
    }
}

impl Write for RotatingLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut inner = self.lock();
        if inner.written > 0 && inner.written + bytes.len() as u64 > inner.max_bytes {
            inner.rotate();
        }
        std::io::stderr().write_all(bytes)?;
        inner.written += bytes.len() as u64;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RotatingLog {
    type Writer = RotatingLog;

    fn make_writer(&'a self) -> RotatingLog {
        self.clone()
    }
}

#[cfg(test)]
mod tests;
