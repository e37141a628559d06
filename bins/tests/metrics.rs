//! `GET /metrics`, `/healthz` and `/readyz` on the daemon: counters that
//! match the calls made, checked by Prometheus' own `promtool`, scraped by
//! a real Prometheus server, and readiness as `warden status` says it.
//! (Debian's `prometheus` package gives both; `.ci/run` installs it.)

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, stdout, Home};
use serde_json::Value;

const TOKEN: &str = "metrics-token-0123456789";

/// The test server, a server that cannot start, and metrics on a port of
/// the daemon's choosing; the daemon started. The home and that port.
fn home(label: &str) -> (Home, u16) {
    let home = Home::with_test_server(
        label,
        &format!(
            "[servers.broken]\ncommand = \"/nonexistent/warden-test\"\nmax_restarts = 0\n\
             [metrics]\nlisten = \"127.0.0.1:0\"\ntoken = \"{TOKEN}\"\n"
        ),
    );
    home.start_daemon();
    let port = home.bound_port("metrics");
    (home, port)
}

/// A GET with these extra header lines: status, headers, body.
fn get(port: u16, path: &str, headers: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n{headers}\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

fn authorized() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

#[test]
fn metrics_count_every_call_exactly_pass_promtool_and_readiness_names_the_broken_server() {
    let (home, port) = home("metrics");
    for message in ["a", "b"] {
        home.call("test__echo", &format!(r#"{{"message":"{message}"}}"#));
    }
    assert_eq!(home.warden(&["call", "test__fail", "{}"]).status.code(), Some(1));
    assert_eq!(home.warden(&["call", "test__nope", "{}"]).status.code(), Some(1));

    // A person sees where metrics are served (a port the system chose).
    let said = stdout(&home.warden(&["status"]));
    assert!(
        said.contains(&format!("\n  metrics: http://127.0.0.1:{port}/metrics (and /healthz, /readyz)\n")),
        "{said}"
    );
    assert!(!said.contains("MCP front"), "no front is configured: {said}");

    let (status, head, _) = get(port, "/metrics", "");
    assert_eq!(status, 401, "{head}");
    assert!(head.contains("www-authenticate: bearer"), "{head}");
    let (status, head, metrics) = get(port, "/metrics", &authorized());
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("content-type: text/plain; version=0.0.4"), "{head}");
    // start_daemon's call, and the two above.
    assert!(
        metrics.contains("warden_tool_calls_total{server=\"test\",tool=\"test__echo\",outcome=\"ok\"} 3\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("warden_tool_calls_total{server=\"test\",tool=\"test__fail\",outcome=\"tool_error\"} 1\n"),
        "{metrics}"
    );
    // A name no server has is counted, but is no label.
    assert!(
        metrics.contains("warden_tool_calls_total{server=\"\",tool=\"\",outcome=\"unavailable\"} 1\n"),
        "{metrics}"
    );
    assert!(metrics.contains("warden_tool_call_duration_seconds_count{server=\"test\"} 4\n"), "{metrics}");
    assert!(metrics.contains("warden_server_state{server=\"broken\",state=\"failed\"} 1\n"), "{metrics}");
    assert!(metrics.contains("warden_server_state{server=\"test\",state=\"running\"} 1\n"), "{metrics}");
    assert!(metrics.contains("warden_bridge_requests_total{kind=\"call_tool\"} 5\n"), "{metrics}");
    assert!(!metrics.contains("nope"), "a caller's string became a label: {metrics}");
    assert!(metrics.contains("warden_server_tool_lists_total{server=\"test\"} 1\n"), "{metrics}");
    assert!(metrics.contains("warden_server_startup_seconds{server=\"test\"} 0."), "{metrics}");
    assert!(metrics.lines().any(|line| line.starts_with("warden_bridge_connections ")), "{metrics}");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian's `prometheus` package; .ci/run installs it)");
    promtool.stdin.take().unwrap().write_all(metrics.as_bytes()).unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(checked.status.success(), "promtool: {}{}", stdout(&checked), stderr(&checked));
    // Prometheus itself asks for OpenMetrics.
    let (_, head, openmetrics) =
        get(port, "/metrics", &format!("{}Accept: application/openmetrics-text\r\n", authorized()));
    assert!(head.contains("content-type: application/openmetrics-text"), "{head}");
    assert!(openmetrics.ends_with("# EOF\n"), "{openmetrics}");

    assert_eq!(get(port, "/healthz", "").0, 200);
    let (status, _, readiness) = get(port, "/readyz", "");
    assert_eq!(status, 503, "{readiness}");
    let readiness: Value = serde_json::from_str(&readiness).unwrap();
    assert_eq!(readiness["ready"], false);
    assert_eq!(readiness["not_ready"][0]["name"], "broken", "{readiness}");
    let status: Value = serde_json::from_str(&stdout(&home.warden(&["status", "--json"]))).unwrap();
    assert_eq!(status["readiness"], readiness, "status --json and /readyz disagree");
    let text = stdout(&home.warden(&["status"]));
    assert!(text.lines().any(|line| line.starts_with("test ") && line.contains(", 4 calls")), "{text}");
    let _ = home.warden(&["stop"]);
}

/// Kills the Prometheus server when the test ends, however it ends.
struct Prometheus(std::process::Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_prometheus_server_scrapes_the_daemon_and_its_query_shows_the_calls() {
    let (home, port) = home("metrics-prometheus");
    for _ in 0..4 {
        home.call("test__echo", r#"{"message":"x"}"#);
    }
    let dir = home.config.with_file_name("prometheus");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: warden\n    authorization:\n      \
             credentials: {TOKEN}\n    static_configs:\n      - targets: [\"127.0.0.1:{port}\"]\n"
        ),
    )
    .unwrap();
    let server = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg("--web.listen-address=127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus (Debian's `prometheus` package; .ci/run installs it)");
    let server = Prometheus(server);
    let web = warden_tests::listening::listening_port(server.0.id(), "prometheus", Duration::from_secs(60));
    // start_daemon's call and the four above.
    let query = "/api/v1/query?query=warden_tool_calls_total%7Btool%3D%22test__echo%22%2Coutcome%3D%22ok%22%7D";
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, _, body) = get(web, query, "");
        if status == 200 {
            let answer: Value = serde_json::from_str(&body).unwrap_or_default();
            if answer["data"]["result"][0]["value"][1] == "5" {
                break;
            }
        }
        assert!(Instant::now() < deadline, "Prometheus never saw 5 calls; its last answer: {body}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = home.warden(&["stop"]);
}
