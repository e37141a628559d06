//! Tool calls through a running server: routing, concurrency, the in-flight
//! cap, timeouts and cancellation on the wire, a crash with calls pending,
//! bad input from the host, results passed through untouched, and shutdown.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use tokio::time::Instant;
use warden_actors::{CallError, CrashRetry, ServerSettings, ServerState};
use warden_protocol::{ContentBlock, ErrorCode, ErrorObject, Message, RequestId};

#[tokio::test(start_paused = true)]
async fn a_call_round_trips_with_the_servers_own_tool_name() {
    let (warden, mut peer) = running(settings(), tools(&["get.weather"])).await;
    // `.` is mapped to `_`, so the name carries the hash of `get.weather`.
    assert_eq!(names(&warden), ["srv__get_weather_50528a7d"]);

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__get_weather_50528a7d", json!({"city": "Oslo"})), async {
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(call.params, Some(json!({"name": "get.weather", "arguments": {"city": "Oslo"}})));
        reply(&peer, &call, text_result("sleet, 2 °C"));
    });
    let result = outcome.unwrap();
    assert_eq!(result.text(), "sleet, 2 °C");
    assert!(!result.is_error());
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_answered_in_reverse_order_each_reach_their_caller() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;

    let calls = (0..10).map(|n| warden.call_tool("srv__echo", json!({ "n": n }))).collect();
    let script = async {
        let mut requests = Vec::new();
        for _ in 0..10 {
            requests.push(next_request(&mut peer, "tools/call").await);
        }
        let ids: HashSet<RequestId> = requests.iter().map(|call| call.id.clone()).collect();
        assert_eq!(ids.len(), 10, "every call has its own id");
        for call in requests.iter().rev() {
            let n = arguments(call)["n"].as_i64().expect("n is a number");
            reply(&peer, call, text_result(&format!("result {n}")));
        }
    };
    let (outcomes, ()) = tokio::join!(join_all(calls), script);

    let texts: Vec<String> = outcomes.into_iter().map(|outcome| outcome.unwrap().text()).collect();
    let expected: Vec<String> = (0..10).map(|n| format!("result {n}")).collect();
    assert_eq!(texts, expected);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_call_times_out_is_cancelled_on_the_wire_and_a_late_reply_is_ignored() {
    let settings = ServerSettings { call_timeout: Duration::from_secs(5), ..settings() };
    let (warden, mut peer) = running(settings, tools(&["tool"])).await;
    let started = Instant::now();

    let (outcome, (call, cancelled)) = tokio::join!(warden.call_tool("srv__tool", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        let cancelled = next_notification(&mut peer, "notifications/cancelled").await;
        (call, cancelled.expect("cancelled has params"))
    });

    let error = outcome.unwrap_err();
    assert_eq!(error, CallError::Timeout { name: "srv__tool".into(), timeout: Duration::from_secs(5), sent: true });
    assert_eq!(error.to_string(), "'srv__tool' timed out after 5 s; the server was asked to cancel it");
    assert_eq!(started.elapsed().as_secs(), 5);
    assert_eq!(cancelled, json!({"requestId": call.id, "reason": "timed out after 5 s"}));

    // The answer arrives after all: nobody is waiting for it any more.
    reply(&peer, &call, text_result("too late"));
    assert_silent(&mut peer).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Running);

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__tool", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("on time"));
    });
    assert_eq!(outcome.unwrap().text(), "on time");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_in_flight_cap_holds_calls_back_until_a_slot_frees() {
    let settings = ServerSettings { max_in_flight: 2, ..settings() };
    let (warden, mut peer) = running(settings, tools(&["echo"])).await;

    let calls = (0..3).map(|n| warden.call_tool("srv__echo", json!({ "n": n }))).collect();
    let script = async {
        let first = next_request(&mut peer, "tools/call").await;
        let second = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&first)["n"], 0);
        assert_eq!(arguments(&second)["n"], 1);
        assert_silent(&mut peer).await;

        reply(&peer, &second, text_result("second"));
        let third = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&third)["n"], 2);
        assert_silent(&mut peer).await;

        reply(&peer, &third, text_result("third"));
        reply(&peer, &first, text_result("first"));
    };
    let (outcomes, ()) = tokio::join!(join_all(calls), script);

    let texts: Vec<String> = outcomes.into_iter().map(|outcome| outcome.unwrap().text()).collect();
    assert_eq!(texts, ["first", "second", "third"]);
    warden.shutdown().await;
}

