//! The policy layer on the call path, as a host sees it: which layer decides
//! a tool's policy, what an approver is shown and how its answers (once,
//! with a grant, denied, never) reach the caller, session auto-approval,
//! the ApprovalQueue, and per-tool timeouts. Agents, leaks and
//! `describe_tool` are in `actor_leaks.rs`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::time::Instant;
use warden_actors::{
    AgentRules, ApprovalAnswer, ApprovalDecision, ApprovalQueue, ApprovalRequest, CallError, GrantRequest, PolicyRules,
    QueueError, ServerSettings, Warden,
};
use warden_policy::{Approval, LeakAction, PolicyLayer, PolicySource, Risk, ToolPatterns};
use warden_protocol::MemoryPeer;

type Asked = UnboundedReceiver<(ApprovalRequest, ApprovalAnswer)>;

/// Attaches an approver that hands every request to the test.
fn attach_channel(warden: &Warden) -> Asked {
    let (sender, asked) = unbounded_channel();
    warden.attach_approver(Arc::new(move |request: ApprovalRequest, answer: ApprovalAnswer| {
        let _ = sender.send((request, answer));
    }));
    asked
}

/// The next approval request.
async fn next_ask(asked: &mut Asked) -> (ApprovalRequest, ApprovalAnswer) {
    within("an approval request arrives", asked.recv()).await.expect("the approver is attached")
}

/// Runs `name` while playing a server that answers it with `text`.
async fn call_answered(warden: &Warden, peer: &mut MemoryPeer, name: &str, text: &str) -> String {
    let (outcome, ()) = tokio::join!(warden.call_tool(name, json!({})), async {
        let call = next_request(peer, "tools/call").await;
        reply(peer, &call, text_result(text));
    });
    outcome.expect("the call runs").text()
}

fn grant_all_of_srv() -> ApprovalDecision {
    ApprovalDecision::ApproveWithGrant(GrantRequest {
        tools: Some("srv__*".into()),
        duration: None,
        this_agent_only: false,
    })
}

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
         attached. Approve it from the daemon (`warden approvals`, `warden approve ID`), attach an approver, or set \
         its approval to \"never\" in security.tool_policies"
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
async fn two_waiting_approvals_answered_out_of_order_each_get_their_own_outcome() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    let mut asked = attach_channel(&warden);

    let first = warden.call_tool("srv__write", json!({"n": 1}));
    let second = warden.call_tool("srv__write", json!({"n": 2}));
    let script = async {
        let (one, answer_one) = next_ask(&mut asked).await;
        let (two, answer_two) = next_ask(&mut asked).await;
        assert_ne!(one.id, two.id);
        let (mut one, mut answer_one, mut two, mut answer_two) = (one, answer_one, two, answer_two);
        if one.arguments["n"] != 1 {
            std::mem::swap(&mut one, &mut two);
            std::mem::swap(&mut answer_one, &mut answer_two);
        }
        assert_eq!((&one.arguments, &two.arguments), (&json!({"n": 1}), &json!({"n": 2})));
        // The later one first: approved; then the earlier one: denied.
        answer_two.send(ApprovalDecision::Approve, "alice");
        let call = next_request(&mut peer, "tools/call").await;
        assert_eq!(arguments(&call), &json!({"n": 2}));
        reply(&peer, &call, text_result("two ran"));
        answer_one.send(ApprovalDecision::Deny { reason: "one is enough".into() }, "bob");
    };
    let (first, second, ()) = tokio::join!(first, second, script);
    assert_eq!(first.unwrap_err().to_string(), "'srv__write' was not run: bob denied it: one is enough");
    assert_eq!(second.unwrap().text(), "two ran");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

/// The requests waiting in `queue`, once there are `count` of them.
async fn waiting(queue: &ApprovalQueue, count: usize) -> Vec<ApprovalRequest> {
    within("requests wait in the queue", queue.wait_for_pending(count)).await
}

