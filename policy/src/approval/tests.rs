use std::time::Duration;

use super::*;
use crate::tool_policy::{resolve_policy, PolicyDefaults, PolicyLayer, ToolHints};

fn policy(approval: Approval) -> ResolvedPolicy {
    let layer = PolicyLayer { approval: Some(approval), ..PolicyLayer::default() };
    resolve_policy(Some(&layer), None, ToolHints::default(), &PolicyDefaults::default())
}

fn grant(id: u64, tools: &str, agent: Option<&str>, expires_at: Option<Instant>) -> Grant {
    Grant {
        id,
        tools: ToolPattern::new(tools).unwrap(),
        agent: agent.map(str::to_string),
        expires_at,
        granted_by: "test".into(),
    }
}

fn now() -> Instant {
    // Far enough from the process start that `now() - 1 s` exists.
    Instant::now() + Duration::from_secs(1_000)
}

#[test]
fn never_needs_nothing_even_without_grants() {
    assert_eq!(approval_need(&policy(Approval::Never), "fs__read", None, None, &[], now()), ApprovalNeed::NotNeeded);
}

#[test]
fn always_asks_despite_grants_and_auto_approval() {
    let grants = [grant(1, "fs__*", None, None)];
    let need = approval_need(&policy(Approval::Always), "fs__rm", None, Some(AutoApproval::Config), &grants, now());
    assert_eq!(
        need,
        ApprovalNeed::Ask {
            reason: "'fs__rm' is medium risk (Warden default) and its approval is 'always' (security.tool_policies): every call is asked".into()
        }
    );
}

#[test]
fn unless_auto_approved_asks_when_nothing_covers_the_call() {
    let need = approval_need(&policy(Approval::UnlessAutoApproved), "fs__write", Some("coder"), None, &[], now());
    let ApprovalNeed::Ask { reason } = need else { panic!("{need:?}") };
    assert_eq!(
        reason,
        "'fs__write' is medium risk (Warden default); its approval is 'unless_auto_approved' (security.tool_policies), auto-approval is off and no grant covers it"
    );
}

#[test]
fn auto_approval_lets_unless_auto_approved_through_and_says_whence() {
    let need = approval_need(
        &policy(Approval::UnlessAutoApproved),
        "fs__write",
        Some("coder"),
        Some(AutoApproval::Agent("coder".into())),
        &[],
        now(),
    );
    assert_eq!(need, ApprovalNeed::AutoApproved(AutoApproval::Agent("coder".into())));
    assert_eq!(AutoApproval::Agent("coder".into()).to_string(), "auto-approval is on for agent 'coder'");
}

#[test]
fn a_matching_grant_covers_the_call() {
    let grants = [grant(1, "git__*", None, None), grant(2, "fs__*", None, None)];
    let need = approval_need(&policy(Approval::UnlessAutoApproved), "fs__write", None, None, &grants, now());
    assert_eq!(need, ApprovalNeed::Granted { grant: 2 });
}

#[test]
fn expired_grants_cover_nothing() {
    let past = now() - Duration::from_secs(1);
    let future = now() + Duration::from_secs(60);
    let expired = grant(1, "fs__write", None, Some(past));
    let live = grant(2, "fs__write", None, Some(future));
    assert!(!expired.covers("fs__write", None, now()));
    assert!(live.covers("fs__write", None, now()));
    assert!(!live.covers("fs__write", None, future), "a grant ends at its expiry");
}

#[test]
fn a_grant_for_one_agent_does_not_cover_another() {
    let for_coder = grant(1, "fs__*", Some("coder"), None);
    assert!(for_coder.covers("fs__write", Some("coder"), now()));
    assert!(!for_coder.covers("fs__write", Some("writer"), now()));
    assert!(!for_coder.covers("fs__write", None, now()));
    let for_all = grant(2, "fs__*", None, None);
    assert!(for_all.covers("fs__write", Some("writer"), now()));
}
