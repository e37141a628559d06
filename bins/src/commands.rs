//! What each command does, with in-process Warden.

use std::process::ExitCode;

use anyhow::{anyhow, Context as _};
use serde_json::{json, Value};
use warden_actors::{ConfigError, ServerState, Warden, WardenConfig};

use crate::cli::{Cli, Command, Common};
use crate::render;

/// An error that means the user asked for something malformed (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

pub(crate) async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Tools { common } => tools(&common).await,
        Command::Call { name, arguments, common } => call(&common, &name, &arguments).await,
        Command::Status { common } => status(&common).await,
    }
}

/// 2 for usage and config errors, 1 for everything else.
pub(crate) fn exit_code_for(error: &anyhow::Error) -> u8 {
    if error.is::<UsageError>() || error.is::<ConfigError>() {
        2
    } else {
        1
    }
}

fn load(common: &Common) -> anyhow::Result<WardenConfig> {
    let path = common.config.as_ref().ok_or_else(|| {
        UsageError("no config given; pass --config FILE or set WARDEN_CONFIG (examples/warden.toml is a start)".into())
    })?;
    Ok(WardenConfig::load(path)?)
}

/// Starts Warden and waits until every server is running or failed.
async fn start(common: &Common) -> anyhow::Result<Warden> {
    let config = load(common)?;
    if config.servers.is_empty() {
        tracing::warn!("the config has no servers; add a [servers.NAME] table with `command` or `url`");
    }
    let warden = Warden::start(&config).await.context("starting Warden")?;
    wait_until_settled(&warden).await;
    Ok(warden)
}

/// How long before a one-shot command says what it is waiting for.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Waits for every server to settle, saying every couple of seconds which
/// ones are still on their way: a server that crashes on start is retried
/// with backoff, and a silent half-minute would look like a hang.
async fn wait_until_settled(warden: &Warden) {
    let settled = warden.settled();
    tokio::pin!(settled);
    loop {
        tokio::select! {
            _ = &mut settled => return,
            _ = tokio::time::sleep(PATIENCE) => {
                for server in warden.status().iter().filter(|server| !server.state.is_settled()) {
                    eprintln!("waiting for server '{}': {}", server.name, server.state);
                }
            }
        }
    }
}

/// Failed servers go to stderr, so a listing on stdout stays clean.
fn warn_about_failed_servers(warden: &Warden) {
    for server in warden.status() {
        if let ServerState::Failed { reason } = &server.state {
            eprintln!("warning: server '{}' failed: {reason}", server.name);
        }
        for warning in &server.warnings {
            eprintln!("warning: {warning}");
        }
    }
}

async fn tools(common: &Common) -> anyhow::Result<ExitCode> {
    let warden = start(common).await?;
    warn_about_failed_servers(&warden);
    let tools = warden.tools();
    if common.json {
        let list: Vec<Value> =
            tools.iter().map(|entry| json!({"name": entry.name, "server": entry.server, "tool": entry.tool})).collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        print!("{}", render::tool_table(&tools));
    }
    warden.shutdown().await;
    Ok(ExitCode::SUCCESS)
}

async fn call(common: &Common, name: &str, arguments: &str) -> anyhow::Result<ExitCode> {
    let arguments: Value = serde_json::from_str(arguments).map_err(|error| {
        UsageError(format!("the arguments are not JSON ({error}); give a JSON object such as '{{\"message\":\"hi\"}}'"))
    })?;
    if !arguments.is_object() {
        return Err(UsageError(format!(
            "the arguments must be a JSON object such as '{{\"message\":\"hi\"}}', not {}",
            warden_protocol::json_kind(&arguments)
        ))
        .into());
    }
    let warden = start(common).await?;
    let printed = if common.json {
        warden.call_tool(name, arguments).await.map(|result| {
            let json = serde_json::to_string_pretty(&result).expect("a tool result always serialises");
            (json, result.is_error())
        })
    } else {
        warden.call_tool_text(name, arguments).await.map(|rendered| (rendered.text, rendered.is_error))
    };
    warden.shutdown().await;
    let (text, is_error) = printed.map_err(|error| anyhow!(error))?;
    println!("{text}");
    Ok(if is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

async fn status(common: &Common) -> anyhow::Result<ExitCode> {
    let warden = start(common).await?;
    let statuses = warden.status();
    warden.shutdown().await;
    if common.json {
        let list: Vec<Value> = statuses.iter().map(render::status_json).collect();
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        print!("{}", render::status_table(&statuses));
    }
    let any_failed = statuses.iter().any(|server| matches!(server.state, ServerState::Failed { .. }));
    Ok(if any_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