#[tokio::test(start_paused = true)]
async fn the_approval_queue_lists_a_waiting_call_and_answering_it_by_number_releases_it() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    let queue = ApprovalQueue::new();
    warden.attach_approver(Arc::new(queue.clone()));
    assert!(queue.is_empty());

    let (outcome, id) = tokio::join!(warden.call_tool("srv__write", json!({"file": "a.txt"})), async {
        let pending = waiting(&queue, 1).await;
        assert_eq!(pending.len(), 1);
        assert_eq!((pending[0].tool.as_str(), &pending[0].arguments), ("srv__write", &json!({"file": "a.txt"})));
        let id = pending[0].id;
        queue.answer(id, ApprovalDecision::Approve, "bob").expect("the request is waiting");
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("written"));
        id
    });
    assert_eq!(outcome.unwrap().text(), "written");
    assert!(queue.is_empty());

    let error = queue.answer(id, ApprovalDecision::Approve, "bob").unwrap_err();
    assert_eq!(error, QueueError::NoSuchRequest(id));
    assert_eq!(
        error.to_string(),
        format!("no approval request {id} is waiting; `warden approvals` lists the ones that are")
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_approval_timed_out_leaves_the_queue() {
    let mut rules = PolicyRules::default();
    rules.approval_timeout = Duration::from_secs(5);
    let (warden, mut peer) = policed(rules, settings(), tools(&["write"])).await;
    let queue = ApprovalQueue::new();
    warden.attach_approver(Arc::new(queue.clone()));

    let (outcome, id) =
        tokio::join!(warden.call_tool("srv__write", json!({})), async { waiting(&queue, 1).await[0].id });
    assert!(matches!(outcome.unwrap_err(), CallError::ApprovalTimedOut { .. }));
    assert!(queue.pending().is_empty());
    assert_eq!(queue.answer(id, ApprovalDecision::Approve, "bob"), Err(QueueError::NoSuchRequest(id)));
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

#[tokio::test(start_paused = true)]
async fn a_grant_for_one_agent_does_not_cover_another() {
    let agent = |name| AgentRules {
        allowed_tools: ToolPatterns::new(&["srv__*"]).expect(name),
        auto_approve: false,
        profile: None,
    };
    let rules = PolicyRules::default().with_agent("coder", agent("coder")).with_agent("reviewer", agent("reviewer"));
    let (warden, mut peer) = policed(rules, settings(), tools(&["write"])).await;
    let mut asked = attach_channel(&warden);
    let (coder, reviewer) = (warden.agent("coder").unwrap(), warden.agent("reviewer").unwrap());

    let grant = GrantRequest { tools: None, duration: None, this_agent_only: true };
    let (outcome, ()) = tokio::join!(coder.call_tool("srv__write", json!({})), async {
        let (request, answer) = next_ask(&mut asked).await;
        assert_eq!(request.agent.as_deref(), Some("coder"));
        answer.send(ApprovalDecision::ApproveWithGrant(grant), "alice");
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("written"));
    });
    assert_eq!(outcome.unwrap().text(), "written");
    let grants = warden.grants();
    assert_eq!((grants[0].tools.as_str(), grants[0].agent.as_deref()), ("srv__write", Some("coder")));

    // The coder runs it unasked; the reviewer is asked.
    let (outcome, ()) = tokio::join!(coder.call_tool("srv__write", json!({})), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("again"));
    });
    assert_eq!(outcome.unwrap().text(), "again");
    let (outcome, ()) = tokio::join!(reviewer.call_tool("srv__write", json!({})), async {
        let (request, answer) = next_ask(&mut asked).await;
        assert_eq!(request.agent.as_deref(), Some("reviewer"));
        answer.send(ApprovalDecision::Deny { reason: "no".into() }, "alice");
    });
    assert_eq!(outcome.unwrap_err().to_string(), "'srv__write' was not run: alice denied it: no");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_grant_with_a_bad_glob_is_refused_and_detaching_the_approver_fails_closed_again() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    let grant = GrantRequest { tools: Some("srv__[".into()), duration: None, this_agent_only: false };
    assert_eq!(
        warden.add_grant(grant, "cli user").await.unwrap_err().to_string(),
        "tool pattern 'srv__[' is not a valid glob (unclosed character class; missing ']'); use an exact name or \
         '*', '?', '[...]', e.g. 'fs__*'"
    );
    assert!(warden.grants().is_empty());

    warden.attach_approver(Arc::new(|_request: ApprovalRequest, answer: ApprovalAnswer| {
        answer.send(ApprovalDecision::Approve, "the test");
    }));
    assert_eq!(call_answered(&warden, &mut peer, "srv__write", "written").await, "written");
    warden.detach_approver();
    let error = warden.call_tool("srv__write", json!({})).await.unwrap_err();
    assert!(matches!(error, CallError::NoApprover { .. }), "{error}");
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_configured_approver_answers_when_the_host_attaches_none() {
    let config =
        |approver: &str| format!("[servers.srv]\ncommand = \"unused\"\n[security]\napprover = \"{approver}\"\n");
    let (warden, mut peer) = policed(rules_from(&config("deny")), settings(), tools(&["write"])).await;
    let error = warden.call_tool("srv__write", json!({})).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "'srv__write' was not run: the config (security.approver = \"deny\") denied it: security.approver = \"deny\" \
         refuses every call that needs approval"
    );
    assert_silent(&mut peer).await;
    warden.shutdown().await;

    let (warden, mut peer) = policed(rules_from(&config("auto")), settings(), tools(&["write"])).await;
    assert_eq!(call_answered(&warden, &mut peer, "srv__write", "written").await, "written");
    warden.shutdown().await;
}

