//! The cluster: Warden daemons on one machine sharing their servers
//! through a real `nats-server` (pinned, installed by the tests), each
//! daemon with its own state directory — a server of node A called from
//! node B, its secrets kept on A, and what B sees when A dies.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{stderr, stdout, Home};
use warden_tests::nats::NatsServer;

/// A secret in node A's server environment: it must never reach B.
const SECRET: &str = "cluster-secret-4f1e9a0c77d2";

/// Node `node`: the test server as `test` (with the record tools) when
/// `exports`, in the cluster on `nats`.
fn node(label: &str, node: &str, exports: bool, nats: &NatsServer) -> Home {
    let home = Home::new(label);
    let server = warden_tests::bins::test_server().display().to_string();
    let mut config = String::from("[security]\nauto_approve = true\n");
    if exports {
        config += &format!(
            "[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,env,pid,sleep,record,record_safe\"]\n\
             env = {{ CLUSTER_SECRET = \"{SECRET}\" }}\n"
        );
    }
    config += &format!(
        "[cluster]\nnats = [\"{}\"]\nnode = \"{node}\"\nexport = [{}]\n",
        nats.url(),
        if exports { "\"test\"" } else { "" }
    );
    std::fs::write(&home.config, config).unwrap();
    home
}

fn nats(label: &str) -> NatsServer {
    NatsServer::start(&warden_tests::scratch_dir(label), "")
}

