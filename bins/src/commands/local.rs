//! `--no-daemon`: each command runs Warden in this process, once.

use std::process::ExitCode;

use anyhow::{anyhow, Context as _};
use serde_json::Value;
use warden_actors::{CallError, ServerState, Warden};
use warden_config::WardenConfig;
use warden_protocol::{ServerReport, AUTH_REQUIRED};

use super::load;
use crate::cli::Common;
use crate::daemon::state_dir::StateDir;
use crate::render;

/// Starts Warden and waits until every server is running or failed.
pub(super) async fn start(common: &Common) -> anyhow::Result<Warden> {
    Ok(start_with_config(common).await?.0)
}

/// [`start`], and the config it started from.
async fn start_with_config(common: &Common) -> anyhow::Result<(Warden, WardenConfig)> {
    let (path, config) = load(common)?;
    if path.is_some() && config.servers.is_empty() {
        tracing::warn!("the config has no servers; add a [servers.NAME] table with `command` or `url`");
    }
    let mut builder = Warden::builder().config(&config);
    if let Some(memo) = StateDir::era_memo() {
        builder = builder.era_memo(memo);
    }
    let warden = builder.start().await.context("starting Warden")?;
    wait_until_settled(&warden).await;
    super::login::login_where_needed(&warden, &config).await;
    Ok((warden, config))
}

/// How often the servers are looked at while they start.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Waits for every server to settle, showing which are on their way
/// ([`super::progress`]): a server that crashes on start is retried with
/// backoff, and a silent half-minute would look like a hang.
async fn wait_until_settled(warden: &Warden) {
    let mut progress = super::progress::StartupProgress::new();
    let reports = || warden.status().iter().map(render::server_report).collect::<Vec<_>>();
    let settled = warden.settled();
    tokio::pin!(settled);
    loop {
        tokio::select! {
            _ = &mut settled => return progress.finish(&reports()),
            _ = tokio::time::sleep(POLL) => progress.observe(&reports()),
        }
    }
}

/// Failed servers go to stderr, so a listing on stdout stays clean.
pub(super) fn warn_about_failed_servers(servers: &[ServerReport]) {
    for server in servers {
        if let (true, Some(reason)) = (server.is_failed(), &server.error) {
            eprintln!("warning: server '{}' failed: {reason}", server.name);
        }
        if server.state == "needs_login" {
            eprintln!("warning: server '{}' {}: run `warden login {}`", server.name, server.detail, server.name);
        }
        for warning in &server.warnings {
            eprintln!("warning: {warning}");
        }
    }
}

pub(super) async fn tools(common: &Common) -> anyhow::Result<ExitCode> {
    let warden = start(common).await?;
    let reports: Vec<ServerReport> = warden.status().iter().map(render::server_report).collect();
    warn_about_failed_servers(&reports);
    let tools: Vec<_> = warden.tools().into_iter().map(render::listing).collect();
    warden.shutdown().await;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&tools)?);
    } else {
        print!("{}", render::tool_table(&tools, &[]));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn tool_policies(common: &Common) -> anyhow::Result<ExitCode> {
    let warden = start(common).await?;
    let reports: Vec<ServerReport> = warden.status().iter().map(render::server_report).collect();
    warn_about_failed_servers(&reports);
    let rows = serde_json::to_value(warden.tool_policies())?;
    warden.shutdown().await;
    print_policies(common, &rows)
}

/// `--json`: the rows as they are; else a table for people.
pub(super) fn print_policies(common: &Common, rows: &Value) -> anyhow::Result<ExitCode> {
    if common.json {
        println!("{}", serde_json::to_string_pretty(rows)?);
    } else {
        print!("{}", render::policy_table(rows.as_array().map(Vec::as_slice).unwrap_or_default()));
    }
    Ok(ExitCode::SUCCESS)
}

/// How many times one call may send the person to log in for more scope
/// (step-up) before its refusal is final.
const MAX_STEP_UPS: u32 = 2;

pub(super) async fn call(common: &Common, name: &str, arguments: Value) -> anyhow::Result<ExitCode> {
    let (warden, config) = start_with_config(common).await?;
    let calling = call_with_step_ups(&warden, &config, common.json, name, arguments);
    let printed = tokio::select! {
        printed = calling => printed,
        () = super::interrupt::interrupted() => {
            // The call's future is dropped: its server is told to cancel it.
            warden.shutdown().await;
            eprintln!("cancelled: the call was stopped before it finished");
            return Ok(ExitCode::from(super::interrupt::INTERRUPTED));
        }
    };
    warden.shutdown().await;
    let (text, is_error) = printed.map_err(|error| anyhow!(crate::advice::call_error(&error)))?;
    println!("{text}");
    Ok(if is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// One call, as text (or JSON), logging in again when its server asks for
/// more scope; the printed result and whether it is an error.
async fn call_with_step_ups(
    warden: &Warden,
    config: &WardenConfig,
    json: bool,
    name: &str,
    arguments: Value,
) -> Result<(String, bool), CallError> {
    let mut step_ups = 0;
    loop {
        let printed = if json {
            warden.call_tool(name, arguments.clone()).await.map(|result| {
                let json = serde_json::to_string_pretty(&result).expect("a tool result always serialises");
                (json, result.is_error())
            })
        } else {
            warden
                .host()
                .call_text(name, arguments.clone(), warden_actors::CallOptions::default())
                .await
                .map(|rendered| (rendered.text, rendered.is_error))
        };
        // A server that wants more scope for this call: log in, call again.
        match &printed {
            Err(CallError::Server { server, code, message, .. })
                if *code == AUTH_REQUIRED.0 && super::login::person_present() =>
            {
                if step_ups == MAX_STEP_UPS {
                    return Err(CallError::Server {
                        server: server.clone(),
                        name: name.to_string(),
                        code: *code,
                        message: format!("{message} (still refused after {MAX_STEP_UPS} logins for more scope; the server keeps asking)"),
                    });
                }
                step_ups += 1;
                eprintln!("{message}\nlogging in to '{server}' for it");
                if let Err(error) = super::login::login_server(config, server, false).await {
                    eprintln!("{error:#}");
                    return printed;
                }
                // Refused before it was ready (its tool list needed the
                // scope), it waits for a login: connect it again.
                let waits = warden
                    .status()
                    .into_iter()
                    .any(|status| status.name == *server && matches!(status.state, ServerState::NeedsLogin { .. }));
                if waits {
                    let _ = warden.reconnect(server).await;
                }
            }
            _ => return printed,
        }
    }
}

pub(super) async fn schema(common: &Common, name: &str) -> anyhow::Result<ExitCode> {
    let warden = start(common).await?;
    let tool = warden.tools().into_iter().find(|entry| entry.name == name);
    warden.shutdown().await;
    let tool = tool.ok_or_else(|| anyhow!("unknown tool '{name}'; `warden tools` lists the tools available"))?;
    println!("{}", serde_json::to_string_pretty(&tool.tool.input_schema)?);
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn status(common: &Common) -> anyhow::Result<ExitCode> {
    let warden = start(common).await?;
    let reports: Vec<ServerReport> = warden.status().iter().map(render::server_report).collect();
    let any_failed = warden
        .status()
        .iter()
        .any(|server| matches!(server.state, ServerState::Failed { .. } | ServerState::NeedsLogin { .. }));
    warden.shutdown().await;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        print!("{}", render::status_table(&reports));
    }
    Ok(if any_failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
