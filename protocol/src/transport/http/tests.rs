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

mod faults;
mod legacy;

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
        let TransportEvent::Fault { problem } = self.next().await else { panic!("a fault first") };
        match self.next().await {
            TransportEvent::Message(Message::Response(JsonRpcResponse {
                id: Some(got),
                outcome: Err(ErrorObject { code, message, .. }),
            })) => {
                assert_eq!((got, code), (RequestId::Number(id), HTTP_TRANSPORT_ERROR));
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
async fn a_stream_that_ends_without_an_id_fails_the_request() {
    // Nothing to resume from: no event named an id.
    let (url, _seen) = serve(|_: &Seen| event_stream(full("retry: 10\ndata: \n\n"))).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(3, "tools/call");
    let message = client.next_error(3).await;
    assert_eq!(message, format!("the event stream from {url} ended before the answer came"));
}

/// Answers POSTs with a priming event (`e0`, retry 50 ms) and closes; a
/// GET resuming after `e0` gets a progress notification as `e1` and
/// closes again; one resuming after `e1` gets the answer to request 3.
fn resuming_server(seen: &Seen) -> Response<Body> {
    let progress =
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}});
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}});
    match (&seen.method, seen.header("last-event-id")) {
        (&Method::POST, _) => event_stream(full("id: e0\nretry: 50\ndata: \n\n")),
        (&Method::GET, Some("e0")) => event_stream(full(sse_event("e1", &progress))),
        (&Method::GET, Some("e1")) => event_stream(full(sse_event("e2", &answer))),
        _ => status(StatusCode::BAD_REQUEST, "unexpected"),
    }
}

#[tokio::test]
async fn a_stream_closed_early_is_resumed_with_last_event_id_until_the_answer() {
    let (url, mut seen) = serve(resuming_server).await;
    let mut client = connect(&url, &[]).await.unwrap();
    let sent = std::time::Instant::now();
    client.request(3, "tools/call");
    let TransportEvent::Message(Message::Notification(progress)) = client.next().await else { panic!("progress") };
    assert_eq!(progress.method, "notifications/progress");
    let TransportEvent::Response(response) = client.next().await else { panic!("the answer") };
    assert_eq!((response.id, response.result.get()), (RequestId::Number(3), r#"{"content":[]}"#));
    // The server's `retry` before each of the two resumptions.
    assert!(sent.elapsed() >= Duration::from_millis(100), "{:?}", sent.elapsed());

    let post = next_seen(&mut seen).await;
    assert_eq!(post.method, Method::POST);
    for last_id in ["e0", "e1"] {
        let get = next_get(&mut seen).await;
        assert_eq!((get.header("last-event-id"), get.header("accept")), (Some(last_id), Some("text/event-stream")));
    }
}

#[tokio::test]
async fn a_refused_resumption_fails_the_request_with_why() {
    let (url, _seen) = serve(|seen: &Seen| match seen.method {
        Method::GET => status(StatusCode::METHOD_NOT_ALLOWED, ""),
        _ => event_stream(full("id: e0\nretry: 10\ndata: \n\n")),
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(3, "tools/call");
    assert_eq!(
        client.next_error(3).await,
        format!(
            "the event stream from {url} ended before the answer came, and resuming it failed: HTTP 405 from {url}: (no body)"
        )
    );
}

#[tokio::test]
async fn resuming_gives_up_after_the_limit() {
    // Every stream, resumed or not, is a priming event and nothing more.
    let (url, mut seen) = serve(|_: &Seen| event_stream(full("id: e0\nretry: 50\ndata: \n\n"))).await;
    let mut spec = HttpSpec::new("fake", &url);
    spec.resume_limit = Duration::from_millis(300);
    let mut client = connect_with(spec).await.unwrap();
    client.request(3, "tools/call");
    assert_eq!(
        client.next_error(3).await,
        format!("the event stream from {url} ended before the answer came; gave up resuming it after 0.3 s")
    );
    // Each resumption waited the server's 50 ms: a handful, not a flood.
    let mut gets = 0;
    while let Ok(request) = seen.try_recv() {
        gets += usize::from(request.method == Method::GET);
    }
    assert!((3..=6).contains(&gets), "{gets} GETs");
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
    assert_eq!(client.next().await, TransportEvent::Fault { problem: format!("HTTP 500 from {url}: nope") });
}

/// A server with real sessions: each `initialize` opens `s-<n>`; a message
/// whose session is not live gets what server-everything or the spec
/// answer. Tests flip the switches mid-run.
#[derive(Default)]
struct Sessions {
    opened: u32,
    live: Vec<String>,
    /// Answer 400 "No valid session ID" (server-everything) instead of 404.
    say_400: bool,
    /// Answer `initialize` with 500.
    refuse_initialize: bool,
    /// Forget every session as soon as a request uses it.
    forget_on_request: bool,
}

fn session_server(sessions: Arc<std::sync::Mutex<Sessions>>) -> impl Fn(&Seen) -> Response<Body> {
    move |seen: &Seen| {
        let mut sessions = sessions.lock().unwrap();
        if seen.rpc_method() == Some("initialize") {
            if sessions.refuse_initialize {
                return status(StatusCode::INTERNAL_SERVER_ERROR, "overloaded");
            }
            sessions.opened += 1;
            let session = format!("s-{}", sessions.opened);
            sessions.live.push(session.clone());
            let mut response = json_response(initialize_result(&seen.body["id"]));
            response.headers_mut().insert("mcp-session-id", session.parse().unwrap());
            return response;
        }
        let live = seen.header("mcp-session-id").is_some_and(|id| sessions.live.iter().any(|live| live == id));
        if sessions.forget_on_request && !seen.body["id"].is_null() {
            sessions.live.clear();
            return status(StatusCode::NOT_FOUND, "Session not found");
        }
        match (live, sessions.say_400) {
            (true, _) => json_server(seen),
            (false, false) => status(StatusCode::NOT_FOUND, "Session not found"),
            (false, true) => status(
                StatusCode::BAD_REQUEST,
                r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
            ),
        }
    }
}

/// The params of the actor's `initialize`, replayed on re-initialisation.
fn init_params() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "warden", "version": "9"}})
}

