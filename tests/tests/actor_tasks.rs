//! A tool that must run as a task (MCP 2025-11-25, experimental), seen on
//! the wire of a scripted server: called with `params.task`, its task
//! polled at the server's `pollInterval`, its result fetched, and a call
//! the caller drops cancelled as a task.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use tokio::time::Instant;

/// A server offering tasks for tools, with one tool that requires them.
async fn task_server() -> (warden_actors::Warden, warden_protocol::MemoryPeer) {
    let (warden, mut peer) = start_one(settings()).await;
    let capabilities = json!({"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}});
    let tools =
        json!([{"name": "research", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}}]);
    handshake(&mut peer, "2025-11-25", capabilities, tools).await;
    within("the server settles", warden.settled()).await;
    (warden, peer)
}

fn created(task: &str) -> Value {
    json!({"task": {"taskId": task, "status": "working", "createdAt": "2025-11-25T10:30:00Z", "ttl": 30000, "pollInterval": 2000}})
}

#[tokio::test(start_paused = true)]
async fn a_required_task_is_polled_at_its_interval_then_its_result_fetched() {
    let (warden, mut peer) = task_server().await;
    let call = spawn_call(&warden, "srv__research", json!({"topic": "x"}));
    let request = next_request(&mut peer, "tools/call").await;
    let params = request.params.clone().unwrap();
    assert_eq!(params["task"], json!({"ttl": 30000}), "called as a task, its ttl the call's timeout");
    assert_eq!(params["arguments"], json!({"topic": "x"}));
    reply(&peer, &request, created("t-1"));

    let asked = Instant::now();
    let get = next_request(&mut peer, "tasks/get").await;
    assert_eq!(asked.elapsed(), Duration::from_secs(2), "at the server's pollInterval");
    assert_eq!(get.params, Some(json!({"taskId": "t-1"})));
    reply(&peer, &get, json!({"taskId": "t-1", "status": "working"}));
    let get = next_request(&mut peer, "tasks/get").await;
    reply(&peer, &get, json!({"taskId": "t-1", "status": "completed"}));
    let result = next_request(&mut peer, "tasks/result").await;
    assert_eq!(result.params, Some(json!({"taskId": "t-1"})));
    reply(&peer, &result, text_result("found it"));
    assert_eq!(call.await.unwrap().unwrap().text(), "found it");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_task_whose_caller_gives_up_is_cancelled_as_a_task() {
    let (warden, mut peer) = task_server().await;
    let call = spawn_call(&warden, "srv__research", json!({}));
    let request = next_request(&mut peer, "tools/call").await;
    reply(&peer, &request, created("t-2"));
    quiescent().await;
    call.abort();
    let cancel = next_request(&mut peer, "tasks/cancel").await;
    assert_eq!(cancel.params, Some(json!({"taskId": "t-2"})));
    assert_silent(&mut peer).await; // no tasks/get, no notifications/cancelled
    warden.shutdown().await;
}

/// A daemon spawned by `warden tasks` asks about a left task while the
/// task's server is still on its first start: the question waits for the
/// start, then reaches the server, rather than failing with "still
/// starting; retry in a moment".
#[tokio::test(start_paused = true)]
async fn a_left_task_asked_about_during_its_servers_first_start_waits_for_it() {
    let dir = std::env::temp_dir().join(format!("warden-left-task-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let journal = dir.join("tasks.json");
    let left = json!({"left": {"1-1": {"server": "srv", "tool": "srv__research", "task_id": "t-9", "extension": true, "started": 0}}});
    std::fs::write(&journal, left.to_string()).unwrap();
    let (connector, mut peers) = warden_protocol::MemoryConnector::new();
    let spec =
        warden_actors::ServerSpec { name: SRV.into(), connector: std::sync::Arc::new(connector), settings: settings() };
    let warden = warden_actors::Warden::builder()
        .servers(vec![spec])
        .task_journal(journal)
        .start()
        .await
        .expect("Warden starts");
    let mut peer = within("Warden connects to 'srv'", peers.recv()).await.expect("the connector is alive");
    let asking = warden.clone();
    let peek = tokio::spawn(async move { asking.peek_left_task("1-1").await });
    quiescent().await;
    assert!(!peek.is_finished(), "the question waits for the server's start");

    handshake(&mut peer, "2025-11-25", json!({"tools": {}, "tasks": {}}), json!([])).await;
    let get = next_request(&mut peer, "tasks/get").await;
    assert_eq!(get.params, Some(json!({"taskId": "t-9"})));
    reply(&peer, &get, json!({"taskId": "t-9", "status": "working", "statusMessage": "a third done"}));
    let told = within("the answer", peek).await.unwrap().unwrap();
    assert_eq!(told, json!({"status": "working", "statusMessage": "a third done"}));
    warden.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
