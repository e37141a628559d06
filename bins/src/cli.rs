//! The command line, as clap reads it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Warden: one well-behaved host runtime for many MCP servers.
#[derive(Debug, Parser)]
#[command(name = "warden", version, about)]
pub(crate) struct Cli {
    /// More logging on stderr (-v info, -vv debug); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the tools of every running server.
    Tools {
        #[command(flatten)]
        common: Common,
    },
    /// Call one tool by its namespaced name, e.g. `everything__echo '{"message":"hi"}'`.
    Call {
        /// The tool's namespaced name (`server__tool`), as `warden tools` lists it.
        name: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
        #[command(flatten)]
        common: Common,
    },
    /// Show each server's state, tool count and errors (exit 1 when any failed).
    Status {
        #[command(flatten)]
        common: Common,
    },
}

/// Options every command takes.
#[derive(Debug, Args)]
pub(crate) struct Common {
    /// The config file (TOML).
    #[arg(long, short, env = "WARDEN_CONFIG", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Print JSON for scripts instead of text for people.
    #[arg(long)]
    pub(crate) json: bool,
}
