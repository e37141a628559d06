//! The floor under the MCP front: the cheapest process that turns
//! Streamable HTTP POSTs into a stdio server's calls, measured in the same
//! run as the front.
//!
//! The front's goals are set against embedded Warden, which pays no HTTP
//! and no second process. How much of the distance is Warden's, and how
//! much any HTTP front pays on this machine, is only known by running one
//! that does nothing else: this **HTTP relay**. It is this bench's own
//! binary, started with [`FLOOR_PROCESS`] set, on a tokio runtime like the
//! daemon's, serving HTTP/1.1 with hyper like the front. It answers
//! `initialize` from memory, accepts notifications with 202, and writes
//! every other POST's body as one line to its own `warden-test-server`,
//! matching answers to callers by JSON-RPC id (so concurrent callers
//! pipeline, as they do through the front). No session check, no token,
//! no policy, no id mapping, no SSE, no logging: what is left is the HTTP
//! exchange, the process hop and the server.
//!
//! Its 32-caller throughput against embedded is the most any HTTP front
//! can reach here; the front against it is what Warden's own work costs.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::oneshot;

use super::bench_support::spawn_piped;
use super::floor_process::{start_floor_process, FLOOR_PROCESS};
use super::TEST_SERVER;

/// The floor process this run is, if it is one ([`FLOOR_PROCESS`] is `http-relay`).
pub(crate) fn floor_process() -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>> {
    match std::env::var(FLOOR_PROCESS).ok()?.as_str() {
        "http-relay" => Some(Box::pin(serve())),
        other => panic!("{FLOOR_PROCESS}={other}: expected `http-relay`"),
    }
}

/// Starts the floor process; returns it (killed when dropped) and its port.
pub(crate) async fn start() -> (Child, u16) {
    let (child, port) = start_floor_process("http-relay").await;
    (child, port.parse().expect("the floor process prints its port"))
}

/// The parts of a JSON-RPC message the relay looks at.
#[derive(Deserialize)]
struct Envelope {
    id: Option<u64>,
    method: Option<String>,
}

/// The test server, with callers waiting for answers by id.
struct Relay {
    /// Held so the server lives as long as the relay.
    _server: Child,
    stdin: tokio::sync::Mutex<ChildStdin>,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Bytes>>>,
}

impl Relay {
    /// Sends `line` (one JSON-RPC request, with its newline) and waits for
    /// the answer carrying `id`.
    async fn exchange(&self, id: u64, line: &[u8]) -> Bytes {
        let (answer, answered) = oneshot::channel();
        self.waiting.lock().expect("not poisoned").insert(id, answer);
        self.stdin.lock().await.write_all(line).await.expect("the test server reads");
        answered.await.expect("the test server answers")
    }

    /// Hands each answer line to the caller waiting for its id.
    async fn read_answers(self: Arc<Relay>, stdout: ChildStdout) {
        let mut lines = BufReader::new(stdout);
        loop {
            let mut line = Vec::new();
            if lines.read_until(b'\n', &mut line).await.unwrap_or(0) == 0 {
                return;
            }
            let Ok(Envelope { id: Some(id), .. }) = serde_json::from_slice::<Envelope>(&line) else { continue };
            if let Some(caller) = self.waiting.lock().expect("not poisoned").remove(&id) {
                let _ = caller.send(Bytes::from(line));
            }
        }
    }
}

/// The floor process: prints its port, serves until its stdin closes.
async fn serve() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    println!("{}", listener.local_addr().expect("bound").port());
    let relay = start_server().await;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            let relay = Arc::clone(&relay);
            tokio::spawn(async move {
                let service = service_fn(move |request| answer(Arc::clone(&relay), request));
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await;
}

/// Starts and initializes the test server; its answers are read from here on.
async fn start_server() -> Arc<Relay> {
    let mut child = spawn_piped(TEST_SERVER);
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\
              \"capabilities\":{},\"clientInfo\":{\"name\":\"floor\",\"version\":\"1\"}}}\n",
        )
        .await
        .expect("the test server reads");
    let mut answer = String::new();
    stdout.read_line(&mut answer).await.expect("the test server answers initialize");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .expect("the test server reads");
    let relay = Arc::new(Relay { _server: child, stdin: tokio::sync::Mutex::new(stdin), waiting: Mutex::default() });
    tokio::spawn(Arc::clone(&relay).read_answers(stdout.into_inner()));
    relay
}

/// One POST: `initialize` from memory, a notification with 202, anything
/// else relayed to the test server.
async fn answer(relay: Arc<Relay>, request: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let Ok(body) = request.into_body().collect().await.map(|body| body.to_bytes()) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let Ok(envelope) = serde_json::from_slice::<Envelope>(&body) else {
        return Ok(status(StatusCode::BAD_REQUEST));
    };
    let answer = match (envelope.id, envelope.method.as_deref()) {
        (None, _) => return Ok(status(StatusCode::ACCEPTED)),
        (Some(id), Some("initialize")) => Bytes::from(format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"protocolVersion\":\"{}\",\"capabilities\":{{\"tools\":{{}}}},\
             \"serverInfo\":{{\"name\":\"http-relay-floor\",\"version\":\"1\"}}}}}}",
            super::mcp_http::PROTOCOL_VERSION
        )),
        (Some(id), _) => {
            let mut line = Vec::with_capacity(body.len() + 1);
            line.extend_from_slice(&body);
            line.push(b'\n');
            relay.exchange(id, &line).await
        }
    };
    let response = Response::builder()
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header("mcp-session-id", "floor")
        .body(Full::new(answer))
        .expect("a response builds");
    Ok(response)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}
