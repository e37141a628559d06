//! Tool-call latency and throughput: Warden against a bare MCP client.
//!
//! Both clients call the `echo` tool of the same `warden-test-server`
//! binary, each over its own child process and the same kind of pipes (JSON
//! lines on stdin and stdout), in the same run, on the same multi-thread
//! tokio runtime:
//!
//! - **direct**: the floor. A minimal MCP client with nothing between the
//!   caller and the pipe: it does the handshake, then each call writes its
//!   request line straight to the child's stdin (under a mutex) and waits on
//!   a oneshot that the stdout reader task completes by request id. No
//!   actors, no timers, no queues, no JSON trees, no per-call bookkeeping
//!   beyond the id map. What it costs is the server, the pipes and the one
//!   reader-to-caller wake-up that any stdio client pays, so Warden should
//!   never beat it beyond noise; the gap between the two is what Warden's own
//!   layers (the handle, the server actor, the transport's tasks, decoding,
//!   the call timer) cost per call.
//! - **warden**: an embedded [`warden_actors::Warden`] with one stdio server,
//!   called through [`warden_actors::Warden::call_tool`] as a host would.
//!
//! Measured for each client:
//!
//! - latency p50 and p99 of one caller making sequential calls, and the
//!   calls/s of those same calls;
//! - calls/s with `WARDEN_BENCH_CALLERS` concurrent callers (tokio tasks),
//!   each making its share of the calls one after another, over wall time.
//!
//! Besides wall-clock numbers, the table shows this process's CPU time and
//! voluntary context switches per call (from `getrusage`; the server's own
//! are not counted, and are the same for both clients). They are much less
//! noisy than latency on a busy machine, and a context switch per call more
//! than the floor is one more thread hand-off on every call's path. The
//! heap allocations per call (counted by the benches' allocator) are not
//! noisy at all: one allocation fewer on the call path shows as 1.0 less.
//!
//! Machine noise (this is meant to run on small, shared machines) is spread
//! over both clients: after a warm-up, the run is cut into rounds, each
//! round times a slice of sequential calls and a burst of concurrent calls
//! for both clients, the order alternates from round to round (direct first
//! in rounds 1, 3, ...), and the table pools every round's samples per
//! client. Each round's own p50 and throughput are printed as it ends, and
//! the spread of the per-round p50 overhead is printed under the table, so a
//! disturbed round shows.
//!
//! Knobs (environment variables, all optional):
//!
//! | variable                        | default | meaning                                          |
//! |---------------------------------|---------|--------------------------------------------------|
//! | `WARDEN_BENCH_CALLS`            | 10000   | timed sequential calls per client, all rounds    |
//! | `WARDEN_BENCH_WARMUP`           | 500     | untimed calls per client before the first round  |
//! | `WARDEN_BENCH_CONCURRENT_CALLS` | 40000   | concurrent-phase calls per client, all rounds    |
//! | `WARDEN_BENCH_CALLERS`          | 32      | concurrent callers                               |
//! | `WARDEN_BENCH_ROUNDS`           | 10      | rounds                                           |
//! | `WARDEN_BENCH_DIRECT_WRITER`    | `mutex` | `mutex`: each caller writes stdin itself; `task`: one writer task batches a queue, as Warden's transport does |
//! | `WARDEN_BENCH_WORKERS`          | cores   | tokio worker threads                             |
//! | `WARDEN_BENCH_ONLY`             | unset   | `direct` or `warden`: time that client alone and print one line per phase, no table (for `perf`, `strace`) |
//! | `WARDEN_BENCH_BURSTS`           | 1       | with `WARDEN_BENCH_ONLY`: the concurrent calls cut into this many bursts, a line each (the rounds' bursts are 4,000 calls) |
//!
//! Run with `cargo bench -p warden-tests --bench call_latency`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use warden_actors::{Warden, WardenConfig};

