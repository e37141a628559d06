//! `warden status --watch`: refreshed views of the daemon's servers and of
//! what waits for a person, until Ctrl-C (which ends it at once, exit 0).

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Home;

#[test]
fn status_watch_refreshes_until_ctrl_c() {
    let home = Home::with_test_server("status-watch", "");
    let server = home.pid_of("test");
    let mut child = home
        .command(&["status", "--watch", "--config"])
        .arg(&home.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut frames = 0;
    let mut seen = String::new();
    while frames < 3 {
        let line = lines.next().expect("the view goes on").unwrap();
        if line.starts_with("--- at ") {
            frames += 1;
        }
        seen += &line;
        seen.push('\n');
    }
    assert!(seen.contains("daemon: pid "), "{seen}");
    assert!(seen.contains(&format!("pid {server}")) && seen.contains("running"), "the server's row: {seen}");
    assert!(seen.contains("nothing is waiting for a person"), "{seen}");

    let asked = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(asked.elapsed() < Duration::from_secs(2), "Ctrl-C ends it at once");
}
