//! Warden against real child processes: the scriptable test server over
//! stdio, on real time (paused time and real processes do not mix).
//!
//! These tests cover what only a process can show: spawning, environment
//! and working directory, pipes, crashes, garbage on stdout, stderr tails,
//! and that nothing is left running after shutdown.

use std::time::Duration;

use serde_json::json;
use warden_actors::{CallError, CrashRetry, ServerState, Warden, WardenConfig};
use warden_tests::{bins, process_alive, scratch_dir, test_config, wait_until_gone};

/// A config whose servers all run the test server, each with `args` and
/// the TOML lines `server_extra`.
fn config(servers: &[(&str, &[&str])], server_extra: &str) -> WardenConfig {
    let server = bins::test_server();
    let mut text = String::new();
    for (name, args) in servers {
        let command = server.display().to_string();
        text.push_str(&format!("[servers.{name}]\ncommand = {command:?}\nargs = {args:?}\n{server_extra}\n"));
    }
    test_config(&text).expect("the test config is valid")
}

async fn started(servers: &[(&str, &[&str])]) -> Warden {
    started_with(servers, "").await
}

async fn started_with(servers: &[(&str, &[&str])], server_extra: &str) -> Warden {
    let warden = Warden::start(&config(servers, server_extra)).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("servers settle");
    warden
}

fn state_of(warden: &Warden, server: &str) -> ServerState {
    warden.status().into_iter().find(|status| status.name == server).expect("configured").state
}

fn names(warden: &Warden) -> Vec<String> {
    warden.tools().into_iter().map(|entry| entry.name).collect()
}

async fn text_of(warden: &Warden, name: &str, arguments: serde_json::Value) -> String {
    let result = warden.call_tool(name, arguments).await.unwrap_or_else(|error| panic!("{name}: {error}"));
    assert!(!result.is_error(), "{name} reported an error: {}", result.text());
    result.text()
}

#[tokio::test]
async fn tools_are_namespaced_and_calls_round_trip() {
    let warden = started(&[("test", &[])]).await;
    assert_eq!(
        names(&warden),
        [
            "test__add",
            "test__ask_client",
            "test__crash",
            "test__cwd",
            "test__echo",
            "test__env",
            "test__fail",
            "test__garbage",
            "test__huge",
            "test__image",
            "test__notify",
            "test__pid",
            "test__sleep",
            "test__stderr",
        ]
    );
    let status = &warden.status()[0];
    assert_eq!(status.state, ServerState::Running);
    assert_eq!(status.protocol_version.as_deref(), Some("2025-11-25"));
    assert_eq!(status.server_info.as_ref().map(|info| info.name.as_str()), Some("warden-test-server"));

    assert_eq!(text_of(&warden, "test__echo", json!({"message": "héllo\nworld"})).await, "héllo\nworld");
    let sum = warden.call_tool("test__add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(sum.text(), "5");
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));

    // Fields Warden does not model reach the host as the server sent them.
    let add = warden.tools().into_iter().find(|entry| entry.name == "test__add").unwrap();
    assert_eq!(add.tool.extra["_meta"], json!({"warden-test/owner": "tests"}));
    assert!(add.tool.output_schema.is_some());
    assert_eq!(add.tool.annotations.as_ref().unwrap().read_only_hint, Some(true));
    warden.shutdown().await;
}

#[tokio::test]
async fn a_tool_error_is_a_result_not_a_failure() {
    let warden = started(&[("test", &[])]).await;
    let result = warden.call_tool("test__fail", json!({"message": "disk full"})).await.unwrap();
    assert!(result.is_error());
    assert_eq!(result.text(), "disk full");
    warden.shutdown().await;
}

#[tokio::test]
async fn tools_added_after_initialized_are_not_lost() {
    // Like server-everything: registers a tool on `initialized` and announces
    // it with tools/list_changed.
    let warden = started(&[("test", &["--list-changed-after-initialized"])]).await;
    assert!(names(&warden).contains(&"test__late_tool".to_string()), "{:?}", names(&warden));
    assert_eq!(text_of(&warden, "test__late_tool", json!({})).await, "late");
    warden.shutdown().await;
}

