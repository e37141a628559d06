//! Warden against a scripted Streamable HTTP server (hyper, on loopback):
//! what a real server does only when it feels like it, on demand.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use warden_actors::{ServerState, Warden, WardenConfig};

/// A response body: all at once, or events as the test sends them.
type Body = Either<Full<Bytes>, Held>;

/// A body that stays open while the test holds the sender.
struct Held(mpsc::UnboundedReceiver<Bytes>);

impl hyper::body::Body for Held {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|chunk| chunk.map(|chunk| Ok(Frame::data(chunk))))
    }
}

/// The server's state: which tools it lists, and the GET stream it will
/// hand out (one).
struct Script {
    tools: Vec<&'static str>,
    get_stream: Option<mpsc::UnboundedReceiver<Bytes>>,
}

fn json_body(value: Value) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Either::Left(Full::new(value.to_string().into())))
        .unwrap()
}

fn empty(status: StatusCode) -> Response<Body> {
    Response::builder().status(status).body(Either::Left(Full::new(Bytes::new()))).unwrap()
}

/// Answers one request the way a small MCP server with session `s-1` does.
fn answer(script: &Mutex<Script>, method: &Method, body: &Value) -> Response<Body> {
    let mut script = script.lock().unwrap();
    if method == Method::GET {
        return match script.get_stream.take() {
            Some(events) => Response::builder()
                .header("content-type", "text/event-stream")
                .body(Either::Right(Held(events)))
                .unwrap(),
            None => empty(StatusCode::METHOD_NOT_ALLOWED),
        };
    }
    let id = &body["id"];
    match body["method"].as_str() {
        _ if method == Method::DELETE => empty(StatusCode::OK),
        Some("initialize") => {
            let mut response = json_body(json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "scripted", "version": "1"}
            }}));
            response.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
            response
        }
        Some("tools/list") => {
            let tools: Vec<_> =
                script.tools.iter().map(|name| json!({"name": name, "inputSchema": {"type": "object"}})).collect();
            json_body(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}))
        }
        _ if id.is_null() => empty(StatusCode::ACCEPTED),
        _ => json_body(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})),
    }
}

/// Serves `script` on `127.0.0.1:0`; the endpoint URL.
async fn serve(script: Arc<Mutex<Script>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let script = script.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let script = script.clone();
                    async move {
                        let (parts, body) = request.into_parts();
                        let bytes = body.collect().await.unwrap().to_bytes();
                        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        Ok::<_, Infallible>(answer(&script, &parts.method, &body))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn a_list_changed_on_the_get_stream_makes_warden_list_again() {
    let (events, get_stream) = mpsc::unbounded_channel();
    let script = Arc::new(Mutex::new(Script { tools: vec!["first"], get_stream: Some(get_stream) }));
    let url = serve(script.clone()).await;
    let config = WardenConfig::from_toml(&format!("[servers.remote]\nurl = {url:?}\n"), "test config").unwrap();
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.expect("the server settles");
    assert_eq!(warden.status()[0].state, ServerState::Running);
    let names = |warden: &Warden| warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    assert_eq!(names(&warden), ["remote__first"]);

    let mut changes = warden.tool_changes();
    script.lock().unwrap().tools.push("second");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    events.send(Bytes::from(format!("id: 1\ndata: {note}\n\n"))).unwrap();
    let tools = tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("a change in time");
    let tools = tools.expect("Warden runs").into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    assert_eq!(tools, ["remote__first", "remote__second"]);

    // Shutting down ends the GET stream.
    warden.shutdown().await;
    tokio::time::timeout(Duration::from_secs(10), events.closed()).await.expect("the GET stream is dropped");
}
