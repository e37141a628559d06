//! Answers on an event stream: events before the answer, the stream
//! dropped once the answer came, and resumption with `Last-Event-ID`.

use super::*;

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
    // A notification on a request's stream belongs to that request; so
    // does a server request.
    let TransportEvent::NotificationDuring { notification: progress, during } = client.next().await else {
        panic!("notification")
    };
    assert_eq!((progress.method.as_str(), &during), ("notifications/progress", &RequestId::Number(7)));
    let TransportEvent::RequestDuring { request: ping, during } = client.next().await else { panic!("server request") };
    assert_eq!((ping.id, ping.method.as_str()), (RequestId::String("s1".into()), "ping"));
    assert_eq!(during, RequestId::Number(7));
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
    // The answer is lost (whether the call ran is unknown): a broken stream.
    let message = client.next_broken(3).await;
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
    let TransportEvent::NotificationDuring { notification: progress, .. } = client.next().await else {
        panic!("progress")
    };
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
        client.next_broken(3).await,
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
        client.next_broken(3).await,
        format!("the event stream from {url} ended before the answer came; gave up resuming it after 0.3 s")
    );
    // Each resumption waited the server's 50 ms: a handful, not a flood.
    let mut gets = 0;
    while let Ok(request) = seen.try_recv() {
        gets += usize::from(request.method == Method::GET);
    }
    assert!((3..=6).contains(&gets), "{gets} GETs");
}
