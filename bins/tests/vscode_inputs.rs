//! A VS Code `${input:ID}` that no variable sets is asked for once at the
//! terminal, typed unseen, and reaches the server through the daemon.

#![allow(unused_crate_dependencies)]

mod common;

use common::{stderr, Home};

#[test]
fn an_unset_vscode_input_is_asked_for_at_the_terminal_and_reaches_the_daemons_server() {
    use warden_tests::real_servers::{python_script, python_server_command};
    let mut home = Home::new("vscode-input-tty");
    home.config = home.config.with_file_name("mcp.json");
    let file = home.config.clone();
    let server = warden_tests::bins::test_server().display().to_string();
    let text = serde_json::json!({
        "security": {"auto_approve": true},
        "inputs": [{"type": "promptString", "id": "api-token", "description": "The API token", "password": true}],
        "servers": {"test": {"type": "stdio", "command": server, "env": {"TOKEN": "${input:api-token}"}}}
    });
    std::fs::write(&file, text.to_string()).unwrap();
    let file = file.display().to_string();
    // Without a terminal, nothing is asked: the error names the variable.
    let output = home.warden(&["call", "test__env", r#"{"name":"TOKEN"}"#]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("set `API_TOKEN`"), "{}", stderr(&output));
    // At a terminal: asked once, unseen, kept for the daemon it starts.
    let (python, mut args) = python_server_command(&python_script("tty_drive.py"));
    let steps = serde_json::json!([["to skip this question): ", "s3cret-value"]]).to_string();
    args.extend([steps, env!("CARGO_BIN_EXE_warden").into(), "call".into(), "test__env".into()]);
    args.extend([r#"{"name":"TOKEN"}"#.into(), "--config".into(), file.clone()]);
    let output = std::process::Command::new(python)
        .args(&args)
        .env("WARDEN_HOME", &home.dir)
        .env_remove("API_TOKEN")
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    assert_eq!(output.status.code(), Some(0), "{screen}");
    assert!(screen.contains("asks for input 'api-token' (The API token)"), "{screen}");
    assert!(screen.contains("value (or set $API_TOKEN to skip this question)"), "{screen}");
    assert!(screen.contains("kept as $API_TOKEN"), "{screen}");
    // Typed unseen; the server had it, and Warden, knowing it for a
    // secret, redacts it from the server's answer by its variable's name.
    assert!(!screen.contains("s3cret-value"), "{screen}");
    assert!(screen.trim_end().ends_with("[REDACTED:API_TOKEN]"), "{screen}");
    // The daemon it started has the value: a later call asks nothing.
    let output = home.warden(&["call", "test__env", r#"{"name":"TOKEN"}"#]);
    assert_eq!(String::from_utf8_lossy(&output.stdout), "[REDACTED:API_TOKEN]\n", "{}", stderr(&output));
    let _ = home.warden(&["stop"]);
}
