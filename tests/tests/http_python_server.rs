//! Warden against a server written with the official Python MCP SDK (`mcp`
//! from PyPI, pinned in `tests/python/requirements.txt`) over Streamable
//! HTTP: `tests/python/streamable_server.py`, started by the test on a free
//! loopback port. The TypeScript reference server is covered by
//! `http_servers.rs`; a second, independent implementation catches what
//! one SDK tolerates and another does not (its session handling, its SSE
//! framing, and its standalone GET stream, the only way a list_changed that
//! is not tied to a request reaches the client). Real time, real processes.

use std::time::Duration;

use serde_json::json;
use warden_actors::{ServerState, Warden};
use warden_tests::python_http::PythonHttpServer;
use warden_tests::test_config;

fn tool_names(warden: &Warden) -> Vec<String> {
    warden.tools().into_iter().filter(|entry| entry.primitive_tool.is_none()).map(|entry| entry.name).collect()
}

#[tokio::test]
async fn python_sdk_server_over_http_lists_calls_and_announces_a_new_tool() {
    let server = PythonHttpServer::start("streamable_server.py", &[]).await;
    // Its `add_tool` announces the change the pre-2026 way (on the
    // session's GET stream), which a 2026-07-28 connection does not have.
    let toml =
        format!("[servers.py]\nurl = {:?}\nstartup_timeout_secs = 60\nprotocol_version = \"2025-11-25\"\n", server.url);
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
