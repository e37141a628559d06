//! The bridge's Unix socket, `daemon.sock` in the state directory.
//!
//! The daemon listens here as well as on its loopback TCP port, with the
//! same protocol and the same token, and the `warden` CLI connects here
//! first. Two reasons:
//!
//! - **cost**: a request and its answer skip the TCP stack. On a 2-core
//!   machine, where every process on a call's path shares two CPUs, a relay
//!   that only forwards lines serves 1.19× the calls over a Unix socket that
//!   it serves over TCP, at 13.2 instead of 16.5 µs of CPU a call
//!   (`bridge_latency`'s breakdown);
//! - **who may connect**: the socket is `0600` in a `0700` directory, so
//!   only its owner can reach it at all — the token still has to match.
//!
//! The TCP port stays: clients that cannot speak to a Unix socket, and
//! lockfiles read by older CLIs, use it. When the socket cannot be made —
//! a state directory whose path is too long for one (a socket's path holds
//! at most 107 bytes), a file system that has none — the daemon says so and
//! serves TCP alone; clients find no `socket` in the lockfile.
//!
//! A socket file left by a daemon that died is removed before binding:
//! the daemon holds the single-instance lock by then, so no live daemon
//! owns it.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use tokio::net::UnixListener;

/// The longest path a Unix socket's address holds (`sun_path`, less its
/// terminating zero).
const MAX_PATH_BYTES: usize = 107;

/// The daemon's socket at `path`: bound, `0600`; `None` (said in the log)
/// when it cannot be had, and TCP serves alone.
pub(crate) fn bind(path: &Path) -> Option<UnixListener> {
    let length = path.as_os_str().len();
    if length > MAX_PATH_BYTES {
        tracing::info!(
            "no Unix socket: its path {} is {length} bytes, over the {MAX_PATH_BYTES} a socket's path holds \
             (a shorter WARDEN_HOME gives one); clients use TCP",
            path.display()
        );
        return None;
    }
    let _ = std::fs::remove_file(path);
    let bound = UnixListener::bind(path)
        .and_then(|listener| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map(|()| listener));
    match bound {
        Ok(listener) => Some(listener),
        Err(error) => {
            tracing::warn!("no Unix socket at {}: {error}; clients use TCP", path.display());
            let _ = std::fs::remove_file(path);
            None
        }
    }
}

/// Removes the socket at `path` (the daemon stops accepting).
pub(crate) fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}
