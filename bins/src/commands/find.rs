//! `warden find "query"`: tool search from a terminal — the tools that
//! best match what a person or script wants done, best first, as the
//! built-in `find_tools` ranks them for a model (`docs/tool-search.md`).
//! Through the daemon (its index, kept current) or, with `--no-daemon`,
//! in this process.

use std::process::ExitCode;

use serde::Deserialize;
use serde_json::{json, Value};

use super::{local, remote};
use crate::cli::Common;

/// A tool found, as the bridge answers it.
#[derive(Deserialize)]
struct Found {
    name: String,
    score: f64,
    reason: String,
    definition: Value,
}

pub(super) async fn run(
    common: &Common,
    query: &str,
    limit: usize,
    agent: Option<&str>,
    verbose: bool,
) -> anyhow::Result<ExitCode> {
    let found: Vec<Found> = if common.no_daemon {
        let warden = local::start(common).await?;
        let found = warden.scope(agent).and_then(|scope| scope.find_tools(query, limit));
        warden.shutdown().await;
        let found = found?.into_iter();
        found
            .map(|tool| Found { name: tool.name, score: tool.score, reason: tool.reason, definition: tool.definition })
            .collect()
    } else {
        let mut client = remote::connect(common, verbose).await?;
        let request = json!({"op": "find_tools", "query": query, "limit": limit, "agent": agent});
        let answer: Value = client.request_as(request).await?;
        serde_json::from_value(answer["tools"].clone())?
    };
    if common.json {
        let rows: Vec<Value> = found
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "score": tool.score,
                    "reason": tool.reason,
                    "description": tool.definition["description"],
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if found.is_empty() {
        println!("no tool matched \"{query}\"; try other words for what you want done");
        return Ok(ExitCode::SUCCESS);
    }
    let width = found.iter().map(|tool| tool.name.len()).max().unwrap_or(0);
    for tool in &found {
        let description = tool.definition["description"].as_str().unwrap_or_default();
        let first = description.lines().next().unwrap_or_default();
        println!("{:<width$}  {:>6.2}  {first}", tool.name, tool.score);
        if verbose {
            println!("{:<width$}          {}", "", tool.reason);
        }
    }
    Ok(ExitCode::SUCCESS)
}
