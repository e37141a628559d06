//! Answers taken straight from a body or an event by the connection's
//! [`AnswerTaker`], as the stdio reader does: what it takes skips the
//! sink, what it refuses arrives as before, and the events a stream
//! carried before the answer are delivered first.

use std::sync::Mutex;

use super::*;
use crate::transport::{AnswerTaker, Backlog};

/// What happened, in order: `event <what>` for the sink, `taken <id>
/// <result>` for the taker, which takes the ids it was made with.
#[derive(Default)]
struct Log {
    takes: Vec<i64>,
    seen: Mutex<Vec<String>>,
    /// How many events each delivery to the sink held.
    deliveries: Mutex<Vec<usize>>,
}

impl Log {
    fn push(&self, line: String) {
        self.seen.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

struct Taker(Arc<Log>);

impl AnswerTaker for Taker {
    fn take_answer(&self, id: i64, result: &str) -> bool {
        let takes = self.0.takes.contains(&id);
        if takes {
            self.0.push(format!("taken {id} {result}"));
        }
        takes
    }
}

/// Connects to `url` with a taker of `takes`; the log says what the sink
/// and the taker got.
async fn connect_taking(url: &str, takes: &[i64]) -> (Connection, Arc<Log>) {
    let log = Arc::new(Log { takes: takes.to_vec(), ..Log::default() });
    let sink_log = log.clone();
    let sink = Arc::new(move |event: TransportEvent| {
        let events = match event {
            TransportEvent::Batch(events) => events,
            event => vec![event],
        };
        sink_log.deliveries.lock().unwrap().push(events.len());
        for event in events {
            let line = match event {
                TransportEvent::Response(response) => format!("event response {:?} {}", response.id, response.result),
                TransportEvent::NotificationDuring { notification, .. } => format!("event {}", notification.method),
                other => format!("event {other:?}"),
            };
            sink_log.push(line);
        }
    });
    let taker: Arc<dyn AnswerTaker> = Arc::new(Taker(log.clone()));
    let connection = HttpConnector::new(HttpSpec::new("fake", url))
        .connect_paced(sink, Backlog::unlimited(), Some(taker))
        .await
        .unwrap();
    (connection, log)
}

/// Waits until the log holds `count` lines; them.
async fn settle(log: &Log, count: usize) -> Vec<String> {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while log.lines().len() < count {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    waited.await.unwrap_or_else(|_| panic!("{count} lines in time, got {:?}", log.lines()));
    log.lines()
}

fn request(connection: &Connection, id: i64, method: &str) {
    connection.send(Message::request(RequestId::Number(id), method, Some(json!({})))).unwrap();
}

#[tokio::test]
async fn a_json_answer_the_taker_waits_for_skips_the_sink() {
    let (url, _seen) = serve(json_server).await;
    // The taker would take 1 too: an initialize answer is never offered.
    let (connection, log) = connect_taking(&url, &[1, 5]).await;
    request(&connection, 1, "initialize");
    assert_eq!(
        settle(&log, 1).await,
        [
            r#"event response Number(1) {"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}"#
        ]
    );
    connection.send(Message::notification("notifications/initialized", None)).unwrap();
    request(&connection, 5, "tools/call");
    assert_eq!(settle(&log, 2).await[1], r#"taken 5 {"ok":"tools/call"}"#);
    // One the taker does not wait for arrives as an event, as before.
    request(&connection, 6, "tools/call");
    assert_eq!(settle(&log, 3).await[2], r#"event response Number(6) {"ok":"tools/call"}"#);
    connection.close().await;
}

#[tokio::test]
async fn an_answer_on_an_event_stream_is_taken_after_the_events_before_it() {
    let (url, _seen) = serve(|seen: &Seen| {
        if seen.rpc_method() == Some("initialize") {
            return json_response(initialize_result(&seen.body["id"]));
        }
        // One chunk: two progress notifications, then the answer.
        let progress =
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}});
        let stream = format!(
            "id: e1\ndata: {progress}\n\nid: e2\ndata: {progress}\n\nid: e3\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "id": &seen.body["id"], "result": {"content": []}}),
        );
        event_stream(full(stream))
    })
    .await;
    let (connection, log) = connect_taking(&url, &[7]).await;
    request(&connection, 1, "initialize");
    settle(&log, 1).await;
    request(&connection, 7, "tools/call");
    let progress = "event notifications/progress";
    assert_eq!(settle(&log, 4).await[1..], [progress, progress, r#"taken 7 {"content":[]}"#]);
    // Taken, the answer still ends the request's stream: the next request
    // is answered as usual.
    request(&connection, 8, "tools/call");
    assert_eq!(settle(&log, 7).await[4..], [progress, progress, r#"event response Number(8) {"content":[]}"#]);
    // The events before an answer reach the sink together, not one by
    // one: an answer-shaped event sends them on before it is offered (one
    // the taker refuses then follows on its own).
    assert_eq!(*log.deliveries.lock().unwrap(), [1, 2, 2, 1]);
    connection.close().await;
}
