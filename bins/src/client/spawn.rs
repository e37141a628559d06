//! Starting a daemon that outlives the command that started it.
//!
//! The daemon is this same executable run as `warden serve --detached`, in
//! a new session (`setsid`), so the terminal's hangup and Ctrl-C do not
//! reach it; its stdin is empty and its stdout and stderr go to `daemon.log`
//! (`0600`) next to the lockfile — the only place a detached process can
//! say why it did not start, which is why the CLI quotes its last lines.

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::OpenOptionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::daemon::state_dir::StateDir;

/// A log over this size is shifted to `daemon.log.1` before a new daemon
/// starts (the running daemon rotates it by the config's `log_max_mb`).
const LOG_ROTATE_BYTES: u64 = 1024 * 1024;

/// Rotated logs kept when a new daemon starts.
const LOG_FILES_KEPT: u32 = 3;

/// Starts `warden serve --detached --config <config>`.
pub(crate) fn daemon(state: &StateDir, config: &Path) -> std::io::Result<Child> {
    let log_path = state.log();
    if std::fs::metadata(&log_path).is_ok_and(|meta| meta.len() > LOG_ROTATE_BYTES) {
        crate::daemon::shift_log(&log_path, LOG_FILES_KEPT);
    }
    let log = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(&log_path)?;
    let mut command = Command::new(std::env::current_exe()?);
    command
        .arg("serve")
        .arg("--detached")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: setsid and setrlimit are async-signal-safe, as pre_exec
    // requires.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            // The user's open-file limit, not the one this command raised:
            // the daemon remembers it for its servers.
            warden_protocol::restore_open_file_limit();
            Ok(())
        });
    }
    command.spawn()
}

/// The last `count` lines of the daemon's log, indented for an error message.
pub(crate) fn log_tail(state: &StateDir, count: usize) -> String {
    let Ok(file) = std::fs::File::open(state.log()) else {
        return format!("  (no log at {})", state.log().display());
    };
    let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
    let tail = &lines[lines.len().saturating_sub(count)..];
    if tail.is_empty() {
        return "  (the log is empty)".into();
    }
    tail.iter().map(|line| format!("  {line}")).collect::<Vec<_>>().join("\n")
}
