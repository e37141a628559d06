//! Traces over OTLP: a call's spans reach a collector (decoded here with
//! the OpenTelemetry protocol's own types), continue the caller's trace,
//! and the server is sent Warden's span as its parent.

#![allow(unused_crate_dependencies)]

mod common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use common::{Home, LineClient};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::{json, Value};

/// The spans a collector received, and the service names they came under.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    services: Vec<String>,
    /// Each span with the service that sent it.
    sent_by: Vec<(String, Span)>,
}

/// An OTLP/HTTP collector on a free port: every `POST /v1/traces` body
/// decoded and kept.
fn collector() -> (u16, Arc<Mutex<Received>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received = Arc::new(Mutex::new(Received::default()));
    let kept = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let kept = Arc::clone(&kept);
            std::thread::spawn(move || serve(stream, &kept));
        }
    });
    (port, received)
}

/// Answers each request of one (kept-alive) connection.
fn serve(stream: TcpStream, received: &Mutex<Received>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0;
        let mut path = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if path.is_empty() {
                path = line.split(' ').nth(1).unwrap_or("").to_string();
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        assert_eq!(path, "/v1/traces");
        let request = ExportTraceServiceRequest::decode(body.as_slice()).expect("OTLP protobuf");
        let mut received = received.lock().unwrap();
        for resource in request.resource_spans {
            let mut service = String::new();
            for attribute in resource.resource.map(|resource| resource.attributes).unwrap_or_default() {
                if let (true, Some(Any::StringValue(name))) =
                    (attribute.key == "service.name", attribute.value.and_then(|value| value.value))
                {
                    service = name.clone();
                    received.services.push(name);
                }
            }
            for scope in resource.scope_spans {
                received.sent_by.extend(scope.spans.iter().map(|span| (service.clone(), span.clone())));
                received.spans.extend(scope.spans);
            }
        }
        writer
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")
            .unwrap();
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|attribute| attribute.key == key).and_then(|attribute| {
        match attribute.value.as_ref()?.value.as_ref()? {
            Any::StringValue(text) => Some(text.clone()),
            Any::IntValue(number) => Some(number.to_string()),
            _ => None,
        }
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

/// `test__meta` called through `warden mcp` on `home` under the caller's
/// trace (`TRACE`, span `CALLER_SPAN`): what the server saw in `_meta`.
fn traced_meta_call(home: &Home) -> Value {
    let mut client = LineClient::start(home, &["mcp"]);
    client.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "traces", "version": "1"}}})
        .to_string(),
    );
    client.answer(1);
    client.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    client.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "test__meta", "arguments": {}, "_meta": {"traceparent": traceparent}}})
        .to_string(),
    );
    let answer = client.answer(2);
    let _ = client.child.kill();
    serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn a_calls_spans_reach_the_collector_under_the_callers_trace_and_the_server_is_sent_warden_s_span() {
    let (port, received) = collector();
    let home = Home::new("traces");
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[security]\nauto_approve = true\n[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,meta\"]\n\
         [telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\nservice_name = \"warden-under-test\"\n"
    );
    std::fs::write(&home.config, config).unwrap();
    let seen = traced_meta_call(&home);
    // The server got the same trace, under a span that is not the caller's.
    let sent = seen["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent reached the server: {seen}"));
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!((parts[0], parts[1], parts[3]), ("00", TRACE, "01"), "{sent}");
    assert_ne!(parts[2], CALLER_SPAN, "the server should hang under Warden's span: {sent}");
    // Stopping the daemon sends what it buffered.
    assert!(home.warden(&["stop"]).status.success());

    let received = received.lock().unwrap();
    assert!(received.services.iter().all(|service| service == "warden-under-test"), "{:?}", received.services);
    // The call that ran: one sent while the server was still starting is
    // answered "starting" and tried again by the front, under its own span.
    let ran = |span: &&Span| {
        span.name == "tools/call test__meta" && attribute(span, "warden.outcome").as_deref() == Some("ok")
    };
    let call = received.spans.iter().find(ran);
    let call = call.unwrap_or_else(|| {
        panic!("no call span among {:?}", received.spans.iter().map(|s| &s.name).collect::<Vec<_>>())
    });
    assert_eq!(hex(&call.trace_id), TRACE);
    // The front's request span continues the caller's trace; the call is its child.
    let request = received.spans.iter().find(|span| span.name == "tools/call").expect("a front request span");
    assert_eq!(hex(&request.parent_span_id), CALLER_SPAN, "the request span continues the caller's trace");
    assert_eq!(hex(&call.parent_span_id), hex(&request.span_id), "the call is the request's child");
    assert_eq!(attribute(call, "warden.server").as_deref(), Some("test"));
    assert_eq!(attribute(call, "warden.outcome").as_deref(), Some("ok"));
    assert_eq!(attribute(call, "gen_ai.tool.name").as_deref(), Some("test__meta"));
    let attempt = received.spans.iter().find(|span| span.name == "tools/call meta").expect("an attempt span");
    assert_eq!(hex(&attempt.parent_span_id), hex(&call.span_id), "the attempt is the call's child");
    assert_eq!(hex(&attempt.span_id), parts[2], "the server was sent the attempt's span");
    assert_eq!(attribute(attempt, "warden.attempt").as_deref(), Some("1"));
    // The server's start, from spawn to its first tool list.
    let start = received.spans.iter().find(|span| span.name == "server start test").expect("a server start span");
    assert_eq!(attribute(start, "warden.tools").as_deref(), Some("2"));
    assert!(start.end_time_unix_nano > start.start_time_unix_nano);
}

