//! How a server starts, seen from both ends: the handshake on the wire,
//! version negotiation, paged tool discovery, and the ways a start fails
//! (refusal, silence, death), each with the text a person would read.

mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::time::Instant;
use warden_actors::{CallError, ServerState};
use warden_protocol::{ErrorCode, ErrorObject, Message, RequestId, LATEST_PROTOCOL_VERSION};

#[tokio::test(start_paused = true)]
async fn handshake_is_initialize_alone_then_initialized_then_tools_list() {
    let (warden, mut peer) = start_one(settings()).await;

    let initialize = next_request(&mut peer, "initialize").await;
    assert_eq!(initialize.params, Some(warden_initialize_params()));
    // Before the answer, Warden may send nothing but pings, and has none to send.
    assert_silent(&mut peer).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Starting);

    let capabilities = json!({"tools": {"listChanged": true}, "logging": {}});
    reply(&peer, &initialize, init_result(LATEST_PROTOCOL_VERSION, capabilities));
    assert_eq!(next_notification(&mut peer, "notifications/initialized").await, None);
    let list = next_request(&mut peer, "tools/list").await;
    assert_eq!(list.params, None, "the first page is asked for without a cursor");
    assert_silent(&mut peer).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Starting);

    reply(&peer, &list, json!({"tools": tools(&["echo", "add"])}));
    within("the server settles", warden.settled()).await;

    let status = status(&warden, SRV);
    assert_eq!(status.state, ServerState::Running);
    assert_eq!(status.tools, 2);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    let info = status.server_info.expect("serverInfo is recorded");
    assert_eq!((info.name.as_str(), info.version.as_str()), ("scripted-server", "1.2.3"));
    assert!(status.warnings.is_empty());
    assert_eq!(names(&warden), ["srv__add", "srv__echo"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn older_protocol_versions_are_accepted() {
    let versions = ["2025-06-18", "2025-03-26", "2024-11-05"];
    let (warden, mut peers) = start(&[("june", settings()), ("march", settings()), ("november", settings())]).await;
    for (peer, version) in peers.iter_mut().zip(versions) {
        handshake(peer, version, json!({"tools": {}}), tools(&["echo"])).await;
    }
    within("the servers settle", warden.settled()).await;

    for (server, version) in ["june", "march", "november"].into_iter().zip(versions) {
        let status = status(&warden, server);
        assert_eq!(status.state, ServerState::Running, "{server}");
        assert_eq!(status.protocol_version.as_deref(), Some(version));
    }
    assert_eq!(names(&warden), ["june__echo", "march__echo", "november__echo"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unknown_protocol_version_fails_the_server_and_disconnects() {
    let (warden, mut peer) = start_one(settings()).await;
    let initialize = next_request(&mut peer, "initialize").await;
    reply(&peer, &initialize, init_result("1999-01-01", json!({"tools": {}})));

    within("the server settles", warden.settled()).await;
    let ServerState::Failed { reason } = status(&warden, SRV).state else {
        panic!("the server should have failed");
    };
    assert_eq!(
        reason,
        "it answered protocol version '1999-01-01', which Warden does not speak \
         (Warden speaks 2026-07-28, and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 through `initialize`)"
    );
    // Warden hangs up without `notifications/initialized` or `tools/list`.
    within("Warden closes the connection", peer.closed_by_warden()).await;
    assert_eq!(peer.recv().await, None);
    assert!(warden.tools().is_empty());
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn initialize_refused_with_an_error_fails_the_server_with_its_text() {
    let (warden, mut peer) = start_one(settings()).await;
    let initialize = next_request(&mut peer, "initialize").await;
    peer.send(Message::error(
        initialize.id,
        ErrorObject::new(ErrorCode::INVALID_PARAMS, "unsupported client 'warden'"),
    ));

    within("the server settles", warden.settled()).await;
    assert_eq!(
        status(&warden, SRV).state,
        ServerState::Failed {
            reason: "it refused `initialize`: unsupported client 'warden' (JSON-RPC error -32602)".into()
        }
    );
    within("Warden closes the connection", peer.closed_by_warden()).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_without_the_tools_capability_is_never_asked_for_tools_and_gets_only_its_wrappers() {
    let (warden, mut peer) = start_one(settings()).await;
    handshake(&mut peer, LATEST_PROTOCOL_VERSION, json!({"prompts": {}}), json!([])).await;
    within("the server settles", warden.settled()).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    // It claims prompts only: the prompt wrappers, no resource wrappers.
    assert_eq!(names(&warden), ["srv__get_prompt", "srv__list_prompts"]);
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_ping_during_initialize_is_answered_before_the_handshake_ends() {
    let (warden, mut peer) = start_one(settings()).await;
    let initialize = next_request(&mut peer, "initialize").await;

    let ping = RequestId::String("early-ping".into());
    peer.send(Message::request(ping.clone(), "ping", None));
    assert_eq!(next(&mut peer).await, Message::result(ping, json!({})));

    reply(&peer, &initialize, init_result(LATEST_PROTOCOL_VERSION, json!({"tools": {}})));
    next_notification(&mut peer, "notifications/initialized").await;
    answer_tools_list(&mut peer, tools(&["echo"])).await;
    within("the server settles", warden.settled()).await;
    assert_eq!(names(&warden), ["srv__echo"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn tool_pages_are_followed_by_cursor_and_kept_in_order() {
    let (warden, mut peer) = start_one(settings()).await;
    initialize(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {}})).await;

    // Page 1 (asked without a cursor) holds `dup.x`, page 3 `dup_x`: the
    // mapped name carries a hash, so both are kept, each with its own page's
    // definition.
    let page1 = next_request(&mut peer, "tools/list").await;
    assert_eq!(page1.params, None);
    let mut first = tool("dup.x");
    first["description"] = json!("from page 1");
    reply(&peer, &page1, json!({"tools": [tool("alpha"), first], "nextCursor": "after-1"}));

    let page2 = next_request(&mut peer, "tools/list").await;
    assert_eq!(page2.params, Some(json!({"cursor": "after-1"})));
    reply(&peer, &page2, json!({"tools": tools(&["beta", "gamma"]), "nextCursor": "after-2"}));

    let page3 = next_request(&mut peer, "tools/list").await;
    assert_eq!(page3.params, Some(json!({"cursor": "after-2"})));
    reply(&peer, &page3, json!({"tools": tools(&["dup_x", "delta"])}));

    within("the server settles", warden.settled()).await;
    assert_eq!(
        names(&warden),
        ["srv__alpha", "srv__beta", "srv__delta", "srv__dup_x", "srv__dup_x_732408a0", "srv__gamma"]
    );
    let dup = warden.tools().into_iter().find(|entry| entry.name == "srv__dup_x_732408a0").unwrap();
    assert_eq!(dup.tool.name, "dup.x");
    assert_eq!(dup.tool.description.as_deref(), Some("from page 1"));
    assert_eq!(status(&warden, SRV).tools, 6);
    // The list ended: no fourth page.
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

/// Warden's `MAX_LIST_PAGES` (private to the server actor).
const MAX_LIST_PAGES: usize = 100;

#[tokio::test(start_paused = true)]
async fn a_server_that_never_stops_paging_is_cut_off_and_still_runs() {
    let (warden, mut peer) = start_one(settings()).await;
    initialize(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {}})).await;

    let mut expected_cursor = None;
    for page in 1..=MAX_LIST_PAGES {
        let list = next_request(&mut peer, "tools/list").await;
        let cursor = list.params.as_ref().map(|params| params["cursor"].clone());
        assert_eq!(cursor, expected_cursor, "page {page}");
        let next_cursor = format!("cursor-{}", page + 1);
        reply(&peer, &list, json!({"tools": [tool(&format!("t{page:03}"))], "nextCursor": next_cursor}));
        expected_cursor = Some(json!(next_cursor));
    }

    within("the server settles", warden.settled()).await;
    // The 100th page still offered a cursor; Warden did not follow it.
    assert_silent(&mut peer).await;
    let status = status(&warden, SRV);
    assert_eq!(status.state, ServerState::Running);
    assert_eq!(status.tools, MAX_LIST_PAGES);
    let names = names(&warden);
    assert_eq!(names.first().map(String::as_str), Some("srv__t001"));
    assert_eq!(names.last().map(String::as_str), Some("srv__t100"));
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_silent_server_fails_when_its_startup_timeout_runs_out() {
    let settings = warden_actors::ServerSettings { startup_timeout: Duration::from_secs(3), ..settings() };
    let (warden, mut peer) = start_one(settings).await;
    let started = Instant::now();
    next_request(&mut peer, "initialize").await;

    // Calls while it starts are told to come back later.
    let error = warden.call_tool("srv__x", json!({})).await.unwrap_err();
    assert_eq!(error, CallError::ServerStarting { server: "srv".into(), name: "srv__x".into() });
    assert_eq!(error.to_string(), "server 'srv' is still starting; retry 'srv__x' in a moment");

    within("the server settles", warden.settled()).await;
    assert_eq!(started.elapsed().as_secs(), 3);
    assert_eq!(
        status(&warden, SRV).state,
        ServerState::Failed {
            reason: "it did not finish its handshake and tool discovery within 3 s \
                     (raise `startup_timeout_secs` if it is just slow)"
                .into()
        }
    );
    within("Warden closes the connection", peer.closed_by_warden()).await;

    // Once failed, a call says so instead of asking for a retry.
    let error = warden.call_tool("srv__x", json!({})).await.unwrap_err();
    assert!(
        matches!(&error, CallError::ServerFailed { server, name, .. } if server == "srv" && name == "srv__x"),
        "{error:?}"
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_startup_timeout_also_covers_tool_discovery() {
    let settings = warden_actors::ServerSettings { startup_timeout: Duration::from_secs(3), ..settings() };
    let (warden, mut peer) = start_one(settings).await;
    initialize(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {}})).await;
    next_request(&mut peer, "tools/list").await; // never answered

    within("the server settles", warden.settled()).await;
    let status = status(&warden, SRV);
    let ServerState::Failed { reason } = &status.state else {
        panic!("the server should have failed: {status:?}");
    };
    assert!(reason.contains("did not finish its handshake and tool discovery within 3 s"), "{reason}");
    assert!(reason.contains("startup_timeout_secs"), "{reason}");
    // What it said during the handshake stays visible.
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_dies_during_startup_reports_its_last_stderr_lines() {
    let reason = "it stopped before it was ready: the server process exited with code 1; \
                  its last stderr lines:\n  Error: FOO_API_KEY is not set\n      at main (server.js:3:9)";
    // A death is a crash, so by default it is restarted: the reason is
    // shown while Warden waits to try again.
    let (warden, mut connections) = launch_one(settings()).await;
    let mut peer = connections.next().await;
    next_request(&mut peer, "initialize").await;
    peer.write_stderr("Error: FOO_API_KEY is not set");
    peer.write_stderr("    at main (server.js:3:9)");
    peer.die("the server process exited with code 1");

    until_state(&warden, SRV, "restarting", |state| matches!(state, ServerState::Restarting { .. })).await;
    assert_eq!(
        status(&warden, SRV).state.to_string(),
        format!("restarting (attempt 1 of 5, next in 1.0 s) after: {reason}")
    );
    warden.shutdown().await;

    // Without restarts, it is the reason the server failed.
    let settings = warden_actors::ServerSettings { max_restarts: 0, ..settings() };
    let (warden, mut peer) = start_one(settings).await;
    next_request(&mut peer, "initialize").await;
    peer.write_stderr("Error: FOO_API_KEY is not set");
    peer.write_stderr("    at main (server.js:3:9)");
    peer.die("the server process exited with code 1");

    within("the server settles", warden.settled()).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Failed { reason: reason.into() });
    warden.shutdown().await;
}
