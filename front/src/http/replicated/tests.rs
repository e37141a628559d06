//! Two HTTP fronts as replicas over one in-memory store, spoken to as a
//! client behind a load balancer would: each request to whichever.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use serde_json::{json, Value};
use warden_actors::{Warden, WardenConfig};
use warden_config::{FrontConfig, FrontToken};

use super::super::{service, HttpFront};
use crate::replicas::SharedMemory;
use crate::Front;

const TOKEN: &str = "replica-token-0123456789abcdef";
const OTHER: &str = "other-token-0123456789abcdef";

async fn warden(auto_approve: bool) -> Warden {
    let server = warden_tests::bins::test_server().display().to_string();
    let text = format!(
        "[security]\nauto_approve = {auto_approve}\n[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo\"]\n"
    );
    let warden = Warden::start(&WardenConfig::from_toml(&text, "test.toml").unwrap()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.unwrap();
    warden
}

/// Two replicas, `a` and `b`, of a front of `warden`, sharing `shared`.
fn replicas(warden: &Warden, shared: &SharedMemory) -> (Arc<HttpFront>, Arc<HttpFront>) {
    let tokens = [TOKEN, OTHER].map(|token| FrontToken { token: token.into(), agent: None, name: None }).to_vec();
    let config = FrontConfig { tokens, ..FrontConfig::default() };
    // Each replica a front of its own (its own parked calls, its own seal key).
    let make = |name: &str| {
        HttpFront::from_config(Front::new(warden.clone()), &config, "127.0.0.1:9".parse().unwrap())
            .replicas(shared.replica(name))
            .build()
    };
    (make("a"), make("b"))
}

struct Reply {
    status: u16,
    session: Option<String>,
    body: hyper::body::Incoming,
}

/// One request as a client sends it, with `headers` beyond the usual.
async fn send(front: &HttpFront, method: &str, token: &str, headers: &[(&str, &str)], body: Option<Value>) -> Reply {
    let mut request = Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", "127.0.0.1:9")
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let bytes = body.map(|body| Bytes::from(body.to_string())).unwrap_or_default();
    let request = request.body(service::boxed(Full::new(bytes))).unwrap();
    let answer = front.handle(request).await;
    let status = answer.status().as_u16();
    let session = answer.headers().get("mcp-session-id").map(|id| id.to_str().unwrap().to_string());
    // The answer's body, made readable as a stream of frames.
    let (parts, body) = answer.into_parts();
    let _ = parts;
    Reply { status, session, body: to_incoming(body).await }
}

/// Serves `body` over an in-memory HTTP/1 connection so it can be read
/// like a client reads it, frame by frame.
async fn to_incoming(body: crate::http_server::Body) -> hyper::body::Incoming {
    let (client, server) = tokio::io::duplex(1 << 16);
    let body = std::sync::Mutex::new(Some(body));
    let service = hyper::service::service_fn(move |_request| {
        let body = body.lock().unwrap().take().expect("one request");
        async move { Ok::<_, std::convert::Infallible>(hyper::Response::new(body)) }
    });
    tokio::spawn(
        hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(server), service),
    );
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(client)).await.unwrap();
    tokio::spawn(connection);
    let request = Request::builder().uri("/").body(Full::new(Bytes::new())).unwrap();
    sender.send_request(request).await.unwrap().into_body()
}

/// The JSON-RPC messages in `body` (a JSON answer, or SSE events), read
/// until `count` arrived or `limit` passed.
async fn messages(body: &mut hyper::body::Incoming, count: usize, limit: Duration) -> Vec<Value> {
    let mut text = String::new();
    let mut found = Vec::new();
    let _ = tokio::time::timeout(limit, async {
        while found.len() < count {
            let Some(Ok(frame)) = body.frame().await else { return };
            let Ok(data) = frame.into_data() else { continue };
            text.push_str(&String::from_utf8_lossy(&data));
            found = parse(&text);
        }
    })
    .await;
    found
}

fn parse(text: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return vec![value];
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

fn initialize(capabilities: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": capabilities, "clientInfo": {"name": "alternating", "version": "1"}}})
}

fn echo(id: u64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "test__echo", "arguments": {"message": message}}})
}

async fn answer(front: &HttpFront, session: &str, message: Value) -> (u16, Vec<Value>) {
    let mut reply = send(front, "POST", TOKEN, &[("mcp-session-id", session)], Some(message)).await;
    (reply.status, messages(&mut reply.body, 1, Duration::from_secs(20)).await)
}