/// A host's approver actor: approves low and medium risk, denies high.
struct HostApprover;

/// What the host's actor receives.
struct Ask(ApprovalRequest, ApprovalAnswer);

impl From<(ApprovalRequest, ApprovalAnswer)> for Ask {
    fn from((request, answer): (ApprovalRequest, ApprovalAnswer)) -> Ask {
        Ask(request, answer)
    }
}

impl ractor::Actor for HostApprover {
    type Msg = Ask;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ractor::ActorRef<Ask>, _: ()) -> Result<(), ractor::ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ractor::ActorRef<Ask>,
        Ask(request, answer): Ask,
        _: &mut (),
    ) -> Result<(), ractor::ActorProcessingErr> {
        let decision = if request.risk == Risk::High {
            ApprovalDecision::Deny { reason: "high risk".into() }
        } else {
            ApprovalDecision::Approve
        };
        answer.send(decision, "the host's approver actor");
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_hosts_own_actor_can_be_the_approver() {
    let destructive = PolicyLayer { risk: Some(Risk::High), ..PolicyLayer::default() };
    let rules = PolicyRules::default().with_tool_policy("srv__wipe", destructive);
    let (warden, mut peer) = policed(rules, settings(), tools(&["write", "wipe"])).await;
    let (actor, handle) = ractor::Actor::spawn(None, HostApprover, ()).await.unwrap();
    warden.attach_approver(Arc::new(warden_actors::ActorApprover::new(actor.clone())));

    assert_eq!(call_answered(&warden, &mut peer, "srv__write", "written").await, "written");
    let error = warden.call_tool("srv__wipe", json!({})).await.unwrap_err();
    assert_eq!(error.to_string(), "'srv__wipe' was not run: the host's approver actor denied it: high risk");
    assert_silent(&mut peer).await;

    // An approver actor that is gone denies: the answer slot is dropped.
    actor.stop(None);
    handle.await.unwrap();
    let error = warden.call_tool("srv__write", json!({})).await.unwrap_err();
    assert!(matches!(error, CallError::ApprovalDenied { .. }), "{error}");
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
