//! What each command does.
//!
//! By default the commands talk to the daemon ([`remote`]), starting one
//! when none runs, so servers start once and stay warm between commands.
//! `--no-daemon` runs Warden in-process for one command ([`local`]): start
//! the servers, wait for them to settle, do one thing, shut down.
//!
//! Without a config anywhere (no `--config`, no `$WARDEN_CONFIG`, nothing
//! at the XDG location) and no daemon running, there are no servers: the
//! commands say so and how to add one, and run in-process with none, so
//! `warden tools` lists no tools and exits 0 instead of failing.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;
use warden_config::{ConfigError, Discovered, WardenConfig};

use crate::cli::{
    Cli, ClusterBranch, ClusterCommand, Command, Common, ConfigBranch, ConfigCommand, ServiceBranch, ServiceCommand,
};

pub(crate) use crate::usage::UsageError;

mod ask;
mod audit;
mod check;
mod find;
mod import;
pub(crate) mod inputs;
mod install;
mod interrupt;
mod local;
mod login;
pub(crate) mod mcp;
mod progress;
mod remote;
mod service;
mod watch;

pub(crate) async fn run(mut cli: Cli, log: Option<crate::daemon::RotatingLog>) -> anyhow::Result<ExitCode> {
    let verbose = cli.verbose > 0;
    if let Command::Tools { common, .. }
    | Command::Call { common, .. }
    | Command::Schema { common, .. }
    | Command::Find { common, .. }
    | Command::Status { common, .. } = &mut cli.command
    {
        // Nothing to start a daemon for: run in-process with no servers.
        common.no_daemon |= nothing_to_serve(common).await?;
    }
    match cli.command {
        Command::Serve { config, no_idle_exit, .. } => {
            // Loaded here too, so `warden serve` in a terminal fails with
            // exit 2 and the config's own message.
            let path = match WardenConfig::discover(config.as_deref())? {
                Discovered::Loaded { path, .. } => path,
                nothing => return Err(UsageError(nothing.notice().unwrap_or_default()).into()),
            };
            crate::daemon::run(&path, log, no_idle_exit).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { agent, server, common } => mcp::run(mcp::McpArgs { common, agent, server }, verbose).await,
        Command::Stop { config } => remote::stop(config.as_deref()).await,
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "warden", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Import { source, dry_run, config } => import::run(source.as_deref(), dry_run, config.as_deref()),
        Command::Install { client, dry_run, config } => install::install(&client, dry_run, config.as_deref()),
        Command::Uninstall { client, force } => install::uninstall(&client, force),
        Command::Clients { json } => install::list(json),
        Command::Audit { since, tool, json } => audit::run(since.as_deref(), tool.as_deref(), json),
        Command::Service(ServiceBranch::Service { command: ServiceCommand::Install { user, config, dry_run } }) => {
            service::install(user, config.as_deref(), dry_run)
        }
        Command::Service(ServiceBranch::Service { command: ServiceCommand::Uninstall { user } }) => {
            service::uninstall(user)
        }
        Command::Man => {
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut std::io::stdout())?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Login { name, no_browser, common } => login::login(&common, &name, no_browser).await,
        Command::Logout { name, common } => login::logout(&common, &name).await,
        Command::Reload { config } => remote::reload(config.as_deref()).await,
        Command::Config(ConfigBranch::Config { command: ConfigCommand::Check { config, json } }) => {
            check::run(config.as_deref(), json)
        }
        Command::Tools { policy: true, common } if common.no_daemon => local::tool_policies(&common).await,
        Command::Tools { common, .. } if common.no_daemon => local::tools(&common).await,
        Command::Call { name, arguments, common } if common.no_daemon => {
            local::call(&common, &name, parse_arguments(&arguments)?).await
        }
        Command::Schema { name, common } if common.no_daemon => local::schema(&common, &name).await,
        Command::Find { query, limit, agent, common } => {
            find::run(&common, &query, limit, agent.as_deref(), verbose).await
        }
        Command::Status { watch: true, common } if common.no_daemon => Err(UsageError(
            "`status --watch` watches the daemon, and there is none to watch here (--no-daemon, or no config \
                 found)"
                .into(),
        )
        .into()),
        Command::Status { common, .. } if common.no_daemon => local::status(&common).await,
        Command::Approvals { common }
        | Command::Approve { common, .. }
        | Command::Deny { common, .. }
        | Command::Pending { common }
        | Command::Answer { common, .. }
        | Command::Tasks { common, .. }
            if common.no_daemon =>
        {
            Err(UsageError("approvals and questions live in the daemon; run this without --no-daemon".into()).into())
        }
        Command::Tools { policy: true, common } => remote::tool_policies(&common, verbose).await,
        Command::Tools { common, .. } => remote::tools(&common, verbose).await,
        Command::Call { name, arguments, common } => {
            remote::call(&common, &name, parse_arguments(&arguments)?, verbose).await
        }
        Command::Schema { name, common } => remote::schema(&common, &name, verbose).await,
        Command::Status { watch: true, common } => watch::watch(&common, verbose).await,
        Command::Status { common, .. } => remote::status(&common, verbose).await,
        Command::Cluster(ClusterBranch::Cluster { command: ClusterCommand::Status { common } }) => {
            if common.no_daemon {
                return Err(UsageError("the cluster is the daemon's; run this without --no-daemon".into()).into());
            }
            remote::cluster_status(&common, verbose).await
        }
        Command::Cluster(ClusterBranch::Cluster { command: ClusterCommand::Audit { since, tool, common } }) => {
            audit::cluster(since.as_deref(), tool.as_deref(), &common).await
        }
        Command::Approvals { common } => remote::approvals(&common, serde_json::json!({"op": "approvals"})).await,
        Command::Approve { id, grant, tools, minutes, agent_only, common } => {
            let grant = (grant || tools.is_some() || minutes.is_some() || agent_only)
                .then(|| serde_json::json!({"tools": tools, "minutes": minutes, "this_agent_only": agent_only}));
            remote::approvals(&common, serde_json::json!({"op": "approve", "approval": id, "grant": grant})).await
        }
        Command::Deny { id, reason, common } => {
            remote::approvals(&common, serde_json::json!({"op": "deny", "approval": id, "reason": reason})).await
        }
        Command::Pending { common } => remote::approvals(&common, serde_json::json!({"op": "pending"})).await,
        Command::Tasks { result, common } => remote::left_tasks(&common, result).await,
        Command::Answer { id, accept, defaults, decline, cancel, common } => {
            // clap requires exactly one of the four.
            let (action, content) = if let Some(fields) = accept {
                let fields: serde_json::Value = serde_json::from_str(&fields).map_err(|error| {
                    UsageError(format!(
                        "--accept takes the fields as a JSON object, e.g. '{{\"name\": \"x\"}}': {error}"
                    ))
                })?;
                ("accept", Some(fields))
            } else if defaults {
                ("defaults", None)
            } else if decline {
                ("decline", None)
            } else {
                debug_assert!(cancel);
                ("cancel", None)
            };
            let request = serde_json::json!({"op": "answer", "question": id, "action": action, "content": content});
            remote::approvals(&common, request).await
        }
    }
}

/// 2 for usage and config errors, 3 for an address in use (`warden
/// serve`), 1 for everything else.
pub(crate) fn exit_code_for(error: &anyhow::Error) -> u8 {
    if error.is::<UsageError>() || error.is::<ConfigError>() {
        2
    } else if error.downcast_ref::<crate::daemon::CannotListen>().is_some_and(|error| error.in_use()) {
        crate::daemon::CannotListen::EXIT_CODE
    } else {
        1
    }
}

/// No config named, none at the XDG location, and no daemon running.
async fn nothing_to_serve(common: &Common) -> anyhow::Result<bool> {
    if common.no_daemon || common.config.is_some() {
        return Ok(false);
    }
    let state = crate::daemon::state_dir::StateDir::from_env()?;
    Ok(crate::client::running(&state).await.is_none()
        && matches!(WardenConfig::discover(None)?, Discovered::Nothing { .. }))
}

/// Finds, loads and checks the config, the path absolute. No config at all
/// is no servers: said on stderr, with how to add one.
fn load(common: &Common) -> anyhow::Result<(Option<PathBuf>, WardenConfig)> {
    match WardenConfig::discover(common.config.as_deref())? {
        Discovered::Loaded { path, config } => Ok((Some(path), *config)),
        nothing => {
            eprintln!("{}", nothing.notice().unwrap_or_default());
            Ok((None, WardenConfig::from_toml("", "(no config)")?))
        }
    }
}

fn parse_arguments(arguments: &str) -> anyhow::Result<Value> {
    // `-` reads them from stdin: a command line holds at most 128 KiB in one
    // argument, and arguments may be larger than that.
    let from_stdin;
    let arguments = if arguments == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|error| UsageError(format!("cannot read the arguments from stdin: {error}")))?;
        from_stdin = text;
        from_stdin.as_str()
    } else {
        arguments
    };
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
    Ok(arguments)
}
