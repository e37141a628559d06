//! Calls across a crash, as a host sees them: calls that never reached the
//! dead server go to the next one; delivered calls are repeated only when
//! the tool is safe to repeat (`retry_after_crash`); calls made while the
//! server restarts wait within their own timeout, and a repeated call gets
//! only the time left.

mod common;

use std::time::Duration;

use common::crashes::*;
use common::*;
use serde_json::json;
use tokio::time::{sleep, Instant};
use warden_actors::{CallError, CrashRetry, ServerSettings, ServerState};
use warden_protocol::LATEST_PROTOCOL_VERSION;

// --- Calls across a crash ---------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_queued_call_that_never_reached_the_crashed_server_is_sent_to_the_restarted_one() {
    let settings = ServerSettings { max_in_flight: 1, ..settings() };
    let (warden, mut connections, mut peer) = running_restartable(settings, tools(&["append"])).await;

    let calls = vec![
        timed_call(&warden, "srv__append", json!({"line": "first"})),
        timed_call(&warden, "srv__append", json!({"line": "second"})),
    ];
    let script = async {
        let first = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&first), &json!({"line": "first"}));
        // The second waits for the only slot when the server dies.
        let died = Instant::now();
        peer.die(EXIT);

        let mut restarted = connections.next().await;
        ready(&mut restarted, tools(&["append"])).await;
        let second = next_request(&mut restarted, "tools/call").await;
        assert_eq!(second.params, Some(json!({"name": "append", "arguments": {"line": "second"}})));
        reply(&restarted, &second, text_result("appended 'second'"));
        (died, restarted)
    };
    let (mut outcomes, (died, mut restarted)) = tokio::join!(join_all(calls), script);

    // The first had reached the server and `append` is not safe to repeat:
    // its caller learns at once that it may or may not have happened.
    let (first, first_ended) = outcomes.remove(0);
    let error = first.unwrap_err();
    assert_eq!(error, crashed_mid_call("srv__append", CLOSED));
    assert_eq!(
        error.to_string(),
        "server 'srv' crashed while running 'srv__append' (the connection closed: the server process exited with \
         code 1); the call was not repeated because the tool is not marked read-only or idempotent, so it may or \
         may not have taken effect (set `retry_after_crash = \"always\"` on the server to repeat such calls)"
    );
    assert_eq!(first_ended, died);
    // The second never had: it ran on the restarted server, 1 s later.
    let (second, second_ended) = outcomes.remove(0);
    assert_eq!(second.unwrap().text(), "appended 'second'");
    assert_eq!(second_ended - died, secs(1.0));
    // And the first was not repeated there.
    assert_silent(&mut restarted).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn delivered_calls_are_repeated_after_a_crash_only_for_read_only_or_idempotent_tools() {
    let listed = json!([
        annotated("get", json!({"idempotentHint": true})),
        annotated("read", json!({"readOnlyHint": true})),
        annotated("put", json!({"readOnlyHint": false, "idempotentHint": false, "destructiveHint": false})),
    ]);
    let (warden, mut connections, mut peer) = running_restartable(settings(), listed.clone()).await;

    let calls = vec![
        timed_call(&warden, "srv__get", json!({"key": "a"})),
        timed_call(&warden, "srv__read", json!({"path": "/etc/motd"})),
        timed_call(&warden, "srv__put", json!({"key": "a", "value": 1})),
    ];
    let script = async {
        let mut first_time: Vec<String> =
            tool_calls(&mut peer, 3).await.iter().map(|call| tool_name(call).into()).collect();
        first_time.sort();
        assert_eq!(first_time, ["get", "put", "read"]);
        let died = Instant::now();
        peer.die(EXIT);

        let mut restarted = connections.next().await;
        ready(&mut restarted, listed.clone()).await;
        let mut repeated = tool_calls(&mut restarted, 2).await;
        repeated.sort_by(|a, b| tool_name(a).cmp(tool_name(b)));
        assert_eq!(
            repeated.iter().map(|call| call.params.clone().unwrap()).collect::<Vec<_>>(),
            [
                json!({"name": "get", "arguments": {"key": "a"}}),
                json!({"name": "read", "arguments": {"path": "/etc/motd"}}),
            ]
        );
        for call in &repeated {
            reply(&restarted, call, text_result(&format!("{} again", tool_name(call))));
        }
        (died, restarted)
    };
    let (outcomes, (died, mut restarted)) = tokio::join!(join_all(calls), script);

    let [(get, get_ended), (read, read_ended), (put, put_ended)]: [_; 3] = outcomes.try_into().unwrap();
    assert_eq!(get.unwrap().text(), "get again");
    assert_eq!(read.unwrap().text(), "read again");
    assert_eq!((get_ended - died, read_ended - died), (secs(1.0), secs(1.0)));
    // Annotated, but not as safe: the hints are false.
    assert_eq!(put.unwrap_err(), crashed_mid_call("srv__put", CLOSED));
    assert_eq!(put_ended, died);
    assert_silent(&mut restarted).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_crash_retry_never_not_even_an_idempotent_call_is_repeated() {
    let settings = ServerSettings { crash_retry: CrashRetry::Never, ..settings() };
    let listed = json!([annotated("get", json!({"idempotentHint": true, "readOnlyHint": true}))]);
    let (warden, mut connections, mut peer) = running_restartable(settings, listed.clone()).await;

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__get", json!({"key": "a"})), async {
        next_request(&mut peer, "tools/call").await;
        peer.die(EXIT);
    });
    let expected = CallError::CrashedMidCall {
        server: SRV.into(),
        name: "srv__get".into(),
        reason: CLOSED.into(),
        policy: CrashRetry::Never,
    };
    assert_eq!(outcome.unwrap_err(), expected);

    // The server is still restarted; the call is not sent to it.
    let mut restarted = connections.next().await;
    ready(&mut restarted, listed).await;
    until_state(&warden, SRV, "running again", is_running).await;
    assert_silent(&mut restarted).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_crash_retry_always_a_call_to_any_tool_is_repeated() {
    let settings = ServerSettings { crash_retry: CrashRetry::Always, ..settings() };
    let (warden, mut connections, mut peer) = running_restartable(settings, tools(&["append"])).await;

    let (outcome, restarted) = tokio::join!(warden.call_tool("srv__append", json!({"line": "x"})), async {
        let first = next_request(&mut peer, "tools/call").await;
        peer.die(EXIT);
        let mut restarted = connections.next().await;
        ready(&mut restarted, tools(&["append"])).await;
        let again = next_request(&mut restarted, "tools/call").await;
        assert_eq!(again.params, first.params);
        reply(&restarted, &again, text_result("appended"));
        restarted
    });
    assert_eq!(outcome.unwrap().text(), "appended");
    let mut restarted = restarted;
    assert_silent(&mut restarted).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_made_while_the_server_restarts_waits_and_runs_on_the_restarted_server() {
    let (warden, mut connections, peer) = running_restartable(settings(), tools(&["echo"])).await;
    peer.die(EXIT);
    until_state(&warden, SRV, "waiting for restart 1", is_restarting(1)).await;
    sleep(secs(0.25)).await;

    let asked = Instant::now();
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({"text": "hi"})), async {
        let mut restarted = connections.next().await;
        ready(&mut restarted, tools(&["echo"])).await;
        let call = next_request(&mut restarted, "tools/call").await;
        assert_eq!(arguments(&call), &json!({"text": "hi"}));
        reply(&restarted, &call, text_result("hi"));
    });
    assert_eq!(outcome.unwrap().text(), "hi");
    assert_eq!(asked.elapsed(), secs(0.75));
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_time_runs_out_while_the_server_restarts_is_never_sent() {
    let settings = ServerSettings { call_timeout: secs(3.0), first_restart_delay: secs(5.0), ..settings() };
    let (warden, mut connections, peer) = running_restartable(settings, tools(&["echo"])).await;
    peer.die(EXIT);
    until_state(&warden, SRV, "waiting for restart 1", is_restarting(1)).await;
    assert_eq!(
        state_text(&warden),
        "restarting (attempt 1 of 5, next in 5.0 s) after: the connection closed: the server process exited with code 1"
    );

    let asked = Instant::now();
    let error = warden.call_tool("srv__echo", json!({})).await.unwrap_err();
    assert_eq!(asked.elapsed(), secs(3.0));
    assert_eq!(error, CallError::RestartTimeout { server: SRV.into(), name: "srv__echo".into(), timeout: secs(3.0) });
    assert_eq!(error.to_string(), "'srv__echo' timed out after 3 s waiting for server 'srv' to come back from a crash");

    // The restart comes after all; the server never hears of that call.
    let mut restarted = connections.next().await;
    assert_eq!(asked.elapsed(), secs(5.0));
    ready(&mut restarted, tools(&["echo"])).await;
    until_state(&warden, SRV, "running again", is_running).await;
    assert_silent(&mut restarted).await;
    warden.shutdown().await;
}