mod bench_support;
use bench_support::{
    both, concurrent, env_usize, micros, percentile_of, run_rounds, runtime, sequential, start_warden, toml_string,
    verdict, Caller, ComparisonTable, Knobs, Spread, Totals, Usage,
};

/// The test server, built by Cargo alongside this bench.
const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");

/// What every call echoes.
const MESSAGE: &str = "hello from the call-latency bench";

/// The goals the table checks.
const GOAL_P50_OVERHEAD_US: f64 = 10.0;
const GOAL_CONCURRENT_RATIO: f64 = 0.95;

fn main() {
    let settings = Settings::from_env();
    runtime(settings.knobs.workers).block_on(run(settings));
}

/// The run's sizes, from the environment.
#[derive(Debug, Clone, Copy)]
struct Settings {
    knobs: Knobs,
    writer: WriterMode,
}

impl Settings {
    fn from_env() -> Settings {
        let writer = match std::env::var("WARDEN_BENCH_DIRECT_WRITER").as_deref() {
            Ok("task") => WriterMode::Task,
            Ok("mutex") | Err(_) => WriterMode::Mutex,
            Ok(other) => {
                panic!("WARDEN_BENCH_DIRECT_WRITER must be `mutex` or `task`, not `{other}`")
            }
        };
        let knobs = Knobs::from_env(Knobs {
            calls: 10_000,
            warmup: 500,
            concurrent_calls: 40_000,
            callers: 32,
            rounds: 10,
            workers: None,
        });
        Settings { knobs, writer }
    }
}

async fn run(settings: Settings) {
    if let Ok(only) = std::env::var("WARDEN_BENCH_ONLY") {
        return run_one(&only, settings).await;
    }
    let direct = Arc::new(Client::Direct(Direct::start(TEST_SERVER, settings.writer).await));
    let warden = Arc::new(Client::Warden(start_bench_warden().await));
    let clients = [direct, warden];
    let knobs = settings.knobs;
    for client in &clients {
        // Fails a broken setup before anything is timed, and warms up.
        sequential(client, knobs.warmup, 0).await;
    }

    let mut totals = [Totals::default(), Totals::default()];
    let pair = [&clients[0], &clients[1]];
    let p50s = run_rounds(pair, pair, Some(["direct", "warden"]), true, &knobs, &mut totals).await;
    let overheads = p50s.iter().map(|p50| p50[1] - p50[0]).collect();

    print_table(&settings, &totals, overheads);

    let [direct, warden] = clients;
    if let Some(Client::Direct(direct)) = Arc::into_inner(direct) {
        direct.shutdown().await;
    }
    if let Client::Warden(warden) = &*warden {
        warden.shutdown().await;
    }
}

/// `WARDEN_BENCH_ONLY`: one client alone, for profilers and `strace`, which
/// cannot tell the two clients apart when they share a process.
async fn run_one(only: &str, settings: Settings) {
    let client = Arc::new(match only {
        "direct" => Client::Direct(Direct::start(TEST_SERVER, settings.writer).await),
        "warden" => Client::Warden(start_bench_warden().await),
        other => panic!("WARDEN_BENCH_ONLY must be `direct` or `warden`, not `{other}`"),
    });
    let settings = settings.knobs;
    sequential(&client, settings.warmup, 0).await;
    let (mut latencies, wall, usage) = sequential(&client, 0, settings.calls).await;
    latencies.sort_unstable();
    println!(
        "{only} alone, {} sequential calls: p50 {:.1} µs, p99 {:.1} µs, {:.0} calls/s, {:.2} CPU µs/call, {:.2} context switches/call, {:.1} allocations/call",
        settings.calls,
        micros(percentile_of(latencies.clone(), 50.0)),
        micros(percentile_of(latencies, 99.0)),
        settings.calls as f64 / wall.as_secs_f64(),
        micros(usage.cpu) / settings.calls as f64,
        usage.voluntary_switches as f64 / settings.calls as f64,
        usage.allocations as f64 / settings.calls as f64,
    );
    let bursts = env_usize("WARDEN_BENCH_BURSTS", 1).max(1);
    let per_caller = (settings.concurrent_calls / settings.callers / bursts).max(1);
    let calls = per_caller * settings.callers;
    for _ in 0..bursts {
        let (wall, usage) = concurrent(&client, settings.callers, per_caller).await;
        println!(
            "{only} alone, {calls} calls by {} callers: {:.0} calls/s, {:.2} CPU µs/call, {:.2} context switches/call, {:.1} allocations/call",
            settings.callers,
            calls as f64 / wall.as_secs_f64(),
            micros(usage.cpu) / calls as f64,
            usage.voluntary_switches as f64 / calls as f64,
            usage.allocations as f64 / calls as f64,
        );
    }
    match Arc::into_inner(client) {
        Some(Client::Direct(direct)) => direct.shutdown().await,
        Some(Client::Warden(warden)) => warden.shutdown().await,
        None => unreachable!("every caller has finished"),
    }
}

