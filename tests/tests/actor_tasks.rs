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
