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

mod errors;
mod faults;
mod legacy;
mod listening;
mod sessions;
mod streams;
mod taker;

/// One request the server received.
#[derive(Debug)]
struct Seen {
    method: Method,
    /// The path and query asked for.
    uri: hyper::Uri,
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

/// What the server does with a request.
enum Reply {
    Answer(Response<Body>),
    /// Never answers; `OnDrop` fires when hyper gives up on the request
    /// (the client closed the connection).
    Hang(OnDrop),
}

impl From<Response<Body>> for Reply {
    fn from(response: Response<Body>) -> Reply {
        Reply::Answer(response)
    }
}

/// Says so on its channel when dropped.
struct OnDrop(mpsc::UnboundedSender<()>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// Serves `handler` on `127.0.0.1:0`; returns the endpoint URL and what
/// the server saw, in arrival order.
async fn serve<R: Into<Reply>>(
    handler: impl Fn(&Seen) -> R + Send + Sync + 'static,
) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let handler: Arc<Handler> = Arc::new(move |seen: &Seen| handler(seen).into());
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
                        let seen = Seen { method: parts.method, uri: parts.uri, headers: parts.headers, body };
                        let reply = handler(&seen);
                        let _ = seen_tx.send(seen);
                        match reply {
                            Reply::Answer(response) => Ok::<_, Infallible>(response),
                            Reply::Hang(on_drop) => {
                                std::future::pending::<()>().await;
                                drop(on_drop);
                                unreachable!("pending never ends")
                            }
                        }
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
/// request with `{"ok": <method>}`, all as JSON. It has no GET stream
/// (405).
fn json_server(seen: &Seen) -> Response<Body> {
    let id = &seen.body["id"];
    match (&seen.method, seen.rpc_method()) {
        (&Method::DELETE, _) => status(StatusCode::OK, ""),
        (&Method::GET, _) => status(StatusCode::METHOD_NOT_ALLOWED, ""),
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
    connect_with(spec).await
}

async fn connect_with(spec: HttpSpec) -> Result<Client, TransportError> {
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

    /// The next events, which must be a fault and an error response
    /// saying the same; what they say.
    async fn next_error(&mut self, id: i64) -> String {
        self.next_error_coded(id, HTTP_TRANSPORT_ERROR).await
    }

    /// [`next_error`](Self::next_error) for a request whose answer was
    /// lost with its stream ([`crate::STREAM_BROKEN`]).
    async fn next_broken(&mut self, id: i64) -> String {
        self.next_error_coded(id, crate::STREAM_BROKEN).await
    }

    async fn next_error_coded(&mut self, id: i64, expected: crate::ErrorCode) -> String {
        let TransportEvent::Fault { problem } = self.next().await else { panic!("a fault first") };
        match self.next().await {
            TransportEvent::Message(Message::Response(JsonRpcResponse {
                id: Some(got),
                outcome: Err(ErrorObject { code, message, .. }),
            })) => {
                assert_eq!((got, code), (RequestId::Number(id), expected));
                assert_eq!(problem, message);
                message
            }
            other => panic!("expected an error response, got {other:?}"),
        }
    }
}

/// The next request other than a GET: the GET stream opens alongside
/// whatever follows `notifications/initialized`.
async fn next_seen(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    loop {
        let request =
            tokio::time::timeout(Duration::from_secs(10), seen.recv()).await.expect("a request in time").unwrap();
        if request.method != Method::GET {
            return request;
        }
    }
}

/// The next GET.
async fn next_get(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    loop {
        let request = tokio::time::timeout(Duration::from_secs(10), seen.recv()).await.expect("a GET in time").unwrap();
        if request.method == Method::GET {
            return request;
        }
    }
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

/// The made-up notification the transport sends after re-initialising.
fn list_changed() -> TransportEvent {
    TransportEvent::Message(Message::notification("notifications/tools/list_changed", None))
}

/// One SSE event with an id.
fn sse_event(id: &str, message: &Value) -> Bytes {
    Bytes::from(format!("id: {id}\ndata: {message}\n\n"))
}

#[tokio::test]
async fn a_requests_meta_traceparent_is_also_sent_as_the_traceparent_header() {
    let (url, mut seen) = serve(json_server).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    let _ = next_seen(&mut seen).await;
    client.connection.send(Message::notification("notifications/initialized", None)).unwrap();
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let params = serde_json::json!({"name": "x", "arguments": {}, "_meta": {"traceparent": traceparent}});
    client.connection.send(Message::request(RequestId::Number(3), "tools/call", Some(params))).unwrap();
    client.request(4, "tools/list");
    // The three POSTs may arrive in any order.
    let posts = [next_seen(&mut seen).await, next_seen(&mut seen).await, next_seen(&mut seen).await];
    let of = |method: &str| posts.iter().find(|post| post.rpc_method() == Some(method)).expect(method);
    assert_eq!(of("tools/call").header("traceparent"), Some(traceparent));
    assert_eq!(of("tools/list").header("traceparent"), None, "a request without one sends none");
}