fn print_table(settings: &Settings, totals: &[Totals; 2], overheads: Vec<f64>) {
    let knobs = &settings.knobs;
    let p50 = both(totals, |t| t.latency_us(50.0));
    let overhead = p50[1] - p50[0];
    let concurrent = both(totals, Totals::concurrent_rate);
    let concurrent_ratio = concurrent[1] / concurrent[0];

    println!();
    println!(
        "call latency and throughput, echo via warden-test-server (stdio): {} rounds, each timing both clients in alternating order (direct first in odd rounds), samples pooled over the rounds",
        knobs.rounds,
    );
    println!(
        "  per client: {} timed sequential calls (after {} warm-up), {} calls by {} concurrent callers; direct writes stdin {}",
        totals[0].sequential_calls,
        knobs.warmup,
        totals[0].concurrent_calls,
        knobs.callers,
        match settings.writer {
            WriterMode::Mutex => "under a mutex",
            WriterMode::Task => "through a writer task",
        },
    );
    let table = ComparisonTable::new("direct", "warden", 10);
    let goal = format!("within +{GOAL_P50_OVERHEAD_US} µs");
    table.goal_row("p50 latency (µs)", p50, 1, &goal, overhead <= GOAL_P50_OVERHEAD_US);
    table.row("p99 latency (µs)", both(totals, |t| t.latency_us(99.0)), 1);
    table.row("calls/s, 1 caller", both(totals, Totals::sequential_rate), 0);
    let goal = format!("≥ {GOAL_CONCURRENT_RATIO}×");
    let label = format!("calls/s, {} callers", knobs.callers);
    table.goal_row(&label, concurrent, 0, &goal, concurrent_ratio >= GOAL_CONCURRENT_RATIO);
    let cpu = |usage: Usage, calls: usize| micros(usage.cpu) / calls as f64;
    let switches = |usage: Usage, calls: usize| usage.voluntary_switches as f64 / calls as f64;
    let allocations = |usage: Usage, calls: usize| usage.allocations as f64 / calls as f64;
    let rows = [
        ("client CPU µs/call, 1".to_string(), both(totals, |t| cpu(t.sequential_usage, t.sequential_calls))),
        (
            format!("client CPU µs/call, {}", knobs.callers),
            both(totals, |t| cpu(t.concurrent_usage, t.concurrent_calls)),
        ),
        ("client ctx sw/call, 1".to_string(), both(totals, |t| switches(t.sequential_usage, t.sequential_calls))),
        (
            format!("client ctx sw/call, {}", knobs.callers),
            both(totals, |t| switches(t.concurrent_usage, t.concurrent_calls)),
        ),
        ("client allocs/call, 1".to_string(), both(totals, |t| allocations(t.sequential_usage, t.sequential_calls))),
        (
            format!("client allocs/call, {}", knobs.callers),
            both(totals, |t| allocations(t.concurrent_usage, t.concurrent_calls)),
        ),
    ];
    for (label, values) in rows {
        table.note_row(&label, values, 2, "(this process only, not the server)");
    }
    let overheads = Spread::of(overheads);
    println!(
        "p50 overhead (warden − direct): {overhead:+.1} µs per call (goal ≤ {GOAL_P50_OVERHEAD_US} µs: {}); per round: min {:+.1}, median {:+.1}, max {:+.1} µs",
        verdict(overhead <= GOAL_P50_OVERHEAD_US),
        overheads.min,
        overheads.median,
        overheads.max,
    );
}

