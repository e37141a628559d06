//! A minimal Streamable HTTP MCP client for the benches: the floor a
//! gateway or server is measured with, the same for every one of them.
//!
//! A hyper 1 + hyper-util pooled client (keep-alive, HTTP/1.1, no Nagle)
//! that does `initialize` (keeping `Mcp-Session-Id`), posts
//! `notifications/initialized`, then for each call POSTs `tools/call` with
//! the session id, `MCP-Protocol-Version`, an optional bearer token and
//! `Accept: application/json, text/event-stream`, collects the answer and
//! picks the JSON body or the `data:` line whose JSON carries the call's
//! id. No GET stream, no timers, no actors, no resumption.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The protocol version the client asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";

/// One pooled hyper client and one MCP session.
pub(crate) struct McpHttp {
    client: hyper_util::client::legacy::Client<HttpConnector, Full<Bytes>>,
    url: hyper::Uri,
    session: HeaderValue,
    bearer: Option<HeaderValue>,
    next_id: AtomicU64,
    /// Who this is, for panics.
    label: &'static str,
}

/// The parts of a JSON-RPC response the client looks at.
#[derive(Deserialize)]
struct Incoming<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<&'a RawValue>,
    #[serde(borrow)]
    error: Option<&'a RawValue>,
}

/// The part of a `CallToolResult` the client looks at.
#[derive(Deserialize)]
struct CallResult {
    content: Vec<ContentBlock>,
}

#[derive(Deserialize)]
struct ContentBlock {
    text: Option<String>,
}

impl McpHttp {
    /// Connects to `url`, initialises a session and says it is initialised.
    pub(crate) async fn start(label: &'static str, url: &str, token: Option<&str>) -> McpHttp {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(usize::MAX)
            .build(connector);
        let url: hyper::Uri = url.parse().expect("the server URL parses");
        let bearer = token.map(|token| HeaderValue::from_str(&format!("Bearer {token}")).expect("a token header"));
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{PROTOCOL_VERSION}","capabilities":{{}},"clientInfo":{{"name":"warden-bench","version":"1"}}}}}}"#
        );
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        if let Some(bearer) = &bearer {
            request = request.header(AUTHORIZATION, bearer.clone());
        }
        let request = request.body(Full::new(Bytes::from(init))).expect("the initialize request builds");
        let response = client.request(request).await.unwrap_or_else(|e| panic!("{label}: initialize failed: {e}"));
        assert_eq!(response.status(), StatusCode::OK, "{label}: initialize status");
        let session = response
            .headers()
            .get("mcp-session-id")
            .cloned()
            .unwrap_or_else(|| panic!("{label}: initialize gives no Mcp-Session-Id"));
        let body = response.into_body().collect().await.expect("the initialize body reads").to_bytes();
        find_reply(&body, 0)
            .unwrap_or_else(|| panic!("{label}: initialize not answered"))
            .unwrap_or_else(|e| panic!("{label}: initialize failed: {e}"));
        let mcp = McpHttp { client, url, session, bearer, next_id: AtomicU64::new(1), label };
        let response = mcp.post(Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)).await;
        assert_eq!(response.status(), StatusCode::ACCEPTED, "{label}: notifications/initialized status");
        let _ = response.into_body().collect().await;
        mcp
    }

    /// A POST on the session.
    async fn post(&self, body: Bytes) -> hyper::Response<hyper::body::Incoming> {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .header("mcp-session-id", self.session.clone())
            .header("mcp-protocol-version", PROTOCOL_VERSION);
        if let Some(bearer) = &self.bearer {
            request = request.header(AUTHORIZATION, bearer.clone());
        }
        let request = request.body(Full::new(body)).expect("the request builds");
        self.client.request(request).await.unwrap_or_else(|error| panic!("{}: POST failed: {error}", self.label))
    }

    /// One `tools/call` of `tool` with `{"message": message}`; the text it
    /// answered.
    pub(crate) async fn call_echo(&self, tool: &str, message: &str) -> String {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"message":"{message}"}}}}}}"#
        );
        let label = self.label;
        let response = self.post(Bytes::from(body)).await;
        let status = response.status();
        let body = response.into_body().collect().await.expect("the answer reads").to_bytes();
        assert_eq!(status, StatusCode::OK, "{label}: tools/call status, body {}", String::from_utf8_lossy(&body));
        let result = find_reply(&body, id)
            .unwrap_or_else(|| panic!("{label}: no answer to {id} in {}", String::from_utf8_lossy(&body)))
            .unwrap_or_else(|error| panic!("{label}: echo failed: {error}"));
        let result: CallResult = serde_json::from_str(&result).expect("the echo result is a CallToolResult");
        result.content.into_iter().next().and_then(|block| block.text).unwrap_or_default()
    }
}

/// The `result` (or the `error`, as text) of the response with `id` in a
/// POST's answer: a JSON body, or an SSE stream whose `data:` lines are
/// JSON-RPC messages (every event here is a single `data:` line).
fn find_reply(body: &[u8], id: u64) -> Option<Result<String, String>> {
    let text = std::str::from_utf8(body).ok()?;
    let trimmed = text.trim_start();
    let candidates: Box<dyn Iterator<Item = &str>> = if trimmed.starts_with('{') {
        Box::new(std::iter::once(trimmed))
    } else {
        Box::new(text.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start))
    };
    for data in candidates {
        let Ok(incoming) = serde_json::from_str::<Incoming<'_>>(data) else { continue };
        if incoming.id != Some(id) {
            continue;
        }
        match (incoming.result, incoming.error) {
            (Some(result), _) => return Some(Ok(result.get().to_string())),
            (None, Some(error)) => return Some(Err(error.get().to_string())),
            (None, None) => continue,
        }
    }
    None
}
