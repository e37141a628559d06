//! The commands as clients of the daemon (started first if none runs).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;
use warden_config::{Discovered, WardenConfig};
use warden_protocol::{BridgeErrorCode as Code, ServerReport, ToolListing};

use super::local::warn_about_failed_servers;
use super::UsageError;
use crate::cli::Common;
use crate::client::{self, Client, ClientError};
use crate::daemon::lockfile::pid_alive;
use crate::daemon::state_dir::StateDir;
use crate::render;

/// How often a waiting command asks whether the servers have settled.
const SETTLE_POLL: Duration = Duration::from_millis(50);

/// How long `warden stop` waits for the daemon's process to end: calls in
/// flight get up to 30 s, then every server is shut down.
const STOP_PATIENCE: Duration = Duration::from_secs(60);

/// A `status` answer.
#[derive(Debug, Deserialize)]
struct Status {
    daemon: Value,
    settled: bool,
    /// Every server running, or those that are not (what `/readyz` says).
    #[serde(default)]
    readiness: Value,
    servers: Vec<ServerReport>,
    /// What the daemon knows of its cluster (null outside one).
    #[serde(default)]
    cluster: Value,
}

/// A `list_tools` answer.
#[derive(Debug, Deserialize)]
struct Tools {
    tools: Vec<ToolListing>,
}

/// The daemon for this command's config, started if none runs. Without
/// `--config` (or `$WARDEN_CONFIG`), whatever daemon runs, or else one for
/// the config at the XDG location.
pub(super) async fn connect(common: &Common, verbose: bool) -> anyhow::Result<Client> {
    let state = StateDir::from_env()?;
    // A daemon that serves this config already loaded it (with the
    // variables it was started with): it is not loaded again here.
    let wanted = common.config.as_deref().map(warden_config::config_path);
    if let Some(client) = client::running(&state).await {
        if wanted.as_ref().is_none_or(|wanted| *wanted == client.lockfile.config) {
            // The connection the probe made serves: a second costs a round trip.
            return client::adopt(client, wanted.as_deref(), verbose, false);
        }
    }
    let config = match WardenConfig::discover(common.config.as_deref())? {
        // A node that imports from its cluster may have none of its own.
        Discovered::Loaded { path, config }
            if config.servers.is_empty() && !config.cluster.as_ref().is_some_and(|cluster| cluster.import) =>
        {
            return Err(UsageError(format!(
                "no servers configured in {}; add a [servers.NAME] table with `command` (a local server) or \
                 `url` (a remote one), or a [cluster] to use other nodes' servers — examples/warden.toml is a start",
                path.display()
            ))
            .into());
        }
        Discovered::Loaded { path, .. } => Some(path),
        nothing => return Err(UsageError(nothing.notice().unwrap_or_default()).into()),
    };
    client::connect(&state, config.as_deref(), verbose).await
}

/// Waits until no server is still starting, showing which are on their
/// way ([`super::progress`]); the last status.
async fn settle(client: &mut Client) -> anyhow::Result<Status> {
    let mut progress = super::progress::StartupProgress::new();
    loop {
        let status: Status = client.request_as(json!({"op": "status"})).await?;
        if status.settled {
            progress.finish(&status.servers);
            return Ok(status);
        }
        progress.observe(&status.servers);
        tokio::time::sleep(SETTLE_POLL).await;
    }
}

/// `-v`: what the daemon has loaded, and which servers are not serving.
fn report(status: &Status) {
    let tools: usize = status.servers.iter().map(|server| server.tools).sum();
    eprintln!("[MCP: {tools} tools loaded]");
    for server in status.servers.iter().filter(|server| server.state != "running") {
        eprintln!("[MCP: server '{}' {}]", server.name, server.detail);
    }
}

