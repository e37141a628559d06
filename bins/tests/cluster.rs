//! The cluster: Warden daemons on one machine sharing their servers
//! through a real `nats-server` (pinned, installed by the tests), each
//! daemon with its own state directory — a server of node A called from
//! node B, its secrets kept on A, and what B sees when A dies.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{call_in_background, executions, lists, nats, node, wait_for, SECRET};
use common::{stderr, stdout, Home};
use warden_tests::nats::NatsServer;

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
