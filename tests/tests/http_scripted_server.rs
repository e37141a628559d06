//! Warden against a scripted Streamable HTTP server (hyper, on loopback,
//! plain or over TLS with a certificate made at test time): what a real
//! server does only when it feels like it, on demand.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use warden_actors::{ServerState, Warden};
use warden_tests::test_certs::TestCerts;
use warden_tests::{scratch_dir, test_config};

/// A response body: all at once, or events as the test sends them.
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

/// The server's state: which tools it lists, and the GET stream it will
/// hand out (one). Calling a tool answers `called <name>`, except `hang`,
/// which is never answered, and `fail`, answered with HTTP 500.
struct Script {
    tools: Vec<&'static str>,
    get_stream: Option<mpsc::UnboundedReceiver<Bytes>>,
}

impl Script {
    fn new(tools: Vec<&'static str>) -> Arc<Mutex<Script>> {
        Arc::new(Mutex::new(Script { tools, get_stream: None }))
    }
}

fn json_body(value: Value) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Either::Left(Full::new(value.to_string().into())))
        .unwrap()
}

fn empty(status: StatusCode) -> Response<Body> {
    Response::builder().status(status).body(Either::Left(Full::new(Bytes::new()))).unwrap()
}

/// Answers one request the way a small MCP server with session `s-1` does;
/// `None` for a request never to be answered.
fn answer(script: &Mutex<Script>, method: &Method, body: &Value) -> Option<Response<Body>> {
    if body["method"] == "tools/call" {
        let name = body["params"]["name"].as_str().unwrap_or_default();
        let text = format!("called {name}");
        let result = json!({"content": [{"type": "text", "text": text}]});
        if name == "fail" {
            let body = Either::Left(Full::new(Bytes::from("the database is down")));
            return Some(Response::builder().status(StatusCode::INTERNAL_SERVER_ERROR).body(body).unwrap());
        }
        return (name != "hang").then(|| json_body(json!({"jsonrpc": "2.0", "id": body["id"], "result": result})));
    }
    Some(answer_other(script, method, body))
}

fn answer_other(script: &Mutex<Script>, method: &Method, body: &Value) -> Response<Body> {
    let mut script = script.lock().unwrap();
    if method == Method::GET {
        return match script.get_stream.take() {
            Some(events) => Response::builder()
                .header("content-type", "text/event-stream")
                .body(Either::Right(Held(events)))
                .unwrap(),
            None => empty(StatusCode::METHOD_NOT_ALLOWED),
        };
    }
    let id = &body["id"];
    match body["method"].as_str() {
        _ if method == Method::DELETE => empty(StatusCode::OK),
        Some("initialize") => {
            let mut response = json_body(json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "scripted", "version": "1"}
            }}));
            response.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
            response
        }
        Some("tools/list") => {
            let tools: Vec<_> =
                script.tools.iter().map(|name| json!({"name": name, "inputSchema": {"type": "object"}})).collect();
            json_body(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}))
        }
        _ if id.is_null() => empty(StatusCode::ACCEPTED),
        _ => json_body(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}})),
    }
}

/// Serves `script` on `127.0.0.1:0`; the endpoint URL.
async fn serve(script: Arc<Mutex<Script>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    serve_on(listener, script, None);
    url
}

/// Serves `script` on `listener`, over TLS if `tls` is given; counts the
/// connections accepted (TLS ones once their handshake succeeded).
fn serve_on(listener: TcpListener, script: Arc<Mutex<Script>>, tls: Option<TlsAcceptor>) -> Arc<AtomicUsize> {
    let connections = Arc::new(AtomicUsize::new(0));
    let accepted = connections.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let script = script.clone();
            let tls = tls.clone();
            let accepted = accepted.clone();
            tokio::spawn(async move {
                match tls {
                    None => {
                        accepted.fetch_add(1, Ordering::SeqCst);
                        serve_connection(stream, script).await
                    }
                    Some(tls) => {
                        // A client that refused the certificate hangs up here.
                        let Ok(stream) = tls.accept(stream).await else { return };
                        accepted.fetch_add(1, Ordering::SeqCst);
                        serve_connection(stream, script).await
                    }
                }
            });
        }
    });
    connections
}

async fn serve_connection(stream: impl AsyncRead + AsyncWrite + Unpin + Send + 'static, script: Arc<Mutex<Script>>) {
    let service = service_fn(move |request: hyper::Request<Incoming>| {
        let script = script.clone();
        async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await.unwrap().to_bytes();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            match answer(&script, &parts.method, &body) {
                Some(response) => Ok::<_, Infallible>(response),
                // Accepted, read, and never answered.
                None => std::future::pending().await,
            }
        }
    });
    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
}

#[tokio::test]
async fn a_list_changed_on_the_get_stream_makes_warden_list_again() {
    let (events, get_stream) = mpsc::unbounded_channel();
    let script = Arc::new(Mutex::new(Script { tools: vec!["first"], get_stream: Some(get_stream) }));
    let url = serve(script.clone()).await;
    let config = test_config(&format!("[servers.remote]\nurl = {url:?}\n")).unwrap();
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.expect("the server settles");
    assert_eq!(warden.status()[0].state, ServerState::Running);
    let names = |warden: &Warden| warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    assert_eq!(names(&warden), ["remote__first"]);

    let mut changes = warden.tool_changes();
    script.lock().unwrap().tools.push("second");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
    events.send(Bytes::from(format!("id: 1\ndata: {note}\n\n"))).unwrap();
    let tools = tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("a change in time");
    let tools = tools.expect("Warden runs").into_iter().map(|entry| entry.name).collect::<Vec<_>>();
    assert_eq!(tools, ["remote__first", "remote__second"]);

    // Shutting down ends the GET stream.
    warden.shutdown().await;
    tokio::time::timeout(Duration::from_secs(10), events.closed()).await.expect("the GET stream is dropped");
}

