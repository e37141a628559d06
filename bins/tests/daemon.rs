//! The daemon as users and clients meet it: real `warden` processes, a real
//! detached daemon, real TCP. Each test has its own `WARDEN_HOME`, and a
//! guard that kills whatever daemon it started, pass or fail.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use warden_tests::{bins, process_alive, scratch_dir, wait_until_gone};

/// One test's state directory and config, and the daemons it started.
struct Home {
    dir: PathBuf,
    config: PathBuf,
}

impl Home {
    /// A home whose config runs the test server as `test`, plus `extra`.
    /// Calls are auto-approved: the test server's tools carry no
    /// annotations, so each would wait for a person (the approval tests
    /// take that line out).
    fn new(label: &str, extra: &str) -> Home {
        let dir = scratch_dir(label);
        let config = dir.join("warden.toml");
        let text = format!(
            "[security]\nauto_approve = true\n[servers.test]\ncommand = {:?}\n{extra}",
            bins::test_server().display().to_string()
        );
        std::fs::write(&config, text).unwrap();
        Home { dir: dir.join("state"), config }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
        command
            .args(args)
            .env("WARDEN_HOME", &self.dir)
            .env_remove("RUST_LOG")
            .env_remove("WARDEN_CONFIG")
            .env_remove("XDG_STATE_HOME");
        command
    }

    /// `warden ARGS --config CONFIG`.
    fn warden(&self, args: &[&str]) -> Output {
        self.command(args).arg("--config").arg(&self.config).output().expect("warden runs")
    }

    fn lockfile_path(&self) -> PathBuf {
        self.dir.join("daemon.json")
    }

