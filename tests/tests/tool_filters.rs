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
