//! The open-file limit: raised for Warden, put back for its servers.
//!
//! Each stdio server costs Warden about four descriptors (three pipes and
//! a pidfd), so the common soft limit of 1,024 stops a daemon at about 250
//! servers with "Too many open files". [`raise_open_file_limit`] lifts the
//! soft limit to the hard one, as Go's runtime does at start. Like Go, it
//! remembers the soft limit it found and gives it back to every server
//! process Warden starts (between fork and exec): a program using
//! `select()` breaks on descriptors above 1,024, and a server should get
//! the limit its user set, not Warden's.

use std::sync::atomic::{AtomicU64, Ordering};

/// The soft limit found before raising it; `u64::MAX`: not raised.
static ORIGINAL_SOFT: AtomicU64 = AtomicU64::new(u64::MAX);

/// What [`raise_open_file_limit`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFileLimit {
    /// The soft limit before.
    pub was: u64,
    /// The soft limit now (the hard limit, when it could be raised).
    pub now: u64,
}

/// Raises this process's soft open-file limit to its hard limit; the
/// limits before and after, or what the system said.
pub fn raise_open_file_limit() -> std::io::Result<OpenFileLimit> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let was = limit.rlim_cur;
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let _ = ORIGINAL_SOFT.compare_exchange(u64::MAX, was, Ordering::SeqCst, Ordering::SeqCst);
    }
    Ok(OpenFileLimit { was, now: limit.rlim_max })
}

/// In a process Warden starts (a server; the daemon a command starts),
/// between fork and exec: the soft limit Warden found, if it raised it, so
/// that the child starts from its user's limit (a daemon then raises its
/// own and remembers the user's for its servers). Only async-signal-safe
/// calls.
pub fn restore_open_file_limit() {
    let original = ORIGINAL_SOFT.load(Ordering::Relaxed);
    if original == u64::MAX {
        return;
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit are async-signal-safe and touch only
    // the struct on this stack.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = original.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt as _;

    use super::*;

    fn soft() -> (u64, u64) {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit writes into the struct it is given.
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        (limit.rlim_cur, limit.rlim_max)
    }

    #[test]
    fn the_soft_limit_rises_to_the_hard_one_and_servers_get_the_old_one() {
        // One below the hard limit, so that there is something to raise
        // (and nothing else in this process notices).
        let (_, hard) = soft();
        let lowered = libc::rlimit { rlim_cur: hard - 1, rlim_max: hard };
        // SAFETY: setrlimit reads the struct it is given.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
        let limit = raise_open_file_limit().unwrap();
        assert_eq!(limit, OpenFileLimit { was: hard - 1, now: hard });
        assert_eq!(soft().0, hard);
        let mut command = std::process::Command::new("sh");
        command.args(["-c", "ulimit -n"]);
        // SAFETY: restore_open_file_limit makes only async-signal-safe calls.
        unsafe {
            command.pre_exec(|| {
                restore_open_file_limit();
                Ok(())
            });
        }
        let told = String::from_utf8(command.output().unwrap().stdout).unwrap();
        if told.trim() != "unlimited" {
            assert_eq!(told.trim().parse::<u64>().unwrap(), hard - 1, "a server gets the limit from before");
        }
    }
}
