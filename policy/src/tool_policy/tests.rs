use super::*;

fn layer(risk: Option<Risk>, approval: Option<Approval>, timeout: Option<f64>) -> PolicyLayer {
    PolicyLayer { risk, approval, timeout, leaks: None }
}

const DESTRUCTIVE: ToolHints = ToolHints { read_only: None, destructive: Some(true) };
const READ_ONLY: ToolHints = ToolHints { read_only: Some(true), destructive: None };
const BOTH: ToolHints = ToolHints { read_only: Some(true), destructive: Some(true) };
const NONE: ToolHints = ToolHints { read_only: None, destructive: None };

fn resolve(tool: Option<&PolicyLayer>, server: Option<&PolicyLayer>, hints: ToolHints) -> ResolvedPolicy {
    resolve_policy(tool, server, hints, &PolicyDefaults::default())
}

#[test]
fn nothing_set_gives_wardens_defaults() {
    let policy = resolve(None, None, NONE);
    assert_eq!(policy.risk, Sourced { value: Risk::Medium, source: PolicySource::WardenDefault });
    assert_eq!(policy.approval, Sourced { value: Approval::UnlessAutoApproved, source: PolicySource::WardenDefault });
    assert_eq!(policy.timeout, Sourced { value: Duration::from_secs(60), source: PolicySource::WardenDefault });
    assert_eq!(policy.leaks, Sourced { value: LeakAction::Redact, source: PolicySource::WardenDefault });
}

#[test]
fn destructive_hint_means_high_risk_and_always_ask() {
    let policy = resolve(None, None, DESTRUCTIVE);
    assert_eq!(policy.risk, Sourced { value: Risk::High, source: PolicySource::Annotations });
    assert_eq!(policy.approval, Sourced { value: Approval::Always, source: PolicySource::Annotations });
    assert_eq!(policy.timeout.source, PolicySource::WardenDefault);
}

#[test]
fn read_only_hint_means_low_risk_and_never_ask() {
    let policy = resolve(None, None, READ_ONLY);
    assert_eq!(policy.risk, Sourced { value: Risk::Low, source: PolicySource::Annotations });
    assert_eq!(policy.approval, Sourced { value: Approval::Never, source: PolicySource::Annotations });
}

#[test]
fn a_tool_claiming_both_hints_is_treated_as_destructive() {
    let policy = resolve(None, None, BOTH);
    assert_eq!(policy.risk.value, Risk::High);
    assert_eq!(policy.approval.value, Approval::Always);
}

#[test]
fn false_hints_say_nothing() {
    let hints = ToolHints { read_only: Some(false), destructive: Some(false) };
    assert_eq!(hints.layer(), PolicyLayer::default());
}

#[test]
fn server_default_beats_annotations() {
    let server = layer(Some(Risk::Low), Some(Approval::Never), Some(120.0));
    let policy = resolve(None, Some(&server), DESTRUCTIVE);
    assert_eq!(policy.risk, Sourced { value: Risk::Low, source: PolicySource::ServerDefault });
    assert_eq!(policy.approval, Sourced { value: Approval::Never, source: PolicySource::ServerDefault });
    assert_eq!(policy.timeout, Sourced { value: Duration::from_secs(120), source: PolicySource::ServerDefault });
}

#[test]
fn tool_override_beats_server_default_and_annotations() {
    let tool = layer(Some(Risk::Medium), Some(Approval::Always), Some(5.5));
    let server = layer(Some(Risk::Low), Some(Approval::Never), Some(120.0));
    let policy = resolve(Some(&tool), Some(&server), READ_ONLY);
    assert_eq!(policy.risk, Sourced { value: Risk::Medium, source: PolicySource::ToolOverride });
    assert_eq!(policy.approval, Sourced { value: Approval::Always, source: PolicySource::ToolOverride });
    assert_eq!(policy.timeout, Sourced { value: Duration::from_millis(5500), source: PolicySource::ToolOverride });
}

#[test]
fn each_field_comes_from_the_highest_layer_that_sets_it() {
    let tool = layer(None, Some(Approval::Always), None);
    let server = PolicyLayer { timeout: Some(30.0), leaks: Some(LeakAction::Off), ..PolicyLayer::default() };
    let policy = resolve(Some(&tool), Some(&server), READ_ONLY);
    assert_eq!(policy.approval, Sourced { value: Approval::Always, source: PolicySource::ToolOverride });
    assert_eq!(policy.timeout, Sourced { value: Duration::from_secs(30), source: PolicySource::ServerDefault });
    assert_eq!(policy.leaks, Sourced { value: LeakAction::Off, source: PolicySource::ServerDefault });
    assert_eq!(policy.risk, Sourced { value: Risk::Low, source: PolicySource::Annotations });
}

#[test]
fn configured_defaults_replace_wardens() {
    let defaults = PolicyDefaults { timeout: Duration::from_secs(10), ..PolicyDefaults::default() };
    let policy = resolve_policy(None, None, NONE, &defaults);
    assert_eq!(policy.timeout, Sourced { value: Duration::from_secs(10), source: PolicySource::WardenDefault });
}

#[test]
fn layers_read_from_config_text() {
    let layer: PolicyLayer =
        serde_json::from_str(r#"{"risk":"high","approval":"unless_auto_approved","timeout":30,"leaks":"block"}"#)
            .unwrap();
    assert_eq!(
        layer,
        PolicyLayer {
            risk: Some(Risk::High),
            approval: Some(Approval::UnlessAutoApproved),
            timeout: Some(30.0),
            leaks: Some(LeakAction::Block),
        }
    );
    let typo = serde_json::from_str::<PolicyLayer>(r#"{"aproval":"never"}"#).unwrap_err().to_string();
    assert!(typo.contains("unknown field `aproval`"), "{typo}");
    let bad = serde_json::from_str::<PolicyLayer>(r#"{"risk":"extreme"}"#).unwrap_err().to_string();
    assert!(bad.contains("unknown variant `extreme`, expected one of `low`, `medium`, `high`"), "{bad}");
}

#[test]
fn timeouts_must_be_positive_seconds() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 100_000.0] {
        let error = layer(None, None, Some(bad)).validate().unwrap_err().to_string();
        assert!(error.contains("is not a number of seconds between 0 and 86400"), "{error}");
    }
    assert_eq!(layer(None, None, Some(0.5)).validate(), Ok(()));
}

#[test]
fn sources_read_as_config_paths() {
    assert_eq!(PolicySource::ToolOverride.to_string(), "security.tool_policies");
    assert_eq!(PolicySource::ServerDefault.to_string(), "server default_policy");
    assert_eq!(PolicySource::Annotations.to_string(), "server annotations");
    assert_eq!(PolicySource::WardenDefault.to_string(), "Warden default");
}

#[test]
fn resolved_policies_serialise_with_seconds_and_sources() {
    let policy = resolve(None, None, READ_ONLY);
    let json = serde_json::to_value(policy).unwrap();
    assert_eq!(json["risk"], serde_json::json!({"value": "low", "source": "annotations"}));
    assert_eq!(json["timeout"], serde_json::json!({"value": 60.0, "source": "warden_default"}));
}
