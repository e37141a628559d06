//! Tool search through the MCP front (issue 49): the official Python and
//! TypeScript SDK clients, as an agent whose profile defers its tools,
//! each find a tool, are told the list changed, see it listed, and call
//! it — directly and through `call_tool`.

#![allow(unused_crate_dependencies)]

mod common;

use common::front_client::TOKEN;
use common::{bound_port, Home};
use serde_json::json;
use warden_tests::{bins, real_servers};

#[test]
fn an_sdk_client_finds_a_deferred_tool_sees_it_listed_after_list_changed_and_calls_it() {
    let home = Home::new("front-tool-search");
    let text = format!(
        "[security]\nauto_approve = true\n\n[servers.test]\ncommand = {:?}\nargs = [\"--tools\", \"echo,add,sleep\"]\n\n\
         [tool_profiles.lean]\ndefault = \"deferred\"\ntools = {{ \"test__echo\" = \"full\" }}\n\n\
         [[agents]]\nname = \"finder\"\nallowed_tools = [\"test__*\"]\nprofile = \"lean\"\n\n\
         [front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n",
        bins::test_server().display().to_string()
    );
    std::fs::write(&home.config, text).unwrap();
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0));
    let port = bound_port(&status, "front");
    let url = format!("http://127.0.0.1:{port}/mcp/agents/finder");
    let clients = [
        real_servers::python_server_command(&real_servers::python_script("search_client.py")),
        real_servers::node_script("search_client.mjs"),
    ];
    for (program, mut args) in clients {
        args.extend([url.clone(), TOKEN.to_string()]);
        let seen = home.client_json(&program, &args);
        assert_eq!(seen["listed"], json!(["call_tool", "describe_tool", "find_tools", "test__echo"]), "{seen}");
        assert_eq!(seen["found"][0], "test__add", "{seen}");
        assert!(seen["reason"].as_str().unwrap_or_default().starts_with("matched "), "{seen}");
        assert_eq!(seen["list_changed"], true, "a find that adds tools says the list changed: {seen}");
        // Listed now: what was listed, and what was found — nothing else.
        let mut expected: Vec<String> = ["listed", "found"]
            .iter()
            .flat_map(|key| seen[*key].as_array().unwrap().iter().map(|name| name.as_str().unwrap().to_string()))
            .collect();
        expected.sort();
        expected.dedup();
        assert_eq!(seen["relisted"], json!(expected), "the found tool is listed: {seen}");
        assert_eq!(seen["sum"], "5", "{seen}");
        assert_eq!(seen["via_call_tool"], "via call_tool", "{seen}");
    }
}
