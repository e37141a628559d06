//! The `Warden` handle as a host holds it, against the real test server
//! process: cancel on drop, clones and shutdown, the builder's approver,
//! and per-call options (timeout, `_meta`, progress).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use warden_actors::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, CallError, CallOptions, PolicyRules, Progress, ServerSettings,
    ServerSpec, ServerState, Warden,
};
use warden_protocol::{StdioConnector, StdioSpec};
use warden_tests::{bins, process_alive, wait_until_gone};

/// The test server as `test`, serving `tools`, with at most `max_in_flight`
/// calls at once.
fn test_server(tools: &str, max_in_flight: usize) -> ServerSpec {
    let spec = StdioSpec::new("test", bins::test_server().display().to_string(), vec!["--tools".into(), tools.into()]);
    let settings = ServerSettings { max_in_flight, ..ServerSettings::default() };
    ServerSpec { name: "test".into(), connector: Arc::new(StdioConnector::new(spec)), settings }
}

/// Warden with the test server, every call auto-approved.
async fn started(tools: &str, max_in_flight: usize) -> Warden {
    let warden = Warden::builder()
        .servers(vec![test_server(tools, max_in_flight)])
        .rules(PolicyRules::default().with_auto_approve(true))
        .start()
        .await
        .expect("Warden starts");
    settle(&warden).await;
    warden
}

async fn settle(warden: &Warden) {
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("the server settles");
}

async fn text(warden: &Warden, name: &str, arguments: Value) -> String {
    warden.call_tool(name, arguments).await.unwrap_or_else(|error| panic!("{name}: {error}")).text()
}

fn server_pid(warden: &Warden) -> u32 {
    warden.status()[0].pid.expect("a stdio server has a pid")
}

#[tokio::test]
async fn a_dropped_call_is_cancelled_at_the_server_and_frees_its_slot_at_once() {
    // One call at a time: the next call runs only if the dropped one's
    // slot is given back.
    let warden = started("sleep,echo,cancellations", 1).await;
    let abandoned =
        tokio::time::timeout(Duration::from_millis(300), warden.call_tool("test__sleep", json!({"ms": 30_000}))).await;
    assert!(abandoned.is_err(), "the sleep was still running when its future was dropped");

    let started_at = Instant::now();
    assert_eq!(text(&warden, "test__echo", json!({"message": "next"})).await, "next");
    assert!(started_at.elapsed() < Duration::from_secs(2), "the slot was freed: {:?}", started_at.elapsed());
    // The server heard about it: one cancellation, of the sleep's request.
    let cancelled = text(&warden, "test__cancellations", json!({})).await;
    let ids: Vec<&str> = cancelled.strip_prefix("cancelled: ").expect(&cancelled).split(", ").collect();
    assert_eq!(ids.len(), 1, "{cancelled}");
    assert!(ids[0].parse::<u64>().is_ok(), "a request id: {cancelled}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_finished_call_is_not_cancelled_and_a_timed_out_one_is_cancelled_once() {
    let warden = started("sleep,echo,cancellations", 4).await;
    assert_eq!(text(&warden, "test__echo", json!({"message": "done"})).await, "done");
    let options = CallOptions::default().timeout(Duration::from_millis(300));
    let error = warden.host().call("test__sleep", json!({"ms": 5_000}), options).await.unwrap_err();
    assert!(matches!(error, CallError::Timeout { sent: true, .. }), "{error}");
    assert_eq!(error.to_string().split(';').next().unwrap(), "'test__sleep' timed out after 0.3 s");
    let cancelled = text(&warden, "test__cancellations", json!({})).await;
    assert_eq!(cancelled.matches(", ").count(), 0, "one cancellation, for the timeout: {cancelled}");
    assert_ne!(cancelled, "cancelled: none");
    warden.shutdown().await;
}

#[tokio::test]
async fn every_clone_can_shut_warden_down_and_later_calls_say_it_is_gone() {
    let warden = started("echo", 4).await;
    let pid = server_pid(&warden);
    let clone = warden.clone();
    assert_eq!(text(&clone, "test__echo", json!({"message": "from a clone"})).await, "from a clone");

    // Both at once: one does the work, the other waits for it.
    tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(warden.shutdown(), clone.shutdown()) })
        .await
        .expect("both shutdowns return");
    assert!(!process_alive(pid), "the server process is gone once shutdown returns");
    tokio::time::timeout(Duration::from_secs(1), warden.shutdown()).await.expect("a third shutdown returns at once");
    let error = clone.call_tool("test__echo", json!({"message": "late"})).await.unwrap_err();
    // Not "unknown tool": the tool is known, Warden is gone.
    assert_eq!(error, CallError::ShutDown { name: "test__echo".into() });
    assert_eq!(error.to_string(), "'test__echo' was not run: Warden has shut down (its servers are stopped)");
    let request = clone
        .host()
        .request("test", warden_actors::ServerRequest::ListResources, json!({}), CallOptions::default())
        .await;
    assert!(matches!(request, Err(CallError::ShutDown { .. })), "{request:?}");
}