    fn lockfile(&self) -> Option<Value> {
        let text = std::fs::read_to_string(self.lockfile_path()).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn daemon_pid(&self) -> u32 {
        let lockfile = self.lockfile().expect("a lockfile");
        lockfile["pid"].as_u64().unwrap() as u32
    }

    /// A raw connection to the daemon, and its token.
    fn connect(&self) -> (Connection, String) {
        let lockfile = self.lockfile().expect("a running daemon");
        let stream = TcpStream::connect(lockfile["address"].as_str().unwrap()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        (Connection::new(stream), lockfile["token"].as_str().unwrap().to_string())
    }

    /// Starts the daemon with a first call.
    fn start_daemon(&self) -> u32 {
        let output = self.warden(&["call", "test__echo", r#"{"message":"up"}"#]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        self.daemon_pid()
    }

    /// Every `warden serve` process serving this home's config.
    fn daemon_processes(&self) -> Vec<u32> {
        let config = self.config.display().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmdline.split(|&byte| byte == 0).collect();
                args.contains(&b"serve".as_slice()) && args.contains(&config.as_bytes()) && process_alive(*pid)
            })
            .collect()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        // Whatever daemon this test left: asked to stop, then killed.
        for pid in self.daemon_processes() {
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            if !wait_until_gone(pid, Duration::from_secs(10)) {
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
    }
}

/// A blocking line-by-line client.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    fn new(stream: TcpStream) -> Connection {
        Connection { writer: stream.try_clone().unwrap(), reader: BufReader::new(stream) }
    }

    fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    /// The next answer line, or `None` once the daemon closed the connection.
    fn answer(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))),
        }
    }

    fn ask(&mut self, request: Value) -> Value {
        self.send(&request.to_string());
        self.answer().expect("an answer")
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_first_call_starts_a_daemon_and_the_next_commands_reuse_it() {
    let home = Home::new("daemon-reuse", "");
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
    // The server's own process, and how long it has been up.
    let server_line = format!("test  running, 14 tools, protocol 2025-11-25, pid {server_pid}, up ");
    assert!(lines[1].starts_with(&server_line) && lines[1].ends_with(" s"), "{out}");
    assert_eq!(home.daemon_processes(), [pid]);

    // `warden stop` ends it and its lockfile; without --config too.
    let output = home.command(&["stop"]).output().unwrap();
    assert_eq!(stdout(&output), format!("stopped the warden daemon (pid {pid})\n"));
    assert!(!process_alive(pid));
    assert!(home.lockfile().is_none());
    let output = home.command(&["stop"]).output().unwrap();
    assert_eq!(stdout(&output), "no warden daemon is running\n");
}

#[test]
fn errors_through_the_daemon_read_as_they_do_in_process() {
    let home = Home::new("daemon-errors", "");
    let output = home.warden(&["call", "nope__tool"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "error: unknown tool 'nope__tool'; `warden tools` lists the tools available\n");

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
    let home = Home::new(
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
    assert!(error.starts_with("waiting for server 'broken': restarting (attempt 1 of 1, next in 0."), "{error}");
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
    let home = Home::new("daemon-approvals", "");
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
    let first = call("approved");
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
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(stdout(&first), "approved\n");

    // Denied: the caller reads who denied it and why.
    let second = call("denied");
    let id = waiting_approvals(&home, 1)[0]["id"].to_string();
    let output = home.warden(&["deny", &id, "--reason", "not today"]);
    assert_eq!(stdout(&output), format!("denied #{id}\n"));
    let second = second.wait_with_output().unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert_eq!(
        stderr(&second),
        "error: 'test__echo' was not run: a person over the bridge (warden approve/deny) denied it: not today\n"
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
        "error: no approval request 999 is waiting; `warden approvals` lists the ones that are\n"
    );
}

#[test]
fn policy_refusals_over_the_bridge_carry_their_own_codes() {
    let home = Home::new("daemon-policy-codes", "[security.tool_policies.test__echo]\napproval = \"always\"\n");
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
    let home = Home::new("daemon-other-config", "");
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
    let home = Home::new("daemon-no-servers", "");
    std::fs::write(&home.config, "call_timeout_secs = 5\n").unwrap();
    let output = home.warden(&["tools"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: no servers configured in {}; add a [servers.NAME] table with `command` (a local server) or `url` \
             (a remote one) — examples/warden.toml is a start\n",
            home.config.display()
        )
    );
    assert!(home.daemon_processes().is_empty());
}

#[test]
fn a_daemon_that_cannot_start_is_reported_with_its_log() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let home = Home::new("daemon-cannot-start", &format!("[daemon]\nlisten = \"127.0.0.1:{port}\"\n"));
    let output = home.warden(&["tools"]);
    assert_eq!(output.status.code(), Some(1));
    let error = stderr(&output);
    assert!(
        error.starts_with(
            "error: the warden daemon could not be started: it exited with exit status: 1; its last log lines ("
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
    let home = Home::new("daemon-stale", "");
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
    let home = Home::new("daemon-race", "");
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
    let home = Home::new("daemon-idle", "[daemon]\nidle_timeout_minutes = 0.02\n");
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
    let home = Home::new("daemon-busy", "[daemon]\nidle_timeout_minutes = 0.02\n");
    home.start_daemon();
    let output = home.warden(&["call", "test__sleep", r#"{"ms":3000}"#]);
    assert_eq!(stdout(&output), "slept 3000 ms\n", "{}", stderr(&output));
}

#[test]
fn sigterm_and_sigint_shut_the_daemon_down_gracefully() {
    let home = Home::new("daemon-sigterm", "");
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
fn a_request_without_the_right_token_gets_an_error_and_nothing_else() {
    let home = Home::new("daemon-token", "");
    home.start_daemon();
    let (_, token) = home.connect();
    let mut wrong = token.clone();
    wrong.replace_range(..1, if token.starts_with('0') { "1" } else { "0" });
    for request in
        [json!({"op": "list_tools"}), json!({"op": "list_tools", "token": wrong}), json!({"op": "nope", "token": 5})]
    {
        let (mut connection, _) = home.connect();
        let answer = connection.ask(request.clone());
        assert_eq!(
            answer,
            json!({"ok": false, "error": {"code": "unauthorized", "message": "missing or wrong `token`; it is in the daemon's lockfile (daemon.json in Warden's state directory)"}}),
            "{request}"
        );
        assert_eq!(connection.answer(), None, "the connection is closed after");
    }
}

#[test]
fn malformed_requests_get_structured_errors_and_the_connection_stays_usable() {
    let home = Home::new("daemon-malformed", "");
    home.start_daemon();
    let (mut connection, token) = home.connect();
    let code = |answer: &Value| answer["error"]["code"].as_str().unwrap_or("").to_string();
    connection.send("{not json");
    let answer = connection.answer().unwrap();
    assert_eq!(code(&answer), "parse_error");
    assert!(answer["error"]["message"].as_str().unwrap().starts_with("the request is not JSON: key must be a string"));
    connection.writer.write_all(b"{\"op\":\"\xff\"}\n").unwrap();
    assert_eq!(
        connection.answer().unwrap()["error"],
        json!({"code": "parse_error", "message": "the request is not UTF-8 text, so not JSON"})
    );
    connection.send("[1,2]");
    assert_eq!(
        connection.answer().unwrap()["error"]["message"],
        "a request is a JSON object with an `op`, not an array"
    );
    let answer = connection.ask(json!({"op": "frobnicate", "token": token, "id": 3}));
    assert_eq!(answer["id"], 3);
    assert_eq!(code(&answer), "unknown_op");
    let answer = connection.ask(json!({"op": "get_schema", "server": 1, "tool": "add", "token": token}));
    assert_eq!(answer["error"]["message"], "op 'get_schema': invalid type: integer `1`, expected a string");
    let answer = connection.ask(json!({"op": "call_tool", "name": "test__echo", "args": [1], "token": token}));
    assert_eq!(answer["error"]["message"], "op 'call_tool': `args` must be a JSON object, not an array");
    // `reload` takes no fields; with the file unchanged it changes nothing.
    let answer = connection.ask(json!({"op": "reload", "token": token}));
    assert_eq!(answer["result"]["unchanged"], json!(["test"]), "{answer}");

    // Still usable, and the seed's ops keep their shapes.
    let answer = connection.ask(json!({"op": "ping", "token": token, "id": "p"}));
    assert_eq!(answer["ok"], true);
    assert_eq!(answer["id"], "p");
    let answer = connection.ask(json!({"op": "get_schema", "server": "test", "tool": "add", "token": token}));
    assert_eq!(answer["result"]["required"], json!(["a", "b"]));
    let answer = connection
        .ask(json!({"op": "call_tool", "server": "test", "tool": "echo", "args": {"message": "m"}, "token": token}));
    assert_eq!(answer, json!({"ok": true, "result": {"content": [{"type": "text", "text": "m"}]}}));
    let answer = connection.ask(json!({"op": "list_tools", "token": token}));
    assert_eq!(answer["result"]["tools"].as_array().unwrap().len(), 14);
    assert_eq!(answer["result"]["tools"][0]["name"], "test__add");
    let answer = connection.ask(json!({"op": "describe_tool", "name": "test__add", "token": token}));
    assert_eq!(answer["result"]["tool"]["annotations"]["readOnlyHint"], true);
    let answer = connection.ask(json!({"op": "get_schema", "server": "test", "tool": "nope", "token": token}));
    assert_eq!(
        answer["error"],
        json!({"code": "unknown_tool", "message": "server 'test' has no tool 'nope'; `warden tools` lists the tools available"})
    );
}

#[test]
fn a_tool_added_later_is_found_by_server_and_tool_name() {
    let home = Home::new("daemon-late-tool", "");
    home.start_daemon();
    let (mut connection, token) = home.connect();
    let late = json!({"op": "call_tool", "server": "test", "tool": "late_tool", "token": token});
    assert_eq!(connection.ask(late.clone())["error"]["code"], "unknown_tool");
    let notified = connection.ask(json!({"op": "call_tool", "server": "test", "tool": "notify", "token": token}));
    assert_eq!(notified["result"]["content"][0]["text"], "notified");
    // The server's new list is fetched in the background.
    let deadline = Instant::now() + Duration::from_secs(10);
    let answer = loop {
        let answer = connection.ask(late.clone());
        if answer["ok"] == true || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(answer["result"]["content"][0]["text"], "late", "{answer}");
}

/// Sends `line` plus a newline from another thread (the daemon may close
/// before all of it is written) and returns the first answer and whatever
/// came after it before the connection closed.
fn send_oversized(connection: Connection, line: String) -> (Value, Vec<u8>) {
    let Connection { mut reader, mut writer } = connection;
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(line.as_bytes());
        let _ = writer.write_all(b"\n");
    });
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
    sender.join().unwrap();
    (answer, rest)
}

#[test]
fn an_oversized_request_is_refused_and_its_connection_closed() {
    let home = Home::new("daemon-oversized", "");
    home.start_daemon();
    let huge = |token: &str, bytes: usize| {
        let mut line = format!(r#"{{"op":"call_tool","name":"test__echo","token":"{token}","args":{{"message":""#);
        line.push_str(&"x".repeat(bytes));
        line.push_str("\"}}");
        line
    };
    // Proven by a ping, a connection may send up to 16 MiB.
    let (mut connection, token) = home.connect();
    assert_eq!(connection.ask(json!({"op": "ping", "token": token}))["ok"], true);
    let (answer, rest) = send_oversized(connection, huge(&token, 16 * 1024 * 1024));
    assert_eq!(answer["error"]["code"], "too_large");
    assert_eq!(answer["error"]["message"], "the request is longer than 16777216 bytes; the connection is closed");
    assert!(rest.is_empty());

    // A first line is held to 1 MiB: the daemon does not buffer 16 MiB for
    // whoever connects, token or not.
    let (connection, token) = home.connect();
    let (answer, rest) = send_oversized(connection, huge(&token, 1024 * 1024));
    assert_eq!(answer["error"]["code"], "too_large");
    assert_eq!(
        answer["error"]["message"],
        "the first request on a connection may be at most 1048576 bytes (send a `ping` with the token first); the \
         connection is closed"
    );
    assert!(rest.is_empty());

    // Other connections are unaffected, and the CLI proves itself before a
    // large first call.
    let (mut connection, token) = home.connect();
    assert_eq!(connection.ask(json!({"op": "ping", "token": token}))["ok"], true);
    let message = "y".repeat(1536 * 1024);
    let mut call = home.command(&["call", "test__echo", "-", "--config"]);
    let child = call.arg(&home.config).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    let mut child = child.stderr(std::process::Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(json!({"message": message}).to_string().as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // Echoed, then cut at the output limit for printing.
    assert!(stdout(&output).starts_with(&message[..90 * 1024]), "{}", &stdout(&output)[..100]);
}

#[test]
fn six_hundred_silent_connections_do_not_lock_clients_out() {
    let home = Home::new("daemon-flood", "");
    home.start_daemon();
    let address = home.lockfile().unwrap()["address"].as_str().unwrap().to_string();
    let silent: Vec<TcpStream> = (0..600).map(|_| TcpStream::connect(&address).unwrap()).collect();
    // Clients with the token get in at once, while the silent ones are held.
    let started = Instant::now();
    let output = home.warden(&["call", "test__echo", r#"{"message":"through"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "through\n");
    let (mut connection, token) = home.connect();
    assert_eq!(connection.ask(json!({"op": "ping", "token": token}))["ok"], true);
    assert!(started.elapsed() < Duration::from_secs(4), "took {:?}", started.elapsed());

    // The oldest silent ones were closed to make room, the newest within
    // five seconds, told why; none of them holds anything any more.
    let mut closed_silently = 0;
    let mut told = 0;
    for stream in &silent {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    for stream in silent {
        let mut text = String::new();
        let read = BufReader::new(stream).read_to_string(&mut text);
        assert!(read.is_ok(), "every silent connection is closed within the deadline: {read:?}");
        if text.is_empty() {
            closed_silently += 1;
        } else {
            let answer: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(
                answer["error"],
                json!({"code": "unauthorized", "message": "no request with the `token` within 5 s of connecting; the connection is closed"})
            );
            told += 1;
        }
    }
    assert!(closed_silently >= 600 - 64, "{closed_silently} evicted");
    assert!(told >= 1, "the newest wait out their deadline");
    let status = connection.ask(json!({"op": "status", "token": token}));
    assert_eq!(status["result"]["daemon"]["connections"], 1, "{status}");
}

#[test]
fn a_stranger_trickling_a_line_and_an_idle_client_are_disconnected() {
    let home = Home::new("daemon-slow", "[daemon]\nconnection_idle_secs = 1\n");
    home.start_daemon();
    // A byte a second never makes a first line within the deadline.
    let (connection, _) = home.connect();
    let Connection { mut reader, mut writer } = connection;
    let started = Instant::now();
    let trickle = std::thread::spawn(move || {
        for byte in b"{\"op\":\"ping\",\"token\":\"".iter().cycle().take(20) {
            if writer.write_all(&[*byte]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let mut answer = String::new();
    reader.read_line(&mut answer).unwrap();
    assert!(answer.contains("no request with the `token` within 5 s"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(7), "closed after {:?}", started.elapsed());
    trickle.join().unwrap();

    // A proven client that says nothing for a second is closed; one with a
    // call running is not.
    let (mut idle, token) = home.connect();
    assert_eq!(idle.ask(json!({"op": "ping", "token": token}))["ok"], true);
    let (mut busy, _) = home.connect();
    let sleep = json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 2500}, "token": token});
    busy.send(&sleep.to_string());
    let started = Instant::now();
    assert_eq!(idle.answer(), None, "the idle connection is closed");
    assert!(started.elapsed() < Duration::from_secs(3), "closed after {:?}", started.elapsed());
    assert_eq!(busy.answer().unwrap()["result"]["content"][0]["text"], "slept 2500 ms");
}

#[test]
fn a_client_that_disconnects_mid_call_does_not_disturb_other_calls() {
    let home = Home::new("daemon-disconnect", "");
    home.start_daemon();
    let (mut leaver, token) = home.connect();
    leaver.send(&json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 1500}, "token": token}).to_string());
    let (mut stayer, _) = home.connect();
    stayer.send(
        &json!({"op": "call_tool", "name": "test__sleep", "args": {"ms": 1000}, "token": token, "id": 1}).to_string(),
    );
    std::thread::sleep(Duration::from_millis(200));
    drop(leaver);
    stayer.send(
        &json!({"op": "call_tool", "name": "test__echo", "args": {"message": "still here"}, "token": token, "id": 2})
            .to_string(),
    );
    let first = stayer.answer().unwrap();
    assert_eq!(first["id"], 1);
    assert_eq!(first["result"]["content"][0]["text"], "slept 1000 ms");
    let second = stayer.answer().unwrap();
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"]["content"][0]["text"], "still here");

    // The abandoned call ran to its end; the daemon is fine.
    std::thread::sleep(Duration::from_millis(800));
    let status = stayer.ask(json!({"op": "status", "token": token}));
    assert_eq!(status["result"]["daemon"]["calls_in_flight"], 0);
    assert_eq!(status["result"]["servers"][0]["state"], "running");
}

#[test]
fn fifty_clients_making_a_hundred_calls_each_get_their_own_answers() {
    let home = Home::new("daemon-fifty", "");
    home.start_daemon();
    let clients: Vec<_> = (0..50)
        .map(|client| {
            let (mut connection, token) = home.connect();
            std::thread::spawn(move || {
                // Ten at a time in flight on each connection.
                for batch in 0..10 {
                    for call in 0..10 {
                        let n = batch * 10 + call;
                        let message = format!("client {client} call {n}");
                        let request = json!({"op": "call_tool", "server": "test", "tool": "echo", "args": {"message": message}, "token": token, "id": n});
                        connection.send(&request.to_string());
                    }
                    for call in 0..10 {
                        let n = batch * 10 + call;
                        let answer = connection.answer().expect("an answer");
                        assert_eq!(answer["id"], n);
                        assert_eq!(answer["result"]["content"][0]["text"], format!("client {client} call {n}"));
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("every answer matched its request");
    }
}

#[test]
fn a_server_flooding_stderr_leaves_a_bounded_summarised_log() {
    let home = Home::new("daemon-log-flood", "[daemon]\nlog_max_mb = 0.01\nlog_files = 2\n");
    home.start_daemon();
    let started = Instant::now();
    let output = home.warden(&["call", "test__stderr", r#"{"lines":300000}"#]);
    assert_eq!(stdout(&output), "wrote 300000 lines\n", "{}", stderr(&output));
    let logs = || -> Vec<(String, String)> {
        ["daemon.log", "daemon.log.1", "daemon.log.2", "daemon.log.3"]
            .iter()
            .filter_map(|name| Some((name.to_string(), std::fs::read_to_string(home.dir.join(name)).ok()?)))
            .collect()
    };
    // The lines past the budget are summed up when the 10 s window closes.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !logs().iter().any(|(_, text)| text.contains("more lines from 'test' in the last 10 s were not logged")) {
        assert!(Instant::now() < deadline, "no summary line after {:?}: {:?}", started.elapsed(), logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    let logs = logs();
    let names: Vec<&str> = logs.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.starts_with(&["daemon.log", "daemon.log.1"]), "rotated: {names:?}");
    assert!(!names.contains(&"daemon.log.3"), "at most two old files are kept: {names:?}");
    for (name, text) in &logs {
        assert!(text.len() <= 10 * 1024 + 1024, "{name} is {} bytes", text.len());
        assert_eq!(mode(&home.dir.join(name)), 0o600, "{name}");
    }
    let all: String = logs.iter().map(|(_, text)| text.as_str()).collect();
    assert!(all.contains("stderr line 1 "), "the first lines are logged");
    assert!(!all.contains("stderr line 299999"), "the flood is not");
    // The daemon goes on serving, logging to the newest file.
    let output = home.warden(&["call", "test__echo", r#"{"message":"after"}"#]);
    assert_eq!(stdout(&output), "after\n");
}
