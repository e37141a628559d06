//! The legacy HTTP+SSE transport: a server that refuses the Streamable
//! HTTP `initialize` with 405, names its message endpoint on the GET
//! stream, and answers everything there.

use std::sync::Mutex;

use super::*;
use crate::transport::http::legacy::resolve_endpoint;
use crate::transport::http::HttpTransport;

/// The GET stream of a legacy server, shared by its handlers.
type Stream = Arc<Mutex<Option<mpsc::UnboundedSender<Bytes>>>>;

/// A legacy server: POST to `/mcp` is 405; GET `/mcp` opens the stream
/// and names `/messages?sessionId=abc`; each POST there gets 202 and, for
/// a request, `{"ok": <method>}` (the initialize result for `initialize`)
/// on the stream.
fn legacy_server(stream: Stream) -> impl Fn(&Seen) -> Response<Body> {
    move |seen: &Seen| match (&seen.method, seen.uri.path()) {
        (&Method::GET, "/mcp") => {
            let (tx, rx) = mpsc::unbounded_channel();
            tx.send(Bytes::from("event: endpoint\ndata: /messages?sessionId=abc\n\n")).unwrap();
            *stream.lock().unwrap() = Some(tx);
            event_stream(Either::Right(Held(rx)))
        }
        (&Method::POST, "/messages") => {
            let id = &seen.body["id"];
            if !id.is_null() {
                let answer = match seen.rpc_method() {
                    Some("initialize") => initialize_result(id),
                    method => json!({"jsonrpc": "2.0", "id": id, "result": {"ok": method}}),
                };
                let event = format!("event: message\ndata: {answer}\n\n");
                stream.lock().unwrap().as_ref().expect("the stream is open").send(Bytes::from(event)).unwrap();
            }
            status(StatusCode::ACCEPTED, "Accepted")
        }
        _ => status(StatusCode::METHOD_NOT_ALLOWED, ""),
    }
}