// ---------------------------------------------------------------------------
// The two clients
// ---------------------------------------------------------------------------

/// One of the two clients; each lives in one `Arc` for the whole run, so
/// the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum Client {
    Direct(Direct),
    Warden(Warden),
}

impl Caller for Client {
    /// One `echo` call; panics on anything but the echoed text, so a broken
    /// client cannot look fast.
    async fn call(&self, _caller: usize) {
        match self {
            Client::Direct(direct) => {
                let text = direct.call_echo(MESSAGE).await;
                assert_eq!(text, MESSAGE, "direct: echo answered something else");
            }
            Client::Warden(warden) => {
                let result = warden
                    .call_tool("bench__echo", serde_json::json!({ "message": MESSAGE }))
                    .await
                    .unwrap_or_else(|error| panic!("warden: echo failed: {error}"));
                assert!(!result.is_error(), "warden: echo failed: {}", result.text());
                assert_eq!(result.text(), MESSAGE, "warden: echo answered something else");
            }
        }
    }
}

async fn start_bench_warden() -> Warden {
    let config = WardenConfig::from_toml(
        &format!("[servers.bench]\ncommand = {}\n[security]\nauto_approve = true\n", toml_string(TEST_SERVER)),
        "bench",
    )
    .expect("the bench config is valid");
    start_warden(&config, &["bench__echo"]).await
}

/// How the direct client gets its lines onto stdin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriterMode {
    /// Each caller writes its own line under a mutex: no hop at all.
    Mutex,
    /// Callers queue lines; one task writes them, batching what is queued.
    Task,
}

enum Writer {
    Mutex(tokio::sync::Mutex<ChildStdin>),
    Task { lines: mpsc::UnboundedSender<Vec<u8>>, task: JoinHandle<()> },
}

/// What the reader hands back for one id: the raw `result`, or the error.
type Reply = Result<Box<RawValue>, String>;

type PendingMap = std::sync::Mutex<HashMap<u64, oneshot::Sender<Reply>>>;

/// The floor: a minimal MCP client over the test server's stdio.
struct Direct {
    child: Child,
    writer: Writer,
    pending: Arc<PendingMap>,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
}

/// Any line from the server; only responses matter here.
#[derive(Deserialize)]
struct Incoming {
    id: Option<u64>,
    result: Option<Box<RawValue>>,
    error: Option<Box<RawValue>>,
}

/// The part of a `tools/call` result the bench checks.
#[derive(Deserialize)]
struct EchoResult {
    content: Vec<EchoBlock>,
}

#[derive(Deserialize)]
struct EchoBlock {
    text: Option<String>,
}

