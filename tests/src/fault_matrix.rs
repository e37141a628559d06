//! The fault matrix (issue 19): its rows (`stdio.rs`: a real test-server
//! process; `http.rs`: a scripted Streamable HTTP server), run by the
//! `fault_matrix` and `fault_matrix_http` suites, which assert each row,
//! and by the `faults` bench, which prints them as one table. Here, the
//! bookkeeping: a row per fault,
//! every call accounted for — answered ok, answered with an error, lost
//! (no answer within its deadline + 1 s), duplicated (a call to a tool
//! that is not safe to repeat, executed twice: counted on the server's
//! side), or mixed (an answer that belongs to another call) — and the
//! table printed.

use std::time::Duration;

use serde_json::Value;
use warden_actors::{CallOptions, Warden};

pub mod http;
pub mod stdio;

/// One row of the table.
#[derive(Debug, Default)]
pub struct Row {
    /// What was done.
    pub fault: &'static str,
    /// Calls made.
    pub made: usize,
    /// Answered with their own result.
    pub ok: usize,
    /// Answered with an error.
    pub errors: usize,
    /// Not answered within their deadline + 1 s.
    pub lost: usize,
    /// Not safe to repeat, yet executed twice (counted by the server).
    pub duplicated: usize,
    /// Answered with another call's result.
    pub mixed: usize,
    /// From the fault to the next successful call.
    pub recovery: Option<Duration>,
    /// What the errors said, each once (the call's own tool named `'…'`).
    pub said: Vec<String>,
}

/// One call to make, and the text of its own answer.
pub struct Planned {
    /// The namespaced tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Value,
    /// The text of its own answer.
    pub expected: String,
    /// How it is called.
    pub options: CallOptions,
}

/// Makes every call at once, each given `timeout` + 1 s to be answered,
/// and counts what came back.
pub async fn run(warden: &Warden, row: &mut Row, calls: Vec<Planned>, timeout: Duration) {
    row.made += calls.len();
    let tasks: Vec<_> = calls
        .into_iter()
        .map(|call| {
            let warden = warden.clone();
            tokio::spawn(async move {
                let limit = timeout + Duration::from_secs(1);
                let outcome =
                    tokio::time::timeout(limit, warden.host().call(&call.tool, call.arguments, call.options)).await;
                (outcome, call.expected, call.tool)
            })
        })
        .collect();
    for task in tasks {
        let (outcome, expected, tool) = task.await.expect("a call task ran");
        let said = match outcome {
            Err(_) => {
                row.lost += 1;
                continue;
            }
            Ok(Err(error)) => {
                row.errors += 1;
                error.to_string()
            }
            Ok(Ok(result)) if result.is_error() => {
                row.errors += 1;
                result.text()
            }
            Ok(Ok(result)) if result.text() == expected => {
                row.ok += 1;
                continue;
            }
            Ok(Ok(result)) => {
                row.mixed += 1;
                format!("answered {:?} where {expected:?} was due", result.text())
            }
        };
        // Errors name their call; strip the tool so alike errors group.
        let said = said.replace(&format!("'{tool}'"), "'…'");
        if !row.said.contains(&said) {
            row.said.push(said);
        }
    }
}

/// How many of `ids` appear more than once in `executed` (one id per
/// execution, as the server logged them).
pub fn executed_twice<'a>(executed: impl IntoIterator<Item = &'a str>, ids: &[String]) -> usize {
    let mut counts = std::collections::HashMap::new();
    for id in executed {
        *counts.entry(id).or_insert(0usize) += 1;
    }
    ids.iter().filter(|id| counts.get(id.as_str()).copied().unwrap_or(0) > 1).count()
}

/// Prints the table (`-- --nocapture` shows it).
pub fn print(rows: &[Row]) {
    println!(
        "\n{:<40} {:>6} {:>6} {:>6} {:>5} {:>11} {:>6} {:>10}",
        "fault", "calls", "ok", "error", "lost", "duplicated", "mixed", "recovery"
    );
    for row in rows {
        let recovery = row.recovery.map_or("-".to_string(), |time| format!("{:.0} ms", time.as_secs_f64() * 1e3));
        println!(
            "{:<40} {:>6} {:>6} {:>6} {:>5} {:>11} {:>6} {:>10}",
            row.fault, row.made, row.ok, row.errors, row.lost, row.duplicated, row.mixed, recovery
        );
        for said in &row.said {
            println!("    error: {said}");
        }
    }
}

/// Every row's promise: nothing lost, duplicated or mixed up, every call
/// answered once.
pub fn assert_nothing_lost(rows: &[Row]) {
    for row in rows {
        assert_eq!((row.lost, row.duplicated, row.mixed), (0, 0, 0), "{}: {row:?}", row.fault);
        assert_eq!(row.ok + row.errors, row.made, "{}: every call answered once", row.fault);
    }
}
