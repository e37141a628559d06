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

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

/// The command-line options; see the crate documentation.
#[derive(Debug)]
struct Options {
    tools: Vec<String>,
    page_size: Option<usize>,
    protocol_version: Option<String>,
    duplicate_tools: Vec<String>,
    extra_tools: Vec<String>,
    startup_delay: Option<Duration>,
    exit_at_start: Option<i32>,
    ignore_stdin_eof: bool,
    ignore_sigterm: bool,
    list_changed_after_initialized: bool,
    no_tools_capability: bool,
    hang_initialize: bool,
    garbage_at_start: bool,
    request_during_initialize: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            tools: DEFAULT_TOOLS.iter().map(ToString::to_string).collect(),
            page_size: None,
            protocol_version: None,
            duplicate_tools: Vec::new(),
            extra_tools: Vec::new(),
            startup_delay: None,
            exit_at_start: None,
            ignore_stdin_eof: false,
            ignore_sigterm: false,
            list_changed_after_initialized: false,
            no_tools_capability: false,
            hang_initialize: false,
            garbage_at_start: false,
            request_during_initialize: false,
        }
    }
}

/// Parses the command line, or prints the usage and exits: a test that passes
/// a wrong option should fail loudly at start, not run with a default.
fn parse_command_line() -> Options {
    match parse_args(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{SERVER_NAME}: {message}\n{USAGE}");
            std::process::exit(2);
        }
    }
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline_value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.to_owned())),
            _ => (arg, None),
        };
        let mut value = || take_value(&flag, inline_value.clone(), &mut args);
        match flag.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--tools" => options.tools = split_list(&value()?),
            "--page-size" => options.page_size = Some(parse_number(&flag, &value()?)?),
            "--protocol-version" => options.protocol_version = Some(value()?),
            "--duplicate-tool" => options.duplicate_tools.push(value()?),
            "--extra-tool" => options.extra_tools.push(value()?),
            "--startup-delay-ms" => {
                options.startup_delay = Some(Duration::from_millis(parse_number(&flag, &value()?)?));
            }
            "--exit-at-start" => options.exit_at_start = Some(parse_number(&flag, &value()?)?),
            _ => {
                let switch = switch_for(&mut options, &flag).ok_or_else(|| format!("unknown option {flag}"))?;
                if inline_value.is_some() {
                    return Err(format!("{flag} takes no value"));
                }
                *switch = true;
            }
        }
    }
    validate(&options)?;
    Ok(options)
}

/// The boolean field that the on/off option `flag` sets, if it is one.
fn switch_for<'a>(options: &'a mut Options, flag: &str) -> Option<&'a mut bool> {
    Some(match flag {
        "--ignore-stdin-eof" => &mut options.ignore_stdin_eof,
        "--ignore-sigterm" => &mut options.ignore_sigterm,
        "--list-changed-after-initialized" => &mut options.list_changed_after_initialized,
        "--no-tools-capability" => &mut options.no_tools_capability,
        "--hang-initialize" => &mut options.hang_initialize,
        "--garbage-at-start" => &mut options.garbage_at_start,
        "--request-during-initialize" => &mut options.request_during_initialize,
        _ => return None,
    })
}

fn take_value(
    flag: &str,
    inline_value: Option<String>,
    args: &mut impl Iterator<Item = String>,
) -> Result<String, String> {
    inline_value.or_else(|| args.next()).ok_or_else(|| format!("{flag} needs a value"))
}

fn parse_number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag}: `{text}` is not a valid number"))
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|name| !name.is_empty()).map(str::to_owned).collect()
}

/// Tools served only when `--tools` names them.
const OPTIONAL_TOOLS: [&str; 3] = ["cancellations", "progress", "meta"];

fn is_builtin_tool(name: &str) -> bool {
    name == LATE_TOOL || DEFAULT_TOOLS.contains(&name) || OPTIONAL_TOOLS.contains(&name)
}