#[tokio::test]
async fn dropping_the_last_clone_without_shutdown_leaves_no_process() {
    let warden = started("echo", 4).await;
    let pid = server_pid(&warden);
    let clone = warden.clone();
    drop(warden);
    assert_eq!(text(&clone, "test__echo", json!({"message": "still here"})).await, "still here");
    drop(clone);
    // Waited for off the runtime's thread: the stopping happens on it.
    let gone = tokio::task::spawn_blocking(move || wait_until_gone(pid, Duration::from_secs(10))).await.unwrap();
    assert!(gone, "the server process {pid} was stopped");
}

#[tokio::test]
async fn the_builders_approver_answers_the_very_first_call() {
    let asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = Arc::clone(&asked);
    let approver = move |request: ApprovalRequest, answer: ApprovalAnswer| {
        record.lock().unwrap().push(format!("{} for {:?}", request.tool, request.agent));
        answer.send(ApprovalDecision::Approve, "the host");
    };
    // Warden's default policy: tools without annotations need approval.
    let warden = Warden::builder()
        .servers(vec![test_server("echo", 4)])
        .approver(Arc::new(approver))
        .start()
        .await
        .expect("Warden starts");
    settle(&warden).await;
    assert_eq!(text(&warden, "test__echo", json!({"message": "first"})).await, "first");
    assert_eq!(*asked.lock().unwrap(), ["test__echo for None"]);
    warden.shutdown().await;
}

#[tokio::test]
async fn meta_reaches_the_server_and_progress_reaches_the_caller() {
    let warden = started("meta,progress", 4).await;
    let mut meta = Map::new();
    meta.insert("traceparent".into(), json!("00-abc-def-01"));
    let result = warden.host().call("test__meta", json!({}), CallOptions::default().meta(meta)).await.unwrap();
    assert_eq!(serde_json::from_str::<Value>(&result.text()).unwrap(), json!({"traceparent": "00-abc-def-01"}));
    // Without options, no `_meta` is sent at all.
    assert_eq!(text(&warden, "test__meta", json!({})).await, "null");

    let (sink, mut updates) = tokio::sync::mpsc::channel(16);
    let result = warden.host().call("test__progress", json!({"steps": 3}), CallOptions::default().progress(sink)).await;
    assert_eq!(result.unwrap().text(), "3 steps");
    let mut seen = Vec::new();
    while let Ok(update) = updates.try_recv() {
        seen.push(update);
    }
    let step = |n: f64| Progress { progress: n, total: Some(3.0), message: Some(format!("step {n} of 3")) };
    assert_eq!(seen, [step(1.0), step(2.0), step(3.0)]);
    warden.shutdown().await;
}

#[tokio::test]
async fn status_changes_follow_a_crash_through_the_restart() {
    let warden = started("echo,crash,pid", 4).await;
    let mut states = warden.status_changes();
    let tools = warden.tool_changes();
    assert_eq!(states.current()[0].state, ServerState::Running);
    let before = text(&warden, "test__pid", json!({})).await;

    let crashed = warden.call_tool("test__crash", json!({})).await.unwrap_err();
    assert!(matches!(crashed, CallError::CrashedMidCall { .. }), "{crashed}");
    let mut seen = Vec::new();
    let back = async {
        loop {
            let statuses = states.changed().await.expect("Warden runs");
            seen.push(statuses[0].state.clone());
            if statuses[0].state == ServerState::Running {
                return statuses;
            }
        }
    };
    let statuses = tokio::time::timeout(Duration::from_secs(20), back).await.expect("the server comes back");
    assert!(matches!(seen[0], ServerState::Restarting { attempt: 1, .. }), "{seen:?}");
    assert_eq!(statuses[0].restarts, 1);
    assert_ne!(text(&warden, "test__pid", json!({})).await, before, "a new process");
    // The restarted server lists the same tools.
    let current: Vec<String> = tools.current().into_iter().map(|entry| entry.name).collect();
    assert_eq!(current, ["test__crash", "test__echo", "test__pid"]);
    warden.shutdown().await;
}

#[tokio::test]
async fn the_builders_own_rules_win_over_the_configs_in_either_order() {
    let config = warden_actors::WardenConfig::from_toml(
        "[[agents]]\nname = \"from-config\"\nallowed_tools = [\"*\"]\n",
        "c.toml",
    )
    .expect("the config loads");
    let host =
        warden_actors::WardenConfig::from_toml("[[agents]]\nname = \"from-host\"\nallowed_tools = [\"*\"]\n", "h.toml")
            .expect("the host's rules load");
    let own = || PolicyRules::from_config(&host);
    for builder in [Warden::builder().rules(own()).config(&config), Warden::builder().config(&config).rules(own())] {
        let warden = builder.start().await.expect("Warden starts");
        assert!(warden.agent("from-host").is_ok(), "the host's rules were replaced by the config's");
        assert!(warden.agent("from-config").is_err());
        warden.shutdown().await;
    }
}
