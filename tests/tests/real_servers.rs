//! Warden against MCP servers other people wrote, installed at pinned
//! versions by `warden_tests::real_servers` (see there for the facts these
//! tests rely on). Real time, real processes, real npm packages.

use serde_json::json;
use warden_tests::real_servers::{EVERYTHING, FILESYSTEM};
use warden_tests::{bins, scratch_dir, server_table, start_running};

#[tokio::test]
async fn server_everything_tools_are_namespaced_and_callable() {
    let warden = start_running(&server_table("everything", EVERYTHING.command(&[]), "")).await;
    // The server's own tools (Warden's wrappers of its resources and
    // prompts are checked in real_server_wrappers.rs).
    let names: Vec<String> =
        warden.tools().into_iter().filter(|entry| entry.primitive_tool.is_none()).map(|entry| entry.name).collect();
    assert_eq!(
        names,
        [
            "everything__echo",
            "everything__get-annotated-message",
            "everything__get-env",
            "everything__get-resource-links",
            "everything__get-resource-reference",
            "everything__get-structured-content",
            "everything__get-sum",
            "everything__get-tiny-image",
            "everything__gzip-file-as-resource",
            // Registered only after `initialized`, announced by list_changed.
            "everything__simulate-research-query",
            "everything__toggle-simulated-logging",
            "everything__toggle-subscriber-updates",
            "everything__trigger-long-running-operation",
        ]
    );
    let status = &warden.status()[0];
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(status.server_info.as_ref().unwrap().name, "mcp-servers/everything");

    let echo = warden.call_tool("everything__echo", json!({"message": "hello"})).await.unwrap();
    assert_eq!(echo.text(), "Echo: hello");
    let sum = warden.call_tool("everything__get-sum", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(sum.text(), "The sum of 2 and 3 is 5.");

    // The server's own annotations and schema reach the host untouched.
    let tool = warden.tools().into_iter().find(|entry| entry.name == "everything__echo").unwrap().tool;
    let annotations = tool.annotations.unwrap();
    assert_eq!((annotations.read_only_hint, annotations.destructive_hint), (Some(true), Some(false)));
    assert_eq!(tool.input_schema["required"], json!(["message"]));
    assert!(tool.extra.contains_key("execution"), "unmodelled members are kept: {:?}", tool.extra.keys());
    warden.shutdown().await;
}

#[tokio::test]
async fn server_filesystem_reads_a_file_and_refuses_outside_its_root() {
    let root = scratch_dir("fs-root");
    std::fs::write(root.join("note.txt"), "written by the test\n").unwrap();
    let outside = scratch_dir("fs-outside").join("secret.txt");
    std::fs::write(&outside, "no").unwrap();
    let root = root.canonicalize().unwrap();
    let warden = start_running(&server_table("files", FILESYSTEM.command(&[root.to_str().unwrap()]), "")).await;
    assert_eq!(warden.status()[0].tools, 14);

    let path = root.join("note.txt");
    let read = warden.call_tool("files__read_text_file", json!({"path": path})).await.unwrap();
    assert!(!read.is_error());
    assert_eq!(read.text(), "written by the test\n");

    let refused = warden.call_tool("files__read_text_file", json!({"path": outside})).await.unwrap();
    assert!(refused.is_error());
    assert!(refused.text().starts_with("Access denied - path outside allowed directories"), "{}", refused.text());
    warden.shutdown().await;
}

#[tokio::test]
async fn two_real_servers_and_the_test_server_run_side_by_side() {
    let root = scratch_dir("fs-side");
    let mut toml = server_table("everything", EVERYTHING.command(&[]), "");
    toml.push_str(&server_table("files", FILESYSTEM.command(&[root.to_str().unwrap()]), ""));
    toml.push_str(&format!("[servers.test]\ncommand = {:?}\n", bins::test_server().display().to_string()));
    let warden = start_running(&toml).await;
    let counts: Vec<(String, usize)> = warden.status().into_iter().map(|s| (s.name, s.tools)).collect();
    assert_eq!(counts, [("everything".to_string(), 17), ("files".to_string(), 14), ("test".to_string(), 14)]);
    let (a, b, c) = tokio::join!(
        warden.call_tool("everything__echo", json!({"message": "a"})),
        warden.call_tool("files__list_allowed_directories", json!({})),
        warden.call_tool("test__echo", json!({"message": "c"})),
    );
    assert_eq!(a.unwrap().text(), "Echo: a");
    assert!(b.unwrap().text().contains(root.canonicalize().unwrap().to_str().unwrap()));
    assert_eq!(c.unwrap().text(), "c");
    warden.shutdown().await;
}

#[test]
fn the_embedding_example_lists_and_calls_a_real_tool() {
    let dir = scratch_dir("embed");
    let config = dir.join("warden.toml");
    std::fs::write(&config, server_table("everything", EVERYTHING.command(&[]), "")).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_embed-host"))
        .arg(&config)
        .arg("everything__echo")
        .arg(r#"{"message":"from the example"}"#)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "stdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.starts_with("server everything: running, 17 tools\n"), "{stdout}");
    assert!(stdout.contains("tool everything__get-sum\n"), "{stdout}");
    assert!(stdout.ends_with("result: Echo: from the example\n"), "{stdout}");
    // echo is annotated read-only: nobody was asked.
    assert!(!String::from_utf8_lossy(&output.stderr).contains("approval asked"));

    // toggle-simulated-logging is neither read-only nor destructive: Warden
    // asks the example's approver, which approves medium risk.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_embed-host"))
        .arg(&config)
        .arg("everything__toggle-simulated-logging")
        .arg("{}")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("\nresult: Started simulated, random-leveled logging"), "{stdout}");
    assert!(
        stderr.contains(
            "approval asked for everything__toggle-simulated-logging (medium): 'everything__toggle-simulated-logging' \
             is medium risk (Warden default); its approval is 'unless_auto_approved' (Warden default), auto-approval is off and no grant covers it\n"
        ),
        "{stderr}"
    );

    // As an agent whose allowlist has echo only, and with a stop button.
    let agent = "[[agents]]\nname = \"reader\"\nallowed_tools = [\"everything__echo\"]\n";
    std::fs::write(&config, format!("{}{agent}", server_table("everything", EVERYTHING.command(&[]), ""))).unwrap();
    let run = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_embed-host")).arg(&config).args(args).output();
        let output = output.unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned(), output.stderr)
    };
    let (code, stdout, _) = run(&["everything__get-sum", r#"{"a":1,"b":2}"#, "--agent", "reader"]);
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        stdout.ends_with(
            "call failed: agent 'reader' may not use 'everything__get-sum': it is not in the agent's allowed_tools; \
             add the name (or a glob such as 'everything__*') to allowed_tools if it should be\n"
        ),
        "{stdout}"
    );
    let (code, stdout, _) = run(&["everything__echo", r#"{"message":"m"}"#, "--agent", "ghost"]);
    assert_eq!(code, Some(1));
    assert!(stdout.contains("call failed: unknown agent 'ghost'"), "{stdout}");
    let started = std::time::Instant::now();
    let long = r#"{"duration":30,"steps":30}"#;
    let (code, stdout, stderr) = run(&["everything__trigger-long-running-operation", long, "--cancel-after", "2500"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(
        stdout.ends_with("cancelled after 2500 ms: Warden told the server and freed the call's slot\n"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&stderr).contains("progress 1/30"), "progress arrived before the stop");
    assert!(started.elapsed() < std::time::Duration::from_secs(25), "the 30 s operation was not waited for");
}

#[tokio::test]
async fn a_real_servers_progress_reaches_the_caller_and_its_cancellation_frees_the_slot() {
    let warden = start_running(&server_table("everything", EVERYTHING.command(&[]), "")).await;
    let (sink, mut reports) = tokio::sync::mpsc::channel(16);
    let options = warden_actors::CallOptions::default().progress(sink);
    let arguments = json!({"duration": 0.5, "steps": 5});
    let result = warden.host().call("everything__trigger-long-running-operation", arguments, options).await.unwrap();
    assert_eq!(result.text(), "Long running operation completed. Duration: 0.5 seconds, Steps: 5.");
    let mut seen = Vec::new();
    while let Ok(report) = reports.try_recv() {
        seen.push((report.progress, report.total));
    }
    assert_eq!(seen, [(1.0, Some(5.0)), (2.0, Some(5.0)), (3.0, Some(5.0)), (4.0, Some(5.0)), (5.0, Some(5.0))]);

    // Abandoned after a moment, the 60 s operation does not hold anything:
    // the next call answers at once.
    let long = json!({"duration": 60, "steps": 60});
    let abandoned = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        warden.call_tool("everything__trigger-long-running-operation", long),
    );
    assert!(abandoned.await.is_err());
    let echoed = warden.call_tool("everything__echo", json!({"message": "next"})).await.unwrap();
    assert_eq!(echoed.text(), "Echo: next");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_secret_handed_to_a_real_server_never_comes_back_to_the_host() {
    // server-everything's get-env answers with its whole environment: the
    // token Warden passes in `env` (expanded from Warden's own environment)
    // and a variable it inherits, named in `security.secrets`, would both
    // reach the model without leak detection.
    std::env::set_var("WARDEN_E2E_TOKEN_SOURCE", "e2e-s3cret-9f8e7d6c5b4a");
    std::env::set_var("WARDEN_E2E_INHERITED", "inherited-77aa88bb99cc");
    let server = server_table(
        "everything",
        EVERYTHING.command(&[]),
        "env = { SERVICE_TOKEN = \"${WARDEN_E2E_TOKEN_SOURCE}\" }\n",
    );
    let warden = start_running(&format!("{server}\n[security]\nsecrets = [\"WARDEN_E2E_INHERITED\"]\n")).await;

    let raw = warden.call_tool("everything__get-env", json!({})).await.unwrap();
    let text = serde_json::to_string(&raw).unwrap();
    assert!(!text.contains("e2e-s3cret-9f8e7d6c5b4a"), "{text}");
    assert!(!text.contains("inherited-77aa88bb99cc"), "{text}");
    assert!(text.contains("[REDACTED:WARDEN_E2E_INHERITED]"), "{text}");
    let token_label =
        ["[REDACTED:SERVICE_TOKEN]", "[REDACTED:WARDEN_E2E_TOKEN_SOURCE]"].iter().any(|label| text.contains(label));
    assert!(token_label, "the token is redacted under one of its names: {text}");

    let rendered =
        warden.host().call_text("everything__get-env", json!({}), warden_actors::CallOptions::default()).await.unwrap();
    assert!(!rendered.text.contains("e2e-s3cret-9f8e7d6c5b4a") && !rendered.text.contains("inherited-77aa88bb99cc"));

    // Sending the token to a server is refused before it leaves.
    let error = warden.call_tool("everything__echo", json!({"message": "e2e-s3cret-9f8e7d6c5b4a"})).await.unwrap_err();
    assert!(error.to_string().starts_with("'everything__echo' was not sent: its arguments contain "), "{error}");
    assert!(error.to_string().contains("(at /message)"), "{error}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_tool_that_must_run_as_a_task_is_called_as_one_and_answers_like_any_call() {
    // server-everything's `simulate-research-query` says
    // `execution.taskSupport: "required"` (MCP 2025-11-25 tasks): four
    // stages of a second each, polled, then its report.
    let warden = start_running(&server_table("everything", EVERYTHING.command(&[]), "")).await;
    let started = std::time::Instant::now();
    let result = warden
        .call_tool("everything__simulate-research-query", json!({"topic": "ferrets"}))
        .await
        .expect("the task completes");
    assert!(!result.is_error(), "{result:?}");
    let text = result.text();
    assert!(text.contains("ferrets"), "the report names the topic: {text}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(3), "the task's four stages ran: {text}");
    warden.shutdown().await;
}