/// Rejects option combinations that would silently test nothing.
fn validate(options: &Options) -> Result<(), String> {
    if options.page_size == Some(0) {
        return Err("--page-size must be at least 1".into());
    }
    if let Some(name) = options.tools.iter().find(|name| !is_builtin_tool(name)) {
        return Err(format!("--tools: no built-in tool is called `{name}` (use --extra-tool)"));
    }
    if let Some(name) = options.extra_tools.iter().find(|name| name.is_empty() || is_builtin_tool(name)) {
        return Err(format!("--extra-tool `{name}` is empty or collides with a built-in tool"));
    }
    let can_be_listed =
        |name: &String| name == LATE_TOOL || options.tools.contains(name) || options.extra_tools.contains(name);
    if let Some(name) = options.duplicate_tools.iter().find(|name| !can_be_listed(name)) {
        return Err(format!("--duplicate-tool `{name}` is not a served tool"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Start-up and main loop
// ---------------------------------------------------------------------------

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

/// `--exit-at-start`: a start-up failure with a recognisable stderr tail.
fn exit_at_start(code: i32) -> ! {
    eprintln!("{SERVER_NAME} {SERVER_VERSION} starting");
    eprintln!("about to exit with code {code} (--exit-at-start)");
    eprintln!("fatal: exiting at start as asked");
    std::process::exit(code);
}

/// Exits with code 0 on SIGTERM, or just logs it with `--ignore-sigterm`,
/// so that tests can check that Warden escalates to SIGKILL.
fn watch_sigterm(ignore: bool) {
    let mut sigterm = signal(SignalKind::terminate()).expect("cannot install a SIGTERM handler");
    tokio::spawn(async move {
        while sigterm.recv().await.is_some() {
            if ignore {
                log!("got SIGTERM; ignoring it (--ignore-sigterm)");
            } else {
                log!("got SIGTERM; exiting with code 0");
                std::process::exit(0);
            }
        }
    });
}

/// Reads stdin lines until EOF and hands them over; the channel closes at EOF.
///
/// A plain thread with blocking reads keeps us independent of tokio's
/// `io-std` feature, which the workspace does not enable.
fn start_stdin_reader() -> mpsc::UnboundedReceiver<String> {
    let (lines, receiver) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut buffer = Vec::new();
        loop {
            buffer.clear();
            match stdin.read_until(b'\n', &mut buffer) {
                Ok(0) => break,
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buffer).trim().to_owned();
                    if !line.is_empty() && lines.send(line).is_err() {
                        break;
                    }
                }
                Err(error) => {
                    log!("cannot read stdin: {error}");
                    break;
                }
            }
        }
    });
    receiver
}

/// A message for the stdout writer thread.
enum Output {
    /// One line, written with a trailing newline and flushed.
    Line(String),
    /// Everything has been written; the thread should end.
    Stop,
}

/// Starts the only thread that writes to stdout. Everything goes through its
/// channel, which keeps lines whole and in the order they were sent.
fn start_stdout_writer() -> (std_mpsc::Sender<Output>, std::thread::JoinHandle<()>) {
    let (output, receiver) = std_mpsc::channel();
    let writer = std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        for message in receiver {
            let Output::Line(line) = message else { break };
            if let Err(error) = writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
                log!("cannot write to stdout ({error}); dropping further output");
                break;
            }
        }
    });
    (output, writer)
}

/// Handles stdin until EOF, then waits for the running calls to finish.
async fn serve(server: &Arc<Server>, mut lines: mpsc::UnboundedReceiver<String>) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(line) => handle_line(server, &mut tasks, &line),
                None => break,
            },
            // Reap finished tasks as we go, so the set does not keep growing.
            Some(ended) = tasks.join_next(), if !tasks.is_empty() => report_task_end(ended),
        }
    }
    log!("stdin closed");
    // Nothing can answer our own requests any more: fail them now rather than
    // waiting forever.
    server.abandon_client_requests();
    if server.options.ignore_stdin_eof {
        log!("staying alive until killed (--ignore-stdin-eof)");
        std::future::pending::<()>().await;
    }
    while let Some(ended) = tasks.join_next().await {
        report_task_end(ended);
    }
}

fn report_task_end(ended: Result<(), tokio::task::JoinError>) {
    if let Err(error) = ended {
        log!("a request task failed: {error}");
    }
}

