//! Sessions the server forgets: re-initialised once, the request retried,
//! and what is said when that fails too.

use super::*;

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
