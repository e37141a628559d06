//! The GET stream: what the server starts on its own, and reopening it
//! with backoff and `Last-Event-ID`.

use super::*;

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
    let waits: Vec<_> = (0..1000).map(|_| super::super::listen::jittered(delay)).collect();
    assert!(waits.iter().all(|wait| (Duration::from_secs(8)..=Duration::from_secs(12)).contains(wait)));
    // Not one fixed value: the waits spread.
    assert!(waits.iter().any(|wait| *wait < Duration::from_millis(9500)));
    assert!(waits.iter().any(|wait| *wait > Duration::from_millis(10500)));
}
