//! Live config reload against a real daemon with real servers: `warden
//! reload` and SIGHUP re-read the config file; added servers start, removed
//! ones stop after their calls in flight, changed ones restart (a new pid),
//! unchanged ones are not touched, and a broken file changes nothing.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::json;
use warden_tests::{process_alive, wait_until_gone};

#[test]
fn reload_adds_removes_and_restarts_servers_and_leaves_the_others_alone() {
    let home = Home::new("reload-cli");
    home.write(&["keep", "gone", "changing"], "");
    let keep = home.pid_of("keep");
    let gone = home.pid_of("gone");
    let changing = home.pid_of("changing");

    // Calls in flight on the server that stays and on the one that goes.
    let (mut on_keep, _) = home.connect();
    on_keep.send_request(json!({"op": "call_tool", "name": "keep__sleep", "args": {"ms": 1500}}));
    let (mut on_gone, _) = home.connect();
    on_gone.send_request(json!({"op": "call_tool", "name": "gone__sleep", "args": {"ms": 1500}}));
    std::thread::sleep(Duration::from_millis(300));

    home.write(&["keep", "changing", "added"], "[servers.changing.env]\nMARK = \"2\"\n");
    let output = home.reload();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed = stdout(&output);
    let expected = format!(
        "reloaded {}\n  added: added\n  removed: gone\n  restarted: changing\n  unchanged: keep\n",
        home.config.display()
    );
    assert_eq!(printed, expected);

    assert_eq!(on_keep.answer().unwrap()["result"]["content"][0]["text"], "slept 1500 ms");
    assert_eq!(on_gone.answer().unwrap()["result"]["content"][0]["text"], "slept 1500 ms");
    assert!(wait_until_gone(gone, Duration::from_secs(10)), "the removed server's process is stopped");
    assert!(!process_alive(changing), "the changed server's old process is stopped");
    assert_eq!(home.pid_of("keep"), keep);
    let restarted = home.pid_of("changing");
    assert_ne!(restarted, changing);
    assert!(process_alive(restarted));
    assert_eq!(home.call("added__echo", r#"{"message":"hi"}"#), "hi");

    let output = home.warden(&["call", "gone__echo"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("unknown tool 'gone__echo'"), "{}", stderr(&output));
    let output = home.warden(&["tools"]);
    let listed = stdout(&output);
    assert!(listed.contains("added__echo") && !listed.contains("gone__"), "{listed}");
}

#[test]
fn a_broken_config_is_refused_with_the_reason_and_the_running_one_keeps_serving() {
    let home = Home::new("reload-broken");
    home.write(&["test"], "");
    let server = home.pid_of("test");

    std::fs::write(&home.config, "[servers.test\ncommand = 'x'\n").unwrap();
    let output = home.reload();
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let error = stderr(&output);
    assert!(error.contains("the config was not reloaded; the running one stays in place:"), "{error}");
    assert!(error.contains(&home.config.display().to_string()), "{error}");

    let (mut connection, _) = home.connect();
    connection.send_request(json!({"op": "reload"}));
    let answer = connection.answer().unwrap();
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["error"]["code"], "config_invalid");

    // A change the daemon cannot make live is refused the same way.
    home.write(&["test", "other"], "[naming]\nseparator = \"_\"\n");
    connection.send_request(json!({"op": "reload"}));
    let answer = connection.answer().unwrap();
    assert_eq!(answer["error"]["code"], "reload_refused");
    assert!(answer["error"]["message"].as_str().unwrap().contains("`[naming]`"), "{answer}");

    assert_eq!(home.pid_of("test"), server);
    let output = home.warden(&["tools"]);
    assert!(!stdout(&output).contains("other"), "{}", stdout(&output));
}

#[test]
fn sighup_reloads_the_config_and_logs_it() {
    let home = Home::new("reload-sighup");
    home.write(&["test"], "");
    let server = home.pid_of("test");
    let daemon = home.daemon_pid();

    home.write(&["test", "added"], "");
    unsafe { libc::kill(daemon as i32, libc::SIGHUP) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !home.log().contains("config reloaded") {
        assert!(Instant::now() < deadline, "no reload logged: {}", home.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(process_alive(daemon), "SIGHUP does not stop the daemon");
    assert_eq!(home.call("added__echo", r#"{"message":"hi"}"#), "hi");
    assert_eq!(home.pid_of("test"), server);
    assert!(home.log().contains("SIGHUP received: reloading"), "{}", home.log());

    // A broken file on SIGHUP is logged, and nothing changes.
    std::fs::write(&home.config, "not = [toml").unwrap();
    unsafe { libc::kill(daemon as i32, libc::SIGHUP) };
    while !home.log().contains("the config was not reloaded") {
        assert!(Instant::now() < deadline, "no refusal logged: {}", home.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The CLI would refuse the broken file itself; ask the daemon directly.
    let (mut connection, _) = home.connect();
    connection.send_request(json!({"op": "call_tool", "name": "test__pid", "args": {}}));
    assert_eq!(connection.answer().unwrap()["result"]["content"][0]["text"], server.to_string());
}

#[test]
fn a_reload_that_changes_only_tool_filters_and_renames_keeps_the_server_running() {
    let home = Home::new("reload-reshape");
    home.write(&["test"], "");
    let server = home.pid_of("test");

    home.write(&["test"], "disabled_tools = [\"sleep\"]\n[servers.test.rename]\necho = \"say\"\n");
    let output = home.reload();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let expected =
        format!("reloaded {}\n  unchanged: test\n  tools filtered or renamed anew: test\n", home.config.display());
    assert_eq!(stdout(&output), expected);

    let deadline = Instant::now() + Duration::from_secs(10);
    while !stdout(&home.warden(&["tools"])).contains("test__say") {
        assert!(Instant::now() < deadline, "the renamed tool never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(home.call("test__say", r#"{"message":"renamed"}"#), "renamed");
    let listed = stdout(&home.warden(&["tools"]));
    assert!(!listed.contains("test__echo") && !listed.contains("test__sleep"), "{listed}");
    let output = home.warden(&["call", "test__echo", r#"{"message":"old"}"#]);
    assert!(stderr(&output).contains("unknown tool 'test__echo'"), "{}", stderr(&output));
    assert_eq!(home.pid_of("test"), server, "the server was not restarted");
}
