//! A Streamable HTTP server that answers `tools/list` with a priming event
//! (`id`, `retry: 500`, no data) and closes the stream: Warden opens the
//! session's GET stream before discovery starts (even when the server is
//! slow to answer the GET), waits the `retry` the
//! server gave, resumes with `GET` + `Last-Event-ID`, and reads the answer
//! there. A scripted server (hyper on loopback) records when each request
//! came. Real time.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use warden_actors::{ServerState, Warden};
use warden_tests::test_config;

type Body = Either<Full<Bytes>, Held>;

/// A body that stays open while the server holds its sender.
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

/// What the server saw, in order: (what, when).
type Log = Arc<Mutex<Vec<(String, Instant)>>>;

fn sse(text: String) -> Response<Body> {
    Response::builder().header("content-type", "text/event-stream").body(Either::Left(Full::new(text.into()))).unwrap()
}

fn answer(
    log: &Log,
    held: &Mutex<Vec<mpsc::UnboundedSender<Bytes>>>,
    method: &Method,
    last_event_id: Option<String>,
    body: &Value,
) -> Response<Body> {
    let mut log = log.lock().unwrap();
    if method == Method::GET {
        return match last_event_id {
            None => {
                log.push(("GET answered".into(), Instant::now()));
                let (sender, events) = mpsc::unbounded_channel();
                held.lock().unwrap().push(sender);
                Response::builder()
                    .header("content-type", "text/event-stream")
                    .body(Either::Right(Held(events)))
                    .unwrap()
            }
            Some(id) => {
                log.push((format!("GET Last-Event-ID {id}"), Instant::now()));
                let result = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [{"name": "resumed", "inputSchema": {"type": "object"}}]}});
                sse(format!("id: p2\ndata: {result}\n\n"))
            }
        };
    }
    if method == Method::DELETE {
        return Response::builder().status(StatusCode::OK).body(Either::Left(Full::new(Bytes::new()))).unwrap();
    }
    let name = body["method"].as_str().unwrap_or("response").to_string();
    log.push((format!("POST {name}"), Instant::now()));
    match name.as_str() {
        "initialize" => {
            let result = json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "priming", "version": "1"}
            }});
            let mut response = Response::builder()
                .header("content-type", "application/json")
                .body(Either::Left(Full::new(result.to_string().into())))
                .unwrap();
            response.headers_mut().insert("mcp-session-id", "s-1".parse().unwrap());
            response
        }
        // The priming event, then the stream ends: resume after 500 ms.
        "tools/list" => {
            assert_eq!(body["id"], 3, "the resumed answer is for id 3 (the probe was 1, initialize 2)");
            sse("id: p1\nretry: 500\ndata: \n\n".into())
        }
        _ => Response::builder().status(StatusCode::ACCEPTED).body(Either::Left(Full::new(Bytes::new()))).unwrap(),
    }
}

async fn serve(log: Log) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let held: Arc<Mutex<Vec<mpsc::UnboundedSender<Bytes>>>> = Arc::default();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (log, held) = (log.clone(), held.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let (log, held) = (log.clone(), held.clone());
                    async move {
                        let method = request.method().clone();
                        let last =
                            request.headers().get("last-event-id").and_then(|id| id.to_str().ok()).map(str::to_string);
                        let bytes = request.into_body().collect().await.unwrap().to_bytes();
                        if method == Method::GET && last.is_none() {
                            // A slow GET: discovery must wait for it all the same.
                            log.lock().unwrap().push(("GET".into(), Instant::now()));
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                        Ok::<_, Infallible>(answer(&log, &held, &method, last, &body))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    url
}

#[tokio::test]
async fn a_primed_and_closed_list_is_resumed_after_the_servers_retry_on_a_session_already_listening() {
    let log = Log::default();
    let url = serve(log.clone()).await;
    let config = test_config(&format!("[servers.primed]\nurl = {url:?}\n")).unwrap();
    let warden = Warden::start(&config).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("settles");
    assert_eq!(warden.status()[0].state, ServerState::Running, "{:?}", warden.status());
    assert_eq!(warden.tools().into_iter().map(|entry| entry.name).collect::<Vec<_>>(), ["primed__resumed"]);

    let log = log.lock().unwrap().clone();
    let order: Vec<&str> = log.iter().map(|(what, _)| what.as_str()).collect();
    assert_eq!(
        order[..7],
        [
            "POST server/discover",
            "POST initialize",
            "POST notifications/initialized",
            "GET",
            "GET answered",
            "POST tools/list",
            "GET Last-Event-ID p1"
        ],
        "the session's GET stream is open before discovery: {order:?}"
    );
    let listed = log[5].1;
    let resumed = log[6].1;
    let waited = resumed.duration_since(listed);
    assert!(
        waited >= Duration::from_millis(450) && waited <= Duration::from_millis(650),
        "resumed {waited:?} after the primed list; the server asked for 500 ms"
    );
    warden.shutdown().await;
}
