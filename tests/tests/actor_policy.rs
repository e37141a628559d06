//! The policy layer on the call path, as a host sees it: which layer decides
//! a tool's policy, what an approver is shown and how its answers (once,
//! with a grant, denied, never) reach the caller, session auto-approval,
//! and per-tool timeouts. Who answers — the ApprovalQueue, the configured
//! approver, a host's actor, several at once — is in `actor_approvers.rs`;
//! agents, leaks and `describe_tool` are in `actor_leaks.rs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::approvals::*;
use common::*;
use serde_json::json;
use tokio::time::Instant;
use warden_actors::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, CallError, GrantRequest, PolicyRules, ServerSettings,
};
use warden_policy::{Approval, LeakAction, PolicyLayer, PolicySource, Risk};

#[tokio::test(start_paused = true)]
async fn annotations_decide_when_nothing_else_does_destructive_asks_and_read_only_runs() {
    let tools = json!([
        annotated("wipe", json!({"destructiveHint": true})),
        annotated("peek", json!({"readOnlyHint": true})),
        tool("plain"),
    ]);
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools).await;

    // Read-only: runs with nobody to ask.
    assert_eq!(call_answered(&warden, &mut peer, "srv__peek", "seen").await, "seen");

    // No annotations: Warden's default asks, and nobody can answer.
    let error = warden.call_tool("srv__plain", json!({})).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "'srv__plain' was not run: it needs approval ('srv__plain' is medium risk (Warden default); its approval is \
         'unless_auto_approved' (Warden default), auto-approval is off and no grant covers it) and no approver is \
         attached; attach an approver, or set its approval to \"never\" in security.tool_policies"
    );
    assert!(matches!(error, CallError::NoApprover { .. }));
    assert_silent(&mut peer).await;

    // Destructive: asks, high risk, and says why.
    let mut asked = attach_channel(&warden);
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__wipe", json!({"path": "/tmp/x"})), async {
        let (request, answer) = next_ask(&mut asked).await;
        assert_eq!(request.tool, "srv__wipe");
        assert_eq!(request.server, "srv");
        assert_eq!(request.agent, None);
        assert_eq!(request.risk, Risk::High);
        assert_eq!(request.arguments, json!({"path": "/tmp/x"}));
        assert_eq!(
            request.reason,
            "'srv__wipe' is high risk (server annotations) and its approval is 'always' (server annotations): every \
             call is asked"
        );
        assert_silent(&mut peer).await;
        answer.send(ApprovalDecision::Approve, "alice");
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&call), &json!({"path": "/tmp/x"}));
        reply(&peer, &call, text_result("wiped"));
    });
    assert_eq!(outcome.unwrap().text(), "wiped");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_default_overrides_annotations_and_a_tool_policy_overrides_both() {
    let rules = rules_from(
        r#"
        [servers.srv]
        command = "unused"
        default_policy = { risk = "low", approval = "never" }
        [security.tool_policies.srv__peek]
        approval = "always"
        timeout = 5
        "#,
    );
    let tools =
        json!([annotated("wipe", json!({"destructiveHint": true})), annotated("peek", json!({"readOnlyHint": true})),]);
    let (warden, mut peer) = policed(rules, settings(), tools).await;

    // The server's default says never ask, over the destructive annotation.
    assert_eq!(call_answered(&warden, &mut peer, "srv__wipe", "wiped").await, "wiped");

    // The tool policy says always, over the default and the read-only hint.
    let mut asked = attach_channel(&warden);
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__peek", json!({})), async {
        let (request, answer) = next_ask(&mut asked).await;
        assert_eq!(request.risk, Risk::Low);
        assert_eq!(
            request.reason,
            "'srv__peek' is low risk (server default_policy) and its approval is 'always' (security.tool_policies): \
             every call is asked"
        );
        answer.send(ApprovalDecision::Deny { reason: "not now".into() }, "alice");
    });
    assert_eq!(outcome.unwrap_err().to_string(), "'srv__peek' was not run: alice denied it: not now");
    assert_silent(&mut peer).await;

    let rows = warden.tool_policies();
    let row = |name: &str| rows.iter().find(|row| row.name == name).expect("a row per tool").clone();
    let peek = row("srv__peek");
    assert_eq!(peek.server, "srv");
    assert_eq!((peek.policy.risk.value, peek.policy.risk.source), (Risk::Low, PolicySource::ServerDefault));
    assert_eq!(
        (peek.policy.approval.value, peek.policy.approval.source),
        (Approval::Always, PolicySource::ToolOverride)
    );
    assert_eq!(
        (peek.policy.timeout.value, peek.policy.timeout.source),
        (Duration::from_secs(5), PolicySource::ToolOverride)
    );
    assert_eq!((peek.policy.leaks.value, peek.policy.leaks.source), (LeakAction::Redact, PolicySource::WardenDefault));
    let wipe = row("srv__wipe");
    assert_eq!((wipe.policy.risk.value, wipe.policy.risk.source), (Risk::Low, PolicySource::ServerDefault));
    assert_eq!(
        (wipe.policy.approval.value, wipe.policy.approval.source),
        (Approval::Never, PolicySource::ServerDefault)
    );
    // The server's own call timeout is the bottom layer.
    assert_eq!(
        (wipe.policy.timeout.value, wipe.policy.timeout.source),
        (Duration::from_secs(30), PolicySource::WardenDefault)
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_grant_lets_every_tool_its_glob_covers_run_unasked_until_it_is_revoked() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write", "move"])).await;
    let mut asked = attach_channel(&warden);

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__write", json!({})), async {
        let (request, answer) = next_ask(&mut asked).await;
        assert_eq!(request.tool, "srv__write");
        answer.send(grant_all_of_srv(), "alice");
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("written"));
    });
    assert_eq!(outcome.unwrap().text(), "written");

    let grants = warden.grants();
    assert_eq!(grants.len(), 1);
    assert_eq!(grants[0].tools.as_str(), "srv__*");
    assert_eq!(
        (grants[0].agent.as_deref(), grants[0].expires_at, grants[0].granted_by.as_str()),
        (None, None, "alice")
    );

    // The same tool and another the glob covers: nobody is asked.
    assert_eq!(call_answered(&warden, &mut peer, "srv__write", "again").await, "again");
    assert_eq!(call_answered(&warden, &mut peer, "srv__move", "moved").await, "moved");
    assert!(asked.try_recv().is_err(), "nobody should have been asked");

    assert!(warden.revoke_grant(grants[0].id).await);
    assert!(warden.grants().is_empty());
    assert!(!warden.revoke_grant(grants[0].id).await, "a grant is revoked once");
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__move", json!({})), async {
        let (_, answer) = next_ask(&mut asked).await;
        answer.send(ApprovalDecision::Deny { reason: "grant revoked".into() }, "alice");
    });
    assert_eq!(outcome.unwrap_err().to_string(), "'srv__move' was not run: alice denied it: grant revoked");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_denied_call_never_reaches_the_server_and_says_who_denied_it_and_why() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    let mut asked = attach_channel(&warden);

    let (outcome, ()) = tokio::join!(warden.call_tool("srv__write", json!({})), async {
        let (_, answer) = next_ask(&mut asked).await;
        answer.send(ApprovalDecision::Deny { reason: "not on Fridays".into() }, "alice at the terminal");
    });
    let error = outcome.unwrap_err();
    assert_eq!(
        error,
        CallError::ApprovalDenied {
            name: "srv__write".into(),
            by: "alice at the terminal".into(),
            reason: "not on Fridays".into()
        }
    );
    assert_eq!(error.to_string(), "'srv__write' was not run: alice at the terminal denied it: not on Fridays");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_times_out_and_the_server_never_hears_of_the_call() {
    let mut rules = PolicyRules::default();
    rules.approval_timeout = Duration::from_secs(5);
    let (warden, mut peer) = policed(rules, settings(), tools(&["write"])).await;
    let mut asked = attach_channel(&warden);
    let started = Instant::now();

    let (outcome, answer) = tokio::join!(warden.call_tool("srv__write", json!({})), async {
        // Held, never answered.
        next_ask(&mut asked).await.1
    });
    let error = outcome.unwrap_err();
    assert_eq!(error, CallError::ApprovalTimedOut { name: "srv__write".into(), after: Duration::from_secs(5) });
    assert_eq!(error.to_string(), "'srv__write' was not run: it needs approval and nobody answered within 5 s");
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert!(answer.is_abandoned());
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_answer_dropped_unanswered_is_a_denial_at_once() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    warden.attach_approver(Arc::new(|_request: ApprovalRequest, answer: ApprovalAnswer| drop(answer)));
    let started = Instant::now();

    let error = warden.call_tool("srv__write", json!({})).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "'srv__write' was not run: the approver denied it: it dropped the request without answering"
    );
    assert_eq!(started.elapsed(), Duration::ZERO, "nobody waits for the approval timeout");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn approval_always_asks_despite_a_matching_grant_and_auto_approval() {
    let rules = PolicyRules::default().with_auto_approve(true);
    let (warden, mut peer) =
        policed(rules, settings(), json!([annotated("wipe", json!({"destructiveHint": true})), tool("plain")])).await;
    let grant = GrantRequest { tools: Some("srv__*".into()), duration: None, this_agent_only: false };
    warden.add_grant(grant, "cli user").await.expect("the glob is good");
    warden.set_session_auto_approve(true).await;

    // Auto-approval covers the plain tool, with no approver attached.
    assert_eq!(call_answered(&warden, &mut peer, "srv__plain", "ran").await, "ran");
    let error = warden.call_tool("srv__wipe", json!({})).await.unwrap_err();
    assert!(matches!(&error, CallError::NoApprover { name, .. } if name == "srv__wipe"), "{error}");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn session_auto_approval_runs_unless_auto_approved_tools_unasked_until_switched_off() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;

    warden.set_session_auto_approve(true).await;
    assert_eq!(call_answered(&warden, &mut peer, "srv__write", "written").await, "written");

    warden.set_session_auto_approve(false).await;
    let error = warden.call_tool("srv__write", json!({})).await.unwrap_err();
    assert!(matches!(error, CallError::NoApprover { .. }), "{error}");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_tool_policy_timeout_bounds_the_call_below_the_servers_and_cancels_it_on_the_wire() {
    let rules = PolicyRules::default()
        .with_auto_approve(true)
        .with_tool_policy("srv__slow", PolicyLayer { timeout: Some(2.0), ..PolicyLayer::default() });
    let settings = ServerSettings { call_timeout: Duration::from_secs(60), ..settings() };
    let (warden, mut peer) = policed(rules, settings, tools(&["slow", "other"])).await;
    let started = Instant::now();

    let (outcome, (call, cancelled)) = tokio::join!(warden.call_tool("srv__slow", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        let cancelled = next_notification(&mut peer, "notifications/cancelled").await;
        (call, cancelled.expect("cancelled has params"))
    });
    let error = outcome.unwrap_err();
    assert_eq!(error, CallError::Timeout { name: "srv__slow".into(), timeout: Duration::from_secs(2), sent: true });
    assert_eq!(error.to_string(), "'srv__slow' timed out after 2 s; the server was asked to cancel it");
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert_eq!(cancelled, json!({"requestId": call.id, "reason": "timed out after 2 s"}));

    // Another tool of the server keeps the server's 60 s.
    let started = Instant::now();
    let (outcome, _) =
        tokio::join!(warden.call_tool("srv__other", json!({})), async { next_request(&mut peer, "tools/call").await });
    assert!(matches!(outcome.unwrap_err(), CallError::Timeout { timeout, .. } if timeout == Duration::from_secs(60)));
    assert_eq!(started.elapsed(), Duration::from_secs(60));
    warden.shutdown().await;
}

/// A call with a shorter timeout, made while a call with a longer one is
/// under way, is not held to the longer deadline: each times out at its own.
#[tokio::test(start_paused = true)]
async fn calls_under_way_together_each_time_out_at_their_own_deadline() {
    let rules = PolicyRules::default()
        .with_auto_approve(true)
        .with_tool_policy("srv__slow", PolicyLayer { timeout: Some(2.0), ..PolicyLayer::default() });
    let settings = ServerSettings { call_timeout: Duration::from_secs(10), ..settings() };
    let (warden, mut peer) = policed(rules, settings, tools(&["slow", "other"])).await;
    let started = Instant::now();

    let timed = |name: &'static str, after: u64| {
        let warden = &warden;
        async move {
            tokio::time::sleep(Duration::from_secs(after)).await;
            let outcome = warden.call_tool(name, json!({})).await;
            (outcome.unwrap_err().to_string(), started.elapsed())
        }
    };
    let script = async {
        let other = next_request(&mut peer, "tools/call").await;
        let slow = next_request(&mut peer, "tools/call").await;
        let first = next_notification(&mut peer, "notifications/cancelled").await.unwrap();
        let second = next_notification(&mut peer, "notifications/cancelled").await.unwrap();
        assert_eq!(first, json!({"requestId": slow.id, "reason": "timed out after 2 s"}));
        assert_eq!(second, json!({"requestId": other.id, "reason": "timed out after 10 s"}));
    };
    let (other, slow, ()) = tokio::join!(timed("srv__other", 0), timed("srv__slow", 1), script);

    assert_eq!(
        slow,
        ("'srv__slow' timed out after 2 s; the server was asked to cancel it".into(), Duration::from_secs(3))
    );
    assert_eq!(
        other,
        ("'srv__other' timed out after 10 s; the server was asked to cancel it".into(), Duration::from_secs(10))
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_grant_for_ten_minutes_covers_calls_until_it_runs_out() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    let mut asked = attach_channel(&warden);
    let ten_minutes = ApprovalDecision::ApproveWithGrant(GrantRequest {
        tools: None,
        duration: Some(Duration::from_secs(600)),
        this_agent_only: false,
    });

    let (outcome, ()) = tokio::join!(call_answered(&warden, &mut peer, "srv__write", "first"), async {
        let (_, answer) = next_ask(&mut asked).await;
        answer.send(ten_minutes, "alice");
    });
    assert_eq!(outcome, "first");
    assert_eq!(warden.grants().len(), 1);

    // Nine minutes on: covered, nobody is asked.
    tokio::time::advance(Duration::from_secs(540)).await;
    assert_eq!(call_answered(&warden, &mut peer, "srv__write", "second").await, "second");
    assert!(asked.try_recv().is_err(), "nobody was asked while the grant held");

    // Past ten minutes: the grant is gone and the next call asks again.
    tokio::time::advance(Duration::from_secs(61)).await;
    assert!(warden.grants().is_empty());
    let (outcome, ()) = tokio::join!(warden.call_tool("srv__write", json!({})), async {
        let (request, answer) = next_ask(&mut asked).await;
        assert_eq!(request.tool, "srv__write");
        answer.send(ApprovalDecision::Deny { reason: "grant over".into() }, "alice");
    });
    assert_eq!(outcome.unwrap_err().to_string(), "'srv__write' was not run: alice denied it: grant over");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_for_approval_holds_up_no_other_call() {
    let read_only = PolicyLayer { approval: Some(Approval::Never), ..PolicyLayer::default() };
    let rules = PolicyRules::default().with_tool_policy("srv__read", read_only);
    let (warden, mut peer) = policed(rules, settings(), tools(&["read", "write"])).await;
    let mut asked = attach_channel(&warden);

    let waiting = warden.call_tool("srv__write", json!({}));
    let others = async {
        let (_, answer) = next_ask(&mut asked).await;
        // While `write` waits for a person, ten reads run to completion.
        for n in 0..10 {
            assert_eq!(call_answered(&warden, &mut peer, "srv__read", &format!("read {n}")).await, format!("read {n}"));
        }
        answer.send(ApprovalDecision::Approve, "alice");
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(call.params.as_ref().unwrap()["name"], "write");
        reply(&peer, &call, text_result("written at last"));
    };
    let (outcome, ()) = tokio::join!(waiting, others);
    assert_eq!(outcome.unwrap().text(), "written at last");
    warden.shutdown().await;
}
