//! What a model is shown of the tools: profiles (full, summary, brief), the
//! built-in `describe_tool`, agents' views, and the `[naming]` separator.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::{json, Value};
use warden_actors::{
    AgentRules, CallError, CallOptions, PolicyRules, ProfileChoice, ServerSpec, Warden, DESCRIBE_TOOL,
};
use warden_policy::{Detail, NameRules, ToolPatterns, ToolProfile};
use warden_protocol::{MemoryConnector, LATEST_PROTOCOL_VERSION};

fn read_file() -> Value {
    json!({
        "name": "read_file",
        "title": "Read a file",
        "description": "Reads a file from disk. Returns its text; binary files are refused.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        "annotations": {"readOnlyHint": true},
        "_meta": {"owner": "fs"}
    })
}

fn write_file() -> Value {
    json!({
        "name": "write_file",
        "description": "Writes a file. Creates it when missing.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}}
    })
}

/// Warden with one server `fs` listing read_file and write_file, policed by `rules`.
async fn fs_with(rules: PolicyRules) -> Warden {
    let (connector, mut peers) = MemoryConnector::new();
    let spec = ServerSpec { name: "fs".into(), connector: Arc::new(connector), settings: settings() };
    let warden = Warden::builder().servers(vec![spec]).rules(rules).start().await.expect("Warden starts");
    let mut peer = within("fs connects", peers.recv()).await.expect("a connection");
    handshake(&mut peer, LATEST_PROTOCOL_VERSION, json!({"tools": {}}), json!([read_file(), write_file()])).await;
    within("fs settles", warden.settled()).await;
    // Keep the peer alive for the test's length.
    std::mem::forget(peer);
    warden
}

fn compact() -> ToolProfile {
    ToolProfile::new(
        Detail::Full,
        vec![("fs__write_*".into(), Detail::Brief), ("fs__read_file".into(), Detail::Summary)],
    )
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn without_a_profile_every_tool_is_shown_in_full_followed_by_describe_tool() {
    let warden = fs_with(PolicyRules::default()).await;
    let shown = warden.host().presented_tools(ProfileChoice::Own).unwrap();
    let mut full_read = read_file();
    full_read["name"] = json!("fs__read_file");
    assert_eq!(shown[0], full_read);
    assert_eq!(shown[1]["name"], "fs__write_file");
    assert_eq!(shown[2]["name"], DESCRIBE_TOOL);
    assert_eq!(shown.len(), 3);
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_profile_shows_summaries_and_brief_lines_and_describe_tool_gives_the_rest() {
    let warden = fs_with(PolicyRules::default().with_profile("compact", compact())).await;
    let shown = warden.host().presented_tools(ProfileChoice::Named("compact")).unwrap();
    assert_eq!(
        shown[0],
        json!({
            "name": "fs__read_file",
            "title": "Read a file",
            "description": "Reads a file from disk.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            "annotations": {"readOnlyHint": true}
        })
    );
    assert_eq!(
        shown[1],
        json!({
            "name": "fs__write_file",
            "description": "Writes a file. Call describe_tool for its parameters.",
            "inputSchema": {"type": "object"}
        })
    );

    // The model asks for what it was not shown.
    let described = warden.call_tool(DESCRIBE_TOOL, json!({"tool": "fs__write_file"})).await.unwrap();
    let mut full_write = write_file();
    full_write["name"] = json!("fs__write_file");
    assert_eq!(described.structured_content, Some(full_write));
    assert!(!described.is_error());
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_agent_sees_only_its_tools_with_its_own_profile() {
    let coder = AgentRules {
        allowed_tools: ToolPatterns::new(&["fs__write_*"]).unwrap(),
        auto_approve: false,
        profile: Some("compact".into()),
    };
    let rules = PolicyRules::default().with_profile("compact", compact()).with_agent("coder", coder);
    let warden = fs_with(rules).await;

    let names: Vec<String> =
        warden.agent("coder").unwrap().tools().unwrap().into_iter().map(|entry| entry.name).collect();
    assert_eq!(names, ["fs__write_file"]);
    let shown = warden.agent("coder").unwrap().presented_tools(ProfileChoice::Own).unwrap();
    assert_eq!(shown.len(), 2);
    assert_eq!(shown[0]["inputSchema"], json!({"type": "object"}), "the agent's profile shows write_file briefly");

    // describe_tool does not reveal a tool the agent may not use.
    let refused = warden
        .agent("coder")
        .unwrap()
        .call(DESCRIBE_TOOL, json!({"tool": "fs__read_file"}), CallOptions::default())
        .await
        .unwrap();
    assert!(refused.is_error());
    assert_eq!(
        refused.text(),
        "agent 'coder' may not use 'fs__read_file': it is not in the agent's allowed_tools; add the name (or a glob \
         such as 'fs__*') to allowed_tools if it should be"
    );
    let usage = warden.agent("coder").unwrap().call(DESCRIBE_TOOL, json!({}), CallOptions::default()).await.unwrap();
    assert_eq!(usage.text(), "describe_tool takes {\"tool\": \"<name>\"}, the name of a tool you can see");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn unknown_profiles_and_agents_are_named_in_the_error() {
    let warden = fs_with(PolicyRules::default().with_profile("compact", compact())).await;
    assert_eq!(
        warden.host().presented_tools(ProfileChoice::Named("tiny")).unwrap_err().to_string(),
        "unknown tool profile 'tiny'; profiles are [tool_profiles.NAME] tables in the config (configured: compact)"
    );
    let error = warden.agent("ghost").err().expect("no such agent");
    assert_eq!(error, CallError::UnknownAgent { agent: "ghost".into(), known: vec![] });
    assert_eq!(
        error.to_string(),
        "unknown agent 'ghost'; agents are configured as [[agents]] entries in the config (none are configured)"
    );
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_single_underscore_separator_joins_server_and_tool_and_forbids_underscored_servers() {
    let mut rules = PolicyRules::default();
    rules.names = NameRules::new("_", 64).unwrap();
    let warden = fs_with(rules).await;
    let names: Vec<String> = warden.tools().into_iter().map(|entry| entry.name).collect();
    assert_eq!(names.len(), 2);
    assert_eq!(names[0], "fs_read_file");
    assert_eq!(names[1], "fs_write_file");
    warden.shutdown().await;

    // A server name with '_' would make `a_b_c` ambiguous under '_'.
    let mut rules = PolicyRules::default();
    rules.names = NameRules::new("_", 64).unwrap();
    let (connector, _peers) = MemoryConnector::new();
    let spec = ServerSpec { name: "my_fs".into(), connector: Arc::new(connector), settings: settings() };
    let error = Warden::builder().servers(vec![spec]).rules(rules).start().await.err().expect("refused");
    assert!(error.to_string().ends_with("use '-' instead (e.g. 'my-fs')"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_tool_suggests_a_glob_with_the_configured_separator() {
    let coder =
        AgentRules { allowed_tools: ToolPatterns::new(&["fs_read_*"]).unwrap(), auto_approve: true, profile: None };
    let mut rules = PolicyRules::default().with_agent("coder", coder);
    rules.names = NameRules::new("_", 64).unwrap();
    let warden = fs_with(rules).await;
    let error =
        warden.agent("coder").unwrap().call("fs_write_file", json!({}), CallOptions::default()).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "agent 'coder' may not use 'fs_write_file': it is not in the agent's allowed_tools; add the name (or a glob \
         such as 'fs_*') to allowed_tools if it should be"
    );
    warden.shutdown().await;
}
