//! Stopping a call: the bridge's `cancel` op, and Ctrl-C on `warden call`,
//! each cancelling the call in the daemon and at its server.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, ChildStderr, Stdio};
use std::time::Duration;

use common::{stderr, stdout, Home};
use serde_json::{json, Value};

/// The test server with a tool that sleeps and one that lists the
/// cancellations it received.
fn home(label: &str) -> Home {
    let home = Home::new(label);
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[security]\nauto_approve = true\n[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,sleep,cancellations,progress\"]\n"
    );
    std::fs::write(&home.config, config).unwrap();
    home
}

/// What the server says it was told to cancel.
fn cancellations(home: &Home) -> String {
    home.call("test__cancellations", "{}")
}

#[test]
fn cancel_stops_a_running_call_here_and_at_its_server_but_only_on_its_own_connection() {
    let home = home("cancel-op");
    home.start_daemon();
    assert_eq!(cancellations(&home), "cancelled: none");
    let (mut mine, _) = home.connect();
    let (mut other, _) = home.connect();
    mine.send_request(json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 60000}, "id": "slow"}));
    // Another connection cannot reach it, whatever id it names.
    other.send_request(json!({"op": "cancel", "request": "slow", "id": 1}));
    let refused = other.answer().unwrap();
    assert_eq!(refused["result"]["cancelled"], false, "{refused}");
    assert!(refused["result"]["why_not"].as_str().unwrap().contains("this connection"), "{refused}");
    std::thread::sleep(Duration::from_millis(300));
    mine.send_request(json!({"op": "cancel", "request": "slow", "id": "stop"}));
    let call = mine.answer().unwrap();
    assert_eq!(call["id"], "slow", "{call}");
    assert_eq!(call["ok"], false, "{call}");
    assert_eq!(call["error"]["code"], "cancelled", "{call}");
    let cancel = mine.answer().unwrap();
    assert_eq!((cancel["id"].clone(), cancel["result"]["cancelled"].clone()), (json!("stop"), json!(true)));
    // The server was told, and the connection goes on serving.
    let told = cancellations(&home);
    assert!(told.starts_with("cancelled: ") && told != "cancelled: none", "{told}");
    mine.send_request(json!({"op": "ping"}));
    let next = mine.answer().unwrap();
    assert_eq!(next["ok"], true, "{next}");
    // A request that already ended: nothing to cancel, said so.
    mine.send_request(json!({"op": "cancel", "request": "slow"}));
    assert_eq!(mine.answer().unwrap()["result"]["cancelled"], false);
    let _ = home.warden(&["stop"]);
}

