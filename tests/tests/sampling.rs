//! Sampling (`sampling/createMessage`) from a server on the official Python
//! SDK (`tests/python/asking_server.py`, pinned) to a fake OpenAI-compatible
//! endpoint in this test: the request shape (model, messages, the token
//! cap, secrets redacted), approval (a denial reaches the server with its
//! reason), and refusals when sampling is not configured or the server is
//! not allowed. Real time, real processes.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use warden_actors::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, ServerState, Warden};
use warden_tests::real_servers::{python_script, python_server_command};
use warden_tests::test_config;

/// What the fake endpoint was sent, in order.
type Seen = Arc<Mutex<Vec<Value>>>;

/// A chat-completions endpoint that answers `echo: <the last text>` as
/// `<model>-served`, recording each request body.
async fn endpoint() -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Seen::default();
    let record = seen.clone();
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
                        let last = body["messages"].as_array().and_then(|messages| messages.last()).cloned();
                        let text = last.and_then(|message| message["content"][0]["text"].as_str().map(str::to_string));
                        let answer = json!({
                            "model": format!("{}-served", body["model"].as_str().unwrap_or("?")),
                            "choices": [{"message": {"role": "assistant", "content": format!("echo: {}", text.unwrap_or_default())}, "finish_reason": "stop"}]
                        });
                        record.lock().unwrap().push(body);
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(bytes::Bytes::from(answer.to_string()))))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    (url, seen)
}

/// Warden with the asking server as `py` (its `env` holds a secret), plus
/// `extra`, and an approver if given.
async fn start(extra: &str, approver: Option<Arc<dyn warden_actors::Approver>>) -> Warden {
    let (python, args) = python_server_command(&python_script("asking_server.py"));
    let toml = format!(
        "{extra}\n[servers.py]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\nprotocol_version = \"2025-11-25\"\nenv = {{ PY_TOKEN = \"tok-7f3a9b2c5d\" }}\n\
         [servers.other]\ncommand = \"/bin/false\"\nmax_restarts = 0\n"
    );
    let config = test_config(&toml).expect("valid config");
    let mut builder = Warden::builder().config(&config);
    if let Some(approver) = approver {
        builder = builder.approver(approver);
    }
    let warden = builder.start().await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(90), warden.settled()).await.expect("the server settles");
    let status = warden.status();
    assert!(status.iter().any(|server| server.name == "py" && server.state == ServerState::Running), "{status:?}");
    warden
}

async fn sample(warden: &Warden, prompt: &str) -> String {
    let call = warden.call_tool("py__sample", json!({"prompt": prompt}));
    tokio::time::timeout(Duration::from_secs(30), call).await.expect("the call ends").unwrap().text()
}

#[tokio::test]
async fn a_listed_server_samples_the_endpoint_capped_and_redacted() {
    let (url, seen) = endpoint().await;
    // The tool's own leak rule is off, so the secret reaches the server;
    // sampling redacts it all the same before the model sees it.
    let extra = format!(
        "[sampling]\nendpoint = {url:?}\nmodel = \"gpt-test\"\nmax_tokens = 50\nservers = [\"py\"]\napproval = \"never\"\n\
         [security.tool_policies.py__sample]\nleaks = \"off\"\n"
    );
    let warden = start(&extra, None).await;
    assert_eq!(sample(&warden, "hello there").await, "gpt-test-served: echo: hello there");
    let body = seen.lock().unwrap()[0].clone();
    assert_eq!(
        body,
        json!({
            "model": "gpt-test",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there"}]}],
            "max_tokens": 50
        }),
        "the server asked for 100 tokens; [sampling] max_tokens caps it"
    );

    let answer = sample(&warden, "the token is tok-7f3a9b2c5d").await;
    let sent = seen.lock().unwrap()[1]["messages"][0]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(!sent.contains("tok-7f3a9b2c5d") && sent.contains("[REDACTED"), "the model saw: {sent}");
    assert!(answer.starts_with("gpt-test-served: echo: the token is [REDACTED"), "{answer}");
    let metrics = warden.metrics().encode(&warden.status());
    assert!(metrics.contains("warden_sampling_requests_total{server=\"py\",outcome=\"ok\"} 2\n"), "{metrics}");
    warden.shutdown().await;
}

