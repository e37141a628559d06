//! The policy layer's view of who and what: agents and their allowlists,
//! secrets kept out of arguments and results, and the built-in
//! `describe_tool`. Precedence and approvals are in `actor_policy.rs`.
//! One test runs a real config and process, on real time.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use warden_actors::{
    AgentRules, ApprovalAnswer, ApprovalDecision, ApprovalRequest, CallError, CallOptions, PolicyRules, Warden,
    DESCRIBE_TOOL,
};
use warden_policy::ToolPatterns;
use warden_protocol::{CallToolResult, MemoryPeer, Message};

/// Two agents: `coder` (some tools, auto-approved) and `reviewer` (all of
/// `srv`, asks).
fn agent_rules() -> PolicyRules {
    PolicyRules::default()
        .with_agent(
            "coder",
            AgentRules {
                allowed_tools: ToolPatterns::new(&["srv__read", "srv__fs_*"]).expect("good patterns"),
                auto_approve: true,
                profile: None,
            },
        )
        .with_agent(
            "reviewer",
            AgentRules {
                allowed_tools: ToolPatterns::new(&["srv__*"]).expect("good patterns"),
                auto_approve: false,
                profile: None,
            },
        )
}

/// The tools `agent` sees (the host's own view for `None`).
fn names_of(warden: &Warden, agent: Option<&str>) -> Vec<String> {
    let tools = match agent {
        Some(agent) => warden.agent(agent).and_then(|scope| scope.tools()).expect("a known agent"),
        None => warden.tools(),
    };
    tools.into_iter().map(|entry| entry.name).collect()
}

/// Calls `name` as `agent` (the host itself for `None`).
async fn call_as(warden: &Warden, agent: Option<&str>, name: &str) -> Result<CallToolResult, CallError> {
    match agent {
        Some(agent) => warden.agent(agent).expect("a known agent").call(name, json!({}), CallOptions::default()).await,
        None => warden.call_tool(name, json!({})).await,
    }
}

/// Runs `name` as `agent` while playing a server that answers it with `text`.
async fn call_as_answered(
    warden: &Warden,
    peer: &mut MemoryPeer,
    agent: Option<&str>,
    name: &str,
    text: &str,
) -> String {
    let (outcome, ()) = tokio::join!(call_as(warden, agent, name), async {
        let call = next_request(peer, "tools/call").await;
        reply(peer, &call, text_result(text));
    });
    outcome.expect("the call runs").text()
}

