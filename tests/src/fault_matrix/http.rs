//! The fault matrix's HTTP rows (issue 19): a scripted Streamable HTTP
//! server (hyper on loopback, MCP 2025-11-25 with a session) that fails
//! on cue while calls are in flight — HTTP 500s, its session lost (404),
//! an answer stream cut mid-event, an answer that never comes (a
//! slow-loris response), a TLS handshake that stalls — and every call is
//! accounted for as in `fault_matrix` (executions counted on the server's
//! side). `-- --nocapture` prints the table.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{executed_twice, run, Planned, Row};
use crate::test_config;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use warden_actors::{CallOptions, Warden};

/// What the server does to `tools/call`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Answers.
    None,
    /// Every other call is refused with HTTP 500 (not run).
    Every2nd500,
    /// The next call finds its session gone (404, not run); so do the
    /// requests after it, until a new `initialize`.
    LoseSession,
    /// Runs the call, then cuts its answer's event stream mid-event — the
    /// first time each call comes (a call sent again is answered).
    CutStream,
    /// Reads the call and never answers.
    Silent,
}

struct Server {
    fault: Fault,
    /// The session ids it knows.
    sessions: Vec<String>,
    started: usize,
    /// Each call's `id` argument, once per execution.
    executed: Vec<String>,
    calls: usize,
}

type Shared = Arc<Mutex<Server>>;

fn json_answer(value: Value) -> Response<Full<Bytes>> {
    Response::builder().header("content-type", "application/json").body(Full::new(value.to_string().into())).unwrap()
}

fn status(code: StatusCode, text: &str) -> Response<Full<Bytes>> {
    Response::builder().status(code).body(Full::new(Bytes::from(text.to_string()))).unwrap()
}

/// One request's answer; `None` never to answer.
fn answer(server: &Shared, session: Option<&str>, body: &Value) -> Option<Response<Full<Bytes>>> {
    let mut server = server.lock().unwrap();
    let id = &body["id"];
    let method = body["method"].as_str().unwrap_or_default();
    if method == "initialize" {
        server.started += 1;
        let session = format!("s-{}", server.started);
        server.sessions.push(session.clone());
        let mut response = json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "faulty", "version": "1"}
        }}));
        response.headers_mut().insert("mcp-session-id", session.parse().unwrap());
        return Some(response);
    }
    if method == "server/discover" {
        return Some(json_answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})));
    }
    if !session.is_some_and(|session| server.sessions.iter().any(|known| known == session)) {
        return Some(status(StatusCode::NOT_FOUND, "no such session"));
    }
    match method {
        "tools/list" => {
            let tools = json!([
                {"name": "work", "inputSchema": {"type": "object"}},
                {"name": "work_safe", "inputSchema": {"type": "object"}, "annotations": {"idempotentHint": true}},
            ]);
            Some(json_answer(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}})))
        }
        "tools/call" => {
            server.calls += 1;
            let work = body["params"]["arguments"]["id"].as_str().unwrap_or_default().to_string();
            match server.fault {
                Fault::Every2nd500 if server.calls % 2 == 0 => {
                    return Some(status(StatusCode::INTERNAL_SERVER_ERROR, "the database is down"))
                }
                Fault::LoseSession => {
                    server.fault = Fault::None;
                    server.sessions.clear();
                    return Some(status(StatusCode::NOT_FOUND, "no such session"));
                }
                Fault::Silent => return None,
                _ => {}
            }
            let again = server.executed.contains(&work);
            server.executed.push(work.clone());
            let text = format!("done {work}");
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}});
            if server.fault == Fault::CutStream && !again {
                let whole = format!("event: message\ndata: {answer}\n\n");
                let cut = whole[..whole.len() / 2].to_string();
                return Some(
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Full::new(cut.into()))
                        .unwrap(),
                );
            }
            Some(json_answer(answer))
        }
        _ if id.is_null() => Some(status(StatusCode::ACCEPTED, "")),
        _ => Some(json_answer(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}))),
    }
}

