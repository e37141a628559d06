//! The fault matrix (issue 19), its stdio rows: each fault is done to a
//! real test-server process while calls are in flight through the embedded
//! handle, and every call is accounted for — answered ok, answered with an
//! error, lost (no answer within its deadline + 1 s), duplicated (a call
//! to a tool that is not safe to repeat, executed twice: counted on the
//! server's side, in a file the server appends each execution to), or
//! mixed (an answer that belongs to another call). A server that never
//! comes up has no recovery time: its row shows what the calls were told.
//! The goal in every row:
//! 0 lost, 0 duplicated, 0 mixed, and every error saying what happened.
//!
//! `cargo test -p warden-tests --test fault_matrix -- --nocapture` prints
//! the table; so does `cargo bench --bench faults`, with the HTTP rows.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{executed_twice as twice, run, Planned, Row};
use crate::bins;
use serde_json::json;
use warden_actors::{CallOptions, PolicyRules, ServerSettings, ServerSpec, Warden};
use warden_protocol::{StdioConnector, StdioSpec};

/// Each call's own timeout.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Warden with the test server as `test`, started with `args`.
async fn warden_with(args: &[&str]) -> Warden {
    let tools = "record,record_safe,sleep,garbage,stderr,pid,mischief,progress";
    let mut server_args = vec!["--tools".to_string(), tools.to_string()];
    server_args.extend(args.iter().map(|arg| arg.to_string()));
    let spec = StdioSpec::new("test", bins::test_server().display().to_string(), server_args);
    let settings = ServerSettings {
        call_timeout: CALL_TIMEOUT,
        startup_timeout: Duration::from_secs(2),
        first_restart_delay: Duration::from_millis(200),
        ..ServerSettings::default()
    };
    let connector = Arc::new(StdioConnector::new(spec));
    let server = ServerSpec { name: "test".into(), connector, settings };
    let rules = PolicyRules::default().with_auto_approve(true);
    let warden = Warden::builder().servers(vec![server]).rules(rules).start().await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.expect("the server settles");
    warden
}

/// `record` (not safe to repeat) or `record_safe` (idempotent) of `id`.
fn record(tool: &'static str, file: &Path, id: &str, ms: u64) -> Planned {
    let arguments = json!({"file": file, "id": id, "ms": ms});
    let tool = format!("test__{tool}");
    Planned { tool, arguments, expected: format!("recorded {id}"), options: CallOptions::default() }
}

/// How many of `ids` the server executed more than once.
fn executed_twice(file: &Path, ids: &[String]) -> usize {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    twice(text.lines(), ids)
}

/// Waits for the next successful call; how long after `since` it came.
async fn recovered(warden: &Warden, since: Instant) -> Option<Duration> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if warden.call_tool("test__pid", json!({})).await.is_ok_and(|result| !result.is_error()) {
            return Some(since.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

fn server_pid(warden: &Warden) -> i32 {
    warden.status()[0].pid.expect("a stdio server has a pid") as i32
}

async fn sigkill_mid_call(file: &Path) -> Row {
    let mut row = Row { fault: "server SIGKILL mid-call", ..Row::default() };
    let warden = warden_with(&[]).await;
    let plain: Vec<String> = (0..20).map(|n| format!("kill-plain-{n}")).collect();
    let safe: Vec<String> = (0..20).map(|n| format!("kill-safe-{n}")).collect();
    let mut calls: Vec<Planned> = plain.iter().map(|id| record("record", file, id, 500)).collect();
    calls.extend(safe.iter().map(|id| record("record_safe", file, id, 500)));
    let pid = server_pid(&warden);
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        unsafe { libc::kill(pid, libc::SIGKILL) };
        Instant::now()
    });
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    let killed_at = killer.await.unwrap();
    row.recovery = recovered(&warden, killed_at).await;
    row.duplicated = executed_twice(file, &plain);
    warden.shutdown().await;
    row
}

async fn garbage_between_answers(file: &Path) -> Row {
    let mut row = Row { fault: "garbage lines between answers", ..Row::default() };
    let warden = warden_with(&["--garbage-at-start"]).await;
    let ids: Vec<String> = (0..30).map(|n| format!("garbage-{n}")).collect();
    let mut calls: Vec<Planned> = ids.iter().map(|id| record("record", file, id, 20)).collect();
    for _ in 0..10 {
        let options = CallOptions::default();
        calls.push(Planned {
            tool: "test__garbage".into(),
            arguments: json!({}),
            expected: "after garbage".into(),
            options,
        });
    }
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    row
}

async fn hang_mid_call(file: &Path) -> Row {
    let mut row = Row { fault: "server hangs mid-call (timeout 0.5 s)", ..Row::default() };
    let warden = warden_with(&[]).await;
    let ids: Vec<String> = (0..20).map(|n| format!("hang-{n}")).collect();
    let mut calls: Vec<Planned> = ids.iter().map(|id| record("record", file, id, 20)).collect();
    for _ in 0..5 {
        let options = CallOptions::default().timeout(Duration::from_millis(500));
        let arguments = json!({"ms": 60_000});
        calls.push(Planned { tool: "test__sleep".into(), arguments, expected: String::new(), options });
    }
    let started = Instant::now();
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    row.recovery = recovered(&warden, started).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    row
}

