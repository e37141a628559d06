//! What a server adds without a word Warden hears is there for the
//! daemon's clients too: `warden schema`, `warden tools`, and an MCP
//! client of `warden mcp` listing its tools again — against the official
//! Python SDK's server (`tests/python/growing_server.py`, pinned) speaking
//! 2026-07-28, where it announces nothing Warden can hear.

#![allow(unused_crate_dependencies)]

mod common;

use common::{stderr, stdout, Home, LineClient};
use serde_json::{json, Value};
use warden_tests::real_servers::{python_script, python_server_command};

#[test]
fn what_a_server_added_unannounced_reaches_warden_schema_warden_tools_and_a_front_client() {
    for mode in ["quiet", "listening"] {
        let home = Home::new(&format!("unannounced-{mode}"));
        let (python, mut args) = python_server_command(&python_script("growing_server.py"));
        args.push(mode.to_string());
        let config = format!(
            "[security]\nauto_approve = true\n[servers.py]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\n"
        );
        std::fs::write(&home.config, config).unwrap();
        let status: Value = serde_json::from_str(&stdout(&home.warden(&["status", "--json"]))).unwrap();
        assert_eq!(status["servers"][0]["protocol_version"], "2026-07-28", "{mode}: {status}");

        assert!(home.call("py__grow", r#"{"name": "first"}"#).starts_with("grew"));
        let schema = home.warden(&["schema", "py__first"]);
        assert!(schema.status.success(), "{mode}: {}", stderr(&schema));
        let schema: Value = serde_json::from_str(&stdout(&schema)).unwrap();
        assert_eq!(schema["type"], "object", "{mode}: {schema}");

        assert!(home.call("py__grow", r#"{"name": "second"}"#).starts_with("grew"));
        let tools = stdout(&home.warden(&["tools"]));
        assert!(tools.contains("py__second"), "{mode}: {tools}");

        let mut client = LineClient::start(&home, &["mcp"]);
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
        client.send(&initialize.to_string());
        client.answer(1);
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        let grow = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "py__grow", "arguments": {"name": "third"}}});
        client.send(&grow.to_string());
        assert_eq!(client.answer(2)["result"]["content"][0]["text"], "grew", "{mode}");
        client.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}).to_string());
        let listed = client.answer(3);
        let names: Vec<&str> =
            listed["result"]["tools"].as_array().unwrap().iter().filter_map(|tool| tool["name"].as_str()).collect();
        assert!(names.contains(&"py__third"), "{mode}: a front client's own listing lacks the new tool: {names:?}");
        drop(client);
        let _ = home.warden(&["stop"]);
    }
}
