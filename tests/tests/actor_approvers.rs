//! Who answers approvals, as a host sees it: the ApprovalQueue the daemon
//! uses, the config's `approver`, a host's own actor, grants for one agent,
//! several approvals waiting at once, answered out of order, and calls
//! approved after their server restarted.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::approvals::*;
use common::*;
use serde_json::json;
use warden_actors::{
    AgentRules, ApprovalAnswer, ApprovalDecision, ApprovalQueue, ApprovalRequest, CallError, CallOptions, GrantRequest,
    PolicyRules, QueueError, ServerSpec, Warden,
};
use warden_policy::{PolicyLayer, Risk, ToolPatterns};
use warden_protocol::MemoryPeer;

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
        format!("no approval request {id} is waiting (it was answered, timed out, or never asked)")
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
    let (outcome, ()) = tokio::join!(coder.call("srv__write", json!({}), CallOptions::default()), async {
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
    let (outcome, ()) = tokio::join!(coder.call("srv__write", json!({}), CallOptions::default()), async {
        let call = next_request(&mut peer, "tools/call").await;
        reply(&peer, &call, text_result("again"));
    });
    assert_eq!(outcome.unwrap().text(), "again");
    let (outcome, ()) = tokio::join!(reviewer.call("srv__write", json!({}), CallOptions::default()), async {
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
async fn a_call_dropped_while_it_waits_for_approval_leaves_the_queue_and_never_runs() {
    let (warden, mut peer) = policed(PolicyRules::default(), settings(), tools(&["write"])).await;
    let queue = ApprovalQueue::new();
    warden.attach_approver(Arc::new(queue.clone()));
    let call = warden.call_tool("srv__write", json!({"file": "a.txt"}));
    let (dropped, pending) = tokio::join!(tokio::time::timeout(Duration::from_secs(5), call), waiting(&queue, 1));
    assert!(dropped.is_err(), "the call was still waiting for a person when it was dropped");
    let id = pending[0].id;
    // Withdrawn at once, long before the approval timeout (300 s).
    let dropped_at = tokio::time::Instant::now();
    within("the request leaves the queue", async {
        while !queue.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(dropped_at.elapsed() < Duration::from_secs(1), "withdrawn after {:?}", dropped_at.elapsed());
    assert_eq!(queue.answer(id, ApprovalDecision::Approve, "bob").unwrap_err(), QueueError::NoSuchRequest(id));
    assert_silent(&mut peer).await;
    warden.shutdown().await;
}

/// Starts Warden under its default policy (unannotated tools need a
/// person) with `srv` running and listing `tools`, keeping its connections
/// to watch it restart.
async fn restartable_under_default_policy(tools: serde_json::Value) -> (Warden, Connections, MemoryPeer) {
    let (connector, mut connections) = scripted(SRV);
    let spec = ServerSpec { name: SRV.into(), connector, settings: settings() };
    let warden = Warden::builder().servers(vec![spec]).start().await.expect("Warden starts");
    let mut peer = connections.next().await;
    ready(&mut peer, tools).await;
    within("the server settles", warden.settled()).await;
    (warden, connections, peer)
}

/// Approves the next request once `srv` died and came back listing
/// `tools`; the restarted server.
async fn approved_after_a_restart(
    warden: &Warden,
    asked: &mut Asked,
    peer: MemoryPeer,
    connections: &mut Connections,
    tools: serde_json::Value,
) -> MemoryPeer {
    let (_, answer) = next_ask(asked).await;
    peer.die(common::crashes::EXIT);
    let mut restarted = connections.next().await;
    ready(&mut restarted, tools).await;
    until_state(warden, SRV, "running again", common::crashes::is_running).await;
    answer.send(ApprovalDecision::Approve, "alice");
    restarted
}

#[tokio::test(start_paused = true)]
async fn a_call_approved_after_its_server_restarted_runs_on_the_restarted_server() {
    let (warden, mut connections, peer) = restartable_under_default_policy(tools(&["write"])).await;
    let mut asked = attach_channel(&warden);
    // The call finds the server, then waits for a person; meanwhile the
    // server dies and comes back as another process.
    let (outcome, mut restarted) = tokio::join!(warden.call_tool("srv__write", json!({"file": "a.txt"})), async {
        let mut restarted =
            approved_after_a_restart(&warden, &mut asked, peer, &mut connections, tools(&["write"])).await;
        let call = next_request(&mut restarted, "tools/call").await;
        assert_eq!(arguments(&call), &json!({"file": "a.txt"}));
        reply(&restarted, &call, text_result("written"));
        restarted
    });
    assert_eq!(outcome.unwrap().text(), "written");
    assert_silent(&mut restarted).await;
    connections.assert_none();
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_approved_after_its_server_restarted_without_the_tool_is_not_sent() {
    let (warden, mut connections, peer) = restartable_under_default_policy(tools(&["write"])).await;
    let mut asked = attach_channel(&warden);
    let (outcome, mut restarted) = tokio::join!(
        warden.call_tool("srv__write", json!({"file": "a.txt"})),
        approved_after_a_restart(&warden, &mut asked, peer, &mut connections, tools(&["read"]))
    );
    assert_eq!(outcome.unwrap_err().to_string(), "unknown tool 'srv__write': no running server lists it");
    assert_silent(&mut restarted).await;
    warden.shutdown().await;
}