/// Sorts one incoming line into request, notification or response.
fn handle_line(server: &Arc<Server>, tasks: &mut JoinSet<()>, line: &str) {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(error) => {
            log!("stdin line is not JSON ({error}): {}", shorten(line));
            server.reply_error(Value::Null, PARSE_ERROR, &format!("Parse error: {error}"));
            return;
        }
    };
    let Some(fields) = message.as_object() else {
        log!("stdin message is not an object: {}", shorten(line));
        server.reply_error(Value::Null, INVALID_REQUEST, "Invalid Request: not a JSON object");
        return;
    };
    let params = fields.get("params").cloned().unwrap_or(Value::Null);
    match (fields.get("method"), fields.get("id")) {
        (Some(Value::String(method)), Some(id)) => {
            handle_request(server, tasks, id.clone(), method, &params);
        }
        (Some(Value::String(method)), None) => handle_notification(server, method, &params),
        (None, Some(id)) if fields.contains_key("result") || fields.contains_key("error") => {
            server.route_client_response(id, message.clone());
        }
        (None, Some(_)) => log!("ignoring a response without result or error: {}", shorten(line)),
        _ => {
            let id = fields.get("id").cloned().unwrap_or(Value::Null);
            server.reply_error(id, INVALID_REQUEST, "Invalid Request: no valid method");
        }
    }
}

/// Cuts long lines down for the log.
fn shorten(line: &str) -> String {
    const LIMIT: usize = 200;
    match line.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_owned(),
    }
}

fn handle_request(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, method: &str, params: &Value) {
    if method != "initialize" && method != "ping" && !server.initialize_seen.load(Ordering::SeqCst) {
        log!("warning: {method} received before initialize; answering anyway");
    }
    match method {
        "initialize" => handle_initialize(server, tasks, id, params),
        "ping" => server.reply(id, json!({})),
        "tools/list" => match server.tools_page(params) {
            Ok(page) => server.reply(id, page),
            Err(message) => server.reply_error(id, INVALID_PARAMS, &message),
        },
        "tools/call" => start_tool_call(server, tasks, id, params),
        _ => server.send(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": METHOD_NOT_FOUND, "message": "Method not found", "data": {"method": method}},
        })),
    }
}

fn handle_notification(server: &Server, method: &str, params: &Value) {
    match method {
        "notifications/initialized" => {
            if server.initialize_seen.load(Ordering::SeqCst) {
                log!("client sent notifications/initialized");
            } else {
                log!("warning: notifications/initialized before initialize");
            }
            // Mimics servers (e.g. server-everything) that register some tools
            // only once the client is initialized.
            if server.options.list_changed_after_initialized {
                server.list_late_tool();
            }
        }
        "notifications/cancelled" => server.cancel_call(params.get("requestId")),
        _ => log!("ignoring notification {method}"),
    }
}

// ---------------------------------------------------------------------------
// initialize
// ---------------------------------------------------------------------------

fn handle_initialize(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, params: &Value) {
    server.initialize_seen.store(true, Ordering::SeqCst);
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match &server.options.protocol_version {
        Some(forced) => forced.clone(),
        None => negotiate_version(requested).to_owned(),
    };
    let client = params.pointer("/clientInfo/name").and_then(Value::as_str).unwrap_or("<unnamed>");
    let asked = requested.unwrap_or("no version");
    log!("initialize from {client}, asking for {asked}; answering {version}");

    if server.options.hang_initialize {
        log!("leaving initialize unanswered (--hang-initialize)");
        return;
    }
    let result = initialize_result(&server.options, &version);
    if !server.options.request_during_initialize {
        server.reply(id, result);
        return;
    }
    // The client's answer to our ping arrives through the main loop, so the
    // wait must happen in a task of its own.
    let server = Arc::clone(server);
    tasks.spawn(async move {
        match server.ask_client("ping", None, "init-ping".to_owned()).await {
            Ok(answer) => {
                log!("client answered init-ping: {answer}");
                server.reply(id, result);
            }
            Err(error) => log!("no answer to init-ping ({error}); leaving initialize unanswered"),
        }
    });
}

/// The client's version if we support it, else our latest (as the spec says).
fn negotiate_version(requested: Option<&str>) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS
        .into_iter()
        .find(|supported| Some(*supported) == requested)
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

fn initialize_result(options: &Options, version: &str) -> Value {
    let capabilities = if options.no_tools_capability { json!({}) } else { json!({"tools": {"listChanged": true}}) };
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        "instructions": "Scriptable test server for Warden's integration tests. \
                         Each tool does what its name and description say.",
    })
}

// ---------------------------------------------------------------------------
// Shared server state
// ---------------------------------------------------------------------------