/// An idempotent call follows its server through crash after crash, but
/// never past its own timeout (2.5 s): the second restart is due at 3 s.
#[tokio::test(start_paused = true)]
async fn a_call_to_a_server_that_keeps_dying_ends_within_its_timeout() {
    let settings = ServerSettings { call_timeout: secs(2.5), ..settings() };
    let listed = json!([annotated("get", json!({"idempotentHint": true}))]);
    let (warden, mut connections, mut peer) = running_restartable(settings, listed.clone()).await;

    let asked = Instant::now();
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__get", json!({})), async {
        next_request(&mut peer, "tools/call").await;
        peer.die(EXIT);
        let mut restarted = connections.next().await;
        ready(&mut restarted, listed.clone()).await;
        next_request(&mut restarted, "tools/call").await;
        restarted.die(EXIT);
    });
    assert_eq!(asked.elapsed(), secs(2.5));
    let error = outcome.unwrap_err();
    assert_eq!(error, CallError::RestartTimeout { server: SRV.into(), name: "srv__get".into(), timeout: secs(2.5) });
    assert_eq!(
        error.to_string(),
        "'srv__get' timed out after 2.5 s waiting for server 'srv' to come back from a crash"
    );
    warden.shutdown().await;
}

/// A repeated call gets what is left of its timeout, not a fresh one.
#[tokio::test(start_paused = true)]
async fn a_repeated_call_gets_only_the_time_left() {
    let settings = ServerSettings { call_timeout: secs(2.5), ..settings() };
    let listed = json!([annotated("get", json!({"readOnlyHint": true}))]);
    let (warden, mut connections, mut peer) = running_restartable(settings, listed.clone()).await;

    let asked = Instant::now();
    let (outcome, (again, cancelled)) = tokio::join!(warden.call_tool("srv__get", json!({})), async {
        next_request(&mut peer, "tools/call").await;
        peer.die(EXIT);
        let mut restarted = connections.next().await;
        ready(&mut restarted, listed.clone()).await;
        let again = next_request(&mut restarted, "tools/call").await; // never answered
        let cancelled = next_notification(&mut restarted, "notifications/cancelled").await;
        (again, cancelled)
    });
    assert_eq!(asked.elapsed(), secs(2.5));
    let error = outcome.unwrap_err();
    assert_eq!(error, CallError::Timeout { name: "srv__get".into(), timeout: secs(2.5), sent: true });
    assert_eq!(error.to_string(), "'srv__get' timed out after 2.5 s; the server was asked to cancel it");
    assert_eq!(cancelled, Some(json!({"requestId": again.id, "reason": "timed out after 2.5 s"})));
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_for_a_restart_that_never_comes_says_the_server_failed() {
    let settings = ServerSettings { max_restarts: 1, ..settings() };
    let (warden, mut connections, peer) = running_restartable(settings, tools(&["echo"])).await;
    peer.die(EXIT);
    until_state(&warden, SRV, "waiting for restart 1", is_restarting(1)).await;
    assert_eq!(
        state_text(&warden),
        "restarting (attempt 1 of 1, next in 1.0 s) after: the connection closed: the server process exited with code 1"
    );

    let asked = Instant::now();
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
        let mut restarted = connections.next().await;
        next_request(&mut restarted, "initialize").await;
        restarted.die(EXIT);
    });
    assert_eq!(asked.elapsed(), secs(1.0));
    let reason = format!("{DIED_STARTING} (gave up after 1 restart in a row)");
    assert_eq!(
        outcome.unwrap_err(),
        CallError::ServerFailed { server: SRV.into(), name: "srv__echo".into(), reason: reason.clone() }
    );
    assert_eq!(status(&warden, SRV).state, ServerState::Failed { reason });
    assert!(warden.tools().is_empty());
    warden.shutdown().await;
}

