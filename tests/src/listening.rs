//! The TCP port a child process listens on, read from `/proc`, for servers
//! started on port 0 that do not say which port they got.
//!
//! Taking a free port, releasing it and handing it to a child races with
//! every other test doing the same: another test's listener can take it in
//! between. Most of our own listeners then fail with "Address already in
//! use", but server-everything binds the wildcard address with
//! `SO_REUSEADDR` and starts fine beside a listener on `127.0.0.1`, so a
//! test would talk to the other test's server. Port 0 cannot collide; this
//! finds out what the kernel gave: the child's socket inodes
//! (`/proc/PID/fd`) matched against the listening sockets of its network
//! namespace (`/proc/PID/net/tcp`, `tcp6`). A daemon names the ports it
//! got in `status` as URLs: [`url_port`] reads them.

use std::collections::HashSet;
use std::time::{Duration, Instant};

/// The ports `pid` listens on right now (empty if it is gone).
pub fn listening_ports(pid: u32) -> Vec<u16> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    let inodes: HashSet<String> = fds
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_str()?;
            Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state), Some(inode)) = (fields.get(1), fields.get(3), fields.get(9)) else {
                continue;
            };
            // 0A: TCP_LISTEN.
            if *state != "0A" || !inodes.contains(*inode) {
                continue;
            }
            let port = local.rsplit(':').next().and_then(|hex| u16::from_str_radix(hex, 16).ok());
            ports.extend(port.filter(|port| !ports.contains(port)));
        }
    }
    ports
}

/// The one port `pid` listens on, waited for (up to `limit`): panics,
/// naming `what`, if it never listens or listens on more than one.
pub fn listening_port(pid: u32, what: &str, limit: Duration) -> u16 {
    let deadline = Instant::now() + limit;
    loop {
        match listening_ports(pid).as_slice() {
            [port] => return *port,
            [] => assert!(Instant::now() < deadline, "{what} (pid {pid}) did not listen within {limit:?}"),
            many => panic!("{what} (pid {pid}) listens on several ports, {many:?}: which one is meant?"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The port of an `http://host:port/...` URL (as `warden status` names
/// the front and metrics), or `None` if it names none.
pub fn url_port(url: &str) -> Option<u16> {
    let address = url.strip_prefix("http://")?.split('/').next()?;
    address.parse::<std::net::SocketAddr>().ok().map(|address| address.port())
}