/// State shared by the main loop and the request tasks.
struct Server {
    options: Options,
    /// Feeds the stdout writer thread.
    output: std_mpsc::Sender<Output>,
    initialize_seen: AtomicBool,
    /// Whether `late_tool` has been added to the list.
    late_tool_listed: AtomicBool,
    /// Running `tools/call`s by request id (as JSON text), so that
    /// `notifications/cancelled` can stop them.
    running_calls: Mutex<HashMap<String, RunningCall>>,
    /// Our own requests to the client, by id (as JSON text), waiting for the
    /// client's response.
    client_requests: Mutex<ClientRequests>,
    next_call_token: AtomicU64,
    next_client_request: AtomicU64,
    /// The `requestId` of every `notifications/cancelled`, in order.
    cancellations: Mutex<Vec<Value>>,
}

struct RunningCall {
    /// Tells this registration apart from a later call reusing the same id.
    token: u64,
    /// Sending (or dropping) this stops the call.
    cancel: oneshot::Sender<()>,
}

/// What a call task keeps to learn about (and check for) its cancellation.
struct CallTicket {
    key: String,
    token: u64,
    cancelled: oneshot::Receiver<()>,
}

#[derive(Default)]
struct ClientRequests {
    waiting: HashMap<String, oneshot::Sender<Value>>,
    /// Set at stdin EOF: from then on no response can arrive.
    stdin_closed: bool,
}

