use super::*;
use crate::registry::ServerState;
use std::collections::HashSet;

fn server(name: &str, state: ServerState, restarts: u32) -> ServerStatus {
    ServerStatus {
        name: name.into(),
        state,
        tools: 1,
        protocol_version: None,
        server_info: None,
        warnings: Vec::new(),
        last_error: None,
        pid: None,
        connected_at: None,
        restarts,
        calls: 0,
        startup: Some(std::time::Duration::from_millis(1500)),
        tool_lists: 2,
    }
}

fn line_of<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find(|line| line.starts_with(prefix))
}

#[test]
fn a_call_is_counted_by_server_tool_and_outcome_with_its_duration() {
    let metrics = Metrics::default();
    let mut record = CallRecord::begin(&metrics);
    record.resolved("git", "git__status");
    let in_flight = metrics.encode(&[server("git", ServerState::Running, 0)]);
    assert_eq!(
        line_of(&in_flight, "warden_tool_calls_in_flight{server=\"git\"}"),
        Some("warden_tool_calls_in_flight{server=\"git\"} 1")
    );
    record.end(Outcome::Ok, None);
    let text = metrics.encode(&[server("git", ServerState::Running, 0)]);
    assert!(text.contains("warden_tool_calls_total{server=\"git\",tool=\"git__status\",outcome=\"ok\"} 1\n"), "{text}");
    assert!(text.contains("warden_tool_call_duration_seconds_count{server=\"git\"} 1\n"), "{text}");
    assert!(text.contains("warden_tool_call_duration_seconds_bucket{le=\"0.0001\",server=\"git\"}"), "{text}");
    assert!(text.contains("warden_tool_calls_in_flight{server=\"git\"} 0\n"), "{text}");
    assert_eq!(metrics.calls_of("git"), 1);
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn a_call_dropped_midway_is_cancelled_and_an_unknown_name_is_no_label() {
    let metrics = Metrics::default();
    let mut record = CallRecord::begin(&metrics);
    record.resolved("git", "git__log");
    drop(record);
    let text = metrics.encode(&[server("git", ServerState::Running, 0)]);
    assert!(text.contains("{server=\"git\",tool=\"git__log\",outcome=\"cancelled\"} 1\n"), "{text}");
    CallRecord::begin(&metrics).end(Outcome::Unavailable, None);
    let text = metrics.encode(&[]);
    assert!(text.contains("warden_tool_calls_total{server=\"\",tool=\"\",outcome=\"unavailable\"} 1\n"), "{text}");
    // The server is not in the status: its series are gone.
    assert!(!text.contains("git"), "{text}");
}

#[test]
fn states_and_restarts_follow_the_status_and_a_removed_server_stops_reporting() {
    let metrics = Metrics::default();
    let mut record = CallRecord::begin(&metrics);
    record.resolved("a", "a__x");
    record.end(Outcome::ToolError, None);
    let failed = ServerState::Failed { reason: "gone".into() };
    let text = metrics.encode(&[server("a", ServerState::Running, 2), server("b", failed, 0)]);
    assert!(text.contains("warden_server_state{server=\"a\",state=\"running\"} 1\n"), "{text}");
    assert!(text.contains("warden_server_state{server=\"a\",state=\"failed\"} 0\n"), "{text}");
    assert!(text.contains("warden_server_state{server=\"b\",state=\"failed\"} 1\n"), "{text}");
    assert!(text.contains("warden_server_restarts_total{server=\"a\"} 2\n"), "{text}");
    assert!(text.contains("warden_server_startup_seconds{server=\"a\"} 1.5\n"), "{text}");
    assert!(text.contains("warden_server_tool_lists_total{server=\"a\"} 2\n"), "{text}");
    let text = metrics.encode(&[server("a", ServerState::Running, 3)]);
    assert!(text.contains("warden_server_restarts_total{server=\"a\"} 3\n"), "{text}");
    assert!(!text.contains("server=\"b\""), "a removed server still reports: {text}");
    let text = metrics.encode(&[server("b", ServerState::Running, 0)]);
    assert!(!text.contains("server=\"a\""), "{text}");
}

#[test]
fn every_outcome_has_its_own_label() {
    let labels: HashSet<&str> = Outcome::ALL.iter().map(|outcome| outcome.label()).collect();
    assert_eq!(labels.len(), Outcome::ALL.len());
}

#[test]
fn an_extension_is_registered_once_and_encoded_with_the_rest() {
    struct Theirs(Counter);
    let metrics = Metrics::default();
    let register = |registry: &mut Registry| {
        let counter = Counter::default();
        registry.register("their_things", "Things another crate counts", counter.clone());
        Theirs(counter)
    };
    let first = metrics.extension(register);
    first.0.inc();
    // Asked again (a second front of the same Warden): the same series,
    // not a second registration.
    let again = metrics.extension(|_: &mut Registry| -> Theirs { panic!("registered twice") });
    again.0.inc();
    let text = metrics.encode(&[]);
    assert_eq!(text.matches("# TYPE warden_their_things counter").count(), 1, "{text}");
    assert!(text.contains("\nwarden_their_things_total 2\n"), "{text}");
}
