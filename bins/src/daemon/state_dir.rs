//! Where the daemon keeps its lockfile, its single-instance lock and its log.
//!
//! `WARDEN_HOME` when set (tests give each test its own), else
//! `$XDG_STATE_HOME/warden`, else `~/.local/state/warden`: state, not config
//! and not cache, in the XDG sense — it describes what is running now.
//! The directory is created `0700`, because the lockfile in it holds the
//! token that lets anyone run every tool.

use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// The daemon's files.
#[derive(Debug, Clone)]
pub(crate) struct StateDir {
    dir: PathBuf,
}

/// Why there is no state directory.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StateDirError {
    /// Neither `WARDEN_HOME`, `XDG_STATE_HOME` nor `HOME` is set.
    #[error("cannot tell where Warden keeps its state: set WARDEN_HOME (or XDG_STATE_HOME, or HOME)")]
    NoHome,
    /// It could not be created.
    #[error("cannot create Warden's state directory '{dir}': {source}")]
    Create {
        /// The directory.
        dir: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
}

impl StateDir {
    /// The directory for this user, from the environment.
    pub(crate) fn from_env() -> Result<StateDir, StateDirError> {
        Self::from_vars(|name| std::env::var_os(name))
    }

    /// The directory, with the environment read through `var`.
    fn from_vars(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<StateDir, StateDirError> {
        let dir = warden_config::state_home(var).ok_or(StateDirError::NoHome)?;
        Ok(StateDir { dir })
    }

    /// Creates the directory (`0700`) if it is missing.
    pub(crate) fn create(&self) -> Result<(), StateDirError> {
        let error = |source| StateDirError::Create { dir: self.dir.clone(), source };
        if !self.dir.is_dir() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir).map_err(error)?;
            // `recursive` applies the mode to each new parent too, but a
            // umask may have loosened the last one.
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700)).map_err(error)?;
        }
        Ok(())
    }

    /// The directory itself.
    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }

    /// `daemon.json`: where a running daemon is, and its token.
    pub(crate) fn lockfile(&self) -> PathBuf {
        self.dir.join("daemon.json")
    }

    /// `daemon.pid.lock`: held (flock) by the one running daemon.
    pub(crate) fn pid_lock(&self) -> PathBuf {
        self.dir.join("daemon.pid.lock")
    }

    /// `daemon.sock`: the bridge's Unix socket, beside its TCP port.
    pub(crate) fn socket(&self) -> PathBuf {
        self.dir.join("daemon.sock")
    }

    /// `daemon.log`: a detached daemon's stderr.
    pub(crate) fn log(&self) -> PathBuf {
        self.dir.join("daemon.log")
    }

    /// `eras.json`: the servers found to speak `initialize` only, so the
    /// next run does not wait out their silence to a probe again.
    pub(crate) fn eras(&self) -> PathBuf {
        self.dir.join("eras.json")
    }

    /// `tasks.json`: the server-side tasks of calls in flight, which a
    /// daemon that dies leaves to the next (`warden tasks`).
    pub(crate) fn tasks(&self) -> PathBuf {
        self.dir.join("tasks.json")
    }

    /// The era memo for a Warden started now, the directory made if need
    /// be; `None` (memory only) when there is no state directory to have.
    pub(crate) fn era_memo() -> Option<PathBuf> {
        let state = StateDir::from_env().ok()?;
        state.create().ok()?;
        Some(state.eras())
    }

    /// `audit.jsonl`: the record of every call (`[audit]`).
    pub(crate) fn audit_log(&self) -> PathBuf {
        self.dir.join("audit.jsonl")
    }
}

#[cfg(test)]
mod tests;
