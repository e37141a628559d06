//! `warden login NAME` and `warden logout NAME`: OAuth for a `url` server,
//! run in this process (it has the terminal and the browser), the tokens
//! saved where every Warden process finds them; a running daemon is then
//! told to connect the server again, so it starts without a restart.
//!
//! A one-shot command (`--no-daemon`) that meets a server needing a login
//! runs the same flow itself when a person can finish it — a terminal on
//! stdin, or `$BROWSER` set — and goes on ([`login_where_needed`]).

use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use serde_json::json;
use warden_actors::{ServerState, Warden};
use warden_config::WardenConfig;
use warden_protocol::{Authorizer, LoggedIn, LoginUi, ServerReport};

use super::{load, UsageError};
use crate::cli::Common;
use crate::daemon::state_dir::StateDir;

/// How long a login waits for the browser to come back.
const BROWSER_WAIT: Duration = Duration::from_secs(300);

/// `warden login NAME`.
pub(super) async fn login(common: &Common, name: &str, no_browser: bool) -> anyhow::Result<ExitCode> {
    let (_, config) = load(common)?;
    let done = login_server(&config, name, no_browser).await?;
    let scope = done.scope.map(|scope| format!(" (scope: {scope})")).unwrap_or_default();
    eprintln!("logged in to '{name}' at {}{scope}", done.issuer);
    let state = StateDir::from_env()?;
    let report: Option<ServerReport> = match crate::client::running(&state).await {
        Some(mut daemon) if !common.no_daemon => {
            eprintln!("telling the running daemon to connect '{name}' again");
            daemon.request_as(json!({"op": "reconnect", "server": name})).await?
        }
        _ => {
            let mut only = config.clone();
            only.servers.retain(|server, _| server == name);
            let warden = Warden::start(&only).await?;
            warden.settled().await;
            let report = warden.status().iter().map(crate::render::server_report).next();
            warden.shutdown().await;
            report
        }
    };
    match report {
        Some(report) if report.state == "running" => {
            println!("'{name}' is running with {} tools", report.tools);
            Ok(ExitCode::SUCCESS)
        }
        Some(report) => Err(anyhow!("logged in, but '{name}' is {}: {}", report.state, report.detail)),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `warden logout NAME`.
pub(super) async fn logout(common: &Common, name: &str) -> anyhow::Result<ExitCode> {
    let (_, config) = load(common)?;
    let authorizer = authorizer(&config, name)?;
    let done = authorizer.logout().await.map_err(|error| anyhow!("logging out of '{name}' failed: {error}"))?;
    println!("logged out of '{name}': {done}");
    Ok(ExitCode::SUCCESS)
}

/// Runs the login flow for server `name` of `config`.
pub(super) async fn login_server(config: &WardenConfig, name: &str, no_browser: bool) -> anyhow::Result<LoggedIn> {
    let authorizer = authorizer(config, name)?;
    let ui = TerminalLogin { no_browser };
    authorizer.login(&ui, BROWSER_WAIT).await.map_err(|error| anyhow!("login to '{name}' failed: {error}"))
}

/// Logs in to every server of `warden` that waits for a login, when a
/// person can finish it (a terminal on stdin, or `$BROWSER` set), and
/// connects each again; says what it skipped and why.
pub(super) async fn login_where_needed(warden: &Warden, config: &WardenConfig) {
    let waiting: Vec<String> = warden
        .status()
        .into_iter()
        .filter(|status| matches!(status.state, ServerState::NeedsLogin { .. }))
        .map(|status| status.name)
        .collect();
    for name in waiting {
        if !person_present() {
            eprintln!(
                "server '{name}' needs a login: run `warden login {name}` (no terminal or $BROWSER to do it here)"
            );
            continue;
        }
        eprintln!("server '{name}' needs a login; logging in");
        match login_server(config, &name, false).await {
            Ok(_) => {
                let _ = warden.reconnect(&name).await;
            }
            Err(error) => eprintln!("{error:#}"),
        }
    }
}

/// A person can finish a login here.
pub(super) fn person_present() -> bool {
    std::io::stdin().is_terminal() || std::env::var_os("BROWSER").is_some_and(|b| !b.is_empty())
}

fn authorizer(config: &WardenConfig, name: &str) -> anyhow::Result<Arc<Authorizer>> {
    let server = config.servers.get(name).ok_or_else(|| {
        let known: Vec<&str> = config.servers.keys().map(String::as_str).collect();
        UsageError(format!("no server '{name}' in the config (servers: {})", known.join(", ")))
    })?;
    let url = server
        .url
        .as_deref()
        .ok_or_else(|| UsageError(format!("'{name}' is a `command` server; only `url` servers log in with OAuth")))?;
    if server.headers.keys().any(|header| header.eq_ignore_ascii_case("authorization")) {
        return Err(UsageError(format!(
            "'{name}' sends its own `Authorization` header from the config; remove it to log in with OAuth"
        ))
        .into());
    }
    let state = StateDir::from_env()?;
    state.create()?;
    Authorizer::new(name, url, server.oauth.clone(), state.path(), server.ca_cert.as_deref())
        .map_err(|error| UsageError(format!("server '{name}': {error}")).into())
}

/// Progress on stderr; the browser from `$BROWSER`, else the system's opener.
struct TerminalLogin {
    no_browser: bool,
}

impl LoginUi for TerminalLogin {
    fn say(&self, line: &str) {
        eprintln!("{line}");
    }

    fn open(&self, url: &str) {
        if self.no_browser {
            eprintln!("open this URL in a browser (on any machine) to log in:\n\n  {url}\n");
            return;
        }
        eprintln!("opening the browser at:\n  {url}");
        if let Err(error) = open_browser(url) {
            eprintln!("could not open a browser ({error}); open the URL above yourself");
        }
    }
}

/// `$BROWSER` (its first entry; `%s` replaced by the URL, else the URL
/// appended), else `xdg-open` (Linux) or `open` (macOS). Not waited for:
/// a browser may run for hours.
fn open_browser(url: &str) -> std::io::Result<()> {
    let configured = std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty());
    let (program, args) = match &configured {
        Some(browser) => {
            let first = browser.split(':').next().unwrap_or_default();
            let mut words = first.split_whitespace();
            let program = words.next().unwrap_or_default().to_string();
            let mut args: Vec<String> = words.map(|word| word.replace("%s", url)).collect();
            if !first.contains("%s") {
                args.push(url.to_string());
            }
            (program, args)
        }
        None if cfg!(target_os = "macos") => ("open".to_string(), vec![url.to_string()]),
        None => ("xdg-open".to_string(), vec![url.to_string()]),
    };
    let mut child = std::process::Command::new(Path::new(&program))
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    std::thread::spawn(move || child.wait());
    Ok(())
}