/// Running calls and client requests are keyed by the id's JSON text, so that
/// the number `1` and the string `"1"` stay different ids.
fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Server {
    fn new(options: Options, output: std_mpsc::Sender<Output>) -> Self {
        Server {
            options,
            output,
            initialize_seen: AtomicBool::new(false),
            late_tool_listed: AtomicBool::new(false),
            running_calls: Mutex::new(HashMap::new()),
            client_requests: Mutex::new(ClientRequests::default()),
            next_call_token: AtomicU64::new(0),
            next_client_request: AtomicU64::new(1),
            cancellations: Mutex::new(Vec::new()),
        }
    }

    // --- output ------------------------------------------------------------

    fn send(&self, message: &Value) {
        self.send_raw(message.to_string());
    }

    /// Writes a line as is; also used for deliberate garbage.
    fn send_raw(&self, line: String) {
        // Fails only once the writer has given up on a broken stdout.
        let _ = self.output.send(Output::Line(line));
    }

    fn reply(&self, id: Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    fn reply_error(&self, id: Value, code: i64, message: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    }

    fn notify(&self, method: &str, params: Option<Value>) {
        let mut notification = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            notification["params"] = params;
        }
        self.send(&notification);
    }

    // --- tool list ---------------------------------------------------------

    /// Adds `late_tool` to the list and tells the client.
    fn list_late_tool(&self) {
        self.late_tool_listed.store(true, Ordering::SeqCst);
        log!("late_tool added; sending notifications/tools/list_changed");
        self.notify("notifications/tools/list_changed", None);
    }

    /// Names of the served tools, in listing order, without duplicates.
    fn served_tool_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.options.tools.iter().map(String::as_str).collect();
        if self.late_tool_listed.load(Ordering::SeqCst) && !names.contains(&LATE_TOOL) {
            names.push(LATE_TOOL);
        }
        names.extend(self.options.extra_tools.iter().map(String::as_str));
        names
    }

    fn serves(&self, name: &str) -> bool {
        self.served_tool_names().contains(&name)
    }

    /// The full tool list, with `--duplicate-tool` copies next to the original.
    fn listed_tools(&self) -> Vec<Value> {
        let mut tools = Vec::new();
        for name in self.served_tool_names() {
            let definition = builtin_tool_definition(name).unwrap_or_else(|| extra_tool_definition(name));
            if self.options.duplicate_tools.iter().any(|duplicate| duplicate == name) {
                tools.push(definition.clone());
            }
            tools.push(definition);
        }
        tools
    }

    /// One `tools/list` page; an error message for a cursor we never issued.
    fn tools_page(&self, params: &Value) -> Result<Value, String> {
        let tools = self.listed_tools();
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => {
                self.cursor_offset(cursor, tools.len()).ok_or_else(|| format!("Invalid cursor: {cursor}"))?
            }
        };
        let end = match self.options.page_size {
            Some(size) => (start + size).min(tools.len()),
            None => tools.len(),
        };
        let mut page = json!({"tools": tools[start..end]});
        if end < tools.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        Ok(page)
    }

    /// Accepts only cursors that `tools_page` could have handed out.
    // `usize::is_multiple_of` is newer than the workspace's rust-version (1.85).
    #[allow(clippy::manual_is_multiple_of)]
    fn cursor_offset(&self, cursor: &Value, tool_count: usize) -> Option<usize> {
        let offset: usize = cursor.as_str()?.parse().ok()?;
        let size = self.options.page_size?;
        (offset > 0 && offset % size == 0 && offset < tool_count).then_some(offset)
    }

    // --- running calls and cancellation -------------------------------------

    /// Registers a call as cancellable. This happens before its task starts,
    /// so a cancellation can never arrive before the registration.
    fn register_call(&self, id: &Value) -> Option<CallTicket> {
        let key = id_key(id);
        let mut running = self.running_calls.lock().unwrap();
        if running.contains_key(&key) {
            log!("warning: request id {key} is already used by a running call; this one cannot be cancelled");
            return None;
        }
        let token = self.next_call_token.fetch_add(1, Ordering::SeqCst);
        let (cancel, cancelled) = oneshot::channel();
        running.insert(key.clone(), RunningCall { token, cancel });
        Some(CallTicket { key, token, cancelled })
    }

    /// Unregisters a finished call; false if it was cancelled meanwhile, in
    /// which case it must not be answered.
    fn finish_call(&self, key: &str, token: u64) -> bool {
        let mut running = self.running_calls.lock().unwrap();
        match running.get(key) {
            Some(call) if call.token == token => {
                running.remove(key);
                true
            }
            _ => false,
        }
    }

    fn cancel_call(&self, request_id: Option<&Value>) {
        let Some(id) = request_id else {
            log!("notifications/cancelled without requestId; ignored");
            return;
        };
        self.cancellations.lock().unwrap().push(id.clone());
        let call = self.running_calls.lock().unwrap().remove(&id_key(id));
        match call {
            Some(call) => {
                let _ = call.cancel.send(());
                log!("cancelled {id}");
            }
            None => log!("cancellation of {id}, which is not running; ignored"),
        }
    }

    // --- requests to the client ----------------------------------------------

    /// Sends the client a request and waits for its response message.
    async fn ask_client(&self, method: &str, params: Option<Value>, id: String) -> Result<Value, String> {
        let (answer, answered) = oneshot::channel();
        {
            let mut requests = self.client_requests.lock().unwrap();
            if requests.stdin_closed {
                return Err("stdin is closed, so the client cannot answer".into());
            }
            requests.waiting.insert(id_key(&json!(id)), answer);
        }
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        log!("asking the client: {method} (id {id})");
        self.send(&request);
        answered.await.map_err(|_| "stdin closed before the client answered".to_owned())
    }

    fn route_client_response(&self, id: &Value, response: Value) {
        let waiting = self.client_requests.lock().unwrap().waiting.remove(&id_key(id));
        match waiting {
            Some(answer) => {
                if answer.send(response).is_err() {
                    log!("response to {id} arrived after its tool call ended");
                }
            }
            None => log!("warning: response for unknown request id {id}; ignored"),
        }
    }

    /// Fails every pending client request (their senders are dropped).
    fn abandon_client_requests(&self) {
        let mut requests = self.client_requests.lock().unwrap();
        requests.stdin_closed = true;
        requests.waiting.clear();
    }
}

// ---------------------------------------------------------------------------
// tools/call
// ---------------------------------------------------------------------------

fn start_tool_call(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, params: &Value) {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        server.reply_error(id, INVALID_PARAMS, "tools/call needs a string `name`");
        return;
    };
    if !server.serves(name) {
        server.reply_error(id, INVALID_PARAMS, &format!("Unknown tool: {name}"));
        return;
    }
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(arguments) => arguments.clone(),
    };
    let call = Call { name: name.to_owned(), arguments, meta: params.get("_meta").cloned().unwrap_or(Value::Null) };
    let ticket = server.register_call(&id);
    tasks.spawn(run_call(Arc::clone(server), id, call, ticket));
}

/// Runs one tool call and answers it, unless it gets cancelled first.
/// One `tools/call`: the tool, its arguments and the request's `_meta`.
struct Call {
    name: String,
    arguments: Value,
    meta: Value,
}

