//! The daemon as users and clients meet it: real `warden` processes, a real
//! detached daemon, real TCP. Its life: started by the first command,
//! reused, found stale, raced for, idle, stopped by signals; approvals
//! answered from another process. Each test has its own `WARDEN_HOME`, and
//! a guard that kills whatever daemon it started, pass or fail.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use warden_tests::{bins, process_alive, wait_until_gone};

#[test]
fn the_first_call_starts_a_daemon_and_the_next_commands_reuse_it() {
    let home = Home::with_test_server("daemon-reuse", "");
    assert!(home.lockfile().is_none());
    let output = home.warden(&["call", "test__echo", r#"{"message":"hello there"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hello there\n");
    assert_eq!(stderr(&output), "");

    let lockfile = home.lockfile().expect("the daemon published its lockfile");
    let pid = lockfile["pid"].as_u64().unwrap() as u32;
    assert!(process_alive(pid));
    assert!(lockfile["address"].as_str().unwrap().starts_with("127.0.0.1:"), "{lockfile}");
    assert_eq!(lockfile["token"].as_str().unwrap().len(), 64);
    assert_eq!(lockfile["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(lockfile["config"], home.config.display().to_string());
    assert!(lockfile["started_at"].as_u64().unwrap() > 1_700_000_000);
    assert_eq!(mode(&home.lockfile_path()), 0o600);
    assert_eq!(mode(&home.dir), 0o700);
    assert_eq!(mode(&home.dir.join("daemon.log")), 0o600);

    // The second command finds the same daemon.
    let output = home.warden(&["call", "test__add", r#"{"a":2,"b":3}"#, "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result, json!({"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}}));
    assert_eq!(home.daemon_pid(), pid);

    let output = home.warden(&["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    assert_eq!(
        out.lines().next(),
        Some("test__add         Adds `a` and `b`; answers the sum as text and as structuredContent.")
    );
    assert!(out.ends_with("\n14 tools\n"), "{out}");

    let output = home.warden(&["-v", "tools"]);
    let error = stderr(&output);
    assert!(error.contains(&format!("[warden: using daemon pid {pid} on ")), "{error}");
    assert!(error.contains("[MCP: 14 tools loaded]\n"), "{error}");

    let output = home.warden(&["schema", "test__add"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let schema: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(schema["required"], json!(["a", "b"]));

    let server_pid = stdout(&home.warden(&["call", "test__pid"])).trim().to_string();
    let output = home.warden(&["status"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with(&format!("daemon: pid {pid}, listening on 127.0.0.1:")), "{out}");
    assert!(lines[0].contains(" s of 300 s (exits in "), "{out}");
    // The server's own process, how long it has been up, the calls it had.
    let server_line = format!("test  running, 14 tools, protocol 2025-11-25, pid {server_pid}, up ");
    assert!(lines[1].starts_with(&server_line) && lines[1].ends_with(" s, 3 calls"), "{out}");
    assert_eq!(home.daemon_processes(), [pid]);

    // `--config` names the daemon to stop: another file's is refused.
    let output = home.command(&["stop", "--config", "/nonexistent/other.toml"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains(&format!("the running warden daemon (pid {pid}) serves ")), "{}", stderr(&output));
    assert!(stderr(&output).contains("not /nonexistent/other.toml; nothing to stop"), "{}", stderr(&output));
    assert!(process_alive(pid));
    // `warden stop --config` with its own file ends it and its lockfile.
    let output = home.command(&["stop", "--config"]).arg(&home.config).output().unwrap();
    assert_eq!(stdout(&output), format!("stopped the warden daemon (pid {pid})\n"));
    assert!(!process_alive(pid));
    assert!(home.lockfile().is_none());
    let output = home.command(&["stop"]).output().unwrap();
    assert_eq!(stdout(&output), "no warden daemon is running\n");
}

#[test]
fn errors_through_the_daemon_read_as_they_do_in_process() {
    let home = Home::with_test_server("daemon-errors", "");
    let output = home.warden(&["call", "nope__tool"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "error: unknown tool 'nope__tool': no running server lists it; `warden tools` lists the tools available\n"
    );

    let output = home.warden(&["call", "test__fail", r#"{"message":"disk full"}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "Error: disk full\n");

    let output = home.warden(&["call", "test__echo", "[1,2]"]);
    assert_eq!(output.status.code(), Some(2));

    for args in [&["approve", "a1"][..], &["deny", "a1", "--reason", "no"]] {
        let output = home.warden(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&output), "error: 'a1' is not an approval id; `warden approvals` lists them\n", "{args:?}");
    }
}

#[test]
fn servers_still_starting_are_reported_while_the_command_waits() {
    let server = bins::test_server().display().to_string();
    let home = Home::with_test_server(
        "daemon-restarting",
        &format!(
            "[servers.broken]\ncommand = {server:?}\nargs = [\"--exit-at-start\", \"3\"]\nmax_restarts = 1\n\
             restart_delay_secs = 2.5\n"
        ),
    );
    let output = home.warden(&["tools"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).ends_with("\n14 tools\n"));
    let error = stderr(&output);
    assert!(error.starts_with("warden: ↻ broken"), "{error}");
    assert!(error.contains("restarting (attempt 1 of 1, next in "), "{error}");
    assert!(error.contains("warning: server 'broken' failed: "), "{error}");
    assert!(error.contains("(gave up after 1 restart in a row)"), "{error}");

    let output = home.warden(&["status"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("\nbroken  failed: it stopped before it was ready"), "{}", stdout(&output));
}

/// The approvals waiting in the daemon, once `count` of them are (polled
/// through a second process, as a person would look).
fn waiting_approvals(home: &Home, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let output = home.warden(&["approvals", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
        let waiting = listed["approvals"].as_array().cloned().unwrap_or_default();
        if waiting.len() >= count {
            return waiting;
        }
        assert!(std::time::Instant::now() < deadline, "{count} approvals never waited: {listed}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_call_waits_for_approval_and_another_process_approves_or_denies_it() {
    let home = Home::with_test_server("daemon-approvals", "");
    let text = std::fs::read_to_string(&home.config).unwrap().replace("[security]\nauto_approve = true\n", "");
    std::fs::write(&home.config, text).unwrap();
    let output = home.warden(&["approvals"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "no calls are waiting for approval\n");

    // A call blocks until a person answers from another terminal.
    let call = |message: &str| {
        home.command(&["call", "test__echo", &format!(r#"{{"message":"{message}"}}"#)])
            .arg("--config")
            .arg(&home.config)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut first = call("approved");
    // No silent wait: the call says at once what it waits for and how to end it.
    let mut said = std::io::BufReader::new(first.stderr.take().unwrap());
    let started = std::time::Instant::now();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut said, &mut line).unwrap();
    assert!(
        line.starts_with("waiting for approval #") && line.contains(": test__echo (server test, risk medium): "),
        "{line}"
    );
    assert!(started.elapsed() < Duration::from_secs(5), "told within {:?}", started.elapsed());
    let mut rest = String::new();
    std::io::BufRead::read_line(&mut said, &mut rest).unwrap();
    std::io::BufRead::read_line(&mut said, &mut rest).unwrap();
    assert!(rest.starts_with("  arguments: {\"message\":\"approved\"}\n"), "{rest}");
    assert!(rest.contains("answer from any terminal: `warden approve "), "{rest}");
    assert!(rest.contains("`warden deny 1 --reason '…'`; Ctrl-C cancels the call"), "{rest}");
    let waiting = waiting_approvals(&home, 1);
    assert_eq!(waiting[0]["tool"], "test__echo");
    assert_eq!(waiting[0]["server"], "test");
    assert_eq!(waiting[0]["risk"], "medium");
    assert_eq!(waiting[0]["arguments"], json!({"message": "approved"}));
    let id = waiting[0]["id"].to_string();
    let listed = stdout(&home.warden(&["approvals"]));
    assert!(
        listed.starts_with(&format!(
            "#{id} test__echo (server test, risk medium): 'test__echo' is medium risk (Warden default); its approval \
             is 'unless_auto_approved' (Warden default), auto-approval is off and no grant covers it\n    arguments: \
             {{\"message\":\"approved\"}}\n"
        )),
        "{listed}"
    );
    let output = home.warden(&["approve", &id]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("approved #{id}\n"));
    let first = first.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(stdout(&first), "approved\n");

    // Denied: the caller reads who denied it and why.
    let second = call("denied");
    let id = waiting_approvals(&home, 1)[0]["id"].to_string();
    let output = home.warden(&["deny", &id, "--reason", "not today"]);
    assert_eq!(stdout(&output), format!("denied #{id}\n"));
    let second = second.wait_with_output().unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(stderr(&second).starts_with(&format!("waiting for approval #{id}: test__echo")), "{}", stderr(&second));
    assert!(
        stderr(&second).ends_with(
            "error: 'test__echo' was not run: a person over the bridge (warden approve/deny) denied it: not today\n"
        ),
        "{}",
        stderr(&second)
    );

    // Approved with a grant: the next call runs unasked.
    let third = call("granted");
    let id = waiting_approvals(&home, 1)[0]["id"].to_string();
    assert_eq!(home.warden(&["approve", &id, "--grant"]).status.code(), Some(0));
    assert_eq!(stdout(&third.wait_with_output().unwrap()), "granted\n");
    let output = home.warden(&["call", "test__echo", r#"{"message":"unasked"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "unasked\n");

    // An id nothing waits under.
    let output = home.warden(&["approve", "999"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        "error: no approval request 999 is waiting (it was answered, timed out, or never asked); `warden approvals` \
         lists the ones that are\n"
    );
}

#[test]
fn policy_refusals_over_the_bridge_carry_their_own_codes() {
    let home =
        Home::with_test_server("daemon-policy-codes", "[security.tool_policies.test__echo]\napproval = \"always\"\n");
    let text = std::fs::read_to_string(&home.config).unwrap().replace("auto_approve = true", "approver = \"deny\"");
    std::fs::write(&home.config, text).unwrap();
    assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    let (mut connection, token) = home.connect();
    let answer = connection.ask(json!({"op": "call_tool", "server": "test", "tool": "echo", "token": token}));
    assert_eq!(answer["error"]["code"], "approval_denied");
    assert_eq!(
        answer["error"]["message"],
        "'test__echo' was not run: the config (security.approver = \"deny\") denied it: security.approver = \"deny\" \
         refuses every call that needs approval"
    );
    let answer = connection.ask(json!({"op": "tool_policies", "token": token}));
    let echo = answer["result"]["policies"].as_array().unwrap().iter().find(|row| row["name"] == "test__echo").unwrap();
    assert_eq!(echo["policy"]["approval"], json!({"value": "always", "source": "tool_override"}));
    let answer = connection.ask(json!({"op": "call_tool", "name": "test__echo", "agent": "nobody", "token": token}));
    assert_eq!(answer["error"]["code"], "unknown_agent");
    assert_eq!(
        answer["error"]["message"],
        "unknown agent 'nobody'; agents are configured as [[agents]] entries in the config (none are configured)"
    );
}

#[test]
fn a_daemon_serving_another_config_is_not_used_for_this_one() {
    let home = Home::with_test_server("daemon-other-config", "");
    let pid = home.start_daemon();
    let other = home.config.with_file_name("other.toml");
    std::fs::copy(&home.config, &other).unwrap();
    let output = home.command(&["tools", "--config"]).arg(&other).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: the running warden daemon (pid {pid}) serves {}, not {}; stop it with `warden stop`, or run this \
             command with --no-daemon\n",
            home.config.display(),
            other.display()
        )
    );
    // --no-daemon still works.
    let output = home
        .command(&["call", "test__echo", r#"{"message":"local"}"#, "--no-daemon", "--config"])
        .arg(&other)
        .output()
        .unwrap();
    assert_eq!(stdout(&output), "local\n");
}

#[test]
fn a_config_without_servers_says_what_to_add() {
    let home = Home::with_test_server("daemon-no-servers", "");
    std::fs::write(&home.config, "call_timeout_secs = 5\n").unwrap();
    let output = home.warden(&["tools"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: no servers configured in {}; add a [servers.NAME] table with `command` (a local server) or `url` \
             (a remote one), or a [cluster] to use other nodes' servers — examples/warden.toml is a start\n",
            home.config.display()
        )
    );
    assert!(home.daemon_processes().is_empty());
}

#[test]
fn a_daemon_that_cannot_start_is_reported_with_its_log() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let home = Home::with_test_server("daemon-cannot-start", &format!("[daemon]\nlisten = \"127.0.0.1:{port}\"\n"));
    let output = home.warden(&["tools"]);
    assert_eq!(output.status.code(), Some(1));
    let error = stderr(&output);
    assert!(
        error.starts_with(
            "error: the warden daemon could not be started: it exited with exit status: 3; its last log lines ("
        ),
        "{error}"
    );
    assert!(error.contains(&format!("error: cannot listen on 127.0.0.1:{port}: Address already in use")), "{error}");
    assert!(
        error.ends_with("fix the problem above, or run the command with --no-daemon to skip the daemon\n"),
        "{error}"
    );
}

#[test]
fn a_lockfile_left_by_a_killed_daemon_is_detected_and_replaced() {
    let home = Home::with_test_server("daemon-stale", "");
    let old = home.start_daemon();
    unsafe { libc::kill(old as i32, libc::SIGKILL) };
    assert!(wait_until_gone(old, Duration::from_secs(10)));
    assert_eq!(home.daemon_pid(), old, "SIGKILL leaves the lockfile behind");

    let output = home.warden(&["call", "test__echo", r#"{"message":"again"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "again\n");
    let new = home.daemon_pid();
    assert_ne!(new, old);
    assert_eq!(home.daemon_processes(), [new]);

    // A lockfile naming a live process that is not listening is stale too
    // when nobody holds the daemon's lock: here, this test's own pid.
    unsafe { libc::kill(new as i32, libc::SIGKILL) };
    assert!(wait_until_gone(new, Duration::from_secs(10)));
    let mut lockfile = home.lockfile().unwrap();
    lockfile["pid"] = json!(std::process::id());
    std::fs::write(home.lockfile_path(), lockfile.to_string()).unwrap();
    let output = home.warden(&["call", "test__echo", r#"{"message":"third"}"#]);
    assert_eq!(stdout(&output), "third\n", "{}", stderr(&output));
    assert_ne!(home.daemon_pid(), std::process::id());
}

#[test]
fn racing_clis_end_up_with_exactly_one_daemon() {
    let home = Home::with_test_server("daemon-race", "");
    let children: Vec<_> = (0..4)
        .map(|n| {
            home.command(&["call", "test__echo", &format!(r#"{{"message":"racer {n}"}}"#), "--config"])
                .arg(&home.config)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (n, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_eq!(stdout(&output), format!("racer {n}\n"));
    }
    let pid = home.daemon_pid();
    // Losers exit at once; give them a moment to be gone.
    let deadline = Instant::now() + Duration::from_secs(5);
    while home.daemon_processes().len() > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(home.daemon_processes(), [pid]);
}

#[test]
fn an_idle_daemon_exits_and_takes_its_servers_and_lockfile_with_it() {
    // 0.02 minutes: 1.2 s.
    let home = Home::with_test_server("daemon-idle", "[daemon]\nidle_timeout_minutes = 0.02\n");
    let output = home.warden(&["call", "test__pid"]);
    let server = stdout(&output).trim().parse::<u32>().expect("the server's pid");
    let daemon = home.daemon_pid();
    let started = Instant::now();
    assert!(wait_until_gone(daemon, Duration::from_secs(15)), "the daemon is still running");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(1000), "exited after {waited:?}");
    assert!(!process_alive(server), "its server is still running");
    assert!(home.lockfile().is_none());
    let log = std::fs::read_to_string(home.dir.join("daemon.log")).unwrap();
    assert!(log.contains("shutting down: idle for 1 s (idle_timeout_minutes)"), "{log}");
}

#[test]
fn a_call_in_flight_keeps_an_idle_daemon_up() {
    let home = Home::with_test_server("daemon-busy", "[daemon]\nidle_timeout_minutes = 0.02\n");
    home.start_daemon();
    let output = home.warden(&["call", "test__sleep", r#"{"ms":3000}"#]);
    assert_eq!(stdout(&output), "slept 3000 ms\n", "{}", stderr(&output));
}

#[test]
fn sigterm_and_sigint_shut_the_daemon_down_gracefully() {
    let home = Home::with_test_server("daemon-sigterm", "");
    let output = home.warden(&["call", "test__pid"]);
    let server = stdout(&output).trim().parse::<u32>().unwrap();
    let daemon = home.daemon_pid();
    unsafe { libc::kill(daemon as i32, libc::SIGTERM) };
    assert!(wait_until_gone(daemon, Duration::from_secs(15)));
    assert!(!process_alive(server));
    assert!(home.lockfile().is_none());
    let log = std::fs::read_to_string(home.dir.join("daemon.log")).unwrap();
    assert!(log.contains("shutting down: SIGTERM received"), "{log}");
    assert!(log.contains("warden daemon stopped"), "{log}");

    // SIGINT does the same, and a call in flight is finished first.
    let daemon = home.start_daemon();
    let (mut connection, token) = home.connect();
    connection
        .send(&json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 1000}, "token": token}).to_string());
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(daemon as i32, libc::SIGINT) };
    let answer = connection.answer().expect("the call in flight is answered");
    assert_eq!(answer["result"]["content"][0]["text"], "slept 1000 ms");
    assert!(wait_until_gone(daemon, Duration::from_secs(15)));
    assert!(home.lockfile().is_none());
    let log = std::fs::read_to_string(home.dir.join("daemon.log")).unwrap();
    assert!(log.contains("shutting down: SIGINT received"), "{log}");
}

#[test]
fn a_daemon_killed_with_calls_in_flight_fails_them_at_once_and_leaves_no_server_behind() {
    let home = Home::with_test_server("daemon-sigkill", "");
    let daemon = home.start_daemon();
    let server = home.pid_of("test");
    // Three calls in flight on their own connections.
    let mut waiting = Vec::new();
    for _ in 0..3 {
        let (mut connection, _) = home.connect();
        connection.send_request(json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 30_000}}));
        waiting.push(connection);
    }
    std::thread::sleep(Duration::from_millis(300));
    let killed = Instant::now();
    unsafe { libc::kill(daemon as i32, libc::SIGKILL) };
    for connection in &mut waiting {
        assert_eq!(connection.answer(), None, "the connection ends with the daemon, not after the call's 30 s");
    }
    assert!(killed.elapsed() < Duration::from_secs(5), "callers learned at once: {:?}", killed.elapsed());
    // The server dies with its daemon (it is told by the kernel, not by the
    // daemon, which had no chance to say anything).
    assert!(wait_until_gone(server, Duration::from_secs(10)), "server {server} outlived its daemon");
    assert!(home.daemon_processes().is_empty());

    // The next command starts a new daemon, with a new server.
    assert_eq!(home.call("test__echo", r#"{"message":"after"}"#), "after");
    assert_ne!(home.daemon_pid(), daemon);
    assert_ne!(home.pid_of("test"), server);
}

#[test]
fn a_command_waiting_on_a_stopped_daemon_says_what_it_waits_for() {
    let home = Home::with_test_server("daemon-sigstop", "");
    let daemon = home.start_daemon();
    unsafe { libc::kill(daemon as i32, libc::SIGSTOP) };
    let mut status = home.command(&["status", "--config"]);
    let child = status.arg(&home.config).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = child.spawn().unwrap();
    std::thread::sleep(Duration::from_secs(11));
    unsafe { libc::kill(daemon as i32, libc::SIGCONT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("still waiting for the warden daemon (pid {daemon}) to answer")),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("Ctrl-C stops waiting"));
    assert!(stdout(&output).contains("test"), "{}", stdout(&output));
}