#[tokio::test(start_paused = true)]
async fn an_agent_sees_only_its_allowed_tools_including_one_listed_later_that_its_glob_covers() {
    let (warden, mut peer) = policed(agent_rules(), settings(), tools(&["read", "fs_list", "write"])).await;
    assert_eq!(names_of(&warden, Some("coder")), ["srv__fs_list", "srv__read"]);
    assert_eq!(names_of(&warden, Some("reviewer")), ["srv__fs_list", "srv__read", "srv__write"]);
    assert_eq!(names_of(&warden, None), ["srv__fs_list", "srv__read", "srv__write"]);

    peer.send(Message::notification("notifications/tools/list_changed", None));
    answer_tools_list(&mut peer, tools(&["read", "fs_list", "fs_stat", "write", "exec"])).await;
    within("the new tools are registered", warden.wait_for(|snapshot| snapshot.tools().len() == 5)).await;
    assert_eq!(names_of(&warden, Some("coder")), ["srv__fs_list", "srv__fs_stat", "srv__read"]);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_outside_the_allowlist_is_refused_and_never_reaches_the_server() {
    let (warden, mut peer) = policed(agent_rules(), settings(), tools(&["read", "write"])).await;

    let error = warden.agent("coder").unwrap().call("srv__write", json!({}), CallOptions::default()).await.unwrap_err();
    let glob = "srv__*".to_string();
    assert_eq!(error, CallError::NotAllowed { agent: "coder".into(), name: "srv__write".into(), glob });
    assert_eq!(
        error.to_string(),
        "agent 'coder' may not use 'srv__write': it is not in the agent's allowed_tools; add the name (or a glob such \
         as 'srv__*') to allowed_tools if it should be"
    );
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unknown_agent_is_refused_naming_the_configured_agents() {
    let (warden, mut peer) = policed(agent_rules(), settings(), tools(&["read"])).await;
    let expected = "unknown agent 'ghost'; agents are configured as [[agents]] entries in the config (configured: \
                    coder, reviewer)";

    let error = warden.agent("ghost").err().expect("no such agent");
    assert_eq!(error.to_string(), expected);
    assert_silent(&mut peer).await;
    warden.shutdown().await;

    let (warden, _peer) = policed(PolicyRules::default(), settings(), tools(&["read"])).await;
    assert_eq!(
        warden.agent("ghost").err().expect("no such agent").to_string(),
        "unknown agent 'ghost'; agents are configured as [[agents]] entries in the config (none are configured)"
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_agents_auto_approval_covers_that_agent_only() {
    let (warden, mut peer) = policed(agent_rules(), settings(), tools(&["read"])).await;

    assert_eq!(call_as_answered(&warden, &mut peer, Some("coder"), "srv__read", "read it").await, "read it");
    for agent in [Some("reviewer"), None] {
        let error = call_as(&warden, agent, "srv__read").await.unwrap_err();
        assert!(matches!(error, CallError::NoApprover { .. }), "{agent:?}: {error}");
    }
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

/// A config handing `srv` a token in `env` and naming one more secret
/// variable; every tool is auto-approved; `blocky` blocks, `raw` is off.
fn leak_rules() -> PolicyRules {
    // Set once, to the same value, by every test that reads it.
    std::env::set_var("WARDEN_LEAK_TEST_SECRET", "envsecret-9f8e7d6c");
    rules_from(
        r#"
        [servers.srv]
        command = "unused"
        env = { API_TOKEN = "tok-abcdef123456" }
        [security]
        auto_approve = true
        secrets = ["WARDEN_LEAK_TEST_SECRET"]
        [security.tool_policies.srv__blocky]
        leaks = "block"
        [security.tool_policies.srv__raw]
        leaks = "off"
        "#,
    )
}

/// A fake GitHub token of the real shape.
fn github_token() -> String {
    format!("ghp_{}", "a1B2".repeat(9))
}

#[tokio::test(start_paused = true)]
async fn a_known_secret_in_the_arguments_stops_the_call_naming_its_label_and_where() {
    let (warden, mut peer) = policed(leak_rules(), settings(), tools(&["echo"])).await;

    let arguments = json!({"key": "envsecret-9f8e7d6c", "query": {"text": "curl -H 'token: tok-abcdef123456'"}});
    let error = warden.call_tool("srv__echo", arguments).await.unwrap_err();
    assert_eq!(
        error,
        CallError::SecretInArguments {
            name: "srv__echo".into(),
            kinds: vec!["WARDEN_LEAK_TEST_SECRET".into(), "API_TOKEN".into()],
            paths: vec!["/key".into(), "/query/text".into()],
        }
    );
    assert_eq!(
        error.to_string(),
        "'srv__echo' was not sent: its arguments contain WARDEN_LEAK_TEST_SECRET, API_TOKEN (at /key, /query/text); \
         Warden does not pass secrets to servers. If this tool must receive it, set leaks = \"off\" for it in \
         security.tool_policies"
    );
    assert_silent(&mut peer).await;

    // Each secret is named once, however often and wherever it occurs.
    let arguments = json!({"a": "tok-abcdef123456", "b": "envsecret-9f8e7d6c", "c": "tok-abcdef123456"});
    let error = warden.call_tool("srv__echo", arguments).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "'srv__echo' was not sent: its arguments contain API_TOKEN, WARDEN_LEAK_TEST_SECRET (at /a, /b, /c); Warden \
         does not pass secrets to servers. If this tool must receive it, set leaks = \"off\" for it in \
         security.tool_policies"
    );
    assert_silent(&mut peer).await;

    // A credential shape nobody handed out stops it too.
    let error = warden.call_tool("srv__echo", json!({"t": github_token()})).await.unwrap_err();
    assert!(matches!(&error, CallError::SecretInArguments { kinds, .. } if kinds == &["github_token"]), "{error}");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn secrets_in_a_result_come_back_redacted_by_label_or_kind() {
    let (warden, mut peer) = policed(leak_rules(), settings(), tools(&["echo"])).await;
    let leaky = format!("env tok-abcdef123456, gh {}, aws AKIAIOSFODNN7EXAMPLE, fine", github_token());

    let text = call_as_answered(&warden, &mut peer, None, "srv__echo", &leaky).await;
    assert_eq!(text, "env [REDACTED:API_TOKEN], gh [REDACTED:github_token], aws [REDACTED:aws_access_key], fine");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn leaks_block_withholds_the_whole_result_as_an_error() {
    let (warden, mut peer) = policed(leak_rules(), settings(), tools(&["blocky"])).await;
    let leaky = format!("gh {} env tok-abcdef123456", github_token());

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__blocky", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result(&leaky));
    });
    let result = outcome.unwrap();
    assert!(result.is_error());
    assert_eq!(
        result.text(),
        "Warden withheld the result of 'srv__blocky': it contained API_TOKEN, github_token (leaks = \"block\" for \
         this tool)."
    );

    // A clean result passes untouched.
    assert_eq!(call_as_answered(&warden, &mut peer, None, "srv__blocky", "clean").await, "clean");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn leaks_off_passes_secrets_both_ways_but_an_approver_is_shown_them_redacted() {
    let rules = leak_rules().with_auto_approve(false);
    let (warden, mut peer) = policed(rules, settings(), tools(&["raw"])).await;
    let (sender, mut asked) = unbounded_channel();
    warden.attach_approver(Arc::new(move |request: ApprovalRequest, answer: ApprovalAnswer| {
        let _ = sender.send((request, answer));
    }));
    let arguments = json!({"token": "tok-abcdef123456", "note": format!("and {}", github_token())});
    let leaky = format!("got tok-abcdef123456 and {}", github_token());

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__raw", arguments.clone()), async {
        let (request, answer): (ApprovalRequest, ApprovalAnswer) =
            within("an approval request arrives", asked.recv()).await.expect("attached");
        assert_eq!(request.arguments, json!({"token": "[REDACTED:API_TOKEN]", "note": "and [REDACTED:github_token]"}));
        answer.send(ApprovalDecision::Approve, "alice");
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(common::arguments(&call), &arguments);
        reply(&peer, &call, text_result(&leaky));
    });
    assert_eq!(outcome.unwrap().text(), leaky);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn describe_tool_returns_the_full_definition_under_the_namespaced_name() {
    let search = json!({
        "name": "search",
        "description": "Searches the index. Long explanation follows.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    });
    let (warden, mut peer) = policed(agent_rules(), settings(), json!([search, tool("read")])).await;

    let result = warden.call_tool(DESCRIBE_TOOL, json!({"tool": "srv__search"})).await.unwrap();
    assert!(!result.is_error());
    let expected = json!({
        "name": "srv__search",
        "description": "Searches the index. Long explanation follows.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    });
    assert_eq!(result.structured_content, Some(expected.clone()));
    assert_eq!(serde_json::from_str::<Value>(&result.text()).unwrap(), expected);
    assert_eq!(warden.host().describe_tool("srv__search").unwrap(), expected);
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn describe_tool_refuses_a_tool_outside_the_agents_allowlist_and_explains_its_usage() {
    let (warden, mut peer) = policed(agent_rules(), settings(), tools(&["read", "write"])).await;

    let result = warden
        .agent("coder")
        .unwrap()
        .call(DESCRIBE_TOOL, json!({"tool": "srv__write"}), CallOptions::default())
        .await
        .unwrap();
    assert!(result.is_error());
    assert_eq!(
        result.text(),
        "agent 'coder' may not use 'srv__write': it is not in the agent's allowed_tools; add the name (or a glob such \
         as 'srv__*') to allowed_tools if it should be"
    );
    let result = warden
        .agent("coder")
        .unwrap()
        .call(DESCRIBE_TOOL, json!({"tool": "srv__read"}), CallOptions::default())
        .await
        .unwrap();
    assert!(!result.is_error());

    let result = warden.call_tool(DESCRIBE_TOOL, json!({})).await.unwrap();
    assert!(result.is_error());
    assert_eq!(result.text(), "describe_tool takes {\"tool\": \"<name>\"}, the name of a tool you can see");

    let result = warden.call_tool(DESCRIBE_TOOL, json!({"tool": "srv__nope"})).await.unwrap();
    assert!(result.is_error());
    assert_eq!(result.text(), "unknown tool 'srv__nope': no running server lists it");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

/// The same rules through a real config and process (so on real time):
/// the token Warden hands the test server in `env` comes back redacted,
/// may not be sent to it, and the server's own annotations decide.
#[tokio::test]
async fn a_config_driven_server_gets_its_token_but_the_model_never_sees_it() {
    let server = warden_tests::bins::test_server().display().to_string();
    let text = format!(
        "[servers.test]\ncommand = {server:?}\nenv = {{ API_TOKEN = \"tok-from-config-123\" }}\n\
         [security.tool_policies.test__env]\napproval = \"never\"\n"
    );
    let config = warden_actors::WardenConfig::from_toml(&text, "test.toml").expect("the config loads");
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(std::time::Duration::from_secs(20), warden.settled()).await.expect("the server settles");

    let result = warden.call_tool("test__env", json!({"name": "API_TOKEN"})).await.unwrap();
    assert_eq!(result.text(), "[REDACTED:API_TOKEN]");

    let error = warden.call_tool("test__echo", json!({"message": "tok-from-config-123"})).await.unwrap_err();
    assert_eq!(
        error,
        CallError::SecretInArguments {
            name: "test__echo".into(),
            kinds: vec!["API_TOKEN".into()],
            paths: vec!["/message".into()]
        }
    );

    // `add` is annotated read-only: it runs with nobody to approve it; `echo`
    // has no annotations, so Warden's default asks, and nobody can answer.
    assert_eq!(warden.call_tool("test__add", json!({"a": 2, "b": 3})).await.unwrap().text(), "5");
    let error = warden.call_tool("test__echo", json!({"message": "hi"})).await.unwrap_err();
    assert!(matches!(error, CallError::NoApprover { .. }), "{error}");
    warden.shutdown().await;
}
