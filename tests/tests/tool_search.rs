//! Tool search (issue 49): a profile that defers tools, the built-in
//! `find_tools`, and found tools called by name — against the reference
//! filesystem and everything servers.

use serde_json::{json, Value};
use warden_actors::{CallOptions, ProfileChoice, Warden, CALL_TOOL, DESCRIBE_TOOL, FIND_TOOLS};
use warden_tests::real_servers::{EVERYTHING, FILESYSTEM};
use warden_tests::{scratch_dir, server_table, start_running};

/// The two servers; agent `coder` may call the filesystem's tools and
/// `everything__echo`, and sees them through the profile `lean`: every
/// tool deferred but `files__list_directory`.
async fn warden() -> (Warden, std::path::PathBuf) {
    let root = scratch_dir("tool-search");
    std::fs::write(root.join("notes.txt"), "the notes of the day").unwrap();
    let mut toml = server_table("files", FILESYSTEM.command(&[root.to_str().unwrap()]), "");
    toml += &server_table("everything", EVERYTHING.command(&[]), "");
    toml += r#"
[tool_profiles.lean]
default = "deferred"
tools = { "files__list_directory" = "full" }

[[agents]]
name = "coder"
allowed_tools = ["files__*", "everything__echo"]
profile = "lean"
"#;
    (start_running(&toml).await, root)
}

fn names(found: &[warden_actors::FoundTool]) -> Vec<&str> {
    found.iter().map(|tool| tool.name.as_str()).collect()
}

#[tokio::test]
async fn a_deferring_profile_presents_its_pinned_tools_and_find_tools_and_the_rest_is_found_and_called() {
    let (warden, root) = warden().await;
    let coder = warden.agent("coder").unwrap();
    let shown: Vec<String> = coder
        .presented_tools(ProfileChoice::Own)
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        shown,
        ["files__list_directory", DESCRIBE_TOOL, FIND_TOOLS, CALL_TOOL],
        "only the pinned tool, and the built-ins"
    );
    // Without a profile nothing is deferred: no find_tools.
    let everything = warden.host().presented_tools(ProfileChoice::Own).unwrap();
    assert!(everything.iter().all(|tool| tool["name"] != FIND_TOOLS));

    let found = coder.find_tools("read the contents of a file", 3).unwrap();
    assert!(names(&found).contains(&"files__read_text_file"), "{:?}", names(&found));
    assert!(found.iter().all(|tool| tool.definition["inputSchema"]["properties"].is_object()), "full definitions");
    assert!(found[0].reason.starts_with("matched "), "{}", found[0].reason);

    // The allowlist applies before ranking: the coder never learns of get-sum.
    let adding = coder.find_tools("add two numbers together", 5).unwrap();
    assert!(names(&adding).iter().all(|name| name.starts_with("files__") || *name == "everything__echo"));
    let host = warden.host().find_tools("add two numbers together", 1).unwrap();
    assert_eq!(names(&host), ["everything__get-sum"]);

    // Through the built-in tool, as a model calls it; then the found tool,
    // never presented, called by name at once.
    let answer = coder
        .call(FIND_TOOLS, json!({"query": "show the text of a file", "limit": 2}), CallOptions::default())
        .await
        .unwrap();
    let tools = answer.structured_content.as_ref().unwrap()["tools"].as_array().unwrap().clone();
    assert!(tools.len() <= 2 && !tools.is_empty(), "{tools:?}");
    let first: &Value = &tools[0];
    assert!(first["description"].is_string() && first["reason"].is_string(), "{first}");
    let path = root.join("notes.txt");
    let read = coder
        .call("files__read_text_file", json!({"path": path.to_str().unwrap()}), CallOptions::default())
        .await
        .unwrap();
    assert_eq!(read.text(), "the notes of the day");

    // Through call_tool: the same as calling the tool, allowlist and all.
    let arguments = json!({"name": "files__read_text_file", "arguments": {"path": path.to_str().unwrap()}});
    let via = coder.call(CALL_TOOL, arguments, CallOptions::default()).await.unwrap();
    assert_eq!(via.text(), "the notes of the day");
    let outside = json!({"name": "everything__get-sum", "arguments": {"a": 1, "b": 2}});
    let refused = coder.call(CALL_TOOL, outside, CallOptions::default()).await;
    assert!(matches!(refused, Err(warden_actors::CallError::NotAllowed { .. })), "{refused:?}");

    // A mistake is a result the model reads.
    let wrong = coder.call(FIND_TOOLS, json!({"limit": 99}), CallOptions::default()).await.unwrap();
    assert!(wrong.is_error == Some(true) && wrong.text().contains("query"), "{wrong:?}");
    warden.shutdown().await;
}
