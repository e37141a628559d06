//! The cluster suites' helpers: a NATS server, a node's home, calls in
//! the background, and waiting for what the cluster does.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use warden_tests::nats::NatsServer;

use super::{stdout, Home};

/// A secret in node A's server environment: it must never reach B.
pub(crate) const SECRET: &str = "cluster-secret-4f1e9a0c77d2";

/// Node `node`: the test server as `test` (with the record tools) when
/// `exports`, in the cluster on `nats`.
pub(crate) fn node(label: &str, node: &str, exports: bool, nats: &NatsServer) -> Home {
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

pub(crate) fn nats(label: &str) -> NatsServer {
    NatsServer::start(&warden_tests::scratch_dir(label), "")
}

/// Whether `home`'s daemon lists `tool`.
pub(crate) fn lists(home: &Home, tool: &str) -> bool {
    let output = home.warden(&["tools"]);
    stdout(&output).contains(tool)
}

/// Waits (at most `limit`) until `condition` holds; how long it took.
pub(crate) fn wait_for(limit: Duration, what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !condition() {
        assert!(start.elapsed() < limit, "{what} did not happen within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}

/// `warden call` on `home` in the background.
pub(crate) fn call_in_background(home: &Home, name: &str, arguments: &str) -> Child {
    home.command(&["call", name, arguments])
        .arg("--config")
        .arg(&home.config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The ids in the record file, with how many times each ran.
pub(crate) fn executions(record: &std::path::Path) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for id in std::fs::read_to_string(record).unwrap_or_default().split_whitespace() {
        *counts.entry(id.to_string()).or_insert(0) += 1;
    }
    counts
}

/// What a `warden call` in the background printed, if it ended within `limit`
/// (else it is killed: the call was waiting for a person).
pub(crate) fn ended_within(mut call: Child, limit: Duration) -> Option<String> {
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

/// Node "a" running the Python SDK's asking server as `py`, exported.
pub(crate) fn asking_node(label: &str, nats: &NatsServer) -> Home {
    let home = Home::new(label);
    let (python, args) = warden_tests::real_servers::python_server_command(&warden_tests::real_servers::python_script(
        "asking_server.py",
    ));
    let config = format!(
        "[security]\nauto_approve = true\n[servers.py]\ncommand = {python:?}\nargs = {args:?}\n\
         startup_timeout_secs = 60\nprotocol_version = \"2025-11-25\"\n\
         [cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"py\"]\n",
        nats.url()
    );
    std::fs::write(&home.config, config).unwrap();
    home
}