async fn run_call(server: Arc<Server>, id: Value, call: Call, ticket: Option<CallTicket>) {
    let result = match ticket {
        None => call_tool(&server, &call).await,
        Some(ticket) => {
            let result = tokio::select! {
                result = call_tool(&server, &call) => result,
                // The spec says a cancelled request gets no response.
                _ = ticket.cancelled => return,
            };
            if !server.finish_call(&ticket.key, ticket.token) {
                return;
            }
            result
        }
    };
    server.reply(id, result);
}

/// Runs a served tool. Bad arguments become an `isError` result, never a crash.
async fn call_tool(server: &Server, call: &Call) -> Value {
    let Call { name, arguments, meta } = call;
    let Some(args) = arguments.as_object() else {
        return tool_error("arguments must be an object");
    };
    let result = match name.as_str() {
        "echo" => tool_echo(args),
        "add" => tool_add(args),
        "sleep" => tool_sleep(args).await,
        "crash" => tool_crash(args),
        "garbage" => Ok(tool_garbage(server)),
        "huge" => tool_huge(args),
        "notify" => Ok(tool_notify(server)),
        "fail" => tool_fail(args),
        "image" => Ok(tool_image()),
        "env" => tool_env(args),
        "cwd" => tool_cwd(),
        "pid" => Ok(text_result(&std::process::id().to_string())),
        "stderr" => tool_stderr(args),
        "ask_client" => tool_ask_client(server, args).await,
        "cancellations" => Ok(tool_cancellations(server)),
        "progress" => tool_progress(server, args, meta).await,
        "meta" => Ok(text_result(&meta.to_string())),
        LATE_TOOL => Ok(text_result("late")),
        // `start_tool_call` checked that the name is served: it is an extra tool.
        extra => Ok(text_result(&format!("extra {extra}"))),
    };
    result.unwrap_or_else(|message| tool_error(&message))
}

type Args = Map<String, Value>;

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

fn tool_echo(args: &Args) -> Result<Value, String> {
    Ok(text_result(required_str(args, "message")?))
}

fn tool_add(args: &Args) -> Result<Value, String> {
    let a = required_number(args, "a")?;
    let b = required_number(args, "b")?;
    let sum = add_numbers(a, b).ok_or("the sum is not a finite number")?;
    Ok(json!({
        "content": [{"type": "text", "text": sum.to_string()}],
        "structuredContent": {"sum": sum},
    }))
}

/// Adds like JavaScript would print it: exact for integers, and whole floats
/// without a trailing `.0`.
fn add_numbers(a: &Number, b: &Number) -> Option<Number> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        if let Some(sum) = a.checked_add(b) {
            return Some(sum.into());
        }
    }
    let sum = a.as_f64()? + b.as_f64()?;
    if sum.fract() == 0.0 && sum.abs() <= MAX_SAFE_INTEGER {
        return Some((sum as i64).into());
    }
    Number::from_f64(sum)
}

async fn tool_sleep(args: &Args) -> Result<Value, String> {
    let ms = required_u64(args, "ms")?;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(text_result(&format!("slept {ms} ms")))
}