#[tokio::test]
async fn each_request_asks_the_approver_and_a_denial_reaches_the_server() {
    let (url, seen) = endpoint().await;
    let asked: Arc<Mutex<Vec<ApprovalRequest>>> = Arc::default();
    let record = asked.clone();
    let approver = Arc::new(move |request: ApprovalRequest, answer: ApprovalAnswer| {
        let deny = request.arguments["messages"][0]["text"] == "spend money";
        record.lock().unwrap().push(request);
        let decision =
            if deny { ApprovalDecision::Deny { reason: "no budget".into() } } else { ApprovalDecision::Approve };
        answer.send(decision, "the test");
    });
    let extra = format!("[sampling]\nendpoint = {url:?}\nmodel = \"gpt-test\"\nservers = [\"py\"]\n");
    let warden = start(&extra, Some(approver)).await;

    assert_eq!(sample(&warden, "say hi").await, "gpt-test-served: echo: say hi");
    let denied = sample(&warden, "spend money").await;
    assert_eq!(denied, "error: the sampling request was denied by the test: no budget");
    assert_eq!(seen.lock().unwrap().len(), 1, "a denied request never reaches the model");

    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2);
    assert_eq!((asked[0].tool.as_str(), asked[0].server.as_str()), ("sampling/createMessage", "py"));
    assert_eq!(
        asked[0].reason,
        "server 'py' asks the model 'gpt-test' for a completion ([sampling] approval = \"always\")"
    );
    assert_eq!(
        asked[0].arguments,
        json!({"model": "gpt-test", "messages": [{"role": "user", "text": "say hi"}], "max_tokens": 100, "notes": []})
    );
    drop(asked);
    warden.shutdown().await;
}

#[tokio::test]
async fn without_a_model_or_outside_the_list_a_server_is_refused() {
    let warden = start("", None).await;
    let refused = sample(&warden, "hi").await;
    assert_eq!(refused, "error: server 'py' may not sample: add it to `[sampling] servers` to let it");
    let metrics = warden.metrics().encode(&warden.status());
    assert!(metrics.contains("warden_sampling_requests_total{server=\"py\",outcome=\"refused\"} 1\n"), "{metrics}");
    warden.shutdown().await;

    let (url, seen) = endpoint().await;
    let extra =
        format!("[sampling]\nendpoint = {url:?}\nmodel = \"gpt-test\"\nservers = [\"other\"]\napproval = \"never\"\n");
    let warden = start(&extra, None).await;
    let refused = sample(&warden, "hi").await;
    assert_eq!(refused, "error: server 'py' may not sample: add it to `[sampling] servers` to let it");
    assert!(seen.lock().unwrap().is_empty());
    warden.shutdown().await;
}

#[tokio::test]
async fn with_review_results_a_completion_the_approver_rejects_never_reaches_the_server() {
    let (url, seen) = endpoint().await;
    let asked: Arc<Mutex<Vec<ApprovalRequest>>> = Arc::default();
    let record = asked.clone();
    let approver = Arc::new(move |request: ApprovalRequest, answer: ApprovalAnswer| {
        // The request itself is fine; its completion is not.
        let decision = if request.arguments.get("completion").is_some() {
            ApprovalDecision::Deny { reason: "not that answer".into() }
        } else {
            ApprovalDecision::Approve
        };
        record.lock().unwrap().push(request);
        answer.send(decision, "the reviewer");
    });
    let extra =
        format!("[sampling]\nendpoint = {url:?}\nmodel = \"gpt-test\"\nservers = [\"py\"]\nreview_results = true\n");
    let warden = start(&extra, Some(approver)).await;
    assert_eq!(
        sample(&warden, "say hi").await,
        "error: the sampling request was denied by the reviewer: not that answer"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "the model was asked");
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 2, "the request, then its completion");
    assert_eq!(asked[1].arguments, json!({"model": "gpt-test-served", "completion": "echo: say hi"}));
    drop(asked);
    warden.shutdown().await;
}
