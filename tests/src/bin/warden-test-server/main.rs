//! `warden-test-server`: a small, scriptable MCP server used by Warden's
//! integration tests.
//!
//! It speaks JSON-RPC 2.0 over stdio, one JSON message per line: requests come
//! in on stdin, answers and notifications go out on stdout (flushed after every
//! line) and human-readable logs go to stderr. It is written from scratch with
//! only `tokio`, `serde_json` and `std`, and deliberately shares no code with
//! Warden's own protocol crate, so a bug in Warden's MCP code cannot be hidden
//! by the same bug in the server it is tested against.
//!
//! Requests are handled concurrently: every `tools/call` runs in its own task,
//! so a slow `sleep` does not hold up an `echo` sent after it. All output goes
//! through one writer thread, so lines never interleave.
//!
//! # Protocol
//!
//! * `initialize`: answers with the client's `protocolVersion` if it is one of
//!   `2025-11-25`, `2025-06-18`, `2025-03-26`, `2024-11-05`, else
//!   `2025-11-25`; capabilities `{"tools": {"listChanged": true}}`,
//!   `serverInfo` `{"name": "warden-test-server", "version": "0.1.0"}` and an
//!   `instructions` string.
//! * `ping`: answers `{}`.
//! * `tools/list`: paginated with `--page-size`; the cursor is the decimal
//!   offset of the next page, and `nextCursor` is present only when more tools
//!   remain. A cursor the server did not hand out is error -32602.
//! * `tools/call`: runs a tool (below). An unknown or unserved tool is error
//!   -32602; wrong arguments give a tool result with `isError: true`.
//! * Any other method is error -32601 "Method not found".
//! * `notifications/initialized` is logged; `notifications/cancelled` aborts
//!   the running `tools/call` with that `requestId`, which then gets no answer
//!   (the log says `cancelled <id>`); other notifications are ignored.
//! * Requests other than `initialize` and `ping` that arrive before
//!   `initialize` are answered normally, with a warning on stderr.
//! * Lines that are not JSON get error -32700, JSON that is not a JSON-RPC
//!   message gets error -32600 (both with `id: null`).
//!
//! When stdin closes the server stops reading, lets the calls already running
//! finish (a pending `sleep` delays the exit; a pending `ask_client` fails at
//! once) and exits with code 0. SIGTERM makes it exit with code 0 at once.
//!
//! # Tools
//!
//! Served by default, in this order:
//!
//! * `echo {message: string}`: text `<message>`.
//! * `add {a: number, b: number}`: text of the sum as a JSON number (`2 + 3`
//!   gives `5`, `1.5 + 1` gives `2.5`) and `structuredContent: {"sum": <sum>}`.
//!   Its definition carries an `outputSchema`, `annotations` `{"readOnlyHint":
//!   true, "title": "Add two numbers"}` and `_meta` `{"warden-test/owner":
//!   "tests"}`, so tests can check that unknown fields pass through.
//! * `sleep {ms: integer}`: waits, then text `slept <ms> ms`; annotations
//!   `{"idempotentHint": true}`.
//! * `crash {code?: integer}`: logs `crashing on request` and exits with
//!   `code` (default 1) without answering.
//! * `garbage {}`: writes `this is not json`, `[1,2]` and `{"hello":"world"}`
//!   to stdout, then answers text `after garbage`.
//! * `huge {bytes: integer}`: one text block of exactly `bytes` `x`
//!   characters (at most 1 GiB).
//! * `notify {}`: adds `late_tool` to the list, sends
//!   `notifications/tools/list_changed` and `notifications/message`
//!   `{"level": "info", "data": "tools changed"}`, then answers text
//!   `notified`.
//! * `fail {message?: string}`: result with `isError: true` and text
//!   `<message>` (default `failed on request`).
//! * `image {}`: a text block `a 1x1 PNG image follows` and an image block
//!   (`mimeType` `image/png`, a valid 1x1 PNG in base64).
//! * `env {name: string}`: text: the value of that environment variable, or
//!   `<unset>`.
//! * `stderr {lines: integer}`: writes `stderr line 1` ... `stderr line <n>`
//!   to stderr, then answers text `wrote <n> lines`.
//! * `ask_client {method: string, params?: object}`: sends the client a
//!   request with that method and the id `"srv-<n>"` (n = 1, 2, ...), waits
//!   for its answer and returns text `result: <result JSON>` or
//!   `error: <code> <message>`.
//! * `cwd {}`: text: the server's working directory.
//! * `pid {}`: text: the server's process id (tests check it is gone after
//!   shutdown).
//!
//! Served only when `--tools` names them:
//!
//! * `cancellations {}`: text `cancelled: <ids>`, the request ids of every
//!   `notifications/cancelled` received so far, in order (`cancelled: none`).
//! * `progress {steps: integer, ms?: integer}`: sends `notifications/progress`
//!   `{progressToken, progress: i, total: steps, message: "step i of
//!   <steps>"}` for i = 1..steps, `ms` apart (default 10) — only when the
//!   request's `_meta` has a `progressToken` — then text `<steps> steps`.
//! * `meta {}`: text: the request's `_meta` as JSON (`null` without one).
//! * `record {file, id, ms?}` and `record_safe` (annotated idempotent):
//!   append `id` to `file` in one write, wait `ms`, answer `recorded <id>`,
//!   so a test counts executions on the server's side across crashes.
//! * `mischief {kind}`: `junk` writes a 100 MB line, a line that is not
//!   UTF-8 and answers to ids never sent or long answered, then text
//!   `after junk`; `close_stdout` closes stdout and lives on, answering
//!   nothing (`mischief.rs`).
//!
//! Not served until `notify` runs (or `--list-changed-after-initialized`):
//!
//! * `late_tool {}`: text `late`.
//!
//! # Options
//!
//! * `--tools a,b,c`: serve only these built-in tools, in this order.
//! * `--page-size N`: at most N tools per `tools/list` page (default: all).
//! * `--protocol-version V`: answer `initialize` with V, whatever was asked.
//! * `--duplicate-tool NAME`: list tool NAME twice (repeatable).
//! * `--extra-tool NAME`: also serve a tool with this exact name, which
//!   answers text `extra NAME` (repeatable; odd names welcome).
//! * `--list-changed-after-initialized`: on `notifications/initialized`, add
//!   `late_tool` and send `notifications/tools/list_changed`.
//! * `--no-tools-capability`: advertise no `tools` capability.
//! * `--hang-initialize`: never answer `initialize`.
//! * `--request-during-initialize`: before answering `initialize`, send the
//!   client a `ping` request with id `"init-ping"` and wait for its answer.
//! * `--garbage-at-start`: write a non-JSON line to stdout before anything.
//! * `--startup-delay-ms N`: wait N ms before reading stdin.
//! * `--exit-at-start CODE`: write three lines to stderr, the last one being
//!   `fatal: exiting at start as asked`, and exit with CODE.
//! * `--ignore-stdin-eof`: keep running after stdin closes, until killed.
//! * `--ignore-sigterm`: log SIGTERM and keep running.
//!
//! Values may also be written as `--option=value`.