/// Serves on `127.0.0.1:0`; the endpoint URL.
async fn serve(server: Shared) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let server = server.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let server = server.clone();
                    async move {
                        let (parts, body) = request.into_parts();
                        let session = parts.headers.get("mcp-session-id").and_then(|value| value.to_str().ok());
                        let session = session.map(str::to_string);
                        let bytes = body.collect().await.unwrap().to_bytes();
                        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        match answer(&server, session.as_deref(), &body) {
                            Some(response) => Ok::<_, Infallible>(response),
                            None => std::future::pending().await,
                        }
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    url
}

/// Warden with the server at `url` as `http`, calls timing out after
/// `timeout`.
async fn warden_at(url: &str, timeout: Duration) -> Warden {
    let toml = format!(
        "[servers.http]\nurl = {url:?}\nprotocol_version = \"2025-11-25\"\ndefault_policy = {{ timeout = {} }}\nstartup_timeout_secs = 3\n",
        timeout.as_secs_f64()
    );
    let warden = Warden::start(&test_config(&toml).expect("valid config")).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("the server settles");
    warden
}

/// 10 calls of `work` and 10 of `work_safe`, ids prefixed `label`.
fn calls(label: &str) -> (Vec<Planned>, Vec<String>) {
    let mut plain = Vec::new();
    let mut planned = Vec::new();
    for n in 0..20 {
        let tool = if n % 2 == 0 { "http__work" } else { "http__work_safe" };
        let id = format!("{label}-{n}");
        if n % 2 == 0 {
            plain.push(id.clone());
        }
        let arguments = json!({"id": id});
        planned.push(Planned {
            tool: tool.into(),
            arguments,
            expected: format!("done {id}"),
            options: CallOptions::default(),
        });
    }
    (planned, plain)
}

/// Waits for the next successful call after the fault is lifted.
async fn recovered(warden: &Warden, server: &Shared, since: Instant) -> Option<Duration> {
    server.lock().unwrap().fault = Fault::None;
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let answered = warden.call_tool("http__work_safe", json!({"id": "probe"})).await;
        if answered.is_ok_and(|result| !result.is_error()) {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

async fn row(fault: Fault, name: &'static str, timeout: Duration) -> Row {
    let server = Arc::new(Mutex::new(Server {
        fault: Fault::None,
        sessions: Vec::new(),
        started: 0,
        executed: Vec::new(),
        calls: 0,
    }));
    let url = serve(server.clone()).await;
    let warden = warden_at(&url, timeout).await;
    server.lock().unwrap().fault = fault;
    let mut row = Row { fault: name, ..Row::default() };
    let (planned, plain) = calls(name);
    let started = Instant::now();
    run(&warden, &mut row, planned, timeout).await;
    row.recovery = recovered(&warden, &server, started).await;
    row.duplicated = executed_twice(server.lock().unwrap().executed.iter().map(String::as_str), &plain);
    warden.shutdown().await;
    row
}

/// A listener that accepts and never says a word: a TLS handshake that
/// stalls. The server never comes up; the calls are told why.
async fn tls_stall() -> Row {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/mcp", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut streams = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            streams.push(stream);
        }
    });
    let warden = warden_at(&url, Duration::from_secs(2)).await;
    let mut row = Row { fault: "TLS handshake stalls", ..Row::default() };
    let (planned, _) = calls("tls");
    run(&warden, &mut row, planned, Duration::from_secs(2)).await;
    warden.shutdown().await;
    held.abort();
    row
}

/// Every HTTP row, in the table's order.
pub async fn rows() -> Vec<Row> {
    vec![
        row(Fault::Every2nd500, "HTTP 500 on every other call", Duration::from_secs(10)).await,
        row(Fault::LoseSession, "session lost (404)", Duration::from_secs(10)).await,
        row(Fault::CutStream, "answer stream cut mid-event", Duration::from_secs(10)).await,
        row(Fault::Silent, "answer never comes (timeout 1 s)", Duration::from_secs(1)).await,
        tls_stall().await,
    ]
}
