//! Warden against a real MCP server over Streamable HTTP: the pinned
//! `@modelcontextprotocol/server-everything` in its `streamableHttp` mode,
//! started by the test on a free loopback port. Real time, real processes.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use warden_actors::{ServerState, Warden, WardenConfig};

mod common;
use common::join_all;
use warden_tests::real_servers::EVERYTHING;

/// server-everything serving Streamable HTTP; killed when dropped, so a
/// failing test does not leave it running.
struct HttpEverything {
    child: Child,
    url: String,
}

impl HttpEverything {
    /// Starts the server and waits until it listens.
    async fn start() -> HttpEverything {
        // `node <script> stdio`: the same script, another transport.
        let (node, args) = EVERYTHING.command(&[]);
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(node)
            .arg(&args[0])
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        // It says so on stderr once it listens; the rest of stderr is its
        // request log, drained so the pipe never fills.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let listening = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("listening on port") {
                    return;
                }
            }
            panic!("server-everything exited before listening");
        };
        tokio::time::timeout(Duration::from_secs(30), listening).await.expect("server-everything listens in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        HttpEverything { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }

    async fn stop(mut self) {
        self.child.kill().await.expect("the server is killed");
    }
}

#[tokio::test]
async fn server_everything_over_http_lists_and_calls_tools() {
    let server = HttpEverything::start().await;
    let toml = format!(
        "[servers.remote]\nurl = {:?}\nheaders = {{ X-Test = \"warden\" }}\nstartup_timeout_secs = 60\n",
        server.url
    );
    let config = WardenConfig::from_toml(&toml, "test config").expect("valid config");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(60), warden.settled()).await.expect("the server settles");
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status:?}");
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(status.server_info.as_ref().unwrap().name, "mcp-servers/everything");

    let (wrappers, own): (Vec<_>, Vec<_>) = warden.tools().into_iter().partition(|entry| entry.wrapper.is_some());
    let names =
        |entries: Vec<warden_actors::ToolEntry>| entries.into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    assert_eq!(
        names(own),
        [
            "remote__echo",
            "remote__get-annotated-message",
            "remote__get-env",
            "remote__get-resource-links",
            "remote__get-resource-reference",
            "remote__get-structured-content",
            "remote__get-sum",
            "remote__get-tiny-image",
            "remote__gzip-file-as-resource",
            // Registered when the server is initialised: listed because
            // `tools/list` waits until `notifications/initialized` was
            // accepted (its list_changed would go to the GET stream, which
            // Warden does not open yet).
            "remote__simulate-research-query",
            "remote__toggle-simulated-logging",
            "remote__toggle-subscriber-updates",
            "remote__trigger-long-running-operation",
        ]
    );
    assert_eq!(
        names(wrappers),
        ["remote__get_prompt", "remote__list_prompts", "remote__list_resources", "remote__read_resource"]
    );

    let echo = warden.call_tool("remote__echo", json!({"message": "hello"})).await.unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    // Many calls at once, each its own POST.
    let calls = &warden;
    let sums = (0..16)
        .map(|n| async move { calls.call_tool("remote__get-sum", json!({"a": n, "b": 1})).await.unwrap().text() })
        .collect();
    let sums = join_all(sums).await;
    for (n, text) in sums.iter().enumerate() {
        assert_eq!(text, &format!("The sum of {n} and 1 is {}.", n + 1));
    }

    warden.shutdown().await;
    server.stop().await;
}

#[tokio::test]
async fn an_http_server_that_is_not_there_fails_with_what_happened() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let toml = format!("[servers.remote]\nurl = {url:?}\n");
    let config = WardenConfig::from_toml(&toml, "test config").expect("valid config");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.expect("the server settles");
    let status = &warden.status()[0];
    let ServerState::Failed { reason } = &status.state else { panic!("the server failed: {status:?}") };
    assert!(reason.contains(&format!("could not reach {url}: ")), "{reason}");
    warden.shutdown().await;
}
