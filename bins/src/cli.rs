//! The command line, as clap reads it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Warden: one well-behaved host runtime for many MCP servers.
#[derive(Debug, Parser)]
#[command(name = "warden", version, about)]
pub(crate) struct Cli {
    /// More output on stderr: what the daemon did (-v), logs (-v info, -vv
    /// debug); RUST_LOG overrides the log level.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
// Each subcommand's arguments are built only when it is the one run: every
// `warden` process built all 27 (some 120 arguments, ~110 KB of heap and a
// 70 KB stack frame, a page fault per page), 0.1-0.2 ms of a `warden call`.
// `--help`, completions and the man page still see all of them. (`config`
// and `service` are outside it: see [`ConfigBranch`].)
#[command(defer = true)]
pub(crate) enum Command {
    /// List the tools of every running server.
    Tools {
        /// Show each tool's resolved policy (risk, approval, timeout, leaks) and where each came from.
        #[arg(long)]
        policy: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Call one tool by its namespaced name, e.g. `everything__echo '{"message":"hi"}'`.
    Call {
        /// The tool's namespaced name (`server__tool`), as `warden tools` lists it.
        name: String,
        /// The arguments, a JSON object; `-` reads it from stdin.
        #[arg(default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        common: Common,
    },
    /// Find tools by what they do (tool search), best first: name, score,
    /// the first line of the description.
    Find {
        /// What you want done, in words, e.g. "read a file".
        query: String,
        /// How many tools to show (1 to 20).
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Among the tools this agent may call.
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Print one tool's input schema (JSON).
    Schema {
        /// The tool's namespaced name (`server__tool`).
        name: String,
        #[command(flatten)]
        common: Common,
    },
    /// Show each server's state, tool count and errors, and the daemon's
    /// (exit 1 when any server failed or needs a login).
    Status {
        /// Keep watching: servers, calls waiting for approval and questions, refreshed every second until Ctrl-C.
        #[arg(long)]
        watch: bool,
        #[command(flatten)]
        common: Common,
    },
    /// List the calls waiting for approval.
    Approvals {
        #[command(flatten)]
        common: Common,
    },
    /// Approve a waiting call (and, with --grant, later ones).
    Approve {
        /// The approval's id, as `warden approvals` lists it.
        id: String,
        /// Also let later calls of this tool run unasked, for the daemon's lifetime.
        #[arg(long)]
        grant: bool,
        /// The grant covers these tools instead (a name or glob such as 'fs__*'); implies --grant.
        #[arg(long, value_name = "GLOB")]
        tools: Option<String>,
        /// The grant lasts this many minutes; implies --grant.
        #[arg(long)]
        minutes: Option<f64>,
        /// The grant covers only the requesting agent; implies --grant.
        #[arg(long)]
        agent_only: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Deny a waiting call.
    Deny {
        /// The approval's id, as `warden approvals` lists it.
        id: String,
        /// Told to the caller.
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// List everything waiting for a person: calls for approval and servers'
    /// questions (each field with its type, default and choices).
    Pending {
        #[command(flatten)]
        common: Common,
    },
    /// List the server-side tasks the calls of a daemon that died left on
    /// servers that outlived it (HTTP), with what each server says of its
    /// task now; or, with --result, fetch one's result.
    Tasks {
        /// Fetch the result of the task with this key (as listed); it is
        /// forgotten once it has ended.
        #[arg(long, value_name = "KEY")]
        result: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Answer a server's question, as `warden pending` lists it.
    #[command(group(clap::ArgGroup::new("action").required(true).args(["accept", "defaults", "decline", "cancel"])))]
    Answer {
        /// The question's id, as `warden pending` lists it.
        id: String,
        /// Accept: the fields as a JSON object (empty ones take their defaults); '{}' for a URL.
        #[arg(long, value_name = "JSON")]
        accept: Option<String>,
        /// Accept with every field's default.
        #[arg(long)]
        defaults: bool,
        /// Say no.
        #[arg(long)]
        decline: bool,
        /// Dismiss it without choosing.
        #[arg(long)]
        cancel: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Log in to a `url` server behind OAuth: opens the browser ($BROWSER,
    /// else the system's), waits for it to come back, saves the tokens;
    /// a running daemon then connects the server without a restart.
    Login {
        /// The server's name in the config.
        name: String,
        /// Print the URL to open (on any machine) instead of opening a browser.
        #[arg(long)]
        no_browser: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Forget a server's OAuth tokens (revoking them when the server offers it).
    Logout {
        /// The server's name in the config.
        name: String,
        #[command(flatten)]
        common: Common,
    },
    /// Copy another MCP client's servers into Warden's config (`${VAR}`
    /// references kept as references); conflicts are named, never overwritten.
    Import {
        /// A client (claude-desktop, claude-code, cursor, windsurf, vscode, codex, goose, zed) or a config file.
        source: Option<String>,
        /// Print what would change (a diff) and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Warden's config to add them to. Default: $XDG_CONFIG_HOME/warden/warden.toml.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Make a client run its MCP servers through Warden: they move into
    /// Warden's config, the client gets one `warden mcp` entry, and its
    /// original file is kept beside it for `warden uninstall`.
    Install {
        /// The client (claude-desktop, claude-code, cursor, windsurf, vscode, codex, goose, zed).
        client: String,
        /// Print the diff of each file it would change and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Warden's config the servers move to. Default: $XDG_CONFIG_HOME/warden/warden.toml.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Put a client's config back as it was before `warden install`.
    Uninstall {
        /// The client.
        client: String,
        /// Put the original back even though the client's file changed since.
        #[arg(long)]
        force: bool,
    },
    /// List the MCP clients found on this machine: their config files, their
    /// servers, and whether they already use Warden.
    Clients {
        /// Print JSON for scripts instead of text for people.
        #[arg(long)]
        json: bool,
    },
    /// The daemon's record of calls (`audit.jsonl`): who called what, the
    /// policy, who decided, leaks, how it ended.
    Audit {
        /// Only calls that ended this recently: `90s`, `15m`, `1h`, `2d`.
        #[arg(long, value_name = "AGE")]
        since: Option<String>,
        /// Only these tools: a name or a glob (`files__*`).
        #[arg(long, value_name = "GLOB")]
        tool: Option<String>,
        /// Print JSON for scripts instead of text for people.
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Service(ServiceBranch),
    #[command(flatten)]
    Cluster(ClusterBranch),
    /// Print shell completions: `warden completions bash > ~/.local/share/bash-completion/completions/warden`.
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `warden man > ~/.local/share/man/man1/warden.1`.
    Man,
    /// Stop the running daemon (its servers with it).
    Stop {
        /// Stop it only if it serves this config file.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
    },
    #[command(flatten)]
    Config(ConfigBranch),
    /// Make the running daemon re-read its config: added servers start,
    /// removed ones stop, changed ones restart, policy applies to the next
    /// call. A config that does not load leaves the running one in place.
    Reload {
        /// Reload it only if it serves this config file.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Be an MCP server on stdin/stdout for an MCP client (a desktop app, an
    /// editor, a coding agent): every configured server's tools, resources
    /// and prompts, supervised and policed. Put `{"command": "warden",
    /// "args": ["mcp"]}` in the client's config.
    Mcp {
        /// The agent (an [[agents]] entry) whose allowlist and tool profile apply.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// Serve only this server, under its own tool names and URIs.
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Run the daemon in the foreground: the servers of the config, and the
    /// bridge listener the other commands talk to.
    Serve {
        /// The config file (TOML; or YAML, JSON by extension). Default:
        /// $XDG_CONFIG_HOME/warden/warden.toml.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
        /// Started by another `warden` command (logs go to daemon.log).
        #[arg(long, hide = true)]
        detached: bool,
        /// `json`: one JSON object per log line, for log collectors.
        #[arg(long, value_enum, default_value = "text")]
        log_format: LogFormat,
        /// Never exit for idleness, whatever `idle_timeout_minutes` says (as a service).
        #[arg(long)]
        no_idle_exit: bool,
    },
}

/// How `warden serve` writes its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Lines for people.
    Text,
    /// One JSON object per line.
    Json,
}

/// `warden config` itself, outside [`Command`]'s deferral: clap copies
/// the command tree for `help` before it builds deferred arguments, and a
/// deferred `config` lost its subcommands from that copy (the completion
/// of `warden help config check`).
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigBranch {
    /// Work with the config file.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// `warden config …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Read and check the config without starting anything; print the
    /// servers it defines, where each came from, secrets masked (exit 2 when
    /// it is invalid).
    Check {
        /// The config file (TOML; or YAML, JSON by extension). Default:
        /// $XDG_CONFIG_HOME/warden/warden.toml.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print JSON for scripts instead of text for people.
        #[arg(long)]
        json: bool,
    },
}

/// `warden cluster` (as [`ServiceBranch`]).
#[derive(Debug, Subcommand)]
pub(crate) enum ClusterBranch {
    /// The daemon's cluster (nodes sharing servers through NATS; `[cluster]` in the config).
    Cluster {
        #[command(subcommand)]
        command: ClusterCommand,
    },
}

/// `warden cluster …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ClusterCommand {
    /// The other live nodes (version, exports, last heartbeat) and, for each
    /// server they export, the nodes that serve it.
    Status {
        #[command(flatten)]
        common: Common,
    },
    /// Every node's record of calls, from the cluster's stream in NATS,
    /// oldest first, each with the node it entered at.
    Audit {
        /// Only calls that ended this recently: `90s`, `15m`, `1h`, `2d`.
        #[arg(long, value_name = "AGE")]
        since: Option<String>,
        /// Only these tools: a name or a glob (`files__*`).
        #[arg(long, value_name = "GLOB")]
        tool: Option<String>,
        #[command(flatten)]
        common: Common,
    },
}

/// `warden service` itself, outside [`Command`]'s deferral (as
/// [`ConfigBranch`]).
#[derive(Debug, Subcommand)]
pub(crate) enum ServiceBranch {
    /// Run Warden as a systemd service (`warden serve`, restarted on failure).
    Service {
        #[command(subcommand)]
        command: ServiceCommand,
    },
}

/// `warden service …`.
#[derive(Debug, Subcommand)]
pub(crate) enum ServiceCommand {
    /// Write and start a systemd unit running `warden serve` with this config
    /// (without systemd: print the unit).
    Install {
        /// A user unit (`~/.config/systemd/user`) instead of a system one.
        #[arg(long)]
        user: bool,
        /// The config file the service serves. Default: $XDG_CONFIG_HOME/warden/warden.toml.
        #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
        config: Option<PathBuf>,
        /// Print the unit and write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Stop, disable and remove the unit.
    Uninstall {
        /// The user unit.
        #[arg(long)]
        user: bool,
    },
}

// Options every client command takes.
// Not a doc comment: under `defer`, clap would show it as the about of
// every command that takes these, in place of the command's own.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// The config file (TOML; or YAML, JSON by extension). Default:
    /// $XDG_CONFIG_HOME/warden/warden.toml.
    #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print JSON for scripts instead of text for people.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run the servers in this process for this one command instead of
    /// using (and, if needed, starting) the daemon.
    #[arg(long)]
    pub(crate) no_daemon: bool,
}
