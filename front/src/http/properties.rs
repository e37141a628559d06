//! The front's HTTP layer, property-tested (issue 19): whatever a client
//! sends over a real connection — any method, any path, any subset of the
//! headers the front reads with any printable value, any body, a valid
//! token or not — the front answers with a status it documents and, for
//! every refusal, a JSON-RPC error body saying why; it never panics and
//! goes on answering. Raw bytes that are not HTTP at all are taken too:
//! the next client is still answered.
//!
//! One front (over an embedded Warden with no servers) on a loopback port
//! for every case; each case is its own connection, spoken to by hyper's
//! client so that framing is right and only the content is arbitrary.
//! `PROPTEST_CASES` sets how many cases (default 1,000).

use std::sync::OnceLock;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Method, Request};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;
use warden_actors::Warden;
use warden_config::{FrontConfig, FrontToken, MetricsConfig};

use super::HttpFront;
use crate::Front;

const TOKEN: &str = "fuzz-token-0123456789abcdef";

/// Every status the module's list documents (and 503 for a full table).
const DOCUMENTED: [u16; 13] = [200, 202, 204, 400, 401, 403, 404, 405, 406, 408, 413, 421, 503];

/// Each case is a real connection: fewer than the session's 2,000.
fn config() -> Config {
    super::super::properties::config_of(1_000)
}

/// One runtime, and the port of one front served on it.
fn front() -> &'static (tokio::runtime::Runtime, u16) {
    static FRONT: OnceLock<(tokio::runtime::Runtime, u16)> = OnceLock::new();
    FRONT.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let port = runtime.block_on(async {
            let warden = Warden::builder().start().await.unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let address = listener.local_addr().unwrap();
            let token = FrontToken { token: TOKEN.into(), agent: None, name: Some("fuzz".into()) };
            let config = FrontConfig { tokens: vec![token], max_sessions: 64, ..FrontConfig::default() };
            let observe = crate::observe::Observe::new(warden.clone(), &MetricsConfig::default(), true);
            let http =
                HttpFront::from_config(Front::new(warden), &config, address).max_body(1 << 20).observe(observe).build();
            tokio::spawn(http.serve(listener, std::future::pending()));
            address.port()
        });
        (runtime, port)
    })
}

/// A request as a client might send one.
#[derive(Debug, Clone)]
struct Asked {
    method: String,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("POST".to_string()),
        2 => Just("GET".to_string()),
        1 => Just("DELETE".to_string()),
        1 => prop_oneof![Just("PUT"), Just("OPTIONS"), Just("HEAD"), Just("PATCH")].prop_map(str::to_string),
        1 => "[A-Z]{1,8}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("/mcp".to_string()),
        1 => prop_oneof![Just("/mcp/"), Just("/mcp/servers/x"), Just("/mcp/agents/y"), Just("/mcp/servers/")]
            .prop_map(str::to_string),
        1 => prop_oneof![Just("/metrics"), Just("/healthz"), Just("/readyz")].prop_map(str::to_string),
        1 => "/[a-zA-Z0-9/_.%-]{0,24}",
    ]
}

