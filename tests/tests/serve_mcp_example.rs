//! The serve-mcp example (`examples/serve_mcp.rs`): a host that embeds
//! Warden and mounts the MCP front on its own listener, driven by the
//! official TypeScript SDK client (`tests/node/serve_mcp_client.mjs`), as
//! any MCP client would use it.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use warden_tests::{bins, real_servers, scratch_dir, server_table};

const TOKEN: &str = "serve-mcp-test-token-0123456789";

#[test]
fn an_sdk_client_calls_through_the_host_with_its_token_and_its_approver() {
    let dir = scratch_dir("serve-mcp");
    let config = dir.join("warden.toml");
    let policies = "[security.tool_policies.test__echo]\napproval = \"never\"\n\
                    [security.tool_policies.test__add]\napproval = \"always\"\n\
                    [security.tool_policies.test__crash]\nrisk = \"high\"\n";
    let server = (bins::test_server().display().to_string(), Vec::new());
    std::fs::write(&config, server_table("test", server, policies)).unwrap();
    let client = real_servers::node_script("serve_mcp_client.mjs");

    let mut host = Command::new(env!("CARGO_BIN_EXE_serve-mcp"))
        .arg(&config)
        .arg("0")
        .env("SERVE_MCP_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(host.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("serving ").unwrap_or_else(|| panic!("not the example's first line: {line:?}"));
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{url}");

    let (program, mut args) = client;
    args.extend([url.to_string(), TOKEN.to_string()]);
    let output = Command::new(program).args(&args).output().unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{printed}\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(printed.lines().last().unwrap_or_default()).unwrap();

    assert_eq!(seen["server"], "warden");
    let tools = seen["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("test__echo")) && tools.contains(&json!("test__crash")), "{seen}");
    assert_eq!(seen["echo"], "through the host");
    // Low risk, but approval "always": the host's approver was asked and approved.
    assert_eq!(seen["add"], json!({"error": false, "text": "5"}));
    // High risk: refused by the host's approver, said to the client.
    assert_eq!(seen["refused"]["error"], true, "{seen}");
    let refusal = seen["refused"]["text"].as_str().unwrap();
    assert!(refusal.contains("this host refuses high-risk tools"), "{refusal}");
    let wrong = seen["wrong_token"].as_str().unwrap();
    // The SDK shows the refusal's body: what to send instead.
    assert!(wrong.contains("send `Authorization: Bearer $SERVE_MCP_TOKEN`"), "{wrong}");

    // Ctrl-C: the host ends its sessions, shuts Warden down and exits.
    // SAFETY: kill(2) on the child's own pid.
    unsafe { libc::kill(host.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = host.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve-mcp did not stop within 15 s of Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut host.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("approval asked for test__add (low): Approve"), "{stderr}");
    assert!(stderr.contains("approval asked for test__crash (high): Deny"), "{stderr}");
    assert!(stderr.contains("stopping: ending sessions and shutting the servers down"), "{stderr}");
}