pub(super) async fn tools(common: &Common, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    let status = settle(&mut client).await?;
    if verbose {
        report(&status);
    }
    warn_about_failed_servers(&status.servers);
    let Tools { tools } = client.request_as(json!({"op": "list_tools"})).await?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&tools)?);
    } else {
        print!("{}", render::tool_table(&tools, &status.servers));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn tool_policies(common: &Common, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    let status = settle(&mut client).await?;
    warn_about_failed_servers(&status.servers);
    let answer: Value = client.request_as(json!({"op": "tool_policies"})).await?;
    super::local::print_policies(common, &answer["policies"])
}

pub(super) async fn call(common: &Common, name: &str, arguments: Value, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    if verbose {
        report(&client.request_as(json!({"op": "status"})).await?);
    }
    let format = if common.json { "raw" } else { "text" };
    // A question its server asks is asked here (or said on stderr) at once.
    let request = json!({"op": "call_tool", "name": name, "args": arguments, "format": format, "notices": true});
    let lockfile = client.lockfile.clone();
    let on_notice = &mut |notice| super::ask::on_notice(&lockfile, notice);
    let answer = match client.request_stoppable(request, on_notice, super::interrupt::interrupted()).await {
        Err(ClientError::Bridge(error)) if error.code == Code::CANCELLED => {
            eprintln!("cancelled: {}", error.message);
            return Ok(ExitCode::from(super::interrupt::INTERRUPTED));
        }
        answer => answer?,
    };
    let result: Value = serde_json::from_str(answer.get())?;
    let is_error = if common.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
        result["isError"] == true
    } else {
        println!("{}", result["text"].as_str().unwrap_or_default());
        result["is_error"] == true
    };
    Ok(if is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

pub(super) async fn schema(common: &Common, name: &str, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    let tool: ToolListing = client.request_as(json!({"op": "describe_tool", "name": name})).await?;
    println!("{}", serde_json::to_string_pretty(&tool.tool.input_schema)?);
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn status(common: &Common, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    let status = settle(&mut client).await?;
    if verbose {
        report(&status);
    }
    if common.json {
        let all = json!({
            "daemon": status.daemon,
            "settled": status.settled,
            "readiness": status.readiness,
            "servers": status.servers,
            "cluster": status.cluster,
        });
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        print!("{}", render::daemon_lines(&status.daemon));
        if !status.cluster.is_null() {
            print!("{}", render::cluster_lines(&status.cluster));
        }
        print!("{}", render::status_table(&status.servers));
    }
    let any_failed = status.servers.iter().any(|server| server.is_failed() || server.state == "needs_login");
    Ok(if any_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `warden cluster status`: the nodes of the daemon's cluster and who
/// serves what.
pub(super) async fn cluster_status(common: &Common, verbose: bool) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, verbose).await?;
    let status: Status = client.request_as(json!({"op": "status"})).await?;
    if status.cluster.is_null() {
        return Err(UsageError(format!(
            "the daemon for {} is not in a cluster: its config has no [cluster] table (docs/cluster.md)",
            status.daemon["config"].as_str().unwrap_or("this config")
        ))
        .into());
    }
    if common.json {
        println!("{}", serde_json::to_string_pretty(&status.cluster)?);
    } else {
        print!("{}", render::cluster_lines(&status.cluster));
    }
    Ok(ExitCode::SUCCESS)
}

/// `approvals`, `approve`, `deny`: the request as given, the answer as JSON.
pub(super) async fn approvals(common: &Common, request: Value) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, false).await?;
    let result: Value = client.request_as(request).await?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", crate::render::approvals(&result));
    }
    Ok(ExitCode::SUCCESS)
}

/// `warden tasks`: the tasks a dead daemon's calls left, or (`result`) one's
/// result.
pub(super) async fn left_tasks(common: &Common, result: Option<String>) -> anyhow::Result<ExitCode> {
    let mut client = connect(common, false).await?;
    let request = match &result {
        Some(key) => json!({"op": "fetch_task", "key": key}),
        None => json!({"op": "tasks"}),
    };
    let answer: Value = client.request_as(request).await?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else if result.is_some() {
        print!("{}", render::left_task_result(&answer));
    } else {
        print!("{}", render::left_tasks(&answer));
    }
    Ok(ExitCode::SUCCESS)
}

/// The running daemon, if any; with `config`, only if it serves that file.
async fn running_for(config: Option<&std::path::Path>, verb: &str) -> anyhow::Result<Option<Client>> {
    let state = StateDir::from_env()?;
    let Some(client) = client::running(&state).await else { return Ok(None) };
    if let Some(config) = config {
        let wanted = warden_config::config_path(config);
        if wanted != client.lockfile.config {
            return Err(UsageError(format!(
                "the running warden daemon (pid {}) serves {}, not {}; nothing to {verb} (`warden {verb}` without --config acts on it)",
                client.lockfile.pid,
                client.lockfile.config.display(),
                wanted.display()
            ))
            .into());
        }
    }
    Ok(Some(client))
}

pub(super) async fn stop(config: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let Some(mut client) = running_for(config, "stop").await? else {
        println!("no warden daemon is running");
        return Ok(ExitCode::SUCCESS);
    };
    let pid = client.lockfile.pid;
    client.request(json!({"op": "shutdown"})).await?;
    let deadline = Instant::now() + STOP_PATIENCE;
    while pid_alive(pid) {
        if Instant::now() >= deadline {
            return Err(anyhow!(
                "the warden daemon (pid {pid}) is still stopping after {} s; `kill {pid}` ends it at once",
                STOP_PATIENCE.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("stopped the warden daemon (pid {pid})");
    Ok(ExitCode::SUCCESS)
}

/// A `reload` answer.
#[derive(Debug, Deserialize)]
struct Reloaded {
    added: Vec<String>,
    removed: Vec<String>,
    restarted: Vec<String>,
    unchanged: Vec<String>,
    #[serde(default)]
    reshaped: Vec<String>,
    config: std::path::PathBuf,
}

pub(super) async fn reload(config: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let Some(mut client) = running_for(config, "reload").await? else {
        // Nothing to reload: the next command starts a daemon with the file as it is.
        println!("no warden daemon is running; the next command starts one with the current config");
        return Ok(ExitCode::SUCCESS);
    };
    let answer: Reloaded = client.request_as(json!({"op": "reload"})).await?;
    println!("reloaded {}", answer.config.display());
    let lists = [
        ("added", &answer.added),
        ("removed", &answer.removed),
        ("restarted", &answer.restarted),
        ("unchanged", &answer.unchanged),
        ("tools filtered or renamed anew", &answer.reshaped),
    ];
    for (what, names) in lists {
        if !names.is_empty() {
            println!("  {what}: {}", names.join(", "));
        }
    }
    Ok(ExitCode::SUCCESS)
}
