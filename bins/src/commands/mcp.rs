//! `warden mcp`: Warden as an MCP server on stdin/stdout, for a client's
//! config (`{"command": "warden", "args": ["mcp"]}`).
//!
//! By default it attaches to the daemon (starting it as the other commands
//! do), so servers stay warm and are shared by every client and terminal:
//! it upgrades one bridge connection with the `mcp` op and copies bytes
//! both ways; the daemon serves the MCP session (`front::lines`). With
//! `--no-daemon` the servers run in this process and the session is served
//! here, by the same code. Either way stdout carries MCP only; what Warden
//! says goes to stderr. When the client closes stdin, the session ends
//! (calls in flight are cancelled) and `warden mcp` exits.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use tokio::io::{AsyncWriteExt as _, BufReader};
use warden_actors::Warden;

use super::load;
use crate::cli::Common;
use crate::daemon::state_dir::StateDir;
use warden_front::asking::LoneClient;
use warden_front::view::View;
use warden_front::{lines, Front, FrontOptions};

/// What `warden mcp` serves.
pub(crate) struct McpArgs {
    pub(crate) common: Common,
    /// The agent whose allowlist and profile apply.
    pub(crate) agent: Option<String>,
    /// Serve only this server, under its own names.
    pub(crate) server: Option<String>,
}

pub(super) async fn run(args: McpArgs, verbose: bool) -> anyhow::Result<ExitCode> {
    if args.common.no_daemon {
        return in_process(args).await;
    }
    let client = super::remote::connect(&args.common, verbose).await?;
    let pid = client.lockfile.pid;
    let (mut from_daemon, mut to_daemon) = client.into_mcp(args.agent.as_deref(), args.server.as_deref()).await?;
    tracing::info!("serving MCP on stdin/stdout through the warden daemon (pid {pid})");
    let upstream = async {
        let mut stdin = tokio::io::stdin();
        let _ = tokio::io::copy(&mut stdin, &mut to_daemon).await;
        // The client closed stdin: the daemon ends the session and closes.
        let _ = to_daemon.shutdown().await;
    };
    let downstream = async {
        let mut stdout = tokio::io::stdout();
        let copied = tokio::io::copy_buf(&mut from_daemon, &mut stdout).await;
        let _ = stdout.flush().await;
        copied
    };
    tokio::pin!(downstream);
    tokio::select! {
        () = upstream => {
            // Let the daemon's last answers through, briefly.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), &mut downstream).await;
        }
        copied = &mut downstream => {
            if let Err(error) = copied {
                eprintln!("warden mcp: the connection to the daemon broke: {error}");
                return Ok(ExitCode::from(1));
            }
            eprintln!("warden mcp: the daemon closed the session (it stopped, or the session broke a limit)");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--no-daemon`: the servers and the session in this process.
async fn in_process(args: McpArgs) -> anyhow::Result<ExitCode> {
    let (_, config) = load(&args.common)?;
    // Questions no call's own client takes go to the one client there is.
    let lone_client = Arc::new(LoneClient::default());
    let mut builder = Warden::builder().config(&config).elicitor(lone_client.clone());
    if let Some(memo) = StateDir::era_memo() {
        builder = builder.era_memo(memo);
    }
    let warden = builder.start();
    let warden = warden.await.context("starting Warden")?;
    let view = View::of(&warden, args.agent.as_deref(), args.server.as_deref(), config.front.resource_tools)?;
    let options =
        FrontOptions { lone_client: Some(lone_client), login_advice: Some(Arc::new(crate::advice::login_advice)) };
    let front = Front::with(warden.clone(), options);
    tracing::info!("serving MCP on stdin/stdout ({})", view.who());
    let stdin = BufReader::new(tokio::io::stdin());
    lines::serve(front, view, stdin, tokio::io::stdout(), config.max_message_bytes).await;
    warden.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