#[tokio::test]
async fn a_session_made_on_one_replica_is_served_by_the_other_and_ended_on_both() {
    let warden = warden(true).await;
    let shared = SharedMemory::default();
    let (a, b) = replicas(&warden, &shared);
    let made = send(&a, "POST", TOKEN, &[], Some(initialize(json!({})))).await;
    assert_eq!(made.status, 200);
    let id = made.session.expect("a session id");

    let (status, said) = answer(&b, &id, echo(1, "on b")).await;
    assert_eq!((status, said[0]["result"]["content"][0]["text"].as_str()), (200, Some("on b")), "{said:?}");
    let (_, said) = answer(&a, &id, echo(2, "on a")).await;
    assert_eq!(said[0]["result"]["content"][0]["text"], "on a", "{said:?}");
    let level = json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "error"}});
    let (status, said) = answer(&b, &id, level).await;
    assert_eq!((status, &said[0]["result"]), (200, &json!({})), "{said:?}");

    // Another identity showing the id is told there is no such session, on either.
    for front in [&a, &b] {
        let stolen = send(front, "POST", OTHER, &[("mcp-session-id", &id)], Some(echo(4, "stolen"))).await;
        assert_eq!(stolen.status, 404);
    }
    // Ended on b: a's copy ends too, and no replica adopts it again.
    assert_eq!(send(&b, "DELETE", TOKEN, &[("mcp-session-id", &id)], None).await.status, 204);
    let start = tokio::time::Instant::now();
    loop {
        let (status, _) = answer(&a, &id, echo(5, "after")).await;
        if status == 404 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(2), "a still serves a session ended on b");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (third, _) = replicas(&warden, &shared);
    assert_eq!(answer(&third, &id, echo(6, "after")).await.0, 404);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_stream_resumed_on_another_replica_is_told_what_it_may_have_missed() {
    let warden = warden(true).await;
    let shared = SharedMemory::default();
    let (a, b) = replicas(&warden, &shared);
    let id = send(&a, "POST", TOKEN, &[], Some(initialize(json!({})))).await.session.unwrap();
    // An event id of a's (or of a front that restarted), shown to b.
    let mut stream = send(&b, "GET", TOKEN, &[("mcp-session-id", &id), ("last-event-id", "0badf00d.7")], None).await;
    assert_eq!(stream.status, 200);
    let said = messages(&mut stream.body, 2, Duration::from_secs(5)).await;
    assert_eq!(said[0]["method"], "notifications/message", "{said:?}");
    assert_eq!(said[0]["params"]["level"], "warning");
    let text = said[0]["params"]["data"].as_str().unwrap();
    assert!(text.contains("after event 0badf00d.7") && text.contains("may have been missed"), "{text}");
    assert_eq!(said[1]["method"], "notifications/tools/list_changed", "{said:?}");
    // A new stream, with nothing to resume, is told nothing.
    let mut fresh = send(&b, "GET", TOKEN, &[("mcp-session-id", &id)], None).await;
    assert!(messages(&mut fresh.body, 1, Duration::from_millis(300)).await.is_empty());
    warden.shutdown().await;
}

#[tokio::test]
async fn an_approval_asked_on_one_replica_is_answered_through_the_other_and_holds_on_both() {
    let warden = warden(false).await;
    let shared = SharedMemory::default();
    let (a, b) = replicas(&warden, &shared);
    let id = send(&a, "POST", TOKEN, &[], Some(initialize(json!({"elicitation": {}})))).await.session.unwrap();
    let mut call = send(&a, "POST", TOKEN, &[("mcp-session-id", &id)], Some(echo(1, "asked on a"))).await;
    let asked = messages(&mut call.body, 1, Duration::from_secs(20)).await;
    assert_eq!(asked[0]["method"], "elicitation/create", "{asked:?}");
    // The client's answer reaches b, which forwards it to a's waiting call.
    let decision = json!({"jsonrpc": "2.0", "id": asked[0]["id"],
        "result": {"action": "accept", "content": {"decision": "session"}}});
    assert_eq!(send(&b, "POST", TOKEN, &[("mcp-session-id", &id)], Some(decision)).await.status, 202);
    let done = messages(&mut call.body, 2, Duration::from_secs(20)).await;
    assert_eq!(done.last().unwrap()["result"]["content"][0]["text"], "asked on a", "{done:?}");
    // Approved for the session: b runs the next call without asking, once
    // a's record of the approval reached it (as fast as the store tells).
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (_, said) = answer(&b, &id, echo(2, "unasked on b")).await;
    assert_eq!(said[0]["result"]["content"][0]["text"], "unasked on b", "{said:?}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_2026_call_parked_on_one_replica_is_resumed_through_the_other() {
    let warden = warden(false).await;
    let shared = SharedMemory::default();
    let (a, b) = replicas(&warden, &shared);
    let headers = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "test__echo")];
    let call = |extra: Value| {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"}});
        let mut params = json!({"name": "test__echo", "arguments": {"message": "resumed on b"}, "_meta": meta});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    };
    // a parks the call: the approval is asked of the client.
    let mut first = send(&a, "POST", TOKEN, &headers, Some(call(json!({})))).await;
    let said = messages(&mut first.body, 1, Duration::from_secs(20)).await;
    let result = &said[0]["result"];
    assert_eq!(result["resultType"], "input_required", "{said:?}");
    let key = result["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let state = result["requestState"].as_str().unwrap().to_string();
    let responses = json!({ key: {"action": "accept", "content": {"decision": "once"}} });
    let retry = call(json!({"requestState": state, "inputResponses": responses}));

    // Another identity's retry through b is refused by a, as it would be there.
    let mut stolen = send(&b, "POST", OTHER, &headers, Some(retry.clone())).await;
    assert_eq!(stolen.status, 400);
    let said = messages(&mut stolen.body, 1, Duration::from_secs(20)).await;
    assert!(said[0]["error"]["message"].as_str().unwrap().contains("another client's call"), "{said:?}");

    // The client's own retry reaches b, which relays it to a, which resumes the call.
    let mut resumed = send(&b, "POST", TOKEN, &headers, Some(retry.clone())).await;
    assert_eq!(resumed.status, 200);
    let said = messages(&mut resumed.body, 1, Duration::from_secs(20)).await;
    assert_eq!(said[0]["result"]["content"][0]["text"], "resumed on b", "{said:?}");
    // Once: the same retry again is told the call no longer waits.
    let mut again = send(&b, "POST", TOKEN, &headers, Some(retry)).await;
    let said = messages(&mut again.body, 1, Duration::from_secs(20)).await;
    assert!(said[0]["error"]["message"].as_str().unwrap().contains("no longer waiting"), "{said:?}");
    warden.shutdown().await;
}