/// One POST to the HTTP front: the answer's headers (lowercase) and body.
fn post(port: u16, session: Option<&str>, extra: &str, body: &Value) -> (String, Value) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let session = session.map(|id| format!("Mcp-Session-Id: {id}\r\n")).unwrap_or_default();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {FRONT_TOKEN}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\nConnection: close\r\n\
         {session}{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_ascii_lowercase(), serde_json::from_str(body.trim()).unwrap_or(Value::Null))
}

const FRONT_TOKEN: &str = "front-token-0123456789abcdef";

#[test]
fn without_an_exporter_the_callers_trace_context_reaches_the_server_as_it_came_even_from_a_header() {
    let home = Home::new("traces-pass-through");
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[security]\nauto_approve = true\n[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,meta\"]\n\
         [front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{FRONT_TOKEN}\" }}]\n"
    );
    std::fs::write(&home.config, config).unwrap();
    home.start_daemon();
    let front = home.front_port();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "traces", "version": "1"}}});
    let (head, _) = post(front, None, "", &initialize);
    let session = head.lines().find_map(|line| line.strip_prefix("mcp-session-id: ")).unwrap().trim().to_string();
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    let call =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "test__meta", "arguments": {}}});
    let (_, answer) = post(front, Some(&session), &format!("traceparent: {traceparent}\r\n"), &call);
    let seen: Value = serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(seen["traceparent"], traceparent, "{answer}");
    let _ = home.warden(&["stop"]);
}

#[test]
fn a_call_across_the_cluster_is_one_trace_from_the_entering_node_to_the_server_on_the_other() {
    let (port, received) = collector();
    let nats = warden_tests::nats::NatsServer::start(&warden_tests::scratch_dir("traces-cluster-nats"), "");
    let server = warden_tests::bins::test_server().display().to_string();
    let telemetry = |name: &str| {
        format!("[telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\nservice_name = \"warden-{name}\"\n")
    };
    let (a, b) = (Home::new("traces-cluster-a"), Home::new("traces-cluster-b"));
    let config_a = format!(
        "[security]\nauto_approve = true\n[servers.test]\ncommand = {server:?}\nargs = [\"--tools\", \"echo,meta\"]\n{}\
         [cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"test\"]\n",
        telemetry("a"),
        nats.url()
    );
    let config_b = format!(
        "[security]\nauto_approve = true\n{}[cluster]\nnats = [\"{}\"]\nnode = \"b\"\n",
        telemetry("b"),
        nats.url()
    );
    std::fs::write(&a.config, config_a).unwrap();
    std::fs::write(&b.config, config_b).unwrap();
    assert!(a.warden(&["status"]).status.success());
    assert_eq!(b.call("test__echo", r#"{"message":"up"}"#), "up");
    let seen = traced_meta_call(&b);
    let sent = seen["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent reached A's server: {seen}"));
    let parts: Vec<&str> = sent.split('-').collect();
    assert_eq!(parts[1], TRACE, "A's server is in the caller's trace: {sent}");
    for home in [&b, &a] {
        assert!(home.warden(&["stop"]).status.success());
    }

    let received = received.lock().unwrap();
    let in_trace = |service: &str| -> Vec<&Span> {
        received
            .sent_by
            .iter()
            .filter(|(by, span)| by == service && hex(&span.trace_id) == TRACE)
            .map(|(_, span)| span)
            .collect()
    };
    let (on_b, on_a) = (in_trace("warden-b"), in_trace("warden-a"));
    let names = |spans: &[&Span]| spans.iter().map(|span| span.name.clone()).collect::<Vec<_>>();
    // B: the call and its attempt, whose span A was sent.
    let b_attempt = on_b.iter().find(|span| span.name == "tools/call meta");
    let b_attempt = b_attempt.unwrap_or_else(|| panic!("no attempt span on B: {:?}", names(&on_b)));
    // A: the call it ran, under B's attempt; its own attempt is what the server got.
    let a_call = on_a.iter().find(|span| span.name == "tools/call test__meta");
    let a_call = a_call.unwrap_or_else(|| panic!("no call span on A in the trace: {:?}", names(&on_a)));
    assert_eq!(hex(&a_call.parent_span_id), hex(&b_attempt.span_id), "A's call continues B's attempt");
    let a_attempt = on_a.iter().find(|span| span.name == "tools/call meta").expect("an attempt span on A");
    assert_eq!(hex(&a_attempt.span_id), parts[2], "A's server was sent A's attempt span");
}
