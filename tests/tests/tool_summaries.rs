//! Background tool summaries (`[summary]`): written by a fake
//! OpenAI-compatible endpoint, cached in `summaries.jsonl`, reused by the
//! next Warden, asked again when a tool changes, not asked when disabled,
//! and caught up after the endpoint comes back.

mod common;

use std::convert::Infallible;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use warden_actors::{PolicyRules, ProfileChoice, ServerSpec, SummarySettings, Warden};
use warden_policy::{Detail, ToolProfile};
use warden_protocol::{MemoryConnector, LATEST_PROTOCOL_VERSION};

/// Waits for `future`, failing the test after 30 s (much longer than any
/// of these waits takes).
async fn soon<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    match tokio::time::timeout(Duration::from_secs(30), future).await {
        Ok(output) => output,
        Err(_) => panic!("waited 30 s for this and it did not happen: {what}"),
    }
}

/// The tool names the fake endpoint was asked about, in order.
type Asked = Arc<Mutex<Vec<String>>>;

/// A chat-completions endpoint on `listener` that answers "Summary of
/// <tool>." and records which tool each request was about.
fn serve_completions(listener: TcpListener) -> Asked {
    serve_refusing(listener, None)
}

/// [`serve_completions`], answering 400 for the tool named `refused`.
fn serve_refusing(listener: TcpListener, refused: Option<&'static str>) -> Asked {
    let asked = Asked::default();
    let record = asked.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let record = record.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let record = record.clone();
                    async move {
                        assert_eq!(request.uri().path(), "/v1/chat/completions");
                        let body: Value =
                            serde_json::from_slice(&request.into_body().collect().await.unwrap().to_bytes()).unwrap();
                        assert_eq!(body["model"], "tiny");
                        let user = body["messages"][1]["content"].as_str().unwrap();
                        let tool = user.lines().next().unwrap().trim_start_matches("Tool name: ").to_string();
                        record.lock().unwrap().push(tool.clone());
                        if refused == Some(tool.as_str()) {
                            let mut response = hyper::Response::new(Full::new(bytes::Bytes::from("bad request")));
                            *response.status_mut() = hyper::StatusCode::BAD_REQUEST;
                            return Ok(response);
                        }
                        let answer = json!({"choices": [{"message": {"role": "assistant", "content": format!("  Summary of {tool}.\nExtra line.")}}]});
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(bytes::Bytes::from(answer.to_string()))))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    asked
}

/// A fresh cache directory for one test.
fn cache_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warden-summaries-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn tool(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": schema})
}

fn default_tools() -> Value {
    json!([
        tool(
            "read_file",
            "Reads a file from disk. Returns its text.",
            json!({"type": "object", "properties": {"path": {"type": "string"}}})
        ),
        tool("write_file", "Writes a file. Creates it when missing.", json!({"type": "object"})),
    ])
}

fn settings_for(url: String, dir: &Path) -> SummarySettings {
    let mut settings = SummarySettings::new(url, "tiny", dir);
    settings.backoff_initial = Duration::from_millis(20);
    settings.backoff_max = Duration::from_millis(100);
    settings
}

/// Warden with one server `fs` listing `tools`, every tool shown at summary detail.
async fn fs_with(tools: Value, summaries: Option<SummarySettings>) -> Warden {
    let (connector, mut peers) = MemoryConnector::new();
    let spec = ServerSpec { name: "fs".into(), connector: Arc::new(connector), settings: settings() };
    let rules = PolicyRules::default().with_profile("short", ToolProfile::new(Detail::Summary, vec![]).unwrap());
    let mut builder = Warden::builder().servers(vec![spec]).rules(rules);
    if let Some(summaries) = summaries {
        builder = builder.summaries(summaries);
    }
    let warden = builder.start().await.expect("Warden starts");
    let mut peer = within("fs connects", peers.recv()).await.expect("a connection");
    handshake(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {}}), tools).await;
    within("fs settles", warden.settled()).await;
    std::mem::forget(peer);
    warden
}

fn descriptions(warden: &Warden) -> Vec<String> {
    let shown = warden.host().presented_tools(ProfileChoice::Named("short")).unwrap();
    shown[..shown.len() - 1].iter().map(|tool| tool["description"].as_str().unwrap().to_string()).collect()
}

fn cache_lines(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("summaries.jsonl")).unwrap_or_default();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

async fn endpoint() -> (String, Asked) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    (url, serve_completions(listener))
}