/// A NATS server, node A exporting the test server (its daemon running)
/// and node B importing it, B's first call through A done.
fn pair(label: &str) -> (NatsServer, Home, Home) {
    let nats = nats(&format!("{label}-nats"));
    let a = node(&format!("{label}-a"), "a", true, &nats);
    let b = node(&format!("{label}-b"), "b", false, &nats);
    a.start_daemon();
    assert_eq!(b.call("test__echo", r#"{"message":"up"}"#), "up");
    (nats, a, b)
}

/// Whether `home`'s daemon lists `tool`.
fn lists(home: &Home, tool: &str) -> bool {
    let output = home.warden(&["tools"]);
    stdout(&output).contains(tool)
}

/// Waits (at most `limit`) until `condition` holds; how long it took.
fn wait_for(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// Every byte NATS delivers on any subject, read by a raw client of the
/// NATS protocol (`SUB >`), for looking at what crosses the wire.
struct Wiretap {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Wiretap {
    fn start(nats: &NatsServer) -> Wiretap {
        let mut stream = TcpStream::connect(("127.0.0.1", nats.port)).unwrap();
        stream.write_all(b"CONNECT {\"verbose\":false}\r\nSUB > 1\r\nPING\r\n").unwrap();
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let kept = bytes.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 65536];
            while let Ok(read) = stream.read(&mut buffer) {
                if read == 0 {
                    return;
                }
                if buffer[..read].windows(6).any(|window| window == b"PING\r\n") {
                    let _ = stream.write_all(b"PONG\r\n");
                }
                kept.lock().unwrap().extend_from_slice(&buffer[..read]);
            }
        });
        Wiretap { bytes }
    }

    fn saw(&self, text: &str) -> bool {
        self.bytes.lock().unwrap().windows(text.len()).any(|window| window == text.as_bytes())
    }
}

#[test]
fn a_server_of_one_node_is_called_from_another_and_its_secrets_stay_home() {
    let nats = nats("cluster-nats-1");
    let wiretap = Wiretap::start(&nats);
    let a = node("cluster-a", "a", true, &nats);
    let b = node("cluster-b", "b", false, &nats);
    let a_server = a.call("test__pid", "{}");
    // B has no server of its own: its first call starts it, joins, and
    // runs on A.
    assert_eq!(b.call("test__echo", r#"{"message":"across the cluster"}"#), "across the cluster");
    assert_eq!(b.call("test__pid", "{}"), a_server, "the call ran on A's server");
    assert!(lists(&b, "test__record"), "{}", stdout(&b.warden(&["tools"])));
    // B says where its remote server runs, and who is in the cluster.
    let status: serde_json::Value = serde_json::from_str(&stdout(&b.warden(&["status", "--json"]))).unwrap();
    let test = status["servers"].as_array().unwrap().iter().find(|server| server["name"] == "test").unwrap();
    assert_eq!(test["nodes"], serde_json::json!(["a"]), "{status}");
    assert_eq!(status["cluster"]["node"], "b", "{status}");
    let cluster = stdout(&b.warden(&["cluster", "status"]));
    assert!(cluster.contains("node a (warden "), "{cluster}");
    assert!(cluster.contains("server test: served by a"), "{cluster}");
    assert!(stdout(&b.warden(&["status"])).contains("on node a"));
    let tools = stdout(&b.warden(&["tools"]));
    assert!(tools.lines().any(|line| line.starts_with("test__echo") && line.contains("[on a]")), "{tools}");
    let outside = Home::with_test_server("cluster-none", "");
    let refused = outside.warden(&["cluster", "status"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    assert!(stderr(&refused).contains("not in a cluster"), "{}", stderr(&refused));
    assert!(wiretap.saw("across the cluster"), "the wiretap sees the cluster's traffic");
    // A redacts its own server's secret before the result leaves it.
    let env = b.call("test__env", r#"{"name":"CLUSTER_SECRET"}"#);
    assert!(env.contains("[REDACTED"), "{env}");
    assert!(!env.contains(SECRET), "{env}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!wiretap.saw(SECRET), "A's secret crossed NATS");
    // A tool A's server does not have is an error that says so.
    let missing = b.warden(&["call", "test__nothing", "{}"]);
    assert_ne!(missing.status.code(), Some(0));
    assert!(stderr(&missing).contains("test__nothing"), "{}", stderr(&missing));
    // The whole cluster's record, read on either node: B's calls as they
    // entered at B, and as A ran them.
    let mut audit = serde_json::Value::Null;
    wait_for(Duration::from_secs(5), "both nodes' records in the cluster's audit stream", || {
        audit = serde_json::from_str(&stdout(&a.warden(&["cluster", "audit", "--tool", "test__echo", "--json"])))
            .unwrap_or_default();
        let nodes: Vec<&str> =
            audit.as_array().into_iter().flatten().filter_map(|record| record["node"].as_str()).collect();
        nodes.contains(&"a") && nodes.contains(&"b")
    });
    let records = audit.as_array().unwrap();
    assert!(records.iter().all(|record| record["tool"] == "test__echo"), "{audit}");
    let text = stdout(&b.warden(&["cluster", "audit", "--since", "1h"]));
    assert!(text.lines().any(|line| line.contains("test__env") && line.contains("on node b")), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    let local = stdout(&b.warden(&["audit", "--json"]));
    assert!(!local.contains("\"node\""), "the local file is the node's own record: {local}");
}

#[test]
fn a_killed_node_has_its_servers_withdrawn_and_restored_when_it_returns() {
    let (_nats, a, b) = pair("cluster-kill");
    let a_pid = a.daemon_pid();
    unsafe { libc::kill(a_pid as i32, libc::SIGKILL) };
    let withdrawn = wait_for(Duration::from_secs(10), "withdrawing A's server on B", || !lists(&b, "test__echo"));
    eprintln!("withdrawn {withdrawn:?} after SIGKILL");
    let gone = b.warden(&["call", "test__echo", r#"{"message":"while A is down"}"#]);
    assert_ne!(gone.status.code(), Some(0), "{}", stdout(&gone));
    assert!(stderr(&gone).contains("test__echo"), "{}", stderr(&gone));
    // A comes back (its old heartbeat lapsed): B serves its tools again.
    a.start_daemon();
    let restored = wait_for(Duration::from_secs(10), "restoring A's server on B", || lists(&b, "test__echo"));
    eprintln!("restored {restored:?} after A's start");
    assert_eq!(b.call("test__echo", r#"{"message":"after"}"#), "after");
}

/// `warden call` on `home` in the background.
fn call_in_background(home: &Home, name: &str, arguments: &str) -> Child {
    home.command(&["call", name, arguments])
        .arg("--config")
        .arg(&home.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_call_whose_node_dies_mid_call_is_not_run_twice_and_says_it_may_have_taken_effect() {
    let (_nats, a, b) = pair("cluster-mid");
    let record = a.dir.parent().unwrap().join("executions");
    let arguments = format!(r#"{{"file":{:?},"id":"once","ms":20000}}"#, record.display().to_string());
    let call = call_in_background(&b, "test__record", &arguments);
    wait_for(Duration::from_secs(10), "the call reaching A's server", || {
        std::fs::read_to_string(&record).is_ok_and(|text| text.contains("once"))
    });
    let killed = Instant::now();
    unsafe { libc::kill(a.daemon_pid() as i32, libc::SIGKILL) };
    let output = call.wait_with_output().unwrap();
    let ended = killed.elapsed();
    assert_ne!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(error.contains("may or may not have taken effect"), "{error}");
    assert!(error.contains("node a"), "{error}");
    assert!(ended < Duration::from_secs(10), "the caller waited {ended:?} for a dead node");
    assert_eq!(std::fs::read_to_string(&record).unwrap().matches("once").count(), 1, "run exactly once");
}

#[test]
fn a_reload_that_changes_a_nodes_exports_withdraws_and_offers_its_server() {
    let (_nats, a, b) = pair("cluster-reload");
    let config = std::fs::read_to_string(&a.config).unwrap();
    std::fs::write(&a.config, config.replace("export = [\"test\"]", "export = []")).unwrap();
    let reloaded = a.reload();
    assert_eq!(reloaded.status.code(), Some(0), "{}", stderr(&reloaded));
    wait_for(Duration::from_secs(10), "B withdrawing what A no longer exports", || !lists(&b, "test__echo"));
    std::fs::write(&a.config, config).unwrap();
    assert_eq!(a.reload().status.code(), Some(0));
    wait_for(Duration::from_secs(10), "B serving what A exports again", || lists(&b, "test__echo"));
    assert_eq!(b.call("test__echo", r#"{"message":"again"}"#), "again");
}

/// The ids in the record file, with how many times each ran.
fn executions(record: &std::path::Path) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for id in std::fs::read_to_string(record).unwrap_or_default().split_whitespace() {
        *counts.entry(id.to_string()).or_insert(0) += 1;
    }
    counts
}

#[test]
fn with_two_replicas_one_killed_mid_load_idempotent_calls_all_succeed_and_none_runs_twice_unless_safe() {
    let nats = nats("cluster-nats-5");
    let a1 = node("cluster-replica-a1", "a1", true, &nats);
    let a2 = node("cluster-replica-a2", "a2", true, &nats);
    let b = node("cluster-replica-b", "b", false, &nats);
    a1.start_daemon();
    a2.start_daemon();
    assert_eq!(b.call("test__echo", r#"{"message":"up"}"#), "up");
    wait_for(Duration::from_secs(10), "both replicas serving", || {
        stdout(&b.warden(&["status"])).contains("on nodes a1, a2")
    });
    let dir = a1.dir.parent().unwrap().to_path_buf();
    let (safe, unsafe_) = (dir.join("safe"), dir.join("unsafe"));
    let mut calls = Vec::new();
    // One tool after the other: round robin alternates each tool's calls
    // between the replicas, so a1 dies with about half of each running.
    for (tool, record) in [("test__record", &unsafe_), ("test__record_safe", &safe)] {
        for n in 0..8 {
            let arguments = format!(r#"{{"file":{:?},"id":"c{n}","ms":3000}}"#, record.display().to_string());
            calls.push((tool, n, call_in_background(&b, tool, &arguments)));
            std::thread::sleep(Duration::from_millis(30));
        }
    }
    wait_for(Duration::from_secs(20), "every call reaching a server", || {
        executions(&safe).len() == 8 && executions(&unsafe_).len() == 8
    });
    unsafe { libc::kill(a1.daemon_pid() as i32, libc::SIGKILL) };
    let mut failed_unsafe = 0;
    for (tool, n, call) in calls {
        let output = call.wait_with_output().unwrap();
        let error = String::from_utf8_lossy(&output.stderr).to_string();
        if tool == "test__record_safe" {
            assert_eq!(output.status.code(), Some(0), "c{n} (idempotent) failed: {error}");
        } else if output.status.code() != Some(0) {
            assert!(error.contains("may or may not have taken effect"), "c{n}: {error}");
            failed_unsafe += 1;
        }
    }
    let unsafe_runs = executions(&unsafe_);
    assert!(unsafe_runs.values().all(|runs| *runs == 1), "a call that is not idempotent ran twice: {unsafe_runs:?}");
    assert!(failed_unsafe > 0, "no call was running on the killed replica: the test proves nothing");
    eprintln!("{failed_unsafe} of 8 unsafe calls failed with their replica; safe runs {:?}", executions(&safe));
}

#[test]
fn a_frozen_node_is_withdrawn_and_comes_back_when_it_thaws() {
    let (_nats, a, b) = pair("cluster-stop");
    let a_pid = a.daemon_pid() as i32;
    unsafe { libc::kill(a_pid, libc::SIGSTOP) };
    let withdrawn = wait_for(Duration::from_secs(10), "withdrawing frozen A's server", || !lists(&b, "test__echo"));
    unsafe { libc::kill(a_pid, libc::SIGCONT) };
    let restored = wait_for(Duration::from_secs(10), "restoring thawed A's server", || lists(&b, "test__echo"));
    eprintln!("SIGSTOP: withdrawn after {withdrawn:?}; SIGCONT: restored after {restored:?}");
    assert_eq!(b.call("test__echo", r#"{"message":"thawed"}"#), "thawed");
}

#[test]
fn when_nats_restarts_calls_fail_clearly_and_the_cluster_heals_by_itself() {
    let (mut nats, _a, b) = pair("cluster-natsdown");
    nats.kill();
    let started = Instant::now();
    let down = b.warden(&["call", "test__echo", r#"{"message":"while NATS is down"}"#]);
    assert_ne!(down.status.code(), Some(0), "{}", stdout(&down));
    let said = stderr(&down);
    assert!(said.contains("on another node of the cluster") && said.contains("NATS is down"), "{said}");
    assert!(started.elapsed() < Duration::from_secs(30), "a call waited {:?} for NATS", started.elapsed());
    eprintln!("with NATS down the call ended in {:?}: {}", started.elapsed(), stderr(&down).trim());
    nats.restart();
    let healed = wait_for(Duration::from_secs(30), "the cluster healing after NATS came back", || {
        b.warden(&["call", "test__echo", r#"{"message":"healed"}"#]).status.code() == Some(0)
    });
    eprintln!("healed {healed:?} after NATS restarted");
    assert_eq!(b.call("test__echo", r#"{"message":"after"}"#), "after");
}

#[test]
fn a_call_waiting_for_a_person_on_one_node_is_listed_and_answered_once_from_others() {
    let nats = nats("cluster-nats-8");
    // A asks a person for its own server's calls (no auto-approval).
    let a = Home::new("cluster-approve-a");
    let server = warden_tests::bins::test_server().display().to_string();
    let config =
        format!("[servers.test]\ncommand = {server:?}\n[cluster]\nnats = [\"{}\"]\nnode = \"a\"\n", nats.url());
    std::fs::write(&a.config, config).unwrap();
    let b = node("cluster-approve-b", "b", false, &nats);
    let c = node("cluster-approve-c", "c", false, &nats);
    for home in [&a, &b, &c] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    let call = call_in_background(&a, "test__echo", r#"{"message":"approved elsewhere"}"#);
    let mut id = String::new();
    wait_for(Duration::from_secs(10), "A's waiting call listed on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["approvals", "--json"]))).unwrap_or_default();
        let found = listed["approvals"].as_array().and_then(|all| all.first()).cloned();
        if let Some(request) = found {
            assert_eq!(request["node"], "a", "{request}");
            assert_eq!(request["tool"], "test__echo", "{request}");
            id = request["id"].as_str().unwrap().to_string();
        }
        !id.is_empty()
    });
    assert!(id.starts_with("a:"), "{id}");
    assert!(stdout(&c.warden(&["approvals"])).contains(&format!("#{id} test__echo")));
    // B approves and C denies at the same moment: one decision is taken.
    let spawn = |home: &Home, args: &[&str]| {
        let mut command = home.command(args);
        command.arg("--config").arg(&home.config).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let (approve, deny) = (spawn(&b, &["approve", &id]), spawn(&c, &["deny", &id, "--reason", "no"]));
    let (approve, deny) = (approve.wait_with_output().unwrap(), deny.wait_with_output().unwrap());
    let approved = approve.status.code() == Some(0);
    let denied = deny.status.code() == Some(0);
    assert!(approved != denied, "one decision: approve {approve:?}, deny {deny:?}");
    let loser = if approved { &deny } else { &approve };
    assert!(stderr(loser).contains("is waiting"), "{}", stderr(loser));
    let output = call.wait_with_output().unwrap();
    assert_eq!(output.status.code() == Some(0), approved, "{}", String::from_utf8_lossy(&output.stderr));
    if approved {
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "approved elsewhere");
    }
    wait_for(Duration::from_secs(5), "the answered call leaving every list", || {
        !stdout(&b.warden(&["approvals"])).contains(&id)
    });
}

/// What a `warden call` in the background printed, if it ended within `limit`
/// (else it is killed: the call was waiting for a person).
fn ended_within(mut call: Child, limit: Duration) -> Option<String> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if call.try_wait().unwrap().is_some() {
            let output = call.wait_with_output().unwrap();
            return Some(String::from_utf8_lossy(&output.stdout).trim().to_string());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = call.kill();
    None
}

#[test]
fn a_grant_given_with_an_approval_from_another_node_covers_calls_on_every_node() {
    let nats = nats("cluster-nats-9");
    // Both nodes ask a person; A runs the server, B imports it.
    let server = warden_tests::bins::test_server().display().to_string();
    let (a, b) = (Home::new("cluster-grant-a"), Home::new("cluster-grant-b"));
    let config_a = format!(
        "[servers.test]\ncommand = {server:?}\n[cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"test\"]\n",
        nats.url()
    );
    std::fs::write(&a.config, config_a).unwrap();
    std::fs::write(&b.config, format!("[cluster]\nnats = [\"{}\"]\nnode = \"b\"\n", nats.url())).unwrap();
    for home in [&a, &b] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    wait_for(Duration::from_secs(10), "A's tools on B", || lists(&b, "test__echo"));
    // Without a grant, a call entering at B waits for a person.
    let asked = call_in_background(&b, "test__echo", r#"{"message":"unapproved"}"#);
    assert_eq!(ended_within(asked, Duration::from_secs(2)), None, "B ran a call nobody approved");

    // A call waiting on A, approved from B with a grant for the tool.
    let waiting = call_in_background(&a, "test__echo", r#"{"message":"first"}"#);
    let mut id = String::new();
    wait_for(Duration::from_secs(10), "A's waiting call listed on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["approvals", "--json"]))).unwrap_or_default();
        if let Some(request) = listed["approvals"].as_array().and_then(|all| all.first()) {
            id = request["id"].as_str().unwrap_or_default().to_string();
        }
        id.starts_with("a:")
    });
    let approved = b.warden(&["approve", &id, "--grant"]);
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    assert_eq!(ended_within(waiting, Duration::from_secs(10)).as_deref(), Some("first"));

    // The grant covers later calls on A, and calls entering at B.
    let on_a = call_in_background(&a, "test__echo", r#"{"message":"unasked on a"}"#);
    assert_eq!(ended_within(on_a, Duration::from_secs(10)).as_deref(), Some("unasked on a"));
    let start = Instant::now();
    loop {
        let on_b = call_in_background(&b, "test__echo", r#"{"message":"unasked on b"}"#);
        match ended_within(on_b, Duration::from_secs(2)) {
            Some(said) => {
                assert_eq!(said, "unasked on b");
                break;
            }
            None => assert!(start.elapsed() < Duration::from_secs(6), "A's grant never covered B's calls"),
        }
    }
    // A grant for one tool covers no other.
    let other = call_in_background(&b, "test__pid", "{}");
    assert_eq!(ended_within(other, Duration::from_secs(2)), None, "a grant for test__echo let test__pid run");
}

#[test]
fn a_question_a_server_asks_on_one_node_is_listed_and_answered_on_another() {
    let nats = nats("cluster-nats-10");
    // A runs the Python SDK's asking server and exports it; B imports it.
    let a = Home::new("cluster-question-a");
    let (python, args) = warden_tests::real_servers::python_server_command(&warden_tests::real_servers::python_script(
        "asking_server.py",
    ));
    let config_a = format!(
        "[security]\nauto_approve = true\n[servers.py]\ncommand = {python:?}\nargs = {args:?}\n\
         startup_timeout_secs = 60\nprotocol_version = \"2025-11-25\"\n\
         [cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"py\"]\n",
        nats.url()
    );
    std::fs::write(&a.config, config_a).unwrap();
    let b = node("cluster-question-b", "b", false, &nats);
    for home in [&a, &b] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    wait_for(Duration::from_secs(30), "A's server on B", || lists(&b, "py__book_table"));
    let call = call_in_background(&b, "py__book_table", "{}");
    let mut id = String::new();
    wait_for(Duration::from_secs(20), "the server's question listed on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["pending", "--json"]))).unwrap_or_default();
        if let Some(question) = listed["questions"].as_array().and_then(|all| all.first()) {
            assert_eq!((&question["node"], &question["server"]), (&serde_json::json!("a"), &serde_json::json!("py")));
            id = question["id"].as_str().unwrap_or_default().to_string();
        }
        id.starts_with("a:")
    });
    let listed = stdout(&b.warden(&["pending"]));
    assert!(listed.contains(&format!("#{id} question from server py")), "{listed}");
    assert!(listed.contains(&format!("answer: `warden answer {id} --accept")), "{listed}");
    // A wrong answer from B is refused by A's queue with the reason; the question waits.
    let wrong = b.warden(&["answer", &id, "--accept", r#"{"size": "huge"}"#]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(stderr(&wrong).contains("`size` must be one of: small, large; `huge` is not one"), "{}", stderr(&wrong));
    let right = b.warden(&["answer", &id, "--accept", r#"{"size": "large", "nights": "3"}"#]);
    assert_eq!(right.status.code(), Some(0), "{}", stderr(&right));
    assert_eq!(
        ended_within(call, Duration::from_secs(20)).as_deref(),
        Some("booked Ada large 3\n{\"result\":\"booked Ada large 3\"}")
    );
    let again = b.warden(&["answer", &id, "--cancel"]);
    assert!(stderr(&again).contains("no question"), "{}", stderr(&again));
}