/// On a multi-threaded runtime (what hosts run) a call made the moment a
/// server dies races the Registry hearing of it; whatever the order, it
/// waits for the restart and runs there, as does the call that was lost in
/// the crash. Real time (a 5 ms restart delay): the race needs threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn calls_racing_a_crash_run_on_the_restarted_server_on_any_thread() {
    let settings = ServerSettings { first_restart_delay: Duration::from_millis(5), ..settings() };
    let listed = json!([annotated("get", json!({"readOnlyHint": true}))]);
    for round in 0..50 {
        let (warden, mut connections, mut peer) = running_restartable(settings.clone(), listed.clone()).await;
        let died = tokio::sync::Notify::new();
        let (lost, racing, ()) = tokio::join!(
            warden.call_tool("srv__get", json!({"n": 0})),
            async {
                died.notified().await;
                warden.call_tool("srv__get", json!({"n": 1})).await
            },
            async {
                next_request(&mut peer, "tools/call").await;
                peer.die(EXIT);
                died.notify_one();
                let mut restarted = connections.next().await;
                ready(&mut restarted, listed.clone()).await;
                for call in tool_calls(&mut restarted, 2).await {
                    reply(&restarted, &call, text_result(&arguments(&call)["n"].to_string()));
                }
            }
        );
        assert_eq!(lost.map(|result| result.text()), Ok("0".to_string()), "round {round}");
        assert_eq!(racing.map(|result| result.text()), Ok("1".to_string()), "round {round}");
        warden.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn calls_during_the_first_start_are_told_to_retry_while_a_restarting_servers_tools_stay_listed() {
    let (warden, mut connections) = launch_one(settings()).await;
    let mut peer = connections.next().await;
    let initialize = next_request(&mut peer, "initialize").await;

    let error = warden.call_tool("srv__echo", json!({})).await.unwrap_err();
    assert_eq!(error, CallError::ServerStarting { server: SRV.into(), name: "srv__echo".into() });
    assert_eq!(error.to_string(), "server 'srv' is still starting; retry 'srv__echo' in a moment");
    assert!(warden.tools().is_empty());

    reply(&peer, &initialize, init_result(LATEST_PROTOCOL_VERSION, json!({"tools": {}})));
    next_notification(&mut peer, "notifications/initialized").await;
    answer_tools_list(&mut peer, tools(&["echo"])).await;
    until_state(&warden, SRV, "running", is_running).await;
    assert_eq!(names(&warden), ["srv__echo"]);

    peer.die(EXIT);
    until_state(&warden, SRV, "waiting for restart 1", is_restarting(1)).await;
    assert_eq!(names(&warden), ["srv__echo"]);
    let status = status(&warden, SRV);
    assert_eq!(status.tools, 1);
    assert_eq!(status.protocol_version.as_deref(), Some(LATEST_PROTOCOL_VERSION));
    warden.shutdown().await;
}