// This binary shares its package's dependency list (the test harness needs
// Warden's crates, ractor, tracing, ...) but on purpose uses only tokio and
// serde_json, so the lint about unused dependencies does not apply to it.
#![allow(unused_crate_dependencies)]

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Number, Value};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

const SERVER_NAME: &str = "warden-test-server";
const SERVER_VERSION: &str = "0.1.0";

/// Protocol versions the server accepts from a client, newest first.
const SUPPORTED_PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// Tools served when `--tools` is not given, in listing order.
const DEFAULT_TOOLS: [&str; 14] = [
    "echo",
    "add",
    "sleep",
    "crash",
    "garbage",
    "huge",
    "notify",
    "fail",
    "image",
    "env",
    "stderr",
    "ask_client",
    "cwd",
    "pid",
];
/// The tool that only appears after `notify` (or `notifications/initialized`
/// with `--list-changed-after-initialized`).
const LATE_TOOL: &str = "late_tool";

/// What the `garbage` tool writes before its real answer: not JSON, JSON but
/// not an object, and an object that is not JSON-RPC.
const GARBAGE_LINES: [&str; 3] = ["this is not json", "[1,2]", r#"{"hello":"world"}"#];

/// A valid 1x1 PNG, so clients that decode images have something real.
const PNG_1X1_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The largest integer a JSON number can hold exactly (2^53 - 1).
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// `huge` refuses more than this, so a typo cannot eat all the memory.
const MAX_HUGE_BYTES: u64 = 1 << 30;

const USAGE: &str = "\
usage: warden-test-server [options]
  --tools a,b,c                    serve only these tools
  --page-size N                    tools per tools/list page
  --protocol-version V             always answer initialize with V
  --duplicate-tool NAME            list NAME twice (repeatable)
  --extra-tool NAME                serve a tool NAME answering `extra NAME` (repeatable)
  --list-changed-after-initialized add late_tool once the client is initialized
  --no-tools-capability            advertise no tools capability
  --hang-initialize                never answer initialize
  --request-during-initialize      ping the client before answering initialize
  --garbage-at-start               write a non-JSON line to stdout first
  --startup-delay-ms N             wait N ms before reading stdin
  --exit-at-start CODE             exit with CODE at once, after some stderr lines
  --ignore-stdin-eof               keep running when stdin closes
  --ignore-sigterm                 do not exit on SIGTERM";

/// Logs one line to stderr; stdout is reserved for the protocol.
macro_rules! log {
    ($($arg:tt)*) => {
        eprintln!("[{}] {}", SERVER_NAME, format_args!($($arg)*))
    };
}

mod definitions;
mod dispatch;
mod mischief;
mod options;
mod plumbing;
mod state;
mod tools;

use definitions::*;
use dispatch::*;
use options::*;
use plumbing::*;
use state::*;
use tools::*;

#[tokio::main]
async fn main() {
    let options = parse_command_line();
    if let Some(code) = options.exit_at_start {
        exit_at_start(code);
    }
    // Installed first so that SIGTERM during the start-up delay is handled too.
    watch_sigterm(options.ignore_sigterm);

    let (output, writer) = start_stdout_writer();
    if options.garbage_at_start {
        // The channel is FIFO, so this line is the very first one on stdout.
        let _ = output.send(Output::Line("warden-test-server garbage: this is not JSON".into()));
    }
    if let Some(delay) = options.startup_delay {
        log!("waiting {} ms before reading stdin", delay.as_millis());
        tokio::time::sleep(delay).await;
    }

    let server = Arc::new(Server::new(options, output));
    serve(&server, start_stdin_reader()).await;

    // Every task has ended, so the writer has all the output; let it drain.
    let _ = server.output.send(Output::Stop);
    if writer.join().is_err() {
        log!("the stdout writer panicked");
    }
    log!("exiting");
}
