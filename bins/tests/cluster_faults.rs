//! The cluster's fault rows that need more than one NATS server or more
//! than one caller: a three-server NATS cluster losing one server while
//! calls run, and a host killed with 32 calls in flight through the front.

#![allow(unused_crate_dependencies)]

mod common;

use std::time::{Duration, Instant};

use common::cluster::{call_in_background, executions};
use common::{stdout, Home};
use warden_tests::nats::{nats_cluster, NatsServer};

/// Node `node` of the cluster on `urls`: the test server exported when
/// `exports`, with `extra` config.
fn node(label: &str, node: &str, exports: bool, urls: &[String], extra: &str) -> Home {
    let home = Home::new(label);
    let server = warden_tests::bins::test_server().display().to_string();
    let mut config = format!("[security]\nauto_approve = true\n{extra}");
    if exports {
        config +=
            &format!("[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,sleep,record,record_safe\"]\n");
    }
    let urls: Vec<String> = urls.iter().map(|url| format!("{url:?}")).collect();
    config += &format!(
        "[cluster]\nnats = [{}]\nnode = \"{node}\"\nexport = [{}]\n",
        urls.join(", "),
        if exports { "\"test\"" } else { "" }
    );
    std::fs::write(&home.config, config).unwrap();
    home
}

#[test]
fn one_of_three_nats_servers_dying_leaves_no_call_waiting_and_the_cluster_heals() {
    let mut servers: Vec<NatsServer> = nats_cluster(&warden_tests::scratch_dir("cluster-nats3"));
    let urls: Vec<String> = servers.iter().map(NatsServer::url).collect();
    let a = node("cluster-nats3-a", "a", true, &urls, "");
    let b = node("cluster-nats3-b", "b", false, &urls, "");
    assert_eq!(a.warden(&["status"]).status.code(), Some(0));
    assert_eq!(b.call("test__echo", r#"{"message":"up"}"#), "up");
    // The buckets are kept on all three servers.
    let status: serde_json::Value = serde_json::from_str(&stdout(&b.warden(&["cluster", "status", "--json"]))).unwrap();
    assert_eq!(status["replicas"], 3, "{status}");
    assert!(stdout(&b.warden(&["cluster", "status"])).contains("its state on 3 NATS servers"));

    // A call in flight when the first server dies: it ends, one way or the other.
    let in_flight = call_in_background(&b, "test__sleep", r#"{"ms": 1500}"#);
    std::thread::sleep(Duration::from_millis(300));
    servers[0].kill();
    let start = Instant::now();
    let output = in_flight.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(35), "the call in flight waited {:?}", start.elapsed());
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(said.contains("error"), "a failed call says why: {said}");
    }
    // Calls go on; each ends within seconds, and within 10 s they all succeed again.
    let mut outcomes = Vec::new();
    let start = Instant::now();
    let mut healthy_in_a_row = 0;
    while healthy_in_a_row < 5 {
        assert!(start.elapsed() < Duration::from_secs(20), "the cluster did not heal: {outcomes:?}");
        let began = Instant::now();
        let output = b.warden(&["call", "test__echo", r#"{"message":"still here"}"#]);
        let took = began.elapsed();
        assert!(took < Duration::from_secs(12), "a call waited {took:?}");
        let ok = output.status.success() && stdout(&output).trim() == "still here";
        healthy_in_a_row = if ok { healthy_in_a_row + 1 } else { 0 };
        outcomes.push((ok, took));
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("after one of three NATS servers died: {outcomes:?}");
    // A is still a live node for B.
    let status: serde_json::Value = serde_json::from_str(&stdout(&b.warden(&["cluster", "status", "--json"]))).unwrap();
    assert!(status["nodes"].as_array().unwrap().iter().any(|node| node["name"] == "a"), "{status}");
}

#[test]
fn a_host_killed_with_32_calls_in_flight_through_the_front_loses_none_runs_none_twice_and_mixes_none() {
    use common::front_client::{call, Http, TOKEN};
    let nats = NatsServer::start(&warden_tests::scratch_dir("cluster-front32-nats"), "");
    let urls = [nats.url()];
    let front = format!("[front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n{METRICS}");
    let a1 = node("cluster-front32-a1", "a1", true, &urls, "");
    let a2 = node("cluster-front32-a2", "a2", true, &urls, METRICS);
    let b = node("cluster-front32-b", "b", false, &urls, &front);
    for home in [&a1, &a2] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    let port = b.front_port();
    let start = Instant::now();
    while !stdout(&b.warden(&["status"])).contains("on nodes a1, a2") {
        assert!(start.elapsed() < Duration::from_secs(10), "both replicas never served B");
        std::thread::sleep(Duration::from_millis(50));
    }
    let dir = a1.dir.parent().unwrap().to_path_buf();
    let (safe, unsafe_) = (dir.join("front32-safe"), dir.join("front32-unsafe"));
    let _ = (std::fs::remove_file(&safe), std::fs::remove_file(&unsafe_));
    // 32 clients, each its own session and connection: half a tool that
    // must not run twice, half one that may.
    let clients: Vec<_> = (0..32)
        .map(|n| {
            let (tool, record) = if n % 2 == 0 { ("test__record", &unsafe_) } else { ("test__record_safe", &safe) };
            let arguments =
                serde_json::json!({"file": record.display().to_string(), "id": format!("c{n}"), "ms": 3000});
            std::thread::spawn(move || {
                let mut http = Http::connect(port);
                let session = http.initialize("/mcp", TOKEN).unwrap();
                let answer = http.post("/mcp", TOKEN, Some(&session), &call(n, tool, arguments)).json();
                (n, tool, answer)
            })
        })
        .collect();
    let start = Instant::now();
    while executions(&safe).len() + executions(&unsafe_).len() < 32 {
        assert!(start.elapsed() < Duration::from_secs(20), "not every call reached a server");
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(a1.daemon_pid() as i32, libc::SIGKILL) };
    let killed = Instant::now();
    let mut withdrawn = None;
    while withdrawn.is_none() {
        if stdout(&b.warden(&["status"])).contains("on node a2") {
            withdrawn = Some(killed.elapsed());
        }
        assert!(killed.elapsed() < Duration::from_secs(10), "a1 was never withdrawn");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut ok, mut failed, mut mixed) = (0, 0, 0);
    for client in clients {
        let (n, tool, answer) = client.join().expect("every call was answered (none lost)");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
        if answer["result"]["isError"] == true {
            failed += 1;
            assert_eq!(tool, "test__record", "an idempotent call failed: {answer}");
            assert!(text.contains("may or may not have taken effect"), "{answer}");
        } else if text == format!("recorded c{n}") {
            ok += 1;
        } else {
            mixed += 1;
            eprintln!("call {n} got another call's answer: {answer}");
        }
    }
    let duplicated = executions(&unsafe_).values().filter(|runs| **runs > 1).count();
    let took = killed.elapsed();
    eprintln!(
        "| host SIGKILL, 32 in flight through the front | made 32 | ok {ok} | error {failed} | lost 0 | duplicated {duplicated} | mixed {mixed} | withdrawn in {:.2} s | all answered {:.1} s after the kill |",
        withdrawn.unwrap().as_secs_f64(),
        took.as_secs_f64()
    );
    assert_eq!((mixed, duplicated), (0, 0));
    assert_eq!(ok + failed, 32);
    assert!(withdrawn.unwrap() < Duration::from_secs(3), "withdrawn after {withdrawn:?}");
    assert!(ok >= 16, "every idempotent call, and the non-idempotent ones on a2, succeed: {ok} did");

    // The cluster's series say the same, by node: every success answered
    // by a2 (and served there for b), a1's attempts ended unknown.
    let on_b = metrics(b.bound_port("metrics"));
    assert_eq!(
        series(&on_b, r#"warden_cluster_attempts_total{server="test",node="a2",outcome="answered"}"#),
        ok,
        "{on_b}"
    );
    assert!(series(&on_b, r#"warden_cluster_attempts_total{server="test",node="a1",outcome="unknown"}"#) >= failed);
    assert_eq!(series(&on_b, "warden_cluster_nodes"), 1, "{on_b}");
    assert!(on_b.contains(r#"warden_cluster_attempt_seconds_count{server="test",node="a2"}"#), "{on_b}");
    let on_a2 = metrics(a2.bound_port("metrics"));
    assert_eq!(series(&on_a2, r#"warden_cluster_served_total{server="test",from="b",outcome="ok"}"#), ok, "{on_a2}");
}

const METRICS_TOKEN: &str = "metrics-token-0123456789abcdef";
const METRICS: &str = "[metrics]\nlisten = \"127.0.0.1:0\"\ntoken = \"metrics-token-0123456789abcdef\"\n";

/// The exposition of the metrics listener on `port`.
fn metrics(port: u16) -> String {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {METRICS_TOKEN}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}

/// The value of the series `name` (labels included, as exposed); 0 when absent.
fn series(exposition: &str, name: &str) -> usize {
    exposition
        .lines()
        .find_map(|line| line.strip_prefix(name)?.trim().parse::<f64>().ok())
        .map_or(0, |value| value as usize)
}
