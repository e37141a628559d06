//! Servers misbehaving mid-session: answers that never come, events too
//! big or not JSON-RPC, answers that switch between JSON and event
//! streams. Each fails at most the request it hit, with words saying what
//! went wrong, and the session goes on.

use super::*;

/// A `tools/call` result whose text is `text`.
fn call_result(id: &Value, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
}

/// The text of a `tools/call` result.
fn result_text(response: &crate::jsonrpc::RawResponse) -> String {
    let result: Value = serde_json::from_str(response.result.get()).unwrap();
    result["content"][0]["text"].as_str().unwrap().to_string()
}

/// Sends `tools/call` for tool `name` as request `id`.
fn call(client: &Client, id: i64, name: &str) {
    let params = json!({"name": name, "arguments": {}});
    client.connection.send(Message::request(RequestId::Number(id), "tools/call", Some(params))).unwrap();
}

/// The next event, which must be the successful answer to `id`.
async fn next_answer(client: &mut Client, id: i64) -> crate::jsonrpc::RawResponse {
    match client.next().await {
        TransportEvent::Response(response) if response.id == RequestId::Number(id) => response,
        other => panic!("expected the answer to {id}, got {other:?}"),
    }
}

/// Answers every `tools/call` on an event stream: tool `big` with a
/// `size`-byte text in one event, `garbled` with junk lines around the
/// answer, `bad-json` with an event that is not JSON; anything else with
/// `ok` as JSON.
fn stream_server(size: usize) -> impl Fn(&Seen) -> Response<Body> {
    move |seen: &Seen| {
        let id = &seen.body["id"];
        match seen.body["params"]["name"].as_str() {
            Some("big") => event_stream(full(format!("data: {}\n\n", call_result(id, &"x".repeat(size))))),
            Some("garbled") => event_stream(full(format!(
                "garbage without a colon\n: a comment\nnonsense: field\n\ndata: {}\n\nmore garbage\n",
                call_result(id, "survived")
            ))),
            Some("bad-json") => event_stream(full("data: {\"jsonrpc\": \"2.0\", \"id\": 3, \"resu\n\n")),
            _ => json_server(seen),
        }
    }
}

#[tokio::test]
async fn a_three_megabyte_event_arrives_intact() {
    let size = 3 * 1024 * 1024;
    let (url, _seen) = serve(stream_server(size)).await;
    let mut client = connect(&url, &[]).await.unwrap();
    call(&client, 2, "big");
    let text = result_text(&next_answer(&mut client, 2).await);
    assert_eq!(text.len(), size);
    assert!(text.bytes().all(|byte| byte == b'x'));
}

#[tokio::test]
async fn an_event_over_max_message_bytes_fails_its_call_and_the_session_goes_on() {
    let (url, _seen) = serve(stream_server(2 * 1024 * 1024)).await;
    let mut spec = HttpSpec::new("fake", &url);
    spec.max_message_bytes = 1024 * 1024;
    let mut client = connect_with(spec).await.unwrap();
    client.initialize().await;
    call(&client, 2, "big");
    let message = client.next_error(2).await;
    assert!(
        message.starts_with("a 2097")
            && message.ends_with(&format!(
                "-byte event from {url} is over the 1048576-byte message size limit (`max_message_bytes`)"
            )),
        "{message}"
    );
    call(&client, 3, "small");
    let answer = next_answer(&mut client, 3).await;
    assert_eq!(answer.result.get(), r#"{"ok":"tools/call"}"#);
}

#[tokio::test]
async fn junk_lines_in_an_event_stream_are_skipped() {
    let (url, _seen) = serve(stream_server(0)).await;
    let mut client = connect(&url, &[]).await.unwrap();
    call(&client, 2, "garbled");
    assert_eq!(result_text(&next_answer(&mut client, 2).await), "survived");
}

#[tokio::test]
async fn an_event_that_is_not_json_fails_its_call_and_the_session_goes_on() {
    let (url, _seen) = serve(stream_server(0)).await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    call(&client, 3, "bad-json");
    let message = client.next_error(3).await;
    assert!(message.starts_with(&format!("an event from {url} is not a JSON-RPC message: ")), "{message}");
    assert!(message.ends_with(r#"(it starts: `{"jsonrpc": "2.0", "id": 3, "resu`)"#), "{message}");
    call(&client, 4, "small");
    assert_eq!(next_answer(&mut client, 4).await.result.get(), r#"{"ok":"tools/call"}"#);
}

#[tokio::test]
async fn a_server_may_answer_one_request_as_json_and_the_next_as_a_stream() {
    let streamed = std::sync::atomic::AtomicBool::new(false);
    let (url, _seen) = serve(move |seen: &Seen| {
        let answer = call_result(&seen.body["id"], "hello");
        // JSON, stream, JSON, stream...
        if !streamed.fetch_xor(true, std::sync::atomic::Ordering::SeqCst) {
            json_response(answer)
        } else {
            event_stream(full(format!("id: e1\ndata: {answer}\n\n")))
        }
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    for id in 2..=5 {
        call(&client, id, "any");
        assert_eq!(result_text(&next_answer(&mut client, id).await), "hello");
    }
}

#[tokio::test]
async fn a_post_that_is_never_answered_blocks_nothing_and_is_dropped_when_cancelled() {
    let (dropped_tx, mut dropped) = mpsc::unbounded_channel();
    let (url, mut seen) = serve(move |seen: &Seen| match seen.body["params"]["name"].as_str() {
        Some("hang") => Reply::Hang(OnDrop(dropped_tx.clone())),
        _ => Reply::Answer(json_server(seen)),
    })
    .await;
    let mut client = connect(&url, &[]).await.unwrap();
    client.initialize().await;
    let hang = json!({"name": "hang", "arguments": {}});
    client.connection.send(Message::request(RequestId::Number(2), "tools/call", Some(hang))).unwrap();
    while next_seen(&mut seen).await.body["id"] != 2 {}

    // Other requests go on while it hangs.
    client.request(3, "tools/list");
    let TransportEvent::Response(response) = client.next().await else { panic!("tools/list answered") };
    assert_eq!((response.id, response.result.get()), (RequestId::Number(3), r#"{"ok":"tools/list"}"#));

    // The actor's timeout ran out and it cancelled the call: the POST is
    // dropped, which closes its connection and ends the server's wait.
    let cancel = json!({"requestId": 2, "reason": "timed out"});
    client.connection.send(Message::notification("notifications/cancelled", Some(cancel))).unwrap();
    tokio::time::timeout(Duration::from_secs(10), dropped.recv()).await.expect("the hung POST is dropped");
    // The server is still told.
    let mut told = next_seen(&mut seen).await;
    while told.rpc_method() == Some("tools/list") {
        told = next_seen(&mut seen).await;
    }
    assert_eq!((told.rpc_method(), &told.body["params"]["requestId"]), (Some("notifications/cancelled"), &json!(2)));

    // Nothing answers the abandoned request; the next call is answered.
    client.request(4, "tools/list");
    let TransportEvent::Response(response) = client.next().await else { panic!("tools/list answered") };
    assert_eq!(response.id, RequestId::Number(4));
}
