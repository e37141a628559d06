//! Warden against a server written with the official Python MCP SDK (`mcp`
//! from PyPI, pinned in `tests/python/requirements.txt`) over Streamable
//! HTTP: `tests/python/streamable_server.py`, started by the test on a free
//! loopback port. The TypeScript reference server is covered by
//! `http_servers.rs`; a second, independent implementation catches what
//! one SDK tolerates and another does not (its session handling, its SSE
//! framing, and its standalone GET stream, the only way a list_changed that
//! is not tied to a request reaches the client). Real time, real processes.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use warden_actors::{ServerState, Warden};
use warden_tests::real_servers::{python_script, python_server_command};
use warden_tests::test_config;

/// The Python server; killed when dropped, so a failing test does not leave
/// it running.
struct PythonServer {
    child: Child,
    url: String,
}

impl PythonServer {
    /// Starts the server on a free port and waits until it listens.
    async fn start() -> PythonServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (python, mut args) = python_server_command(&python_script("streamable_server.py"));
        args.push(port.to_string());
        let mut child = Command::new(python)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python starts");
        // uvicorn says so on stderr once it listens; the rest of stderr is
        // its request log, drained so the pipe never fills.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut seen = Vec::new();
        let listening = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains(&format!("Uvicorn running on http://127.0.0.1:{port}")) {
                    return;
                }
                seen.push(line);
            }
            panic!("the Python server exited before listening:\n{}", seen.join("\n"));
        };
        tokio::time::timeout(Duration::from_secs(60), listening).await.expect("the Python server listens in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        PythonServer { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }

    async fn stop(mut self) {
        self.child.kill().await.expect("the server is killed");
    }
}

fn tool_names(warden: &Warden) -> Vec<String> {
    warden.tools().into_iter().filter(|entry| entry.primitive_tool.is_none()).map(|entry| entry.name).collect()
}

#[tokio::test]
async fn python_sdk_server_over_http_lists_calls_and_announces_a_new_tool() {
    let server = PythonServer::start().await;
    let toml = format!("[servers.py]\nurl = {:?}\nstartup_timeout_secs = 60\n", server.url);
    let config = test_config(&toml).expect("valid config");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(60), warden.settled()).await.expect("the server settles");
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status:?}");
    assert_eq!(status.server_info.as_ref().unwrap().name, "warden-python-test-server");

    assert_eq!(tool_names(&warden), ["py__add", "py__add_tool", "py__echo"]);
    let echo = warden.call_tool("py__echo", json!({"message": "hello from Warden"})).await.unwrap();
    assert_eq!(echo.text(), "hello from Warden");
    let sum = warden.call_tool("py__add", json!({"a": 40, "b": 2})).await.unwrap();
    assert_eq!(sum.text(), "42");

    // The server registers `late` and sends tools/list_changed on the GET
    // stream; Warden lists the tools again and publishes the new table.
    let mut changes = warden.tool_changes();
    let added = warden.call_tool("py__add_tool", json!({})).await.unwrap();
    assert_eq!(added.text(), "added late");
    tokio::time::timeout(Duration::from_secs(20), async {
        while !tool_names(&warden).iter().any(|name| name == "py__late") {
            changes.changed().await.expect("Warden is running");
        }
    })
    .await
    .expect("py__late is announced over the GET stream within 20 s");
    assert_eq!(tool_names(&warden), ["py__add", "py__add_tool", "py__echo", "py__late"]);
    let late = warden.call_tool("py__late", json!({})).await.unwrap();
    assert_eq!(late.text(), "late tool called");

    warden.shutdown().await;
    server.stop().await;
}