/// Connects to a [`session_server`] and opens session `s-1` the way the
/// actor does.
async fn start_session(sessions: &Arc<std::sync::Mutex<Sessions>>) -> (String, Client, mpsc::UnboundedReceiver<Seen>) {
    let (url, mut seen) = serve(session_server(sessions.clone())).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.connection.send(Message::request(RequestId::Number(1), "initialize", Some(init_params()))).unwrap();
    let TransportEvent::Response(response) = client.next().await else { panic!("initialize answered") };
    assert_eq!(response.id, RequestId::Number(1));
    client.connection.send(Message::notification("notifications/initialized", None)).unwrap();
    for _ in 0..2 {
        next_seen(&mut seen).await;
    }
    (url, client, seen)
}

fn list_changed() -> TransportEvent {
    TransportEvent::Message(Message::notification("notifications/tools/list_changed", None))
}

#[tokio::test]
async fn a_forgotten_session_is_reinitialised_and_the_request_retried() {
    let sessions = Arc::new(std::sync::Mutex::new(Sessions::default()));
    let (_url, mut client, mut seen) = start_session(&sessions).await;
    sessions.lock().unwrap().live.clear();

    client.request(2, "tools/call");
    // The actor is told to list its tools again, then gets its answer.
    assert_eq!(client.next().await, list_changed());
    let TransportEvent::Response(response) = client.next().await else { panic!("the retried call answered") };
    assert_eq!((response.id, response.result.get()), (RequestId::Number(2), r#"{"ok":"tools/call"}"#));

    let refused = next_seen(&mut seen).await;
    assert_eq!((refused.rpc_method(), refused.header("mcp-session-id")), (Some("tools/call"), Some("s-1")));
    // The actor's own initialize, under a private id, with no session.
    let init = next_seen(&mut seen).await;
    assert_eq!(init.body["params"], init_params());
    assert_eq!(init.body["id"], "warden-reinitialise-0");
    assert_eq!((init.header("mcp-session-id"), init.header("mcp-protocol-version")), (None, None));
    for method in ["notifications/initialized", "tools/call"] {
        let request = next_seen(&mut seen).await;
        assert_eq!(request.rpc_method(), Some(method));
        assert_eq!(request.header("mcp-session-id"), Some("s-2"));
        assert_eq!(request.header("mcp-protocol-version"), Some("2025-06-18"));
    }

    // The new session is the one ended on close.
    assert_eq!(client.close().await, [TransportEvent::Closed { reason: "closed by Warden".into() }]);
    let delete = next_seen(&mut seen).await;
    assert_eq!((&delete.method, delete.header("mcp-session-id")), (&Method::DELETE, Some("s-2")));
}

#[tokio::test]
async fn a_400_about_the_session_is_an_expired_session_too() {
    // What server-everything answers for an id it does not know.
    let sessions = Arc::new(std::sync::Mutex::new(Sessions { say_400: true, ..Sessions::default() }));
    let (_url, mut client, _seen) = start_session(&sessions).await;
    sessions.lock().unwrap().live.clear();
    client.request(2, "tools/list");
    assert_eq!(client.next().await, list_changed());
    let TransportEvent::Response(response) = client.next().await else { panic!("the retried call answered") };
    assert_eq!(response.id, RequestId::Number(2));
    assert_eq!(sessions.lock().unwrap().live, ["s-2"]);
}

#[tokio::test]
async fn requests_failing_together_reinitialise_once() {
    let sessions = Arc::new(std::sync::Mutex::new(Sessions::default()));
    let (_url, mut client, _seen) = start_session(&sessions).await;
    sessions.lock().unwrap().live.clear();
    for id in 2..=21 {
        client.request(id, "tools/call");
    }
    let mut ids = Vec::new();
    let mut notices = 0;
    for _ in 0..21 {
        match client.next().await {
            TransportEvent::Response(response) => ids.push(response.id),
            event if event == list_changed() => notices += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    ids.sort_by_key(|id| match id {
        RequestId::Number(n) => *n,
        RequestId::String(_) => panic!("a number id"),
    });
    assert_eq!(ids, (2..=21).map(RequestId::Number).collect::<Vec<_>>());
    assert_eq!((notices, sessions.lock().unwrap().opened), (1, 2));
}

#[tokio::test]
async fn a_retry_refused_again_fails_with_the_status_and_body() {
    let sessions = Arc::new(std::sync::Mutex::new(Sessions::default()));
    let (url, mut client, _seen) = start_session(&sessions).await;
    sessions.lock().unwrap().forget_on_request = true;
    client.request(2, "tools/call");
    assert_eq!(client.next().await, list_changed());
    assert_eq!(
        client.next_error(2).await,
        format!("the server forgot the session Warden had just re-opened (HTTP 404) at {url}: Session not found")
    );
    // Once: no third session.
    assert_eq!(sessions.lock().unwrap().opened, 2);
}

#[tokio::test]
async fn a_failed_reinitialisation_fails_every_waiting_request_with_why() {
    let sessions = Arc::new(std::sync::Mutex::new(Sessions::default()));
    let (url, mut client, mut seen) = start_session(&sessions).await;
    {
        let mut sessions = sessions.lock().unwrap();
        sessions.live.clear();
        sessions.refuse_initialize = true;
    }
    client.request(2, "tools/call");
    client.request(3, "tools/call");
    let expected = format!(
        "the server forgot our session (HTTP 404) at {url}: Session not found; initialising again failed: HTTP 500 from {url}: overloaded"
    );
    let (mut faults, mut messages) = (Vec::new(), Vec::new());
    for _ in 0..4 {
        match client.next().await {
            TransportEvent::Fault { problem } => faults.push(problem),
            TransportEvent::Message(Message::Response(JsonRpcResponse { outcome: Err(error), .. })) => {
                messages.push(error.message)
            }
            other => panic!("expected a fault or an error response, got {other:?}"),
        }
    }
    assert_eq!(messages, [expected.clone(), expected.clone()]);
    assert_eq!(faults, [expected.clone(), expected]);
    // Both requests waited for the one attempt.
    let mut initializes = 0;
    while let Ok(request) = seen.try_recv() {
        initializes += usize::from(request.rpc_method() == Some("initialize"));
    }
    assert_eq!(initializes, 1);
}

#[tokio::test]
async fn a_404_without_a_session_is_a_plain_http_error() {
    let (url, _seen) = serve(|_: &Seen| status(StatusCode::NOT_FOUND, "")).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.request(1, "initialize");
    // A 404 to `initialize` may be an old server: its legacy stream is
    // tried, and the error says both.
    assert_eq!(
        client.next_error(1).await,
        format!(
            "HTTP 404 from {url}: (no body); the legacy HTTP+SSE transport failed too: HTTP 404 from GET {url}: (no body)"
        )
    );
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
async fn a_url_that_is_not_http_is_refused() {
    let error = connect("ftp://example.com/mcp", &[]).await.err().expect("not HTTP");
    assert_eq!(
        error.to_string(),
        "cannot connect to ftp://example.com/mcp: the URL must start with `http://` or `https://`"
    );
}

#[tokio::test]
async fn a_ca_cert_that_is_gone_by_connect_time_is_named() {
    let mut spec = HttpSpec::new("fake", "https://example.com/mcp");
    spec.ca_cert = Some("/nonexistent/ca.pem".into());
    let error = connect_with(spec).await.err().expect("no CA file");
    let text = error.to_string();
    assert!(
        text.starts_with(
            "cannot connect to https://example.com/mcp: `ca_cert` \"/nonexistent/ca.pem\" cannot be read: "
        ),
        "{text}"
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

/// A [`json_server`] whose GETs get the queued streams, one each, then
/// `when_empty` with no body.
fn get_server(
    streams: Vec<mpsc::UnboundedReceiver<Bytes>>,
    when_empty: StatusCode,
) -> impl Fn(&Seen) -> Response<Body> {
    let streams = std::sync::Mutex::new(std::collections::VecDeque::from(streams));
    move |seen: &Seen| {
        if seen.method != Method::GET {
            return json_server(seen);
        }
        match streams.lock().unwrap().pop_front() {
            Some(stream) => event_stream(Either::Right(Held(stream))),
            None => status(when_empty, ""),
        }
    }
}

/// Connects with the given GET-stream backoff and initialises, as the
/// actor does.
async fn listening_client(url: &str, initial: Duration, max: Duration) -> Client {
    let mut spec = HttpSpec::new("fake", url);
    (spec.reconnect_initial, spec.reconnect_max) = (initial, max);
    let mut client = connect_with(spec).await.unwrap();
    client.initialize().await;
    client.connection.send(Message::notification("notifications/initialized", None)).unwrap();
    client
}

fn sse_event(id: &str, message: &Value) -> Bytes {
    Bytes::from(format!("id: {id}\ndata: {message}\n\n"))
}

#[tokio::test]
async fn the_get_stream_delivers_what_the_server_starts() {
    let (stream_tx, stream_rx) = mpsc::unbounded_channel();
    let (url, mut seen) = serve(get_server(vec![stream_rx], StatusCode::METHOD_NOT_ALLOWED)).await;
    let mut client = listening_client(&url, Duration::from_secs(1), Duration::from_secs(30)).await;
    let get = next_get(&mut seen).await;
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
    assert_eq!(get.header("mcp-protocol-version"), Some("2025-06-18"));
    assert_eq!(get.header("last-event-id"), None);

    stream_tx.send(sse_event("g1", &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))).unwrap();
    assert_eq!(client.next().await, list_changed());

    // Closing ends the stream.
    client.close().await;
    tokio::time::timeout(Duration::from_secs(10), stream_tx.closed()).await.expect("the GET stream is dropped");
}

#[tokio::test]
async fn a_server_without_a_get_stream_is_asked_once() {
    let (url, mut seen) = serve(get_server(Vec::new(), StatusCode::METHOD_NOT_ALLOWED)).await;
    let _client = listening_client(&url, Duration::from_millis(10), Duration::from_millis(10)).await;
    next_get(&mut seen).await;
    // Twenty backoffs' worth of time: a client that retried would have.
    tokio::time::sleep(Duration::from_millis(200)).await;
    while let Ok(request) = seen.try_recv() {
        assert_ne!(request.method, Method::GET, "asked again after 405");
    }
}

#[tokio::test]
async fn a_dropped_get_stream_is_reopened_after_the_backoff_with_the_last_event_id() {
    let (first_tx, first_rx) = mpsc::unbounded_channel();
    let (second_tx, second_rx) = mpsc::unbounded_channel();
    let (url, mut seen) = serve(get_server(vec![first_rx, second_rx], StatusCode::METHOD_NOT_ALLOWED)).await;
    let backoff = Duration::from_millis(300);
    let mut client = listening_client(&url, backoff, Duration::from_secs(5)).await;
    next_get(&mut seen).await;
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "one"}});
    first_tx.send(sse_event("g7", &log)).unwrap();
    let TransportEvent::Message(Message::Notification(note)) = client.next().await else { panic!("the log message") };
    assert_eq!(note.method, "notifications/message");

    drop(first_tx);
    let dropped = std::time::Instant::now();
    let again = next_get(&mut seen).await;
    let waited = dropped.elapsed();
    assert!(waited >= backoff.mul_f64(0.8), "reopened after {waited:?}");
    assert_eq!(again.header("last-event-id"), Some("g7"));
    assert_eq!(again.header("mcp-session-id"), Some("s-1"));
    second_tx.send(sse_event("g8", &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))).unwrap();
    assert_eq!(client.next().await, list_changed());
}

#[tokio::test]
async fn a_failing_get_stream_is_retried_with_doubling_waits_up_to_the_cap() {
    let (url, mut seen) = serve(get_server(Vec::new(), StatusCode::INTERNAL_SERVER_ERROR)).await;
    let _client = listening_client(&url, Duration::from_millis(100), Duration::from_millis(200)).await;
    next_get(&mut seen).await;
    let mut last = std::time::Instant::now();
    let mut waits = Vec::new();
    for _ in 0..4 {
        next_get(&mut seen).await;
        waits.push(last.elapsed());
        last = std::time::Instant::now();
    }
    // 100, 200, 200, 200 ms, each give or take a fifth: never sooner...
    for (wait, expected) in waits.iter().zip([100u64, 200, 200, 200]) {
        assert!(*wait >= Duration::from_millis(expected).mul_f64(0.8), "{waits:?}");
    }
    // ...and capped: uncapped, the third wait would be 400 ms less a fifth.
    assert!(waits[2..].iter().all(|wait| *wait < Duration::from_millis(320)), "{waits:?}");
}

#[test]
fn reconnect_waits_are_jittered_by_a_fifth_either_way() {
    let delay = Duration::from_secs(10);
    let waits: Vec<_> = (0..1000).map(|_| super::listen::jittered(delay)).collect();
    assert!(waits.iter().all(|wait| (Duration::from_secs(8)..=Duration::from_secs(12)).contains(wait)));
    // Not one fixed value: the waits spread.
    assert!(waits.iter().any(|wait| *wait < Duration::from_millis(9500)));
    assert!(waits.iter().any(|wait| *wait > Duration::from_millis(10500)));
}
