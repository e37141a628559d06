//! The HTTP transport against tiny hyper servers on loopback, scripted per
//! test: what they answer, and what they saw.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::header::HeaderMap;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::{HttpConnector, HttpSpec, HTTP_TRANSPORT_ERROR};
use crate::jsonrpc::{ErrorObject, Message, RequestId, Response as JsonRpcResponse};
use crate::transport::{Connection, Connector, TransportError, TransportEvent};

/// One request the server received.
#[derive(Debug)]
struct Seen {
    method: Method,
    headers: HeaderMap,
    /// The JSON body; `Null` when there was none.
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|value| value.to_str().unwrap())
    }

    fn rpc_method(&self) -> Option<&str> {
        self.body["method"].as_str()
    }
}

/// A response body: all at once, or chunks as the test sends them.
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

type Handler = dyn Fn(&Seen) -> Response<Body> + Send + Sync;

/// Serves `handler` on `127.0.0.1:0`; returns the endpoint URL and what
/// the server saw, in arrival order.
async fn serve(
    handler: impl Fn(&Seen) -> Response<Body> + Send + Sync + 'static,
) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let handler: Arc<Handler> = Arc::new(handler);
    let (seen_tx, seen_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let handler = handler.clone();
            let seen_tx = seen_tx.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let handler = handler.clone();
                    let seen_tx = seen_tx.clone();
                    async move {
                        let (parts, body) = request.into_parts();
                        let bytes = body.collect().await.unwrap().to_bytes();
                        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        let seen = Seen { method: parts.method, headers: parts.headers, body };
                        let response = handler(&seen);
                        let _ = seen_tx.send(seen);
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    (url, seen_rx)
}

fn full(text: impl Into<Bytes>) -> Body {
    Either::Left(Full::new(text.into()))
}

fn json_response(body: Value) -> Response<Body> {
    Response::builder().header("content-type", "application/json").body(full(body.to_string())).unwrap()
}

fn status(status: StatusCode, body: &str) -> Response<Body> {
    Response::builder().status(status).body(full(body.to_string())).unwrap()
}

fn event_stream(body: Body) -> Response<Body> {
    Response::builder().header("content-type", "text/event-stream").body(body).unwrap()
}

fn initialize_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "fake", "version": "1"}
    }})
}

/// A server that answers `initialize` with session `s-1` and every other
/// request with `{"ok": <method>}`, all as JSON.
fn json_server(seen: &Seen) -> Response<Body> {
    let id = &seen.body["id"];
    match (&seen.method, seen.rpc_method()) {
        (&Method::DELETE, _) => status(StatusCode::OK, ""),
        (_, Some("initialize")) => {
            let mut response = json_response(initialize_result(id));
            response.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
            response
        }
        _ if id.is_null() => status(StatusCode::ACCEPTED, ""),
        (_, method) => json_response(json!({"jsonrpc": "2.0", "id": id, "result": {"ok": method}})),
    }
}

struct Client {
    connection: Connection,
    events: mpsc::UnboundedReceiver<TransportEvent>,
}

async fn connect(url: &str, headers: &[(&str, &str)]) -> Result<Client, TransportError> {
    let mut spec = HttpSpec::new("fake", url);
    spec.headers = headers.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
    let (tx, events) = mpsc::unbounded_channel();
    let connection = HttpConnector::new(spec)
        .connect(Arc::new(move |event| {
            // Flatten batches: tests care about order, not grouping.
            match event {
                TransportEvent::Batch(events) => events.into_iter().for_each(|event| tx.send(event).unwrap()),
                event => tx.send(event).unwrap(),
            }
        }))
        .await?;
    Ok(Client { connection, events })
}

impl Client {
    fn request(&self, id: i64, method: &str) {
        self.connection.send(Message::request(RequestId::Number(id), method, Some(json!({})))).unwrap();
    }

    async fn next(&mut self) -> TransportEvent {
        tokio::time::timeout(Duration::from_secs(10), self.events.recv()).await.expect("an event in time").unwrap()
    }

    /// Closes the connection; the last events it delivered.
    async fn close(self) -> Vec<TransportEvent> {
        let Client { connection, mut events } = self;
        connection.close().await;
        let mut rest = Vec::new();
        while let Ok(event) = events.try_recv() {
            rest.push(event);
        }
        rest
    }

    /// Initialises and waits for the answer.
    async fn initialize(&mut self) {
        self.request(1, "initialize");
        let TransportEvent::Response(response) = self.next().await else { panic!("initialize answered") };
        assert_eq!(response.id, RequestId::Number(1));
    }

    /// The next event, which must be an error response; its message.
    async fn next_error(&mut self, id: i64) -> String {
        match self.next().await {
            TransportEvent::Message(Message::Response(JsonRpcResponse {
                id: Some(got),
                outcome: Err(ErrorObject { code, message, .. }),
            })) => {
                assert_eq!((got, code), (RequestId::Number(id), HTTP_TRANSPORT_ERROR));
                message
            }
            other => panic!("expected an error response, got {other:?}"),
        }
    }
}