#[test]
fn ctrl_c_on_warden_call_cancels_the_call_upstream_and_exits_130() {
    let home = home("cancel-ctrl-c");
    home.start_daemon();
    let mut call = home.command(&["call", "test__sleep", r#"{"ms":60000}"#, "--config"]);
    let child = call.arg(&home.config).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // The daemon runs: the call is at its server well within this.
    std::thread::sleep(Duration::from_secs(2));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    assert!(stderr(&output).contains("Ctrl-C: cancelling the call"), "{}", stderr(&output));
    assert!(stderr(&output).contains("cancelled: cancelled at the client's request"), "{}", stderr(&output));
    let told = cancellations(&home);
    assert!(told.starts_with("cancelled: ") && told != "cancelled: none", "{told}");
    let _ = home.warden(&["stop"]);
}

#[test]
fn ctrl_c_while_a_call_waits_for_approval_takes_it_out_of_the_queue() {
    let home = home("cancel-approval");
    let (mut child, mut errors, said) = waiting_for_approval(&home, "test__echo", r#"{"message":"hi"}"#);
    let listed: Value = serde_json::from_str(&stdout(&home.warden(&["approvals", "--json"]))).unwrap();
    assert_eq!(listed["approvals"].as_array().unwrap().len(), 1, "{listed}");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut errors, &mut rest);
    assert_eq!(status.code(), Some(130), "{said}{rest}");
    assert!(rest.contains("cancelled"), "{rest}");
    let listed: Value = serde_json::from_str(&stdout(&home.warden(&["approvals", "--json"]))).unwrap();
    assert_eq!(listed["approvals"], json!([]), "the cancelled call still waits for approval: {listed}");
    let _ = home.warden(&["stop"]);
}

/// `warden call NAME ARGS` with auto-approval off, once it said it waits
/// for approval: the child, the rest of its stderr, and what it said.
fn waiting_for_approval(home: &Home, name: &str, args: &str) -> (Child, BufReader<ChildStderr>, String) {
    let text = std::fs::read_to_string(&home.config).unwrap().replace("[security]\nauto_approve = true\n", "");
    std::fs::write(&home.config, text).unwrap();
    let mut call = home.command(&["call", name, args, "--config"]);
    let mut child = call.arg(&home.config).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut errors = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("waiting for approval #") {
        let mut line = String::new();
        assert_ne!(errors.read_line(&mut line).unwrap(), 0, "warden call ended without waiting: {said}");
        said += &line;
    }
    (child, errors, said)
}

/// Polls `check` until it holds, for at most `within`; how long it took.
fn within(within: Duration, what: &str, mut check: impl FnMut() -> bool) -> Duration {
    let start = std::time::Instant::now();
    while !check() {
        assert!(start.elapsed() < within, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// The daemon's `calls_in_flight` and `connections` (this request's own included).
fn in_flight_and_connections(home: &Home) -> (u64, u64) {
    let status: Value = serde_json::from_str(&stdout(&home.warden(&["status", "--json"]))).unwrap();
    let daemon = &status["daemon"];
    (daemon["calls_in_flight"].as_u64().unwrap(), daemon["connections"].as_u64().unwrap())
}

/// `warden stop`, which must return within 2 s; says so.
fn stop_promptly(home: &Home) {
    let start = std::time::Instant::now();
    let output = home.warden(&["stop"]);
    let took = start.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(took < Duration::from_secs(2), "warden stop took {took:?}: it waited for work nobody will read");
}

#[test]
fn a_warden_call_killed_mid_call_takes_its_call_with_it() {
    let home = home("gone-mid-call");
    home.start_daemon();
    let mut call = home.command(&["call", "test__sleep", r#"{"ms":20000}"#, "--config"]);
    let mut child = call.arg(&home.config).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    within(Duration::from_secs(10), "the call reaches the daemon", || in_flight_and_connections(&home).0 == 1);
    // No goodbye: the process is gone, its socket closed by the kernel.
    child.kill().unwrap();
    child.wait().unwrap();
    within(Duration::from_secs(1), "the server is told to cancel", || cancellations(&home) != "cancelled: none");
    assert_eq!(in_flight_and_connections(&home), (0, 1), "the dead client's call or connection is still counted");
    stop_promptly(&home);
}

#[test]
fn a_warden_call_killed_while_waiting_for_approval_leaves_nothing_in_the_queue() {
    let home = home("gone-approval");
    let (mut child, _errors, _said) = waiting_for_approval(&home, "test__sleep", r#"{"ms":20000}"#);
    child.kill().unwrap();
    child.wait().unwrap();
    within(Duration::from_secs(1), "the approval leaves the queue", || {
        let listed: Value = serde_json::from_str(&stdout(&home.warden(&["approvals", "--json"]))).unwrap();
        listed["approvals"] == json!([])
    });
    assert_eq!(in_flight_and_connections(&home), (0, 1), "the dead client's call or connection is still counted");
    stop_promptly(&home);
}

#[test]
fn a_killed_warden_mcp_ends_its_session_s_calls() {
    use std::io::Write as _;
    let home = home("gone-mcp");
    home.start_daemon();
    let mut mcp = home.command(&["mcp", "--config"]);
    let mut child =
        mcp.arg(&home.config).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    writeln!(input, "{initialize}").unwrap();
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert!(line.contains("\"protocolVersion\""), "{line}");
    writeln!(input, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    // A slow call that says when it is at its server: its first progress.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test__progress", "arguments": {"steps": 200, "ms": 100}, "_meta": {"progressToken": "p"}}});
    writeln!(input, "{call}").unwrap();
    line.clear();
    output.read_line(&mut line).unwrap();
    assert!(line.contains("notifications/progress"), "{line}");
    child.kill().unwrap();
    child.wait().unwrap();
    within(Duration::from_secs(1), "the server is told to cancel", || cancellations(&home) != "cancelled: none");
    assert_eq!(in_flight_and_connections(&home), (0, 1), "the dead client's call or connection is still counted");
    stop_promptly(&home);
}