fn tool_cancellations(server: &Server) -> Value {
    let ids = server.cancellations.lock().unwrap();
    if ids.is_empty() {
        return text_result("cancelled: none");
    }
    text_result(&format!("cancelled: {}", ids.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")))
}

async fn tool_progress(server: &Server, args: &Args, meta: &Value) -> Result<Value, String> {
    let steps = required_u64(args, "steps")?;
    let ms = optional(args, "ms").map_or(Some(10), Value::as_u64).ok_or("argument `ms` must be an integer")?;
    if let Some(token) = meta.get("progressToken") {
        for step in 1..=steps {
            let message = format!("step {step} of {steps}");
            let params = json!({"progressToken": token, "progress": step, "total": steps, "message": message});
            server.notify("notifications/progress", Some(params));
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
    }
    Ok(text_result(&format!("{steps} steps")))
}

fn tool_crash(args: &Args) -> Result<Value, String> {
    let code = match optional(args, "code") {
        None => 1,
        Some(code) => {
            code.as_i64().and_then(|code| i32::try_from(code).ok()).ok_or("argument `code` must be a 32-bit integer")?
        }
    };
    log!("crashing on request with exit code {code}");
    std::process::exit(code);
}

fn tool_garbage(server: &Server) -> Value {
    for line in GARBAGE_LINES {
        server.send_raw(line.to_owned());
    }
    text_result("after garbage")
}

fn tool_huge(args: &Args) -> Result<Value, String> {
    let bytes = required_u64(args, "bytes")?;
    let too_big = || format!("argument `bytes` must be at most {MAX_HUGE_BYTES}");
    if bytes > MAX_HUGE_BYTES {
        return Err(too_big());
    }
    Ok(text_result(&"x".repeat(usize::try_from(bytes).map_err(|_| too_big())?)))
}

fn tool_notify(server: &Server) -> Value {
    server.list_late_tool();
    server.notify("notifications/message", Some(json!({"level": "info", "data": "tools changed"})));
    text_result("notified")
}

fn tool_fail(args: &Args) -> Result<Value, String> {
    let message = optional_str(args, "message")?.unwrap_or("failed on request");
    Ok(tool_error(message))
}

fn tool_image() -> Value {
    json!({"content": [
        {"type": "text", "text": "a 1x1 PNG image follows"},
        {"type": "image", "data": PNG_1X1_BASE64, "mimeType": "image/png"},
    ]})
}

fn tool_env(args: &Args) -> Result<Value, String> {
    let name = required_str(args, "name")?;
    // std may panic on such names, and they cannot exist anyway.
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(format!("`{name}` is not a valid environment variable name"));
    }
    let value = std::env::var_os(name).map(|value| value.to_string_lossy().into_owned());
    Ok(text_result(value.as_deref().unwrap_or("<unset>")))
}

fn tool_cwd() -> Result<Value, String> {
    let dir = std::env::current_dir().map_err(|error| format!("cannot read the working directory: {error}"))?;
    Ok(text_result(&dir.display().to_string()))
}

fn tool_stderr(args: &Args) -> Result<Value, String> {
    let lines = required_u64(args, "lines")?;
    // One lock for all lines keeps them together, even if other tasks log.
    let mut stderr = std::io::stderr().lock();
    for i in 1..=lines {
        writeln!(stderr, "stderr line {i}").map_err(|error| format!("cannot write to stderr: {error}"))?;
    }
    Ok(text_result(&format!("wrote {lines} lines")))
}

async fn tool_ask_client(server: &Server, args: &Args) -> Result<Value, String> {
    let method = required_str(args, "method")?;
    let params = match optional(args, "params") {
        None => None,
        Some(params @ Value::Object(_)) => Some(params.clone()),
        Some(_) => return Err("argument `params` must be an object".into()),
    };
    let id = format!("srv-{}", server.next_client_request.fetch_add(1, Ordering::SeqCst));
    let response = server.ask_client(method, params, id).await?;
    Ok(text_result(&describe_client_response(&response)))
}

/// `result: <JSON>` or `error: <code> <message>`.
fn describe_client_response(response: &Value) -> String {
    match (response.get("result"), response.get("error")) {
        (Some(result), _) => format!("result: {result}"),
        (None, Some(error)) => {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            format!("error: {} {message}", error.get("code").unwrap_or(&Value::Null))
        }
        (None, None) => format!("unexpected response: {response}"),
    }
}

// --- argument helpers ---------------------------------------------------------

/// An argument, treating `null` like a missing one.
fn optional<'a>(args: &'a Args, name: &str) -> Option<&'a Value> {
    args.get(name).filter(|value| !value.is_null())
}

fn required<'a>(args: &'a Args, name: &str) -> Result<&'a Value, String> {
    optional(args, name).ok_or_else(|| format!("missing required argument `{name}`"))
}

fn required_str<'a>(args: &'a Args, name: &str) -> Result<&'a str, String> {
    required(args, name)?.as_str().ok_or_else(|| format!("argument `{name}` must be a string"))
}

fn optional_str<'a>(args: &'a Args, name: &str) -> Result<Option<&'a str>, String> {
    optional(args, name)
        .map(|value| value.as_str().ok_or_else(|| format!("argument `{name}` must be a string")))
        .transpose()
}

fn required_number<'a>(args: &'a Args, name: &str) -> Result<&'a Number, String> {
    match required(args, name)? {
        Value::Number(number) => Ok(number),
        _ => Err(format!("argument `{name}` must be a number")),
    }
}

fn required_u64(args: &Args, name: &str) -> Result<u64, String> {
    required(args, name)?.as_u64().ok_or_else(|| format!("argument `{name}` must be a non-negative integer"))
}

// ---------------------------------------------------------------------------
// Tool definitions
// ---------------------------------------------------------------------------