/// An HTTPS server on loopback whose certificate, for `names`, a private
/// CA signed; the port, the CA's PEM file and the connection count.
async fn serve_https(script: Arc<Mutex<Script>>, names: &[&str]) -> (u16, std::path::PathBuf, Arc<AtomicUsize>) {
    let certs = TestCerts::new(names, &scratch_dir("https"));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = serve_on(listener, script, Some(certs.acceptor));
    (port, certs.ca_pem, connections)
}

/// Starts Warden with one server `remote` (`extra` TOML lines added) and
/// waits until it settles.
async fn start(url: &str, extra: &str) -> Warden {
    let toml = format!("[servers.remote]\nurl = {url:?}\n{extra}");
    let config = test_config(&toml).expect("valid config");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.expect("the server settles");
    warden
}

#[tokio::test]
async fn https_with_the_private_ca_as_ca_cert_lists_and_calls_tools() {
    let script = Script::new(vec!["echo"]);
    let (port, ca_pem, connections) = serve_https(script, &["localhost", "127.0.0.1"]).await;
    let url = format!("https://localhost:{port}/mcp");
    let warden = start(&url, &format!("ca_cert = {:?}\n", ca_pem.display().to_string())).await;
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running, "{status:?}");
    assert_eq!(warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>(), ["remote__echo"]);

    let before = connections.load(Ordering::SeqCst);
    for _ in 0..5 {
        let result = warden.call_tool("remote__echo", json!({})).await.unwrap();
        assert_eq!(result.text(), "called echo");
    }
    // One call after another reuses a kept-alive TLS connection instead of
    // a handshake each.
    assert!(connections.load(Ordering::SeqCst) <= before + 1, "{} connections", connections.load(Ordering::SeqCst));
    warden.shutdown().await;
}

#[tokio::test]
async fn https_with_a_private_ca_not_configured_fails_saying_the_certificate_is_not_trusted() {
    let (port, _ca_pem, _) = serve_https(Script::new(vec!["echo"]), &["localhost", "127.0.0.1"]).await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    let warden = start(&url, "").await;
    let status = &warden.status()[0];
    let ServerState::Failed { reason } = &status.state else { panic!("the server failed: {status:?}") };
    assert!(
        reason.contains(&format!(
            "could not reach {url}: TLS: the server's certificate is not trusted (it is not signed by a known \
             certificate authority); for a server with a private CA, set `ca_cert = \"path/to/ca.pem\"` in this \
             server's config"
        )),
        "{reason}"
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn https_to_a_host_the_certificate_is_not_for_fails_saying_so() {
    let (port, ca_pem, _) = serve_https(Script::new(vec!["echo"]), &["mcp.example.internal"]).await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    let warden = start(&url, &format!("ca_cert = {:?}\n", ca_pem.display().to_string())).await;
    let status = &warden.status()[0];
    let ServerState::Failed { reason } = &status.state else { panic!("the server failed: {status:?}") };
    assert!(
        reason.contains(&format!(
            "could not reach {url}: TLS: the server's certificate is for another name than the URL's host; use the \
             host name the certificate was issued for in `url`"
        )),
        "{reason}"
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn a_call_the_server_never_answers_times_out_without_holding_up_the_others() {
    let script = Script::new(vec!["echo", "hang"]);
    let url = serve(script).await;
    let toml = format!("call_timeout_secs = 1.5\n[servers.remote]\nurl = {url:?}\n");
    let config = test_config(&toml).expect("valid config");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.expect("the server settles");

    let hang = async { (warden.call_tool("remote__hang", json!({})).await, std::time::Instant::now()) };
    let echoes = async {
        for _ in 0..3 {
            assert_eq!(warden.call_tool("remote__echo", json!({})).await.unwrap().text(), "called echo");
        }
        std::time::Instant::now()
    };
    let ((hang, hang_ended), echoes_ended) = tokio::join!(hang, echoes);
    // Answered while the other call waited.
    assert!(echoes_ended < hang_ended);
    let error = hang.expect_err("never answered");
    assert_eq!(error.to_string(), "'remote__hang' timed out after 1.5 s; the server was asked to cancel it");

    // The server still works for the next call.
    assert_eq!(warden.call_tool("remote__echo", json!({})).await.unwrap().text(), "called echo");
    assert_eq!(warden.status()[0].state, ServerState::Running);
    warden.shutdown().await;
}

#[tokio::test]
async fn the_last_http_error_shows_in_the_status_while_the_server_runs_on() {
    let url = serve(Script::new(vec!["echo", "fail"])).await;
    let warden = start(&url, "").await;
    assert_eq!(warden.status()[0].last_error, None);

    let error = warden.call_tool("remote__fail", json!({})).await.expect_err("HTTP 500");
    let said = format!("HTTP 500 from {url}: the database is down");
    assert_eq!(error.to_string(), format!("server 'remote' refused 'remote__fail': {said} (JSON-RPC error -32000)"));
    let recorded = |snapshot: &warden_actors::Snapshot| snapshot.status("remote").unwrap().last_error.is_some();
    tokio::time::timeout(Duration::from_secs(10), warden.wait_for(recorded)).await.expect("the error is recorded");
    let status = &warden.status()[0];
    assert_eq!((&status.state, status.last_error.as_deref()), (&ServerState::Running, Some(said.as_str())));

    // Still there after a call that worked: it is the last error, not the
    // last outcome.
    assert_eq!(warden.call_tool("remote__echo", json!({})).await.unwrap().text(), "called echo");
    assert_eq!(warden.status()[0].last_error.as_deref(), Some(said.as_str()));
    warden.shutdown().await;
}