/// A slot that a call's answer frees goes to the calls that waited for
/// one, in order, before a call made the moment that answer arrived (the
/// answered call went past the server's actor, down its fast lane; the
/// waiting ones wait in the actor's queue).
#[tokio::test(start_paused = true)]
async fn calls_waiting_for_a_slot_go_out_in_the_order_they_were_made() {
    let settings = ServerSettings { max_in_flight: 1, ..settings() };
    let (warden, mut peer) = running(settings, tools(&["echo"])).await;

    let first_then_again = async {
        let first = warden.call_tool("srv__echo", json!({"n": 0})).await;
        let again = warden.call_tool("srv__echo", json!({"n": 3})).await;
        (first, again)
    };
    let waiting = async {
        // Made while the first call holds the only slot.
        tokio::time::sleep(Duration::from_millis(100)).await;
        join_all(vec![warden.call_tool("srv__echo", json!({"n": 1})), warden.call_tool("srv__echo", json!({"n": 2}))])
            .await
    };
    let script = async {
        let mut order = Vec::new();
        for answer in 1..=4 {
            let call = next_request(&mut peer, "tools/call").await;
            order.push(arguments(&call)["n"].clone());
            tokio::time::sleep(Duration::from_millis(200)).await;
            reply(&peer, &call, text_result(&format!("answer {answer}")));
        }
        order
    };
    let ((first, again), waiting, order) = tokio::join!(first_then_again, waiting, script);

    assert_eq!(order, [json!(0), json!(1), json!(2), json!(3)]);
    assert_eq!(first.unwrap().text(), "answer 1");
    let texts: Vec<String> = waiting.into_iter().map(|outcome| outcome.unwrap().text()).collect();
    assert_eq!(texts, ["answer 2", "answer 3"]);
    assert_eq!(again.unwrap().text(), "answer 4");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_that_times_out_while_waiting_for_a_slot_is_never_sent() {
    let settings = ServerSettings { call_timeout: Duration::from_millis(1500), max_in_flight: 1, ..settings() };
    let (warden, mut peer) = running(settings, tools(&["slow"])).await;

    let calls = vec![warden.call_tool("srv__slow", json!({"n": 0})), warden.call_tool("srv__slow", json!({"n": 1}))];
    let script = async {
        let first = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&first)["n"], 0);
        let cancelled = next_notification(&mut peer, "notifications/cancelled").await;
        assert_eq!(cancelled.unwrap()["requestId"], json!(first.id));
        // The second call ran out of time in the queue: the server never
        // hears of it (sending it now would start work nobody waits for).
        assert_silent(&mut peer).await;
    };
    let (outcomes, ()) = tokio::join!(join_all(calls), script);

    let errors: Vec<String> = outcomes.into_iter().map(|outcome| outcome.unwrap_err().to_string()).collect();
    assert_eq!(
        errors,
        [
            "'srv__slow' timed out after 1.5 s; the server was asked to cancel it",
            "'srv__slow' timed out after 1.5 s; it was never sent: the server's other calls used every slot",
        ]
    );
    // The slot is free again.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__slow", json!({"n": 2})), async {
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&call)["n"], 2);
        reply(&peer, &call, text_result("done"));
    });
    assert_eq!(outcome.unwrap().text(), "done");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_reply_for_a_call_still_waiting_for_a_slot_is_ignored() {
    let settings = ServerSettings { max_in_flight: 1, ..settings() };
    let (warden, mut peer) = running(settings, tools(&["echo"])).await;

    let calls = vec![warden.call_tool("srv__echo", json!({"n": 0})), warden.call_tool("srv__echo", json!({"n": 1}))];
    let script = async {
        let first = next_request(&mut peer, "tools/call").await;
        let RequestId::Number(id) = first.id else {
            panic!("Warden numbers its requests");
        };
        // A confused server answers the id Warden will use next, for a
        // call it was never sent.
        peer.send(Message::result(RequestId::Number(id + 1), text_result("guessed")));
        assert_silent(&mut peer).await;

        reply(&peer, &first, text_result("first"));
        let second = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&second)["n"], 1);
        reply(&peer, &second, text_result("second"));
    };
    let (outcomes, ()) = tokio::join!(join_all(calls), script);

    let texts: Vec<String> = outcomes.into_iter().map(|outcome| outcome.unwrap().text()).collect();
    assert_eq!(texts, ["first", "second"]);
    warden.shutdown().await;
}