/// `{"type": "object", ...}` with the given properties and required names.
fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input_schema})
}

fn builtin_tool_definition(name: &str) -> Option<Value> {
    let no_arguments = || object_schema(json!({}), &[]);
    let definition = match name {
        "echo" => tool(
            "echo",
            "Answers with `message` as text.",
            object_schema(json!({"message": {"type": "string", "description": "Text to send back."}}), &["message"]),
        ),
        "add" => add_tool_definition(),
        "cancellations" => {
            tool("cancellations", "Lists the request ids of the cancellations received.", no_arguments())
        }
        "progress" => tool(
            "progress",
            "Reports `steps` steps of progress, `ms` apart, then answers `<steps> steps`.",
            object_schema(json!({"steps": {"type": "integer"}, "ms": {"type": "integer"}}), &["steps"]),
        ),
        "meta" => tool("meta", "Answers with the request's `_meta` as JSON.", no_arguments()),
        "sleep" => {
            let mut sleep = tool(
                "sleep",
                "Waits `ms` milliseconds, then answers `slept <ms> ms`. Can be cancelled.",
                object_schema(
                    json!({"ms": {"type": "integer", "minimum": 0, "description": "How long to wait."}}),
                    &["ms"],
                ),
            );
            sleep["annotations"] = json!({"idempotentHint": true});
            sleep
        }
        "crash" => tool(
            "crash",
            "Exits the server process at once with `code` (default 1), without answering.",
            object_schema(json!({"code": {"type": "integer", "description": "Exit code."}}), &[]),
        ),
        "garbage" => {
            tool("garbage", "Writes three invalid lines to stdout, then answers `after garbage`.", no_arguments())
        }
        "huge" => tool(
            "huge",
            "Answers with one text block of exactly `bytes` 'x' characters.",
            object_schema(
                json!({"bytes": {"type": "integer", "minimum": 0, "description": "Length of the text."}}),
                &["bytes"],
            ),
        ),
        "notify" => tool(
            "notify",
            "Adds `late_tool`, sends tools/list_changed and a log message, then answers `notified`.",
            no_arguments(),
        ),
        "fail" => tool(
            "fail",
            "Answers with a tool error (isError) carrying `message`.",
            object_schema(json!({"message": {"type": "string", "description": "Error text."}}), &[]),
        ),
        "image" => tool("image", "Answers with a text block and a 1x1 PNG image block.", no_arguments()),
        "env" => tool(
            "env",
            "Answers with the value of environment variable `name`, or `<unset>`.",
            object_schema(json!({"name": {"type": "string", "description": "Variable name."}}), &["name"]),
        ),
        "cwd" => tool("cwd", "Answers with the server's working directory.", no_arguments()),
        "pid" => tool("pid", "Answers with the server's process id.", no_arguments()),
        "stderr" => tool(
            "stderr",
            "Writes `lines` lines to stderr, then answers `wrote <lines> lines`.",
            object_schema(
                json!({"lines": {"type": "integer", "minimum": 0, "description": "How many lines."}}),
                &["lines"],
            ),
        ),
        "ask_client" => tool(
            "ask_client",
            "Sends the client a request, waits for its answer and reports it as text.",
            object_schema(
                json!({
                    "method": {"type": "string", "description": "Method to call on the client, e.g. ping."},
                    "params": {"type": "object", "description": "Optional request params."},
                }),
                &["method"],
            ),
        ),
        LATE_TOOL => tool(LATE_TOOL, "Appears after `notify`; answers `late`.", no_arguments()),
        _ => return None,
    };
    Some(definition)
}

/// `add` carries every optional field, so tests can check they pass through.
fn add_tool_definition() -> Value {
    let number = json!({"type": "number"});
    let mut add = tool(
        "add",
        "Adds `a` and `b`; answers the sum as text and as structuredContent.",
        object_schema(json!({"a": number, "b": number}), &["a", "b"]),
    );
    add["outputSchema"] = object_schema(json!({"sum": number}), &["sum"]);
    add["annotations"] = json!({"readOnlyHint": true, "title": "Add two numbers"});
    add["_meta"] = json!({"warden-test/owner": "tests"});
    add
}

fn extra_tool_definition(name: &str) -> Value {
    tool(name, &format!("Extra tool added by --extra-tool; answers `extra {name}`."), object_schema(json!({}), &[]))
}
