//! `warden serve` as a service runs it: distinct exit codes a service
//! manager can act on (2: the config is invalid, 3: the address is taken)
//! and JSON log lines for log collectors.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;

use common::{stderr, Home};

#[test]
fn a_bad_config_exits_2_and_a_taken_port_exits_3() {
    let home = Home::new("serve-exit-codes");
    std::fs::write(&home.config, "[servers.a]\ncomand = \"x\"\n").unwrap();
    let output = home.command(&["serve", "--config"]).arg(&home.config).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("unknown field `comand`"), "{}", stderr(&output));

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    home.write(&["test"], &format!("[daemon]\nlisten = \"127.0.0.1:{port}\"\n"));
    let output = home.command(&["serve", "--config"]).arg(&home.config).output().unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("error: cannot listen on 127.0.0.1:{port}: Address already in use")),
        "{}",
        stderr(&output)
    );
}

#[test]
fn log_format_json_writes_one_json_object_per_line() {
    let home = Home::with_test_server("serve-json", "");
    let mut child = home
        .command(&["serve", "--log-format", "json", "--config"])
        .arg(&home.config)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.next().expect("a log line").unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let record: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(record["level"], "INFO", "{record}");
    assert!(record["fields"]["message"].as_str().is_some_and(|message| !message.is_empty()), "{record}");
    assert!(record["timestamp"].is_string(), "{record}");
}
