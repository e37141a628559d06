//! The daemon's Unix socket: private, token-checked like TCP, used by the
//! CLI, gone when the daemon stops — and, where a socket cannot be made,
//! TCP alone with the reason in the log. Real daemon, real socket.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// Sends each line on a new connection to the socket at `path` and reads
/// one answer per line; `None` for an answer once the daemon closed it.
fn exchange(path: &Path, lines: &[Value]) -> Vec<Option<Value>> {
    let stream = UnixStream::connect(path).expect("the socket accepts");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    lines
        .iter()
        .map(|line| {
            if writeln!(writer, "{line}").is_err() {
                return None;
            }
            let mut answer = String::new();
            match reader.read_line(&mut answer) {
                Ok(0) | Err(_) => None,
                Ok(_) => Some(serde_json::from_str(&answer).unwrap_or_else(|_| panic!("not JSON: {answer}"))),
            }
        })
        .collect()
}

#[test]
fn the_daemon_listens_on_a_private_socket_that_the_cli_uses_and_that_needs_the_token() {
    let home = Home::with_test_server("daemon-socket", "");
    // What a daemon killed earlier left behind is replaced.
    std::fs::create_dir_all(&home.dir).unwrap();
    let socket = home.dir.join("daemon.sock");
    std::fs::write(&socket, "left by a daemon that died").unwrap();
    let pid = home.start_daemon();

    let lockfile = home.lockfile().expect("a lockfile");
    assert_eq!(lockfile["socket"], json!(socket.display().to_string()), "{lockfile}");
    assert!(std::fs::metadata(&socket).unwrap().file_type().is_socket());
    assert_eq!(mode(&socket), 0o600);

    // The CLI connects there, and says so.
    let output = home.warden(&["-v", "call", "test__echo", r#"{"message":"by socket"}"#]);
    assert_eq!(stdout(&output), "by socket\n", "{}", stderr(&output));
    let expected = format!("[warden: using daemon pid {pid} on {} for ", socket.display());
    assert!(stderr(&output).contains(&expected), "{}", stderr(&output));
    let status = stdout(&home.warden(&["status"]));
    assert!(status.contains(", listening on 127.0.0.1:"), "{status}");
    assert!(status.contains(&format!(" and {},", socket.display())), "{status}");

    // The same protocol and the same rule: no token, no service.
    let answers = exchange(&socket, &[json!({"op": "ping"}), json!({"op": "ping"})]);
    assert_eq!(answers[0].as_ref().unwrap()["error"]["code"], "unauthorized", "{answers:?}");
    assert_eq!(answers[1], None, "the connection is closed after");
    let token = lockfile["token"].as_str().unwrap();
    let call = json!({"op": "call_tool", "server": "test", "tool": "echo", "args": {"message": "raw"}, "token": token});
    let answers = exchange(&socket, &[json!({"op": "ping", "token": token, "id": 1}), call]);
    assert_eq!(answers[0].as_ref().unwrap()["result"]["pong"], true, "{answers:?}");
    assert_eq!(answers[1].as_ref().unwrap()["result"]["content"][0]["text"], "raw", "{answers:?}");

    // Stopped, the daemon takes its socket with it.
    let output = home.command(&["stop"]).output().unwrap();
    assert_eq!(stdout(&output), format!("stopped the warden daemon (pid {pid})\n"), "{}", stderr(&output));
    assert!(!socket.exists(), "the socket file is removed");
    assert!(home.lockfile().is_none());
}

#[test]
fn a_state_directory_too_long_for_a_socket_is_served_over_tcp_and_the_log_says_why() {
    let mut home = Home::with_test_server("daemon-socket-long", "");
    // A socket's path holds at most 107 bytes.
    home.dir = home.dir.join("a-state-directory-with-a-name-long-enough-that-no-unix-socket-fits-in-it-at-all");
    assert!(home.dir.join("daemon.sock").as_os_str().len() > 107);
    home.start_daemon();
    let lockfile = home.lockfile().expect("a lockfile");
    assert_eq!(lockfile.get("socket"), None, "{lockfile}");
    assert!(!home.dir.join("daemon.sock").exists());
    assert_eq!(home.call("test__echo", r#"{"message":"by tcp"}"#), "by tcp");
    let log = home.log();
    assert!(log.contains("no Unix socket: its path ") && log.contains("; clients use TCP"), "{log}");
}
