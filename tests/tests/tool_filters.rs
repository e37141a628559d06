//! Per-server tool filters: `enabled_tools` and `disabled_tools` (exact
//! names or globs, the server's own names) decide which tools exist at all
//! — a filtered tool is listed nowhere and unknown to every caller — in
//! Warden's own config and in the codex file that wrote them first.

use serde_json::json;
use warden_actors::{CallError, Warden, WardenConfig};
use warden_tests::{bins, model_text, scratch_dir, test_config};

fn names(warden: &Warden) -> Vec<String> {
    warden.tools().into_iter().map(|entry| entry.name).collect()
}

#[tokio::test]
async fn filtered_tools_are_listed_nowhere_and_unknown_to_callers() {
    let server = bins::test_server().display().to_string();
    let text = format!(
        "[servers.test]\ncommand = {server:?}\nenabled_tools = [\"echo\", \"a*\"]\ndisabled_tools = [\"add\"]\n"
    );
    let warden = Warden::start(&test_config(&text).unwrap()).await.unwrap();
    warden.settled().await;
    let listed = names(&warden);
    assert!(listed.contains(&"test__echo".to_string()), "{listed:?}");
    assert!(!listed.contains(&"test__add".to_string()), "disabled wins over enabled: {listed:?}");
    assert!(listed.iter().all(|name| name == "test__echo" || name.starts_with("test__a")), "{listed:?}");
    assert_eq!(model_text(&warden, "test__echo", json!({"message": "kept"})).await, "kept");
    let error = warden.call_tool("test__add", json!({"a": 1, "b": 2})).await.unwrap_err();
    assert!(matches!(error, CallError::UnknownTool { .. }), "{error:?}");
    let status = warden.status().into_iter().next().unwrap();
    assert_eq!(status.tools, listed.len(), "the status counts what is shown");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_codex_files_tool_filters_apply() {
    let dir = scratch_dir("codex-filters");
    let path = dir.join("config.toml");
    let server = bins::test_server().display().to_string();
    let text = format!(
        "model = \"o3\"\n[mcp_servers.test]\ncommand = {server:?}\nenabled_tools = [\"echo\", \"add\"]\n\
         disabled_tools = [\"add\"]\n[security]\nauto_approve = true\n"
    );
    std::fs::write(&path, text).unwrap();
    let config = WardenConfig::load(&path).unwrap();
    let warden = Warden::start(&config).await.unwrap();
    warden.settled().await;
    assert_eq!(names(&warden), ["test__echo"]);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_renamed_tool_is_known_by_its_new_name_to_callers_and_to_policy() {
    let server = bins::test_server().display().to_string();
    // The policy names the new name: `say` always asks (and nobody can
    // answer here), the rest is auto-approved.
    let text = format!(
        "[security.tool_policies.test__say]\napproval = \"always\"\n\
         [servers.test]\ncommand = {server:?}\nenabled_tools = [\"echo\", \"add\", \"pid\"]\n\
         [servers.test.rename]\necho = \"say\"\nadd = \"plus\"\nmissing = \"nothing\"\n"
    );
    let warden = Warden::start(&test_config(&text).unwrap()).await.unwrap();
    warden.settled().await;
    let mut listed = names(&warden);
    listed.sort();
    assert_eq!(listed, ["test__pid", "test__plus", "test__say"]);
    // The server is asked for its own tool `add`.
    assert_eq!(model_text(&warden, "test__plus", json!({"a": 2, "b": 3})).await, "5\n{\"sum\":5}");
    let error = warden.call_tool("test__say", json!({"message": "hi"})).await.unwrap_err();
    assert!(matches!(error, CallError::NoApprover { .. }), "the policy of the new name applies: {error:?}");
    let error = warden.call_tool("test__echo", json!({"message": "hi"})).await.unwrap_err();
    assert!(matches!(error, CallError::UnknownTool { .. }), "the old name is gone: {error:?}");
    let entry = warden.tools().into_iter().find(|entry| entry.name == "test__plus").unwrap();
    assert_eq!((entry.tool.name.as_str(), entry.upstream_name.as_str()), ("plus", "add"));
    let status = warden.status().into_iter().next().unwrap();
    assert!(
        status.warnings.iter().any(|warning| warning.contains("names tool 'missing', which the server does not list")),
        "a rename of a tool the server lacks is said: {:?}",
        status.warnings
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn a_reload_applies_new_filters_and_renames_without_restarting_the_server() {
    let server = bins::test_server().display().to_string();
    let before = format!("[servers.test]\ncommand = {server:?}\n");
    let warden = Warden::start(&test_config(&before).unwrap()).await.unwrap();
    warden.settled().await;
    let pid = model_text(&warden, "test__pid", json!({})).await;
    assert!(names(&warden).contains(&"test__echo".to_string()));

    let after = format!("{before}disabled_tools = [\"echo\"]\nrename = {{ add = \"plus\" }}\n");
    let report = warden.reload(&test_config(&after).unwrap()).await.unwrap();
    assert_eq!(
        (report.unchanged.clone(), report.reshaped.clone()),
        (vec!["test".to_string()], vec!["test".to_string()])
    );
    let mut changes = warden.tool_changes();
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !names(&warden).contains(&"test__plus".to_string()) {
            changes.changed().await;
        }
    })
    .await
    .expect("the renamed tool appears");
    let listed = names(&warden);
    assert!(!listed.contains(&"test__echo".to_string()) && !listed.contains(&"test__add".to_string()), "{listed:?}");
    assert_eq!(model_text(&warden, "test__plus", json!({"a": 1, "b": 1})).await, "2\n{\"sum\":2}");
    assert_eq!(model_text(&warden, "test__pid", json!({})).await, pid, "the same process serves");
    warden.shutdown().await;
}