async fn sigstop_then_sigcont(file: &Path) -> Row {
    let mut row = Row { fault: "server SIGSTOP, SIGCONT after 1 s", ..Row::default() };
    let warden = warden_with(&[]).await;
    let ids: Vec<String> = (0..20).map(|n| format!("stop-{n}")).collect();
    let calls: Vec<Planned> = ids.iter().map(|id| record("record", file, id, 50)).collect();
    let pid = server_pid(&warden);
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let waker = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        unsafe { libc::kill(pid, libc::SIGCONT) };
        Instant::now()
    });
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    let continued_at = waker.await.unwrap();
    row.recovery = recovered(&warden, continued_at).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    row
}

async fn stderr_flood(file: &Path) -> Row {
    let mut row = Row { fault: "stderr flood (200,000 lines)", ..Row::default() };
    let warden = warden_with(&[]).await;
    let ids: Vec<String> = (0..20).map(|n| format!("flood-{n}")).collect();
    let mut calls: Vec<Planned> = ids.iter().map(|id| record("record", file, id, 50)).collect();
    let options = CallOptions::default();
    calls.push(Planned {
        tool: "test__stderr".into(),
        arguments: json!({"lines": 200_000}),
        expected: "wrote 200000 lines".into(),
        options,
    });
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    row
}

/// 100,000 progress notifications as fast as the server can write them,
/// to a caller that asked for progress, while 20 other calls run: the
/// reader is paced (`transport/backlog.rs`), nobody's answer is lost.
async fn notification_flood(file: &Path) -> Row {
    let mut row = Row { fault: "progress flood (100,000 notifications)", ..Row::default() };
    let warden = warden_with(&[]).await;
    let ids: Vec<String> = (0..20).map(|n| format!("notify-{n}")).collect();
    let mut calls: Vec<Planned> = ids.iter().map(|id| record("record", file, id, 50)).collect();
    let (sink, mut updates) = tokio::sync::mpsc::channel(64);
    let drain = tokio::spawn(async move { while updates.recv().await.is_some() {} });
    calls.push(Planned {
        tool: "test__progress".into(),
        arguments: json!({"steps": 100_000, "ms": 0}),
        expected: "100000 steps".into(),
        options: CallOptions::default().progress(sink),
    });
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    drain.abort();
    row
}

/// `mischief(kind)`, its answer due `expected`.
fn mischief(kind: &str, expected: &str) -> Planned {
    let arguments = json!({"kind": kind});
    Planned { tool: "test__mischief".into(), arguments, expected: expected.into(), options: CallOptions::default() }
}

async fn junk_between_answers(file: &Path) -> Row {
    let mut row = Row { fault: "100 MB line, bad UTF-8, stray answers", ..Row::default() };
    let warden = warden_with(&[]).await;
    let ids: Vec<String> = (0..20).map(|n| format!("junk-{n}")).collect();
    let mut calls: Vec<Planned> = ids.iter().map(|id| record("record", file, id, 50)).collect();
    calls.extend((0..2).map(|_| mischief("junk", "after junk")));
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    row
}

/// The server closes stdout while calls run and lives on: Warden must
/// take it for down, answer every call, restart it, and not leave the
/// old process running.
async fn stdout_closed(file: &Path) -> (Row, bool) {
    let mut row = Row { fault: "stdout closed, process lives", ..Row::default() };
    let warden = warden_with(&[]).await;
    let plain: Vec<String> = (0..10).map(|n| format!("closed-plain-{n}")).collect();
    let safe: Vec<String> = (0..10).map(|n| format!("closed-safe-{n}")).collect();
    let mut calls: Vec<Planned> = plain.iter().map(|id| record("record", file, id, 500)).collect();
    calls.extend(safe.iter().map(|id| record("record_safe", file, id, 500)));
    calls.push(mischief("close_stdout", "unheard"));
    let pid = server_pid(&warden);
    let started = Instant::now();
    run(&warden, &mut row, calls, CALL_TIMEOUT).await;
    row.recovery = recovered(&warden, started).await;
    row.duplicated = executed_twice(file, &plain);
    let deadline = Instant::now() + Duration::from_secs(10);
    while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let orphan = unsafe { libc::kill(pid, 0) } == 0;
    warden.shutdown().await;
    (row, orphan)
}

/// A server that never comes up: calls made meanwhile and after it failed
/// are each answered with why, none waits for its timeout.
async fn never_up(fault: &'static str, args: &[&str], file: &Path) -> Row {
    let mut row = Row { fault, ..Row::default() };
    let warden = warden_with(args).await;
    let ids: Vec<String> = (0..10).map(|n| format!("{fault}-{n}")).collect();
    run(&warden, &mut row, ids.iter().map(|id| record("record", file, id, 0)).collect(), CALL_TIMEOUT).await;
    row.duplicated = executed_twice(file, &ids);
    warden.shutdown().await;
    row
}

/// Every stdio row, in the table's order (its files in `dir`); and
/// whether the process whose stdout closed was left running.
pub async fn rows(dir: &Path) -> (Vec<Row>, bool) {
    let rows = vec![
        sigkill_mid_call(&dir.join("sigkill.log")).await,
        garbage_between_answers(&dir.join("garbage.log")).await,
        hang_mid_call(&dir.join("hang.log")).await,
        sigstop_then_sigcont(&dir.join("sigstop.log")).await,
        stderr_flood(&dir.join("flood.log")).await,
        notification_flood(&dir.join("notify.log")).await,
        junk_between_answers(&dir.join("junk.log")).await,
        never_up("server exits at every start", &["--exit-at-start", "3"], &dir.join("exits.log")).await,
        never_up("server hangs in initialize", &["--hang-initialize"], &dir.join("hangs.log")).await,
    ];
    let (closed, orphan) = stdout_closed(&dir.join("closed.log")).await;
    (rows.into_iter().chain([closed]).collect(), orphan)
}