impl Direct {
    async fn start(command: &str, mode: WriterMode) -> Direct {
        let mut child = bench_support::spawn_piped(command);
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let pending: Arc<PendingMap> = Arc::default();
        let reader = tokio::spawn(read_replies(stdout, Arc::clone(&pending)));
        let writer = match mode {
            WriterMode::Mutex => Writer::Mutex(tokio::sync::Mutex::new(stdin)),
            WriterMode::Task => {
                let (lines, queue) = mpsc::unbounded_channel();
                Writer::Task { lines, task: tokio::spawn(write_lines(stdin, queue)) }
            }
        };
        let direct = Direct { child, writer, pending, next_id: AtomicU64::new(0), reader };
        let init = direct
            .request(
                "initialize",
                r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"call-latency-bench","version":"0"}}"#,
            )
            .await
            .expect("the test server accepts initialize");
        assert!(init.get().contains("protocolVersion"), "odd initialize result: {}", init.get());
        direct.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n".to_vec()).await;
        direct
    }

    /// One `tools/call echo`, returning the text it answered.
    async fn call_echo(&self, message: &str) -> String {
        let params = format!(
            r#"{{"name":"echo","arguments":{{"message":{}}}}}"#,
            serde_json::to_string(message).expect("a string serialises")
        );
        let result =
            self.request("tools/call", &params).await.unwrap_or_else(|error| panic!("direct: echo failed: {error}"));
        let result: EchoResult = serde_json::from_str(result.get()).expect("direct: echo result is a CallToolResult");
        result.content.into_iter().next().and_then(|block| block.text).unwrap_or_default()
    }

    /// Sends a request (params already JSON) and waits for its answer.
    async fn request(&self, method: &str, params: &str) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (done, answer) = oneshot::channel();
        self.pending.lock().expect("the pending map is never poisoned").insert(id, done);
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\",\"params\":{params}}}\n");
        self.write(line.into_bytes()).await;
        answer.await.expect("the reader answers every request")
    }

    async fn write(&self, line: Vec<u8>) {
        match &self.writer {
            Writer::Mutex(stdin) => {
                let mut stdin = stdin.lock().await;
                stdin.write_all(&line).await.expect("the test server reads stdin");
            }
            Writer::Task { lines, .. } => {
                lines.send(line).expect("the writer task runs");
            }
        }
    }

    /// Closes stdin, which makes the test server exit, and reaps it.
    async fn shutdown(self) {
        let Direct { mut child, writer, reader, .. } = self;
        match writer {
            Writer::Mutex(stdin) => drop(stdin),
            Writer::Task { lines, task } => {
                drop(lines);
                let _ = task.await;
            }
        }
        match tokio::time::timeout(Duration::from_secs(5), child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => eprintln!("direct: the test server exited with {status}"),
            Ok(Err(error)) => eprintln!("direct: waiting for the test server failed: {error}"),
            Err(_) => {
                eprintln!("direct: the test server did not exit; killing it");
                let _ = child.kill().await;
            }
        }
        let _ = reader.await;
    }
}

/// Reads stdout lines and completes the pending request with each id.
async fn read_replies(stdout: ChildStdout, pending: Arc<PendingMap>) {
    let mut stdout = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(incoming) = serde_json::from_str::<Incoming>(&line) else {
            continue;
        };
        let Some(id) = incoming.id else { continue };
        let reply = match (incoming.result, incoming.error) {
            (Some(result), _) => Ok(result),
            (None, Some(error)) => Err(error.get().to_string()),
            // A request from the server (it has an id but no outcome).
            (None, None) => continue,
        };
        let waiter = pending.lock().expect("the pending map is never poisoned").remove(&id);
        if let Some(waiter) = waiter {
            let _ = waiter.send(reply);
        }
    }
    // Whoever still waits learns the server is gone.
    pending.lock().expect("the pending map is never poisoned").clear();
}

/// The `task` writer: takes everything queued, writes it, flushes once.
async fn write_lines(stdin: ChildStdin, mut queue: mpsc::UnboundedReceiver<Vec<u8>>) {
    let mut stdin = BufWriter::new(stdin);
    while let Some(line) = queue.recv().await {
        let mut next = Some(line);
        while let Some(line) = next {
            if stdin.write_all(&line).await.is_err() {
                return;
            }
            next = queue.try_recv().ok();
        }
        if stdin.flush().await.is_err() {
            return;
        }
    }
    let _ = stdin.shutdown().await;
}
