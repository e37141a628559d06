//! A server that announces no changes to its tools (`tools: {}`, no
//! `listChanged`): a caller asking for a name its list lacks has the list
//! read again first, at most once a second — a miss within the second
//! waits for the next reading — and a known tool's call reads nothing.

mod common;

use common::*;
use serde_json::json;
use warden_actors::CallError;
use warden_protocol::LATEST_PROTOCOL_VERSION;

#[tokio::test(start_paused = true)]
async fn a_miss_reads_a_quiet_servers_list_again_at_most_once_a_second() {
    let (warden, mut peer) = start_one(settings()).await;
    handshake(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {}}), tools(&["echo"])).await;
    within("the server settles", warden.settled()).await;

    // A tool it added without a word: found by the first caller.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__grown", json!({})), async {
        answer_tools_list(&mut peer, tools(&["echo", "grown"])).await;
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(call.params.as_ref().unwrap()["name"], "grown");
        reply(&peer, &call, text_result("grown here"));
    });
    assert_eq!(outcome.unwrap().text(), "grown here");

    // Two misses at once, within the second: one reading, a second after
    // the last, for both.
    let started = tokio::time::Instant::now();
    let (first, second, ()) =
        tokio::join!(warden.call_tool("srv__nothing", json!({})), warden.call_tool("ghost", json!({})), async {
            answer_tools_list(&mut peer, tools(&["echo", "grown"])).await;
        });
    assert_eq!(first.unwrap_err(), CallError::UnknownTool { name: "srv__nothing".into() });
    assert_eq!(second.unwrap_err(), CallError::UnknownTool { name: "ghost".into() });
    assert!(started.elapsed() >= std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    assert_silent(&mut peer).await;

    // A known tool's call is only its call.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("echoed"));
    });
    assert_eq!(outcome.unwrap().text(), "echoed");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_announces_its_changes_is_taken_at_its_word() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;
    let error = warden.call_tool("srv__nothing", json!({})).await.unwrap_err();
    assert_eq!(error, CallError::UnknownTool { name: "srv__nothing".into() });
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}