#[tokio::test]
async fn list_changed_during_use_refreshes_the_tools_and_tells_the_host() {
    let warden = started(&[("test", &[])]).await;
    let mut changes = warden.tool_changes();
    assert!(!names(&warden).contains(&"test__late_tool".to_string()));
    assert_eq!(text_of(&warden, "test__notify", json!({})).await, "notified");
    let tools = tokio::time::timeout(Duration::from_secs(10), changes.changed()).await.expect("a change is announced");
    let tools: Vec<String> = tools.expect("Warden is running").into_iter().map(|entry| entry.name).collect();
    assert!(tools.contains(&"test__late_tool".to_string()), "{tools:?}");
    assert_eq!(warden.status()[0].tools, 15);
    assert_eq!(text_of(&warden, "test__late_tool", json!({})).await, "late");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_cleared_environment_passes_only_what_is_allowed() {
    std::env::set_var("WARDEN_TEST_PASSED", "through");
    std::env::set_var("WARDEN_TEST_WITHHELD", "secret");
    let extra = "inherit_env = false\npass_env = [\"WARDEN_TEST_PASSED\"]\nenv = { SET = \"here\" }";
    let warden = started_with(&[("test", &[])], extra).await;
    assert_eq!(text_of(&warden, "test__env", json!({"name": "WARDEN_TEST_PASSED"})).await, "through");
    assert_eq!(text_of(&warden, "test__env", json!({"name": "SET"})).await, "here");
    assert_eq!(text_of(&warden, "test__env", json!({"name": "WARDEN_TEST_WITHHELD"})).await, "<unset>");
    assert_eq!(text_of(&warden, "test__env", json!({"name": "HOME"})).await, "<unset>");
    warden.shutdown().await;
}

#[tokio::test]
async fn garbage_on_stdout_is_skipped_and_the_call_completes() {
    let warden = started(&[("test", &["--garbage-at-start"])]).await;
    assert_eq!(warden.status()[0].state, ServerState::Running);
    assert_eq!(text_of(&warden, "test__garbage", json!({})).await, "after garbage");
    assert_eq!(text_of(&warden, "test__echo", json!({"message": "still fine"})).await, "still fine");
    warden.shutdown().await;
}

#[tokio::test]
async fn an_oversized_answer_is_dropped_without_killing_the_connection() {
    let server = bins::test_server();
    let text = format!(
        "max_message_bytes = 65536\ncall_timeout_secs = 2\n[servers.test]\ncommand = {:?}\n",
        server.display().to_string()
    );
    let config = test_config(&text).unwrap();
    let warden = Warden::start(&config).await.unwrap();
    warden.settled().await;
    // Under the limit: delivered whole.
    assert_eq!(text_of(&warden, "test__huge", json!({"bytes": 60000})).await.len(), 60000);
    // Over it: the line is not read, but its first bytes name the request,
    // which fails at once saying why (not a timeout 2 s later)...
    let started = std::time::Instant::now();
    let error = warden.call_tool("test__huge", json!({"bytes": 100000})).await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(1), "{:?}", started.elapsed());
    let said = error.to_string();
    assert!(said.starts_with("server 'test' answered 'test__huge', but the answer is 100"), "{said}");
    assert!(said.contains("more than `max_message_bytes` (65536) allows"), "{said}");
    // ...and the connection is still good.
    assert_eq!(text_of(&warden, "test__echo", json!({"message": "ok"})).await, "ok");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_tool_list_over_the_size_limit_fails_the_server_at_once_naming_the_size() {
    let server = bins::test_server().display().to_string();
    let extra: Vec<String> = (0..40).flat_map(|n| ["--extra-tool".to_string(), format!("tool_{n:02}")]).collect();
    let text = format!("max_message_bytes = 1024\n[servers.test]\ncommand = {server:?}\nargs = {extra:?}\n");
    let warden = Warden::start(&test_config(&text).unwrap()).await.unwrap();
    let started = std::time::Instant::now();
    warden.settled().await;
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "it waited for the startup timeout");
    let status = &warden.status()[0];
    let said = status.state.to_string();
    assert!(said.contains("its `tools/list` answer is"), "{said}");
    assert!(said.contains("more than `max_message_bytes` (1024) allows"), "{said}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_request_larger_than_the_pipe_keeps_its_place_among_small_ones() {
    // A 2 MB request does not fit the pipe at once: its rest queues for the
    // writer task, and the small requests sent after it must queue behind
    // it rather than be written into the middle of it.
    let warden = started(&[("test", &[])]).await;
    let big = "y".repeat(2 * 1024 * 1024);
    let big_call = warden.call_tool("test__echo", json!({"message": big}));
    let small_calls = async {
        let mut texts = Vec::new();
        for i in 0..20 {
            texts.push(text_of(&warden, "test__echo", json!({"message": format!("small {i}")})).await);
        }
        texts
    };
    let (big_result, small) = tokio::join!(big_call, small_calls);
    assert_eq!(big_result.unwrap().text().len(), big.len());
    assert_eq!(small, (0..20).map(|i| format!("small {i}")).collect::<Vec<_>>());
    warden.shutdown().await;
}

#[tokio::test]
async fn a_slow_call_does_not_hold_up_a_fast_one() {
    let warden = started(&[("test", &[])]).await;
    let slow = warden.call_tool("test__sleep", json!({"ms": 1500}));
    let fast = async {
        let text = text_of(&warden, "test__echo", json!({"message": "fast"})).await;
        (text, std::time::Instant::now())
    };
    let ((slow, slow_done), (fast, fast_done)) = tokio::join!(async { (slow.await, std::time::Instant::now()) }, fast);
    assert_eq!(fast, "fast");
    assert_eq!(slow.unwrap().text(), "slept 1500 ms");
    assert!(fast_done < slow_done, "the echo waited for the sleep");
    warden.shutdown().await;
}

#[tokio::test]
async fn env_is_expanded_and_cwd_is_applied() {
    let dir = scratch_dir("cwd");
    // A variable only this test sets, so parallel tests do not interfere.
    // Leak detection is off: `env` values count as secrets, and these are
    // meant to come back (the policy suite shows them redacted).
    std::env::set_var("WARDEN_TEST_EXPANDED_SECRET", "s3cr3t");
    let server = bins::test_server();
    let text = format!(
        "[servers.test]\ncommand = {:?}\ncwd = {:?}\nenv = {{ GREETING = \"hi ${{WARDEN_TEST_EXPANDED_SECRET}}\", LITERAL = \"$${{NOT_EXPANDED}}\" }}\ndefault_policy = {{ leaks = \"off\" }}\n",
        server.display().to_string(),
        dir.display().to_string()
    );
    let config = test_config(&text).unwrap();
    let warden = Warden::start(&config).await.unwrap();
    warden.settled().await;
    assert_eq!(text_of(&warden, "test__env", json!({"name": "GREETING"})).await, "hi s3cr3t");
    assert_eq!(text_of(&warden, "test__env", json!({"name": "LITERAL"})).await, "${NOT_EXPANDED}");
    assert_eq!(text_of(&warden, "test__cwd", json!({})).await, dir.canonicalize().unwrap().display().to_string());
    warden.shutdown().await;
}

#[tokio::test]
async fn server_requests_are_answered() {
    let warden = started(&[("test", &["--request-during-initialize"])]).await;
    // It only answered initialize after Warden answered its ping.
    assert_eq!(warden.status()[0].state, ServerState::Running);
    assert_eq!(text_of(&warden, "test__ask_client", json!({"method": "ping"})).await, "result: {}");
    let roots = text_of(&warden, "test__ask_client", json!({"method": "roots/list"})).await;
    assert_eq!(roots, "error: -32601 Warden has no roots for this server (set `roots` in the config)");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_reported_and_the_server_is_restarted() {
    let warden = started(&[("test", &[]), ("other", &[])]).await;
    let status = |warden: &Warden| warden.status().into_iter().find(|status| status.name == "test").unwrap();
    let first_pid: u32 = text_of(&warden, "test__pid", json!({})).await.parse().unwrap();
    assert_eq!((status(&warden).pid, status(&warden).restarts), (Some(first_pid), 0));
    assert!(status(&warden).connected_at.is_some());
    let error = warden.call_tool("test__crash", json!({"code": 7})).await.unwrap_err();
    assert_eq!(
        error,
        CallError::CrashedMidCall {
            server: "test".into(),
            name: "test__crash".into(),
            reason: "the connection closed: the server process exited with code 7".into(),
            policy: CrashRetry::Safe,
        }
    );
    let ServerState::Restarting { attempt: 1, max_attempts: 5, reason, .. } = state_of(&warden, "test") else {
        panic!("test is not restarting: {:?}", warden.status());
    };
    assert_eq!(reason, "the connection closed: the server process exited with code 7");
    // Its tools stay listed while it restarts, and a call waits for it.
    assert!(names(&warden).contains(&"test__echo".to_string()));
    let started = std::time::Instant::now();
    assert_eq!(text_of(&warden, "test__echo", json!({"message": "back"})).await, "back");
    assert!(started.elapsed() >= Duration::from_millis(900), "the call did not wait for the 1 s backoff");
    assert_eq!(state_of(&warden, "test"), ServerState::Running);
    // `status` names the new process and counts the restart.
    let second_pid: u32 = text_of(&warden, "test__pid", json!({})).await.parse().unwrap();
    assert_ne!(second_pid, first_pid);
    assert_eq!((status(&warden).pid, status(&warden).restarts), (Some(second_pid), 1));
    // The other server never noticed.
    assert_eq!(text_of(&warden, "other__echo", json!({"message": "alive"})).await, "alive");
    warden.shutdown().await;
}

#[tokio::test]
async fn sigkill_in_the_middle_of_a_run_of_calls_ends_every_call_once() {
    let warden = started(&[("test", &[])]).await;
    let pid: u32 = text_of(&warden, "test__pid", json!({})).await.parse().unwrap();
    // `sleep` is annotated idempotent, so Warden may repeat it; `echo` is
    // not, so one that reached the dead process is reported, not repeated.
    let warden = std::sync::Arc::new(warden);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..40 {
        let warden = warden.clone();
        calls.spawn(async move {
            let outcome = if i % 2 == 0 {
                warden.call_tool("test__sleep", json!({"ms": 300})).await
            } else {
                warden.call_tool("test__echo", json!({"message": format!("m{i}")})).await
            };
            (i, outcome)
        });
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    // SAFETY: kill only sends a signal, to the test server this test started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    let mut outcomes = Vec::new();
    while let Some(joined) =
        tokio::time::timeout(Duration::from_secs(30), calls.join_next()).await.expect("no call hangs")
    {
        outcomes.push(joined.unwrap());
    }
    assert_eq!(outcomes.len(), 40);
    let mut repeated_sleeps = 0;
    for (i, outcome) in outcomes {
        match outcome {
            Ok(result) if i % 2 == 0 => {
                assert_eq!(result.text(), "slept 300 ms");
                repeated_sleeps += 1;
            }
            Ok(result) => assert_eq!(result.text(), format!("m{i}")),
            Err(CallError::CrashedMidCall { name, reason, .. }) => {
                assert_eq!(name, "test__echo", "only non-idempotent calls are left unrepeated");
                assert_eq!(reason, "the connection closed: the server process was killed by signal 9");
            }
            Err(other) => panic!("call {i} ended with an unexpected error: {other}"),
        }
    }
    assert_eq!(repeated_sleeps, 20, "every idempotent sleep completed, repeated on the new process if needed");
    let new_pid: u32 = text_of(&warden, "test__pid", json!({})).await.parse().unwrap();
    assert_ne!(new_pid, pid);
    std::sync::Arc::into_inner(warden).expect("no call holds Warden any more").shutdown().await;
}

#[tokio::test]
async fn a_server_that_exits_at_every_start_fails_after_five_restarts_and_the_rest_work() {
    let warden =
        Warden::start(&config(&[("broken", &["--exit-at-start", "3"]), ("good", &[])], "restart_delay_secs = 0.05"))
            .await
            .unwrap();
    // 0.05 + 0.1 + 0.2 + 0.4 + 0.8 s of backoff, plus six starts.
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("servers settle");
    assert_eq!(
        state_of(&warden, "broken"),
        ServerState::Failed {
            reason: "it stopped before it was ready: the server process exited with code 3; its last stderr lines:\n  \
                     warden-test-server 0.1.0 starting\n  about to exit with code 3 (--exit-at-start)\n  \
                     fatal: exiting at start as asked (gave up after 5 restarts in a row)"
                .into()
        }
    );
    assert_eq!(text_of(&warden, "good__echo", json!({"message": "x"})).await, "x");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_server_that_hangs_in_initialize_fails_naming_the_setting() {
    let warden = started_with(&[("hung", &["--hang-initialize"])], "startup_timeout_secs = 0.5").await;
    assert_eq!(
        state_of(&warden, "hung"),
        ServerState::Failed {
            reason: "it did not finish its handshake and tool discovery within 0.5 s (raise `startup_timeout_secs` \
                     if it is just slow); its last stderr lines:\n  \
                     [warden-test-server] initialize from warden, asking for 2025-11-25; answering 2025-11-25\n  \
                     [warden-test-server] leaving initialize unanswered (--hang-initialize)"
                .into()
        }
    );
    warden.shutdown().await;
}

#[tokio::test]
async fn restarts_can_be_turned_off() {
    let warden = started_with(&[("test", &[])], "max_restarts = 0").await;
    let _ = warden.call_tool("test__crash", json!({})).await;
    assert_eq!(
        state_of(&warden, "test"),
        ServerState::Failed { reason: "the connection closed: the server process exited with code 1".into() }
    );
    assert!(names(&warden).is_empty(), "a failed server's tools are withdrawn");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_missing_command_and_a_wrong_protocol_version_are_clear_failures() {
    let server = bins::test_server().display().to_string();
    let text = format!(
        "[servers.missing]\ncommand = \"/nonexistent/mcp-server\"\n\
         [servers.future]\ncommand = {server:?}\nargs = [\"--protocol-version\", \"2099-01-01\"]\n"
    );
    let warden = Warden::start(&test_config(&text).unwrap()).await.unwrap();
    warden.settled().await;
    let reasons: Vec<String> = warden
        .status()
        .into_iter()
        .map(|s| match s.state {
            ServerState::Failed { reason } => format!("{}: {reason}", s.name),
            other => panic!("{} should have failed, is {other}", s.name),
        })
        .collect();
    assert_eq!(reasons[0], "future: it answered protocol version '2099-01-01', which Warden does not speak (Warden speaks 2026-07-28, and 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 through `initialize`)");
    assert_eq!(reasons[1], "missing: could not start `/nonexistent/mcp-server`: No such file or directory (os error 2); check `command` (is it installed and on PATH?) and `cwd`");
    warden.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_a_server_that_ignores_stdin_and_sigterm_and_its_children() {
    let server = bins::test_server().display().to_string();
    // `sh` stays the group leader with the server as its child, the way
    // `npx` leaves node behind it.
    let script = format!("{server} --ignore-stdin-eof --ignore-sigterm; true");
    let text = format!("[servers.stubborn]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n");
    let warden = Warden::start(&test_config(&text).unwrap()).await.unwrap();
    warden.settled().await;
    let pid: u32 = text_of(&warden, "stubborn__pid", json!({})).await.parse().unwrap();
    assert!(process_alive(pid));
    tokio::time::timeout(Duration::from_secs(15), warden.shutdown()).await.expect("shutdown finishes");
    assert!(wait_until_gone(pid, Duration::from_secs(5)), "the server process {pid} outlived shutdown");
}

#[test]
fn dropping_the_runtime_without_shutdown_kills_the_servers() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let pid: u32 = runtime.block_on(async {
        let warden = started(&[("test", &["--ignore-stdin-eof", "--ignore-sigterm"])]).await;
        let pid = text_of(&warden, "test__pid", json!({})).await.parse().unwrap();
        // Leak the handle: no shutdown, no Drop — as in a host that panics.
        std::mem::forget(warden);
        pid
    });
    assert!(process_alive(pid));
    drop(runtime);
    assert!(wait_until_gone(pid, Duration::from_secs(5)), "the server process {pid} outlived Warden's runtime");
}
