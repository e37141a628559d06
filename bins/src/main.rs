//! `warden`: run the MCP servers of a config, list their tools, call them.
//!
//! The commands are clients of a daemon (`warden serve`, in [`daemon`])
//! that they find through its lockfile, or start when none runs
//! ([`client`]); `--no-daemon` runs Warden in-process for one command
//! instead. The binary stays thin: parse arguments, set up logging, hand
//! over to [`commands`].
//!
//! The modules: [`cli`] (the arguments), [`commands`] (each command, in
//! process or through the daemon), [`client`] (finding, starting and
//! talking to the daemon), [`daemon`] (`warden serve`: admission and the
//! **token check**, connections, ops, the log), [`front`] (Warden as an MCP
//! server: `warden mcp` and the daemon's HTTP front), [`render`] (what a command
//! prints), [`advice`] (the `warden` commands that help after a library
//! error), [`usage`] (mistakes that exit 2).
//!
//! Exit codes: 0 success; 1 the call or a server failed (a tool result with
//! `isError` included); 2 bad usage or a bad config.

mod advice;
mod cli;
mod client;
mod clients;
mod commands;
mod daemon;
mod logging;
mod render;
mod telemetry;
mod unix_stream;
mod usage;

// The CLI tests' dev-dependency, seen by this crate's own test build.
#[cfg(test)]
use warden_tests as _;
// The traces tests' decoder, likewise.
#[cfg(test)]
use {opentelemetry_proto as _, prost as _};

use std::process::ExitCode;

use clap::Parser;

/// mimalloc for every command (see the workspace's `Cargo.toml` for why).
/// Only the binary: an embedding host keeps its own allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // The daemon logs what it does (to daemon.log when detached); the other
    // commands are quiet unless asked.
    let serving = matches!(cli.command, cli::Command::Serve { .. });
    // A detached daemon's stderr is daemon.log: its lines go through the
    // writer that keeps that file to a size.
    let log = match cli.command {
        cli::Command::Serve { detached: true, .. } => {
            daemon::state_dir::StateDir::from_env().ok().map(|state| daemon::RotatingLog::new(state.log()))
        }
        _ => None,
    };
    commands::inputs::ask_before_start(&cli);
    // The daemon and `warden mcp` serve many callers at once; every other
    // command is one errand, for which worker threads are only a cost of
    // starting (of the 2.7 ms a `warden call` took against a warm daemon,
    // starting two workers and stopping them was about 0.3 ms).
    let one_errand = !matches!(cli.command, cli::Command::Serve { .. } | cli::Command::Mcp { .. });
    let mut builder = if one_errand {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        if let Some(workers) = daemon::workers(&cli.command) {
            builder.worker_threads(workers);
        }
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    // Traces need the runtime (their exporter is a task on it) and go in
    // with the subscriber: `warden serve` with `[telemetry]` only.
    let entered = runtime.enter();
    let (traces, traces_error) = telemetry::for_command(&cli.command);
    let json = matches!(cli.command, cli::Command::Serve { log_format: cli::LogFormat::Json, .. });
    logging::init(cli.verbose + u8::from(serving), log.clone(), json, traces);
    if let Some(error) = traces_error {
        tracing::error!("{error:#}; traces are not exported");
    }
    drop(entered);
    raise_open_files();
    // On the heap: the future is as large as the largest command's (tens
    // of KB), and on the stack every page of it is touched (stack probes),
    // a page fault each, whichever command runs.
    let outcome = runtime.block_on(Box::pin(commands::run(cli, log)));
    // A prompt still reading the terminal (a call cancelled with Ctrl-C
    // while it asked for approval) must not hold the process open.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(commands::exit_code_for(&error))
        }
    }
}

/// Lifts the open-file limit Warden itself runs under (its servers keep
/// the user's): each stdio server takes about four descriptors. Says so
/// when the system allows too few for many servers.
fn raise_open_files() {
    const FEW: u64 = 4_096;
    let how = "raise the hard limit (`ulimit -Hn`, or `LimitNOFILE=` in a systemd unit) for more";
    match warden_protocol::raise_open_file_limit() {
        Ok(limit) if limit.now < FEW => tracing::warn!(
            "the system allows Warden {} open files, enough for about {} stdio servers; {how}",
            limit.now,
            limit.now / 4
        ),
        Ok(limit) if limit.was < limit.now => {
            tracing::debug!("open-file limit raised from {} to {}", limit.was, limit.now)
        }
        Ok(_) => {}
        Err(error) => tracing::warn!("could not raise the open-file limit ({error}); {how}"),
    }
}

#[cfg(test)]
mod tests {
    /// A panic is caught and a backtrace walks the stack: ractor's
    /// supervision and tokio's tasks rely on the unwinder.
    #[test]
    fn a_panic_is_caught_and_a_backtrace_walks_the_stack() {
        let caught = std::panic::catch_unwind(|| {
            let empty: Vec<u8> = Vec::new();
            empty[std::hint::black_box(3)]
        });
        assert!(caught.is_err());
        let joined = std::thread::spawn(|| panic!("in a thread")).join();
        assert!(joined.is_err());
        let backtrace = std::backtrace::Backtrace::force_capture().to_string();
        assert!(backtrace.lines().count() > 2, "{backtrace}");
    }
}
