//! Which MCP revision Warden speaks, seen on the wire of a scripted
//! server: the `server/discover` probe and what each answer to it means,
//! the 2026-07-28 envelope on every request, the subscription for list
//! changes, and interim "input required" answers fulfilled and retried.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use warden_actors::{
    CallError, CallOptions, ElicitReply, ElicitationAnswer, ElicitationRequest, PolicyRules, ProtocolChoice,
    ServerRequest, ServerSpec, ServerState, Warden,
};
use warden_protocol::{ErrorCode, ErrorObject, MemoryConnector, MemoryPeer, Message, Request, LOG_LEVEL_KEY};

const MODERN: &str = "2026-07-28";

/// A discovery answer of a modern server with tools that change.
fn discover_result() -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {"listChanged": true}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "modern-script", "version": "3.0"}},
    })
}

/// The envelope a request's params must carry.
fn assert_envelope(request: &Request) {
    let meta = &request.params.as_ref().expect("params")["_meta"];
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], MODERN, "{}", request.method);
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "warden", "{}", request.method);
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object(), "{}", request.method);
}

/// Answers the probe as a modern server, then the subscription and the
/// tool list; returns the subscription request.
async fn modern_start(peer: &mut MemoryPeer, tools: Value) -> Request {
    let discover = next_request(peer, "server/discover").await;
    assert_envelope(&discover);
    reply(peer, &discover, discover_result());
    let listen = next_request(peer, "subscriptions/listen").await;
    assert_envelope(&listen);
    assert_eq!(listen.params.as_ref().unwrap()["notifications"], json!({"toolsListChanged": true}));
    let list = next_request(peer, "tools/list").await;
    assert_envelope(&list);
    reply(peer, &list, json!({"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "public"}));
    listen
}

type Questions = mpsc::UnboundedReceiver<(ElicitationRequest, ElicitationAnswer)>;

/// Warden with `srv` on a scripted connector, and an elicitor handing each
/// question to the test.
async fn with_elicitor(settings: warden_actors::ServerSettings) -> (Warden, MemoryPeer, Questions) {
    let (connector, mut peers) = MemoryConnector::new();
    let spec = ServerSpec { name: SRV.into(), connector: Arc::new(connector), settings };
    let (questions, receiver) = mpsc::unbounded_channel();
    let warden = Warden::builder()
        .servers(vec![spec])
        .rules(PolicyRules::default().with_auto_approve(true))
        .elicitor(Arc::new(move |request, answer| {
            let _ = questions.send((request, answer));
        }))
        .start()
        .await
        .expect("Warden starts");
    let peer = within("Warden connects", peers.recv()).await.unwrap();
    (warden, peer, receiver)
}

#[tokio::test(start_paused = true)]
async fn a_modern_server_is_never_sent_initialize_and_every_request_carries_the_envelope() {
    let (warden, mut peer) = start_one(settings()).await;
    let listen = modern_start(&mut peer, tools(&["echo"])).await;
    within("the server settles", warden.settled()).await;
    let status = status(&warden, SRV);
    assert_eq!(status.state, ServerState::Running);
    assert_eq!(status.protocol_version.as_deref(), Some(MODERN));
    assert_eq!(status.server_info.map(|info| info.name).as_deref(), Some("modern-script"));
    assert_silent(&mut peer).await; // no `notifications/initialized`

    let call = spawn_call(&warden, "srv__echo", json!({"message": "hi"}));
    let request = next_request(&mut peer, "tools/call").await;
    assert_envelope(&request);
    assert_eq!(arguments(&request), &json!({"message": "hi"}));
    reply(&peer, &request, json!({"resultType": "complete", "content": [{"type": "text", "text": "hi"}]}));
    assert_eq!(call.await.unwrap().unwrap().text(), "hi");

    // A change announced on the subscription is listed again, enveloped.
    let subscription = json!({"_meta": {"io.modelcontextprotocol/subscriptionId": listen.id}});
    peer.send(Message::notification("notifications/tools/list_changed", Some(subscription)));
    let list = next_request(&mut peer, "tools/list").await;
    assert_envelope(&list);
    reply(&peer, &list, json!({"tools": tools(&["echo", "late"])}));
    within("the new tool is listed", async {
        while warden.tools().len() != 2 {
            quiescent().await;
        }
    })
    .await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn silence_after_the_probe_falls_back_to_initialize_and_a_restart_does_not_probe_again() {
    let (warden, mut connections) = launch_one(settings()).await;
    let mut peer = connections.next().await;
    let started = tokio::time::Instant::now();
    let _probe = next_request(&mut peer, "server/discover").await; // never answered
    let initialize = next_request(&mut peer, "initialize").await;
    assert_eq!(started.elapsed(), Duration::from_secs(5), "the probe waits 5 s for an answer");
    reply(&peer, &initialize, init_result("2025-11-25", json!({"tools": {}})));
    next_notification(&mut peer, "notifications/initialized").await;
    answer_tools_list(&mut peer, tools(&["echo"])).await;
    within("the server settles", warden.settled()).await;

    peer.die("the server process exited with code 1");
    let mut restarted = connections.next().await;
    match next(&mut restarted).await {
        Message::Request(request) => assert_eq!(request.method, "initialize", "no second probe"),
        other => panic!("expected initialize, got {}", other.to_json()),
    }
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_speaks_only_versions_warden_does_not_fails_naming_them() {
    let (warden, mut peer) = start_one(settings()).await;
    let discover = next_request(&mut peer, "server/discover").await;
    let refusal = ErrorObject {
        code: ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        message: "Unsupported protocol version".into(),
        data: Some(json!({"supported": ["2027-03-01"], "requested": MODERN})),
    };
    peer.send(Message::error(discover.id.clone(), refusal));
    within("the server settles", warden.settled()).await;
    let ServerState::Failed { reason } = status(&warden, SRV).state else { panic!("it should fail") };
    assert_eq!(
        reason,
        "it speaks only MCP 2027-03-01, none of which Warden speaks (Warden speaks 2026-07-28, and 2025-11-25, \
         2025-06-18, 2025-03-26, 2024-11-05 through `initialize`)"
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_forced_legacy_version_skips_the_probe() {
    let forced = warden_actors::ServerSettings { protocol: ProtocolChoice::Version("2025-06-18"), ..settings() };
    let (warden, mut peer) = start_one(forced).await;
    match next(&mut peer).await {
        Message::Request(request) => {
            assert_eq!(request.method, "initialize");
            assert_eq!(request.params.unwrap()["protocolVersion"], "2025-06-18");
        }
        other => panic!("expected initialize, got {}", other.to_json()),
    }
    warden.shutdown().await;
}

/// An interim answer asking `srv`'s caller for a name.
fn input_required(state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": {"who": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        }}},
        "requestState": state,
    })
}

#[tokio::test(start_paused = true)]
async fn an_interim_answer_is_fulfilled_through_the_elicitor_and_the_call_retried_with_a_new_id() {
    let (warden, mut peer, mut questions) = with_elicitor(settings()).await;
    modern_start(&mut peer, tools(&["greet"])).await;
    within("the server settles", warden.settled()).await;

    let call = spawn_call(&warden, "srv__greet", json!({"formal": true}));
    let first = next_request(&mut peer, "tools/call").await;
    reply(&peer, &first, input_required("opaque-1"));
    let (question, answer) = within("the question reaches the elicitor", questions.recv()).await.unwrap();
    assert_eq!(question.tool.as_deref(), Some("srv__greet"), "the question belongs to its call");
    let mut content = Map::new();
    content.insert("name".into(), json!("Ada"));
    answer.send(ElicitReply::Accept(Some(content)), "the test").unwrap();

    let retry = next_request(&mut peer, "tools/call").await;
    assert_ne!(retry.id, first.id, "a retry is a new request");
    assert_envelope(&retry);
    let params = retry.params.as_ref().unwrap();
    assert_eq!(params["arguments"], json!({"formal": true}));
    assert_eq!(params["requestState"], "opaque-1", "the state is echoed as it came");
    assert_eq!(params["inputResponses"], json!({"who": {"action": "accept", "content": {"name": "Ada"}}}));
    reply(&peer, &retry, json!({"content": [{"type": "text", "text": "hello Ada"}]}));
    assert_eq!(call.await.unwrap().unwrap().text(), "hello Ada");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_while_its_input_is_gathered_withdraws_the_question_and_tells_the_server_nothing() {
    let (warden, mut peer, mut questions) = with_elicitor(settings()).await;
    modern_start(&mut peer, tools(&["greet"])).await;
    within("the server settles", warden.settled()).await;
    let call = spawn_call(&warden, "srv__greet", json!({}));
    let first = next_request(&mut peer, "tools/call").await;
    reply(&peer, &first, input_required("s"));
    let (_question, mut answer) = within("the question reaches the elicitor", questions.recv()).await.unwrap();
    call.abort();
    within("the question is withdrawn", answer.abandoned()).await;
    assert_silent(&mut peer).await; // the server has no request to cancel
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_that_keeps_asking_is_given_up_on_after_ten_rounds() {
    let (warden, mut peer) = start_one(settings()).await;
    modern_start(&mut peer, tools(&["stall"])).await;
    within("the server settles", warden.settled()).await;
    let call = spawn_call(&warden, "srv__stall", json!({}));
    // State only, nothing to ask: Warden retries after a short pause.
    for _ in 0..11 {
        let request = next_request(&mut peer, "tools/call").await;
        reply(&peer, &request, json!({"resultType": "input_required", "requestState": "again"}));
    }
    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(error, CallError::InputNotGiven { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "server 'srv' needs more input to answer 'srv__stall', and it could not be given: it asked for input again \
         after 10 rounds of answers"
    );
    warden.shutdown().await;
}

/// Starts a modern server offering the 2026 tasks extension, with one
/// tool, `deploy`.
async fn tasks_extension_start(peer: &mut MemoryPeer, warden: &Warden) {
    let discover = next_request(peer, "server/discover").await;
    let mut offers = discover_result();
    offers["capabilities"]["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    reply(peer, &discover, offers);
    let _listen = next_request(peer, "subscriptions/listen").await;
    let list = next_request(peer, "tools/list").await;
    reply(peer, &list, json!({"tools": tools(&["deploy"])}));
    within("the server settles", warden.settled()).await;
}

#[tokio::test(start_paused = true)]
async fn a_task_of_the_2026_extension_is_polled_asks_through_the_elicitor_and_ends_with_its_result() {
    let (warden, mut peer, mut questions) = with_elicitor(settings()).await;
    tasks_extension_start(&mut peer, &warden).await;

    let call = spawn_call(&warden, "srv__deploy", json!({}));
    let request = next_request(&mut peer, "tools/call").await;
    let declared = &request.params.as_ref().unwrap()["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(declared["extensions"], json!({"io.modelcontextprotocol/tasks": {}}), "Warden says it takes tasks");
    reply(
        &peer,
        &request,
        json!({"resultType": "task", "taskId": "t-9", "status": "working", "ttlMs": null, "pollIntervalMs": 500}),
    );

    let asked = tokio::time::Instant::now();
    let get = next_request(&mut peer, "tasks/get").await;
    assert_eq!(asked.elapsed(), Duration::from_millis(500));
    assert_eq!(get.params.as_ref().unwrap()["taskId"], "t-9");
    reply(
        &peer,
        &get,
        json!({"resultType": "complete", "taskId": "t-9", "status": "input_required", "inputRequests": {
            "ok": {"method": "elicitation/create", "params": {"mode": "form", "message": "Deploy?",
                "requestedSchema": {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]}}}
        }}),
    );
    let (question, answer) = within("the question reaches the elicitor", questions.recv()).await.unwrap();
    assert_eq!(question.tool.as_deref(), Some("srv__deploy"));
    let mut content = Map::new();
    content.insert("go".into(), json!(true));
    answer.send(ElicitReply::Accept(Some(content)), "the test").unwrap();
    let update = next_request(&mut peer, "tasks/update").await;
    let params = update.params.clone().unwrap();
    assert_eq!(params["taskId"], "t-9");
    assert_eq!(params["inputResponses"], json!({"ok": {"action": "accept", "content": {"go": true}}}));
    reply(&peer, &update, json!({"resultType": "complete"}));

    let get = next_request(&mut peer, "tasks/get").await;
    reply(
        &peer,
        &get,
        json!({"resultType": "complete", "taskId": "t-9", "status": "completed",
        "result": {"content": [{"type": "text", "text": "deployed"}]}}),
    );
    assert_eq!(call.await.unwrap().unwrap().text(), "deployed");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_level_set_for_a_modern_server_goes_with_every_later_call_beside_the_calls_own_meta() {
    let (warden, mut peer) = start_one(settings()).await;
    modern_start(&mut peer, tools(&["echo"])).await;
    within("the server settles", warden.settled()).await;
    let meta = |request: &Request| request.params.as_ref().unwrap()["_meta"].clone();

    let call = spawn_call(&warden, "srv__echo", json!({}));
    let before = next_request(&mut peer, "tools/call").await;
    assert_envelope(&before);
    assert_eq!(meta(&before).get(LOG_LEVEL_KEY), None, "no level is asked for until one is set");
    reply(&peer, &before, json!({"content": []}));
    call.await.unwrap().unwrap();

    let host = warden.host();
    let set = host.request(SRV, ServerRequest::SetLogLevel, json!({"level": "warning"}), CallOptions::default());
    assert_eq!(within("the level is set", set).await.unwrap(), json!({}));
    assert_silent(&mut peer).await; // 2026-07-28 has no `logging/setLevel`: the level goes with each request

    let mut own = Map::new();
    own.insert("traceparent".into(), json!("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
    let (caller, options) = (warden.clone(), CallOptions::default().meta(own));
    let traced = tokio::spawn(async move { caller.host().call("srv__echo", json!({}), options).await });
    let plain = spawn_call(&warden, "srv__echo", json!({"n": 2}));
    for _ in 0..2 {
        let request = next_request(&mut peer, "tools/call").await;
        assert_envelope(&request);
        assert_eq!(meta(&request)[LOG_LEVEL_KEY], "warning", "the level goes with every call");
        let traced_call = arguments(&request).get("n").is_none();
        assert_eq!(meta(&request)["traceparent"].is_string(), traced_call, "a call's own `_meta` stays beside it");
        reply(&peer, &request, json!({"content": [{"type": "text", "text": "ok"}]}));
    }
    assert_eq!(traced.await.unwrap().unwrap().text(), "ok");
    assert_eq!(plain.await.unwrap().unwrap().text(), "ok");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_caller_that_leaves_a_call_the_server_made_a_task_of_has_the_task_cancelled() {
    let (warden, mut peer) = start_one(settings()).await;
    tasks_extension_start(&mut peer, &warden).await;

    let call = spawn_call(&warden, "srv__deploy", json!({}));
    let request = next_request(&mut peer, "tools/call").await;
    reply(&peer, &request, json!({"resultType": "task", "taskId": "t-1", "status": "working", "pollIntervalMs": 500}));
    let get = next_request(&mut peer, "tasks/get").await;
    reply(&peer, &get, json!({"resultType": "complete", "taskId": "t-1", "status": "working"}));
    call.abort();
    let cancel = next_request(&mut peer, "tasks/cancel").await;
    assert_eq!(cancel.params.as_ref().unwrap()["taskId"], "t-1", "the server stops the work nobody awaits");
    warden.shutdown().await;
}
