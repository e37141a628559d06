//! Requests that fail: error statuses and bodies, bodies that are not
//! JSON-RPC, unreachable servers and unusable URLs or headers, each told
//! in words that say what to fix.

use super::*;

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