async fn next_seen(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(10), seen.recv()).await.expect("a request in time").unwrap()
}

#[tokio::test]
async fn json_answers_carry_the_session_and_version_headers_after_initialize() {
    let (url, mut seen) = serve(json_server).await;
    let mut client = connect(&url, &[("X-Api-Key", "secret-1")]).await.unwrap();
    client.initialize().await;
    let init = next_seen(&mut seen).await;
    assert_eq!(init.header("accept"), Some("application/json, text/event-stream"));
    assert_eq!(init.header("content-type"), Some("application/json"));
    assert_eq!(init.header("x-api-key"), Some("secret-1"));
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None);

    client.connection.send(Message::notification("notifications/initialized", None)).unwrap();
    client.request(2, "tools/list");
    let TransportEvent::Response(response) = client.next().await else { panic!("tools/list answered") };
    assert_eq!((response.id, response.result.get()), (RequestId::Number(2), r#"{"ok":"tools/list"}"#));
    // The request waited until the notification was accepted.
    let later = [next_seen(&mut seen).await, next_seen(&mut seen).await];
    assert_eq!(
        later.iter().map(Seen::rpc_method).collect::<Vec<_>>(),
        [Some("notifications/initialized"), Some("tools/list")]
    );
    for request in &later {
        assert_eq!(request.header("mcp-session-id"), Some("s-1"));
        assert_eq!(request.header("mcp-protocol-version"), Some("2025-06-18"));
        assert_eq!(request.header("x-api-key"), Some("secret-1"));
        assert_eq!(request.header("accept"), Some("application/json, text/event-stream"));
    }

    // Closing ends the session on the server, then says so.
    let rest = client.close().await;
    assert_eq!(rest, [TransportEvent::Closed { reason: "closed by Warden".into() }]);
    let delete = next_seen(&mut seen).await;
    assert_eq!((&delete.method, delete.header("mcp-session-id")), (&Method::DELETE, Some("s-1")));
}

#[tokio::test]
async fn many_requests_are_in_flight_at_once() {
    let (url, _seen) = serve(json_server).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    for id in 2..=51 {
        client.request(id, "tools/call");
    }
    let mut ids = Vec::new();
    for _ in 2..=51 {
        let TransportEvent::Response(response) = client.next().await else { panic!("answered") };
        let RequestId::Number(id) = response.id else { panic!("a number id") };
        ids.push(id);
    }
    ids.sort();
    assert_eq!(ids, (2..=51).collect::<Vec<_>>());
}

#[tokio::test]
async fn an_event_stream_delivers_notifications_before_the_response() {
    let (url, _seen) = serve(|seen: &Seen| {
        if seen.rpc_method() == Some("initialize") {
            return json_response(initialize_result(&seen.body["id"]));
        }
        let id = &seen.body["id"];
        // A priming event (id, retry, empty data), a progress notification,
        // a server request, then the response.
        let stream = format!(
            "id: e0\nretry: 1000\ndata: \n\n\
             id: e1\ndata: {}\n\n\
             id: e2\ndata: {}\n\n\
             id: e3\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}),
            json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}}),
        );
        event_stream(full(stream))
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    client.request(7, "tools/call");
    let TransportEvent::Message(Message::Notification(progress)) = client.next().await else { panic!("notification") };
    assert_eq!(progress.method, "notifications/progress");
    let TransportEvent::Message(Message::Request(ping)) = client.next().await else { panic!("server request") };
    assert_eq!((ping.id, ping.method.as_str()), (RequestId::String("s1".into()), "ping"));
    let TransportEvent::Response(response) = client.next().await else { panic!("the response") };
    assert_eq!((response.id, response.result.get()), (RequestId::Number(7), r#"{"content":[]}"#));
}

#[tokio::test]
async fn a_stream_is_dropped_once_the_answer_came() {
    // The server keeps the stream open after the response; the transport
    // must neither wait for its end nor keep reading it.
    let (chunks_tx, chunks_rx) = mpsc::unbounded_channel::<Bytes>();
    let held = std::sync::Mutex::new(Some(chunks_rx));
    let (url, _seen) =
        serve(move |_: &Seen| event_stream(Either::Right(Held(held.lock().unwrap().take().unwrap())))).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(9, "tools/call");
    let response = json!({"jsonrpc": "2.0", "id": 9, "result": {}});
    // Split mid-event: the parser gets whatever the body yields.
    let text = format!("data: {response}\n\n");
    let (first, second) = text.split_at(10);
    chunks_tx.send(Bytes::from(first.to_string())).unwrap();
    chunks_tx.send(Bytes::from(second.to_string())).unwrap();
    let TransportEvent::Response(answer) = client.next().await else { panic!("the response") };
    assert_eq!(answer.id, RequestId::Number(9));
    tokio::time::timeout(Duration::from_secs(10), chunks_tx.closed()).await.expect("the stream is dropped");
}

#[tokio::test]
async fn a_stream_that_ends_before_the_answer_fails_the_request() {
    let (url, _seen) = serve(|_: &Seen| event_stream(full("id: e0\nretry: 1000\ndata: \n\n"))).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(3, "tools/call");
    let message = client.next_error(3).await;
    assert_eq!(message, format!("the event stream from {url} ended before the answer came"));
}

#[tokio::test]
async fn a_500_fails_the_request_with_the_status_and_body() {
    let (url, _seen) = serve(|_: &Seen| status(StatusCode::INTERNAL_SERVER_ERROR, "boom: the database is down")).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(1, "initialize");
    assert_eq!(client.next_error(1).await, format!("HTTP 500 from {url}: boom: the database is down"));
}

#[tokio::test]
async fn a_long_error_body_is_cut_to_200_characters() {
    let (url, _seen) = serve(|_: &Seen| status(StatusCode::BAD_GATEWAY, &"x".repeat(1_000_000))).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(4, "tools/call");
    assert_eq!(client.next_error(4).await, format!("HTTP 502 from {url}: {}…", "x".repeat(200)));
}

#[tokio::test]
async fn a_failed_notification_is_reported_not_answered() {
    let (url, _seen) = serve(|_: &Seen| status(StatusCode::INTERNAL_SERVER_ERROR, "nope")).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.connection.send(Message::notification("notifications/initialized", None)).unwrap();
    assert_eq!(client.next().await, TransportEvent::Malformed { problem: format!("HTTP 500 from {url}: nope") });
}

#[tokio::test]
async fn a_404_for_our_session_says_the_server_forgot_it() {
    let (url, _seen) = serve(|seen: &Seen| match seen.header("mcp-session-id") {
        Some(_) => status(StatusCode::NOT_FOUND, "Session not found"),
        None => json_server(seen),
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    client.request(2, "tools/list");
    assert_eq!(
        client.next_error(2).await,
        format!("the server forgot our session (HTTP 404) at {url}: Session not found; re-initialising is not built yet, so restart Warden to open a new session")
    );
}

#[tokio::test]
async fn a_400_about_the_session_is_an_expired_session_too() {
    // What server-everything answers for an id it does not know.
    let body =
        r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#;
    let (url, _seen) = serve(move |seen: &Seen| match seen.header("mcp-session-id") {
        Some(_) => status(StatusCode::BAD_REQUEST, body),
        None => json_server(seen),
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    client.request(2, "tools/list");
    let message = client.next_error(2).await;
    assert!(message.starts_with("the server forgot our session (HTTP 400)"), "{message}");
    assert!(message.contains("No valid session ID provided"), "{message}");
}

#[tokio::test]
async fn a_404_without_a_session_is_a_plain_http_error() {
    let (url, _seen) = serve(|_: &Seen| status(StatusCode::NOT_FOUND, "")).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(1, "initialize");
    assert_eq!(client.next_error(1).await, format!("HTTP 404 from {url}: (no body)"));
}

#[tokio::test]
async fn a_body_that_is_not_json_rpc_fails_the_request() {
    let (url, _seen) = serve(|_: &Seen| json_response(json!({"hello": "world"}))).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(5, "tools/call");
    let message = client.next_error(5).await;
    assert!(message.starts_with(&format!("the answer from {url} is not a JSON-RPC message: ")), "{message}");
}

#[tokio::test]
async fn a_refused_connection_fails_the_request() {
    // A port that was free a moment ago: nothing listens on it.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(1, "initialize");
    let message = client.next_error(1).await;
    assert!(message.starts_with(&format!("could not reach {url}: ")), "{message}");
    assert!(message.to_lowercase().contains("refused"), "{message}");
}

#[tokio::test]
async fn https_is_refused_until_tls_is_built() {
    let error = connect("https://example.com/mcp", &[]).await.err().expect("no TLS yet");
    assert_eq!(
        error.to_string(),
        "cannot connect to https://example.com/mcp: `https://` needs TLS, which Warden's HTTP transport does not support yet; use an `http://` URL (a local server or a tunnel)"
    );
}

#[tokio::test]
async fn a_bad_header_value_is_named_but_not_shown() {
    let error = connect("http://127.0.0.1:1/mcp", &[("Authorization", "Bearer secret\nvalue")]).await.err().unwrap();
    let text = error.to_string();
    assert!(text.contains("the value of header `Authorization` is not a valid header value"), "{text}");
    assert!(!text.contains("secret"), "{text}");
}

#[tokio::test]
async fn closing_without_a_session_sends_no_delete() {
    let (url, mut seen) =
        serve(|seen: &Seen| json_response(json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}}))).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(1, "initialize");
    let _ = client.next().await;
    let _ = next_seen(&mut seen).await;
    assert_eq!(client.close().await, [TransportEvent::Closed { reason: "closed by Warden".into() }]);
    assert!(seen.try_recv().is_err(), "no DELETE without a session");
}
