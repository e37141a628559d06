//! `warden`: run the MCP servers of a config, list their tools, call them.
//!
//! For now every command runs Warden in-process: start the servers, wait for
//! them to settle, do one thing, shut everything down. The binary stays thin:
//! parse arguments, set up logging, hand over to [`commands`].
//!
//! Exit codes: 0 success; 1 the call or a server failed (a tool result with
//! `isError` included); 2 bad usage or a bad config.

mod cli;
mod commands;
mod render;

// The CLI tests' dev-dependency, seen by this crate's own test build.
#[cfg(test)]
use warden_tests as _;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    init_logging(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(commands::run(cli));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(commands::exit_code_for(&error))
        }
    }
}

/// Logs go to stderr; stdout is for results. `RUST_LOG` wins over `-v`.
/// Quiet by default: the commands report failed servers themselves.
fn init_logging(verbose: u8) {
    use std::io::IsTerminal as _;
    let default = match verbose {
        0 => "error",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}