/// What a crashed server's callers read when it is not restarted
/// (`max_restarts = 0`); restarts have their own suite, `actor_supervision`.
#[tokio::test(start_paused = true)]
async fn a_crash_fails_the_pending_calls_and_leaves_other_servers_alone() {
    let no_restarts = ServerSettings { max_restarts: 0, ..settings() };
    let (warden, mut peers) = start(&[("srv", no_restarts), ("other", settings())]).await;
    for peer in &mut peers {
        ready(peer, tools(&["echo"])).await;
    }
    within("the servers settle", warden.settled()).await;
    let [srv, other] = &mut peers[..] else { unreachable!() };

    let calls = vec![warden.call_tool("srv__echo", json!({"n": 0})), warden.call_tool("srv__echo", json!({"n": 1}))];
    let script = async {
        next_request(srv, "tools/call").await;
        next_request(srv, "tools/call").await;
        srv.die("the server process exited with code 1");
    };
    let (outcomes, ()) = tokio::join!(join_all(calls), script);

    // Both requests had reached the server, and `echo` is not annotated as
    // safe to repeat: the callers learn it may or may not have run.
    let reason = "the connection closed: the server process exited with code 1";
    for outcome in outcomes {
        let error = outcome.unwrap_err();
        assert_eq!(
            error,
            CallError::CrashedMidCall {
                server: "srv".into(),
                name: "srv__echo".into(),
                reason: reason.into(),
                policy: CrashRetry::Safe,
            }
        );
        assert_eq!(
            error.to_string(),
            "server 'srv' crashed while running 'srv__echo' (the connection closed: the server process exited with \
             code 1); the call was not repeated because the tool is not marked read-only or idempotent, so it may \
             or may not have taken effect (set `retry_after_crash = \"always\"` on the server to repeat such calls)"
        );
    }

    // Called again at once, the tool says its server failed, and why.
    let error = warden.call_tool("srv__echo", json!({})).await.unwrap_err();
    assert_eq!(
        error,
        CallError::ServerFailed { server: "srv".into(), name: "srv__echo".into(), reason: reason.into() }
    );
    assert_eq!(
        error.to_string(),
        "server 'srv' failed, so 'srv__echo' is unavailable: the connection closed: \
         the server process exited with code 1"
    );
    assert_eq!(status(&warden, "srv").state, ServerState::Failed { reason: reason.into() });
    assert_eq!(names(&warden), ["other__echo"]);
    within("Warden closes the connection", srv.closed_by_warden()).await;

    assert_eq!(status(&warden, "other").state, ServerState::Running);
    let (outcome, ()) = tokio::join!(warden.call_tool("other__echo", json!({})), async {
        let call = next_request(other, "tools/call").await;
        reply(other, &call, text_result("still here"));
    });
    assert_eq!(outcome.unwrap().text(), "still here");
    warden.shutdown().await;
}

