//! A 2026-07-28 server over HTTP whose answer streams break: such a
//! stream is not resumed, so the request is lost with it. Warden asks
//! again, under a new id, only for a tool safe to repeat (read-only or
//! idempotent), and otherwise says the call may or may not have run. A
//! scripted server (hyper, on loopback) breaks the first stream of each
//! tool and counts what reached it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use warden_actors::{CallError, ServerState, Warden};
use warden_tests::test_config;

type Body = Either<Full<Bytes>, Chunks>;

/// A body of some chunks, then its end: an event stream that stops short.
struct Chunks(std::collections::VecDeque<Bytes>);

impl hyper::body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        std::task::Poll::Ready(self.0.pop_front().map(|chunk| Ok(Frame::data(chunk))))
    }
}

/// What reached the server: the ids of each tool's calls, and the headers
/// of the last one.
#[derive(Default)]
struct Seen {
    calls: HashMap<String, Vec<Value>>,
    headers: Vec<(String, String)>,
}

fn json_answer(value: Value) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Either::Left(Full::new(value.to_string().into())))
        .unwrap()
}

/// An event stream that says one progress notification and ends, without
/// the answer.
fn broken_stream() -> Response<Body> {
    let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": 0, "progress": 1}});
    let chunks = [Bytes::from(format!("data: {progress}\n\n"))].into();
    Response::builder().header("content-type", "text/event-stream").body(Either::Right(Chunks(chunks))).unwrap()
}

fn answer(seen: &Mutex<Seen>, headers: &HeaderMap, body: &Value) -> Response<Body> {
    let id = &body["id"];
    match body["method"].as_str().unwrap_or_default() {
        "server/discover" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}, "resources": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "breaking", "version": "1"}},
        }})),
        "tools/list" => json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"resultType": "complete", "tools": [
            {"name": "look", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
            {"name": "post", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": false}},
        ]}})),
        "tools/call" => {
            let tool = body["params"]["name"].as_str().unwrap_or_default().to_string();
            let mut seen = seen.lock().unwrap();
            seen.headers = headers
                .iter()
                .filter(|(name, _)| name.as_str().starts_with("mcp-"))
                .map(|(name, value)| (name.to_string(), value.to_str().unwrap_or_default().to_string()))
                .collect();
            let calls = seen.calls.entry(tool.clone()).or_default();
            calls.push(id.clone());
            if calls.len() == 1 {
                return broken_stream();
            }
            let text = format!("{tool} done");
            json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}}))
        }
        "resources/read" => {
            let mut seen = seen.lock().unwrap();
            let reads = seen.calls.entry("read".into()).or_default();
            reads.push(id.clone());
            if reads.len() == 1 {
                return broken_stream();
            }
            let uri = body["params"]["uri"].clone();
            json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"contents": [{"uri": uri, "text": "the note"}]}}))
        }
        _ => json_answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})),
    }
}

/// Serves the script on loopback; its URL and what it saw.
async fn serve() -> (String, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Seen::default()));
    let shared = seen.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let seen = shared.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let (parts, body) = request.into_parts();
                        let bytes = body.collect().await.map(|body| body.to_bytes()).unwrap_or_default();
                        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        Ok::<_, Infallible>(answer(&seen, &parts.headers, &body))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    (url, seen)
}

async fn start(url: &str) -> Warden {
    let config = test_config(&format!("[servers.b]\nurl = {url:?}\n")).expect("valid config");
    let warden = Warden::builder().config(&config).start().await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.expect("the server settles");
    let status = warden.status();
    assert_eq!(status[0].state, ServerState::Running, "{status:?}");
    assert_eq!(status[0].protocol_version.as_deref(), Some("2026-07-28"));
    warden
}

#[tokio::test]
async fn a_read_only_call_whose_stream_broke_is_asked_again_under_a_new_id() {
    let (url, seen) = serve().await;
    let warden = start(&url).await;
    let result = warden.call_tool("b__look", json!({})).await.expect("asked again, answered");
    assert_eq!(result.text(), "look done");
    let seen = seen.lock().unwrap();
    let ids = &seen.calls["look"];
    assert_eq!(ids.len(), 2, "once more after the break");
    assert_ne!(ids[0], ids[1], "a new request, with a new id");
    let headers: HashMap<_, _> = seen.headers.iter().cloned().collect();
    assert_eq!(headers.get("mcp-protocol-version").map(String::as_str), Some("2026-07-28"));
    assert_eq!(headers.get("mcp-method").map(String::as_str), Some("tools/call"));
    assert_eq!(headers.get("mcp-name").map(String::as_str), Some("look"));
    assert!(!headers.contains_key("mcp-session-id"), "no session in 2026-07-28");
    drop(seen);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_call_not_safe_to_repeat_whose_stream_broke_is_not_repeated_and_says_so() {
    let (url, seen) = serve().await;
    let warden = start(&url).await;
    let error = warden.call_tool("b__post", json!({})).await.expect_err("not repeated");
    assert!(matches!(error, CallError::StreamBroken { .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.starts_with("the answer stream of server 'b' broke while it ran 'b__post' ("), "{text}");
    assert!(
        text.ends_with(
            "the call was not repeated because the tool is not marked read-only or idempotent, so it may or may not \
             have taken effect (set `retry_after_crash = \"always\"` on the server to repeat such calls)"
        ),
        "{text}"
    );
    assert_eq!(seen.lock().unwrap().calls["post"].len(), 1, "sent once");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_resource_read_whose_stream_broke_is_asked_again() {
    let (url, seen) = serve().await;
    let warden = start(&url).await;
    let result = warden.call_tool("b__read_resource", json!({"uri": "note://a"})).await.expect("asked again");
    assert!(result.text().contains("the note"), "{}", result.text());
    assert_eq!(seen.lock().unwrap().calls["read"].len(), 2, "once more after the break");
    warden.shutdown().await;
}
