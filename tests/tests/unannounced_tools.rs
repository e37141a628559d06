//! Tools a server adds without a word Warden hears: the official Python
//! SDK's server (`tests/python/growing_server.py`, pinned), which adds a
//! tool the way servers written with it commonly do, in both eras — one
//! that declares `tools.listChanged: false`, and one that declares `true`
//! at 2026-07-28 but never says so where Warden listens. A client talking
//! to it directly sees the new tool when it lists again; through Warden,
//! the first caller that asks for it finds it, and a known tool's call
//! never reads the list again.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use warden_actors::{CallError, Warden};
use warden_tests::real_servers::{python_script, python_server_command};
use warden_tests::test_config;

/// Warden with the growing server as `py` in `mode`, speaking `version`.
async fn start(mode: &str, version: &str) -> Warden {
    let (python, mut args) = python_server_command(&python_script("growing_server.py"));
    args.push(mode.into());
    let toml = format!(
        "[servers.py]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\nprotocol_version = {version:?}\n"
    );
    let warden = Warden::builder().config(&test_config(&toml).expect("valid config")).start().await.expect("starts");
    tokio::time::timeout(Duration::from_secs(90), warden.settled()).await.expect("the server settles");
    warden
}

async fn text(warden: &Warden, tool: &str, arguments: Value) -> String {
    let call = tokio::time::timeout(Duration::from_secs(30), warden.call_tool(tool, arguments));
    call.await.expect("the call ends within 30 s").unwrap_or_else(|error| panic!("{tool}: {error}")).text()
}

/// How many `tools/list` requests the server has answered.
async fn listings(warden: &Warden) -> u64 {
    text(warden, "py__listings", json!({})).await.parse().expect("a count")
}

#[tokio::test]
async fn a_tool_a_server_adds_unannounced_is_found_by_the_first_caller_that_asks_for_it_in_both_eras() {
    for mode in ["quiet", "listening"] {
        for (version, spoken) in [("auto", "2026-07-28"), ("2025-11-25", "2025-11-25")] {
            let case = format!("{mode} server, protocol_version = {version}");
            let warden = start(mode, version).await;
            let status = warden.status().into_iter().next().expect("one server");
            assert_eq!(status.protocol_version.as_deref(), Some(spoken), "{case}");
            assert_eq!(text(&warden, "py__grow", json!({})).await, "grew", "{case}");
            // The first call of the new name finds it.
            assert_eq!(text(&warden, "py__grown", json!({})).await, "grown here", "{case}");
            // So does `describe_tool`, and the tool list after it.
            assert_eq!(text(&warden, "py__grow", json!({"name": "second"})).await, "grew", "{case}");
            let described = text(&warden, "describe_tool", json!({"tool": "py__second"})).await;
            let described: Value =
                serde_json::from_str(&described).unwrap_or_else(|e| panic!("{case}: {e}: {described}"));
            assert_eq!(described["name"], "py__second", "{case}");
            assert!(warden.tools().iter().any(|tool| tool.name == "py__second"), "{case}");
            warden.shutdown().await;
        }
    }
}

#[tokio::test]
async fn a_miss_reads_the_list_again_at_most_once_a_second_and_a_known_tool_never() {
    let warden = start("quiet", "auto").await;
    let before = listings(&warden).await;
    // Known tools are called without a look at the list.
    for _ in 0..5 {
        text(&warden, "py__grow", json!({"name": "grown"})).await;
    }
    assert_eq!(listings(&warden).await, before, "a known tool's call read the list again");
    // A name no list has: read again once, then the next miss within the
    // second waits for a reading a second after it.
    let start = Instant::now();
    let first = warden.call_tool("py__nothing", json!({})).await;
    assert!(matches!(first, Err(CallError::UnknownTool { .. })), "{first:?}");
    assert_eq!(listings(&warden).await, before + 1);
    let second = warden.call_tool("py__nothing", json!({})).await;
    let waited = start.elapsed();
    assert!(matches!(&second, Err(error) if error.to_string().contains("unknown tool 'py__nothing'")), "{second:?}");
    assert_eq!(listings(&warden).await, before + 2);
    assert!(waited >= Duration::from_secs(1), "two readings {waited:?} apart");
    warden.shutdown().await;
}