/// On a multi-threaded runtime (what hosts run), the caller that just got
/// `CrashedMidCall` can call again before the Registry has published the
/// failure; it must still read "failed", never "unknown tool". Real time:
/// no timer is involved, and the race needs threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_call_right_after_a_crash_says_the_server_failed_on_any_thread() {
    let reason = "the connection closed: the server process was killed by signal 9";
    for round in 0..50 {
        let (warden, mut peer) = running(ServerSettings { max_restarts: 0, ..settings() }, tools(&["echo"])).await;
        let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
            next_request(&mut peer, "tools/call").await;
            peer.die("the server process was killed by signal 9");
        });
        assert_eq!(
            outcome.unwrap_err(),
            CallError::CrashedMidCall {
                server: "srv".into(),
                name: "srv__echo".into(),
                reason: reason.into(),
                policy: CrashRetry::Safe,
            },
            "round {round}"
        );
        let error = warden.call_tool("srv__echo", json!({})).await.unwrap_err();
        assert_eq!(
            error,
            CallError::ServerFailed { server: "srv".into(), name: "srv__echo".into(), reason: reason.into() },
            "round {round}"
        );
        warden.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn bad_names_and_arguments_from_the_host_never_reach_the_server() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;

    let error = warden.call_tool("srv__echo", json!([1])).await.unwrap_err();
    assert_eq!(error, CallError::InvalidArguments { name: "srv__echo".into(), found: "an array" });
    assert_eq!(error.to_string(), "arguments for 'srv__echo' must be a JSON object, not an array");
    let error = warden.call_tool("srv__echo", json!("hello")).await.unwrap_err();
    assert_eq!(error.to_string(), "arguments for 'srv__echo' must be a JSON object, not a string");

    for name in ["nope", "srv__missing", "ghost__echo", "srv_echo"] {
        let error = warden.call_tool(name, json!({})).await.unwrap_err();
        assert_eq!(error, CallError::UnknownTool { name: name.into() });
        assert_eq!(error.to_string(), format!("unknown tool '{name}': no running server lists it"));
    }
    assert_silent(&mut peer).await;

    // `null` means no arguments, sent as an empty object.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", Value::Null), async {
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&call), &json!({}));
        reply(&peer, &call, text_result("ok"));
    });
    assert_eq!(outcome.unwrap().text(), "ok");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn errors_and_odd_answers_from_the_server_reach_the_caller_as_such() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;

    // A JSON-RPC error is a refusal.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        peer.send(Message::error(call.id, ErrorObject::new(ErrorCode::INVALID_PARAMS, "missing argument 'text'")));
    });
    let error = outcome.unwrap_err();
    assert_eq!(
        error,
        CallError::Server {
            server: "srv".into(),
            name: "srv__echo".into(),
            code: -32602,
            message: "missing argument 'text'".into()
        }
    );
    assert_eq!(error.to_string(), "server 'srv' refused 'srv__echo': missing argument 'text' (JSON-RPC error -32602)");

    // `isError` is a tool failure: a normal result the model reads.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, json!({"content": [{"type": "text", "text": "disk full"}], "isError": true}));
    });
    let result = outcome.unwrap();
    assert!(result.is_error());
    assert_eq!(result.text(), "disk full");

    // Something that is not a tool result costs this call only.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, json!({"content": "not a list"}));
    });
    let error = outcome.unwrap_err();
    assert!(
        matches!(&error, CallError::BadResult { server, name, .. } if server == "srv" && name == "srv__echo"),
        "{error:?}"
    );
    assert!(
        error.to_string().starts_with("server 'srv' answered 'srv__echo' with something that is not a tool result: "),
        "{error}"
    );
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn fields_warden_does_not_model_pass_through_tools_and_results_intact() {
    let listed = json!({
        "name": "render",
        "title": "Render",
        "description": "Renders a scene.",
        "inputSchema": {
            "type": "object",
            "properties": {"scene": {"type": "string"}},
            "required": ["scene"]
        },
        "outputSchema": {"type": "object", "properties": {"url": {"type": "string"}}},
        "annotations": {
            "title": "Render a scene",
            "readOnlyHint": true,
            "destructiveHint": false,
            "x-cost": "high"
        },
        "icons": [{"src": "https://example.com/render.png", "mimeType": "image/png", "sizes": ["48x48"]}],
        "_meta": {"example.com/owner": "graphics"},
        "execution": {"taskSupport": "optional"}
    });
    let (warden, mut peer) = running(settings(), json!([listed])).await;

    let entry = warden.tools().remove(0);
    assert_eq!((entry.name.as_str(), entry.server.as_str()), ("srv__render", "srv"));
    assert_eq!(serde_json::to_value(&entry.tool).unwrap(), listed);
    let annotations = entry.tool.annotations.as_ref().unwrap();
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(annotations.extra["x-cost"], "high");
    assert_eq!(entry.tool.extra["_meta"], json!({"example.com/owner": "graphics"}));

    let answered = json!({
        "content": [
            {"type": "text", "text": "rendered", "annotations": {"audience": ["user"]}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "hologram", "frames": 3, "_meta": {"example.com/depth": 2}}
        ],
        "structuredContent": {"url": "https://example.com/scene.png"},
        "isError": false,
        "_meta": {"example.com/trace": "abc-123"},
        "nextYearsField": [1, 2, 3]
    });
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__render", json!({"scene": "cube"})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, answered.clone());
    });
    let result = outcome.unwrap();
    assert_eq!(serde_json::to_value(&result).unwrap(), answered);
    let kinds: Vec<&str> = result.content.iter().map(ContentBlock::kind).collect();
    assert_eq!(kinds, ["text", "image", "hologram"]);
    assert_eq!(result.structured_content, Some(json!({"url": "https://example.com/scene.png"})));
    assert_eq!(result.extra["_meta"], json!({"example.com/trace": "abc-123"}));
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_closes_every_connection_even_mid_handshake() {
    let (warden, mut peers) = start(&[("srv", settings()), ("slow", settings())]).await;
    ready(&mut peers[0], tools(&["echo"])).await;
    next_request(&mut peers[1], "initialize").await; // never answered

    within("shutdown finishes", warden.shutdown()).await;
    for peer in &mut peers {
        within("Warden closes the connection", peer.closed_by_warden()).await;
        assert_eq!(peer.recv().await, None, "nothing after the close");
    }
}

/// A call pending when Warden shuts down (from another clone of the
/// handle) gets an error saying so instead of hanging, and the connection
/// is closed.
#[tokio::test(start_paused = true)]
async fn shutting_down_fails_the_calls_still_pending() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;
    let host = warden.clone();
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({})), async {
        next_request(&mut peer, "tools/call").await;
        within("shutdown finishes", host.shutdown()).await;
    });
    let error = outcome.unwrap_err();
    assert_eq!(error, CallError::ServerStopped { server: "srv".into(), name: "srv__echo".into() });
    assert_eq!(
        error.to_string(),
        "'srv__echo' was not finished: Warden stopped server 'srv' while it ran (Warden shut down, or a reload removed \
         or restarted the server)"
    );
    within("the connection is closed", peer.closed_by_warden()).await;
}
