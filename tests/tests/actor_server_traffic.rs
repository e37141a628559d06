//! What a server sends on its own: requests to the client, garbage on its
//! output, tool lists that collide or change (including a change that
//! overtakes the listing in progress).

mod common;

use common::*;
use serde_json::json;
use warden_actors::ServerState;
use warden_protocol::{ErrorCode, ErrorObject, MemoryPeer, Message, RequestId, LATEST_PROTOCOL_VERSION};

#[tokio::test(start_paused = true)]
async fn server_requests_get_pong_or_method_not_found_with_their_own_ids() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;

    let ping = RequestId::String("ping-7f3a".into());
    peer.send(Message::request(ping.clone(), "ping", None));
    assert_eq!(next(&mut peer).await, Message::result(ping, json!({})));

    let requests = [
        (RequestId::Number(41), "roots/list", None),
        (
            RequestId::String("sample-1".into()),
            "sampling/createMessage",
            Some(json!({"messages": [], "maxTokens": 10})),
        ),
        (
            RequestId::Number(0),
            "elicitation/create",
            Some(json!({"message": "Your name?", "requestedSchema": {"type": "object"}})),
        ),
    ];
    let refusals = [
        "Warden has no roots for this server (set `roots` in the config)",
        "server 'srv' may not sample: add it to `[sampling] servers` to let it",
        "Warden does not offer elicitation: no elicitation handler is attached",
    ];
    for ((id, method, params), message) in requests.into_iter().zip(refusals) {
        peer.send(Message::request(id.clone(), method, params));
        assert_eq!(next(&mut peer).await, Message::error(id, ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, message)));
    }
    assert_silent(&mut peer).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn garbage_on_the_servers_output_is_skipped_and_calls_carry_on() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;
    let garbage = |peer: &MemoryPeer| {
        peer.send_line("this is not json");
        peer.send_line("[1,2]");
        peer.send_line("{\"hello\":1}");
        peer.send_line("{\"jsonrpc\":\"1.0\",\"id\":1,\"result\":{}}");
        // Well-formed, but answers nothing Warden asked.
        peer.send_line("{\"jsonrpc\":\"2.0\",\"id\":4242,\"result\":{}}");
        peer.send_line("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error\"}}");
        peer.send_line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/something_new\"}");
    };

    // Between calls: nothing is answered, nothing breaks.
    garbage(&peer);
    assert_silent(&mut peer).await;

    // During a call: the call still completes.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({"text": "hi"})), async {
        let call = next_request(&mut peer, "tools/call").await;
        garbage(&peer);
        reply(&peer, &call, text_result("hi"));
    });
    assert_eq!(outcome.unwrap().text(), "hi");

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__echo", json!({"text": "again"})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("again"));
    });
    assert_eq!(outcome.unwrap().text(), "again");
    assert_silent(&mut peer).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    assert_eq!(names(&warden), ["srv__echo"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn colliding_tool_names_keep_the_first_and_warn_naming_both() {
    let mut first_echo = tool("echo");
    first_echo["description"] = json!("the first echo");
    let mut second_echo = tool("echo");
    second_echo["description"] = json!("the second echo");
    // `a.b` maps to `a_b` plus the hash of `a.b`, so it no longer takes
    // `a_b`'s name: both tools stay, whatever order they are listed in.
    let listed = json!([first_echo, second_echo, tool("a.b"), tool("a_b")]);
    let (warden, mut peer) = running(settings(), listed).await;

    assert_eq!(names(&warden), ["srv__a_b", "srv__a_b_0466522c", "srv__echo"]);
    let entries = warden.tools();
    assert_eq!(entries[0].tool.name, "a_b");
    assert_eq!(entries[1].tool.name, "a.b");
    assert_eq!(entries[2].tool.description.as_deref(), Some("the first echo"));
    let status = status(&warden, SRV);
    assert_eq!(status.state, ServerState::Running);
    assert_eq!(status.tools, 3);
    assert_eq!(
        status.warnings,
        [
            "tool 'echo' of server 'srv' would be named 'srv__echo', which tool 'echo' of server 'srv' already has; skipped it",
        ]
    );

    // The mapped name reaches the tool, by its own name.
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__a_b_0466522c", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(call.params.as_ref().unwrap()["name"], "a.b");
        reply(&peer, &call, text_result("dotted"));
    });
    assert_eq!(outcome.unwrap().text(), "dotted");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn two_servers_with_the_same_tool_get_distinct_names_and_their_own_calls() {
    let (warden, mut peers) = start(&[("alpha", settings()), ("beta", settings())]).await;
    for peer in &mut peers {
        ready(peer, tools(&["search"])).await;
    }
    within("the servers settle", warden.settled()).await;
    assert_eq!(names(&warden), ["alpha__search", "beta__search"]);
    assert!(warden.status().iter().all(|status| status.warnings.is_empty()));

    let [alpha, beta] = &mut peers[..] else { unreachable!() };
    let (outcome, ()) = tokio::join!(warden.call_tool("beta__search", json!({"q": "x"})), async {
        let call = next_request(beta, "tools/call").await;
        assert_eq!(call.params.as_ref().unwrap()["name"], "search");
        reply(beta, &call, text_result("from beta"));
    });
    assert_eq!(outcome.unwrap().text(), "from beta");
    assert_silent(alpha).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn list_changed_relists_and_the_new_tool_becomes_callable() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;
    assert_eq!(names(&warden), ["srv__echo"]);

    peer.send(Message::notification("notifications/tools/list_changed", None));
    let list = next_request(&mut peer, "tools/list").await;
    assert_eq!(list.params, None);
    reply(&peer, &list, json!({"tools": tools(&["echo", "research"])}));
    within("the new tool is registered", warden.wait_for(|snapshot| snapshot.tools().len() == 2)).await;
    assert_eq!(names(&warden), ["srv__echo", "srv__research"]);
    assert_eq!(status(&warden, SRV).tools, 2);

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__research", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("found it"));
    });
    assert_eq!(outcome.unwrap().text(), "found it");

    // A change can also take tools away.
    peer.send(Message::notification("notifications/tools/list_changed", None));
    answer_tools_list(&mut peer, tools(&["research"])).await;
    within("the removed tool is gone", warden.wait_for(|snapshot| snapshot.tools().len() == 1)).await;
    assert_eq!(names(&warden), ["srv__research"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_list_overtaken_by_list_changed_is_thrown_away() {
    let (warden, mut peer) = start_one(settings()).await;
    initialize(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {"listChanged": true}})).await;
    let first = next_request(&mut peer, "tools/list").await;

    // The list changes while Warden is still reading it. Warden does not ask
    // again yet: one listing at a time, so a burst costs one more, not one each.
    peer.send(Message::notification("notifications/tools/list_changed", None));
    assert_silent(&mut peer).await;

    // The first answer describes the list before the change: not registered,
    // the server is not running on the strength of it, and its cursor is
    // not followed. Warden starts over from the first page.
    reply(&peer, &first, json!({"tools": tools(&["old"]), "nextCursor": "old-page-2"}));
    let second = next_request(&mut peer, "tools/list").await;
    assert_ne!(first.id, second.id);
    assert_eq!(second.params, None);
    quiescent().await;
    assert_eq!(status(&warden, SRV).state, ServerState::Starting);
    assert!(warden.tools().is_empty());

    reply(&peer, &second, json!({"tools": tools(&["new"])}));
    within("the server settles", warden.settled()).await;
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    assert_eq!(names(&warden), ["srv__new"]);
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_refresh_the_server_refuses_keeps_the_tools_it_had() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;

    peer.send(Message::notification("notifications/tools/list_changed", None));
    let list = next_request(&mut peer, "tools/list").await;
    peer.send(Message::error(list.id, ErrorObject::new(ErrorCode::INTERNAL_ERROR, "database locked")));
    quiescent().await;
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    assert_eq!(names(&warden), ["srv__echo"]);

    // The next change is honoured.
    peer.send(Message::notification("notifications/tools/list_changed", None));
    answer_tools_list(&mut peer, tools(&["echo", "add"])).await;
    within("the refreshed list is registered", warden.wait_for(|snapshot| snapshot.tools().len() == 2)).await;
    assert_eq!(names(&warden), ["srv__add", "srv__echo"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_duplicate_answer_is_ignored_and_never_reaches_another_caller() {
    let (warden, mut peer) = running(settings(), tools(&["echo"])).await;
    let first = warden.call_tool("srv__echo", json!({"message": "first"}));
    let second = warden.call_tool("srv__echo", json!({"message": "second"}));
    let serve = async {
        let a = next_request(&mut peer, "tools/call").await;
        let b = next_request(&mut peer, "tools/call").await;
        let (a, b) = if arguments(&a)["message"] == "first" { (a, b) } else { (b, a) };
        reply(&peer, &a, text_result("answer to first"));
        // The same id again, and an answer shaped for the other call: both
        // are late, neither may be taken for the second call.
        reply(&peer, &a, text_result("duplicate of first"));
        peer.send(Message::result(a.id.clone(), text_result("answer to second?")));
        reply(&peer, &b, text_result("answer to second"));
    };
    let (first, second, ()) = tokio::join!(first, second, serve);
    assert_eq!(first.unwrap().text(), "answer to first");
    assert_eq!(second.unwrap().text(), "answer to second");
    // The server is fine and the next call gets its own answer.
    let (third, ()) = tokio::join!(warden.call_tool("srv__echo", json!({"message": "third"})), async {
        let c = next_request(&mut peer, "tools/call").await;
        reply(&peer, &c, text_result("answer to third"));
    });
    assert_eq!(third.unwrap().text(), "answer to third");
    assert_eq!(status(&warden, SRV).state, ServerState::Running);
    warden.shutdown().await;
}