#[tokio::test]
async fn a_405_to_initialize_falls_back_to_the_legacy_transport() {
    let stream = Stream::default();
    let (url, mut seen) = serve(legacy_server(stream.clone())).await;
    let mut client = connect(&url, &[("X-Api-Key", "secret-1")]).await.unwrap();
    client.initialize().await;
    let refused = seen.recv().await.unwrap();
    assert_eq!((&refused.method, refused.uri.path()), (&Method::POST, "/mcp"));
    let get = seen.recv().await.unwrap();
    assert_eq!((&get.method, get.uri.path()), (&Method::GET, "/mcp"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("x-api-key"), Some("secret-1"));
    let init = seen.recv().await.unwrap();
    assert_eq!((&init.method, init.uri.to_string().as_str()), (&Method::POST, "/messages?sessionId=abc"));
    assert_eq!(init.rpc_method(), Some("initialize"));
    assert_eq!(init.header("x-api-key"), Some("secret-1"));
    assert_eq!(init.header("content-type"), Some("application/json"));

    client.connection.send(Message::notification("notifications/initialized", None)).unwrap();
    client.request(2, "tools/list");
    let TransportEvent::Response(response) = client.next().await else { panic!("tools/list answered") };
    assert_eq!((response.id, response.result.get()), (RequestId::Number(2), r#"{"ok":"tools/list"}"#));
    // Both went to the endpoint, in order; no second GET was opened.
    let later = [seen.recv().await.unwrap(), seen.recv().await.unwrap()];
    for request in &later {
        assert_eq!((&request.method, request.uri.to_string().as_str()), (&Method::POST, "/messages?sessionId=abc"));
    }
    assert_eq!(
        later.iter().map(Seen::rpc_method).collect::<Vec<_>>(),
        [Some("notifications/initialized"), Some("tools/list")]
    );

    // The server's own messages come on the stream too.
    let notification = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    stream.lock().unwrap().as_ref().unwrap().send(Bytes::from(format!("data: {notification}\n\n"))).unwrap();
    assert_eq!(client.next().await, TransportEvent::Message(Message::parse(notification).unwrap()));

    // Closing drops the stream; there is no session to DELETE.
    let rest = client.close().await;
    assert_eq!(rest, [TransportEvent::Closed { reason: "closed by Warden".into() }]);
    assert!(seen.try_recv().is_err(), "nothing else was sent");
}

#[tokio::test]
async fn the_end_of_the_legacy_stream_closes_the_connection() {
    let stream = Stream::default();
    let (url, _seen) = serve(legacy_server(stream.clone())).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    // The server hangs up.
    stream.lock().unwrap().take();
    assert_eq!(
        client.next().await,
        TransportEvent::Closed { reason: format!("the server ended the event stream from {url}") }
    );
    assert!(matches!(
        client.connection.send(Message::notification("notifications/initialized", None)),
        Err(TransportError::Closed)
    ));
    // Closing does not say it again.
    assert_eq!(client.close().await, []);
}

#[tokio::test]
async fn a_refused_legacy_post_fails_the_request() {
    let stream = Stream::default();
    let legacy = legacy_server(stream);
    let (url, _seen) = serve(move |seen: &Seen| {
        if seen.rpc_method() == Some("tools/call") {
            return status(StatusCode::BAD_REQUEST, "no such session");
        }
        legacy(seen)
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    client.request(2, "tools/call");
    let endpoint = url.replace("/mcp", "/messages?sessionId=abc");
    assert_eq!(client.next_error(2).await, format!("HTTP 400 from {endpoint}: no such session"));
}

/// A legacy server and a client set to `transport = "sse"`, initialized;
/// what the server sees from then on.
async fn sse_client() -> (Client, mpsc::UnboundedReceiver<Seen>) {
    let (url, seen) = serve(legacy_server(Stream::default())).await;
    let mut spec = HttpSpec::new("fake", &url);
    spec.transport = HttpTransport::Sse;
    let mut client = connect_with(spec).await.unwrap();
    client.initialize().await;
    (client, seen)
}

#[tokio::test]
async fn transport_sse_skips_the_streamable_attempt() {
    let (_client, mut seen) = sse_client().await;
    assert_eq!(seen.recv().await.unwrap().method, Method::GET);
}

#[tokio::test]
async fn transport_streamable_http_never_falls_back() {
    let stream = Stream::default();
    let (url, _seen) = serve(legacy_server(stream)).await;
    let mut spec = HttpSpec::new("fake", &url);
    spec.transport = HttpTransport::StreamableHttp;
    let mut client = connect_with(spec).await.unwrap();
    client.request(1, "initialize");
    assert_eq!(client.next_error(1).await, format!("HTTP 405 from {url}: (no body)"));
}

#[test]
fn endpoints_resolve_against_the_stream_url_on_its_origin_only() {
    let base: hyper::Uri = "http://127.0.0.1:3001/api/sse".parse().unwrap();
    let resolve = |endpoint: &str| resolve_endpoint(&base, endpoint).map(|uri| uri.to_string());
    assert_eq!(resolve("/message?sessionId=1").unwrap(), "http://127.0.0.1:3001/message?sessionId=1");
    assert_eq!(resolve("message?sessionId=1").unwrap(), "http://127.0.0.1:3001/api/message?sessionId=1");
    assert_eq!(resolve("?sessionId=1").unwrap(), "http://127.0.0.1:3001/api/sse?sessionId=1");
    assert_eq!(resolve("http://127.0.0.1:3001/m").unwrap(), "http://127.0.0.1:3001/m");
    assert_eq!(
        resolve("http://evil.example/m").unwrap_err(),
        "the server named a message endpoint on another origin (`http://evil.example/m`); \
         Warden posts only to http://127.0.0.1:3001"
    );
    assert!(resolve("//evil.example/m").is_err());
    assert!(resolve("https://127.0.0.1:3001/m").is_err());
}

#[tokio::test]
async fn a_requests_meta_traceparent_is_sent_as_a_header_on_the_legacy_transport_too() {
    let (mut client, mut seen) = sse_client().await;
    let (_get, _init) = (seen.recv().await.unwrap(), seen.recv().await.unwrap());
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let params = json!({"name": "x", "arguments": {}, "_meta": {"traceparent": traceparent}});
    client.connection.send(Message::request(RequestId::Number(3), "tools/call", Some(params))).unwrap();
    let TransportEvent::Response(_) = client.next().await else { panic!("tools/call answered") };
    client.request(4, "tools/list");
    let TransportEvent::Response(_) = client.next().await else { panic!("tools/list answered") };
    let (call, list) = (seen.recv().await.unwrap(), seen.recv().await.unwrap());
    assert_eq!((call.rpc_method(), call.header("traceparent")), (Some("tools/call"), Some(traceparent)));
    assert_eq!((list.rpc_method(), list.header("traceparent")), (Some("tools/list"), None));
}