/// A header the front reads, with a value that may or may not be right.
fn header() -> impl Strategy<Value = (&'static str, String)> {
    let printable = "[ -~]{0,40}";
    prop_oneof![
        3 => prop_oneof![Just(format!("Bearer {TOKEN}")), Just("Bearer wrong".to_string()), printable.prop_map(String::from)]
            .prop_map(|value| ("authorization", value)),
        2 => prop_oneof![
            Just("application/json, text/event-stream".to_string()),
            Just("application/json".to_string()),
            Just("text/event-stream".to_string()),
            printable.prop_map(String::from),
        ]
        .prop_map(|value| ("accept", value)),
        1 => prop_oneof![Just("application/json".to_string()), printable.prop_map(String::from)]
            .prop_map(|value| ("content-type", value)),
        1 => prop_oneof![Just("2025-11-25".to_string()), Just("2026-07-28".to_string()), printable.prop_map(String::from)]
            .prop_map(|value| ("mcp-protocol-version", value)),
        1 => "[ -~]{0,40}".prop_map(|value| ("mcp-session-id", value)),
        1 => "[ -~]{0,20}".prop_map(|value| ("last-event-id", value)),
        1 => prop_oneof![Just("http://localhost".to_string()), printable.prop_map(String::from)]
            .prop_map(|value| ("origin", value)),
        1 => printable.prop_map(|value| ("host", value)),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => super::super::properties::message().prop_map(|message| message.to_string().into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        1 => Just(Vec::new()),
    ]
}

fn asked() -> impl Strategy<Value = Asked> {
    (method(), path(), proptest::collection::vec(header(), 0..8), body())
        .prop_map(|(method, path, headers, body)| Asked { method, path, headers, body })
}

/// Sends `asked` on a fresh connection: the status, the content type and
/// the whole body (an event stream ends after its answer), within 10 s.
async fn send(port: u16, asked: Asked) -> Result<(u16, String, Bytes), String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await.map_err(|error| error.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|error| error.to_string())?;
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(Method::from_bytes(asked.method.as_bytes()).unwrap())
        .uri(&asked.path)
        .header("host", format!("127.0.0.1:{port}"));
    for (name, value) in &asked.headers {
        if *name == "host" {
            request.headers_mut().unwrap().insert("host", value.parse().unwrap());
        } else {
            request = request.header(*name, value.as_str());
        }
    }
    let request = request.body(Full::new(Bytes::from(asked.body))).unwrap();
    let answered = async {
        let response = sender.send_request(request).await.map_err(|error| error.to_string())?;
        let status = response.status().as_u16();
        let kind = response.headers().get("content-type").and_then(|kind| kind.to_str().ok()).unwrap_or("").to_string();
        let body = response.into_body().collect().await.map_err(|error| error.to_string())?.to_bytes();
        Ok((status, kind, body))
    };
    tokio::time::timeout(Duration::from_secs(10), answered)
        .await
        .map_err(|_| "no whole answer within 10 s".to_string())?
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_request_gets_a_documented_status_and_every_refusal_says_why(asked in asked()) {
        let (runtime, port) = front();
        let answered = runtime.block_on(send(*port, asked.clone()));
        let (status, kind, body) = answered.map_err(|problem| TestCaseError::fail(format!("{problem}: {asked:?}")))?;
        prop_assert!(DOCUMENTED.contains(&status), "status {status} for {asked:?}");
        // The observability pages answer in text; a HEAD answer has no body.
        let observed = ["/metrics", "/healthz", "/readyz"].contains(&asked.path.as_str());
        if status >= 400 && !observed && asked.method != "HEAD" {
            prop_assert!(kind == "application/json", "a {status} as {kind:?} for {asked:?}");
            let error: Value = serde_json::from_slice(&body)
                .map_err(|error| TestCaseError::fail(format!("a {status} body that is not JSON ({error}) for {asked:?}")))?;
            let said = error.pointer("/error/message").and_then(Value::as_str).unwrap_or_default();
            prop_assert!(!said.is_empty(), "a {status} that says nothing: {error}");
        }
    }

    #[test]
    fn bytes_that_are_not_http_never_stop_the_front(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let (runtime, port) = front();
        runtime.block_on(async {
            let mut stream = TcpStream::connect(("127.0.0.1", *port)).await.unwrap();
            let _ = stream.write_all(&bytes).await;
            drop(stream);
        });
        let ping = Asked { method: "GET".into(), path: "/healthz".into(), headers: Vec::new(), body: Vec::new() };
        let answered = runtime.block_on(send(*port, ping));
        prop_assert!(matches!(answered, Ok((200, _, _))), "the front after {bytes:?}: {answered:?}");
    }
}