#[tokio::test]
async fn summaries_are_generated_cached_and_reused_by_the_next_warden() {
    let dir = cache_dir("reuse");
    let (url, asked) = endpoint().await;
    let warden = fs_with(default_tools(), Some(settings_for(url.clone(), &dir))).await;
    soon("summaries are written", warden.summaries_settled()).await;
    assert_eq!(descriptions(&warden), ["Summary of read_file.", "Summary of write_file."]);
    let mut seen = asked.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, ["read_file", "write_file"]);
    let lines = cache_lines(&dir);
    assert_eq!(lines.len(), 2);
    for line in &lines {
        assert_eq!(line["server"], "fs");
        assert_eq!(line["summary"], format!("Summary of {}.", line["tool"].as_str().unwrap()));
        assert_eq!(line["model"], "tiny");
        assert_eq!(line["hash"].as_str().unwrap().len(), 64);
        assert!(line["created_at"].as_u64().unwrap() > 0);
    }
    // Full detail is untouched.
    assert_eq!(
        warden.host().presented_tools(ProfileChoice::Own).unwrap()[0]["description"],
        "Reads a file from disk. Returns its text."
    );
    warden.shutdown().await;

    let again = fs_with(default_tools(), Some(settings_for(url, &dir))).await;
    soon("summaries are read back", again.summaries_settled()).await;
    assert_eq!(descriptions(&again), ["Summary of read_file.", "Summary of write_file."]);
    assert_eq!(asked.lock().unwrap().len(), 2, "the second Warden asked nothing");
    assert_eq!(cache_lines(&dir).len(), 2);
    again.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_changed_schema_is_summarised_again_and_the_unchanged_tool_is_not() {
    let dir = cache_dir("changed");
    let (url, asked) = endpoint().await;
    let warden = fs_with(default_tools(), Some(settings_for(url.clone(), &dir))).await;
    soon("summaries are written", warden.summaries_settled()).await;
    warden.shutdown().await;

    let mut tools = default_tools();
    tools[1]["inputSchema"] = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    let again = fs_with(tools, Some(settings_for(url, &dir))).await;
    soon("the changed tool is summarised", again.summaries_settled()).await;
    assert_eq!(asked.lock().unwrap()[2..], ["write_file"]);
    assert_eq!(cache_lines(&dir).len(), 3);
    assert_eq!(descriptions(&again), ["Summary of read_file.", "Summary of write_file."]);
    again.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn disabled_summaries_ask_nothing_leave_the_cache_alone_and_show_first_sentences() {
    let dir = cache_dir("disabled");
    let (url, asked) = endpoint().await;
    let warden = fs_with(default_tools(), Some(settings_for(url, &dir))).await;
    soon("summaries are written", warden.summaries_settled()).await;
    warden.shutdown().await;
    let before = std::fs::read(dir.join("summaries.jsonl")).unwrap();

    let off = fs_with(default_tools(), None).await;
    soon("nothing to wait for", off.summaries_settled()).await;
    assert_eq!(descriptions(&off), ["Reads a file from disk.", "Writes a file."]);
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert_eq!(std::fs::read(dir.join("summaries.jsonl")).unwrap(), before);
    off.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// Collects what Warden logs on this thread.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn an_unreachable_endpoint_is_logged_once_and_summaries_arrive_when_it_comes_up() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
    // The test runtime is single-threaded, so every actor logs here.
    let _guard = tracing::subscriber::set_default(subscriber);
    let dir = cache_dir("down");
    // A port nobody listens on: connections are refused.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let warden =
        fs_with(default_tools(), Some(settings_for(format!("http://{address}/v1/chat/completions"), &dir))).await;
    let mut view = warden.summary_changes();
    let refused_thrice = async {
        while view.current().unreachable_count < 3 {
            view.changed().await.expect("the Summarizer runs");
        }
    };
    soon("three refused attempts", refused_thrice).await;
    let now = view.current();
    assert!(now.endpoint_error.as_deref().unwrap().contains("refused"), "{now:?}");
    assert_eq!(descriptions(&warden), ["Reads a file from disk.", "Writes a file."]);

    let listener = TcpListener::bind(address).await.expect("the port is free again");
    let asked = serve_completions(listener);
    soon("summaries arrive", warden.summaries_settled()).await;
    assert_eq!(descriptions(&warden), ["Summary of read_file.", "Summary of write_file."]);
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert_eq!(warden.summary_changes().current().endpoint_error, None);
    warden.shutdown().await;
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    assert_eq!(text.matches("endpoint is unreachable").count(), 1, "{text}");
    assert_eq!(text.matches("endpoint answers again").count(), 1, "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_tool_the_endpoint_refuses_keeps_its_first_sentence_and_is_not_asked_again() {
    let dir = cache_dir("refused");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
    let asked = serve_refusing(listener, Some("write_file"));
    let warden = fs_with(default_tools(), Some(settings_for(url, &dir))).await;
    soon("summaries are written", warden.summaries_settled()).await;
    assert_eq!(descriptions(&warden), ["Summary of read_file.", "Writes a file."]);
    assert_eq!(asked.lock().unwrap().len(), 2);
    assert_eq!(cache_lines(&dir).len(), 1);
    assert_eq!(warden.summary_changes().current().endpoint_error, None);
    warden.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
