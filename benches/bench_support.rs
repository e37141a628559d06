//! What the benches share, so that each bench file holds only what it
//! measures and how its clients call:
//!
//! - **knobs**: [`env_usize`] and the [`Knobs`] every two-client comparison
//!   reads (calls, warm-up, concurrent calls, callers, rounds, workers);
//! - **timing**: the [`Caller`] a comparison times, [`sequential`] and
//!   [`concurrent`] phases with this process's [`Usage`], [`alternating`]
//!   round order, one [`time_round`] of both clients, and the [`Totals`]
//!   pooled over the rounds;
//! - **summaries**: [`percentile_of`], [`micros`], [`Spread`] of per-round
//!   numbers, [`median_time`] of a synchronous function;
//! - **printing**: the [`ComparisonTable`] of two columns, their ratio and
//!   an optional goal with its [`verdict`];
//! - **setup**: the tokio [`runtime`], [`start_warden`] on a TOML config,
//!   and a started daemon's lockfile and front port ([`daemon`]).
//!
//! Each bench is its own crate that compiles this file as a module and uses
//! part of it, hence `dead_code` is allowed here.

#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use warden_actors::{ServerState, Warden, WardenConfig};

pub(crate) mod daemon;
mod usage;
mod warden_binary;
pub(crate) use usage::Usage;
#[allow(unused_imports)] // Only the benches that start a daemon use it.
pub(crate) use warden_binary::build_warden;

// ---------------------------------------------------------------------------
// Knobs
// ---------------------------------------------------------------------------

/// A whole-number knob from the environment (`_` allowed as a digit
/// separator), or `default` when unset; a malformed value stops the bench.
pub(crate) fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .replace('_', "")
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a whole number, not `{text}`")),
        Err(_) => default,
    }
}

/// `WARDEN_BENCH_DAEMON_WORKERS` as a `[daemon]` line (`workers = N`), or
/// nothing (one worker per core); and how the table names it.
#[allow(dead_code)] // Each bench uses some of this file.
pub(crate) fn daemon_workers() -> (String, String) {
    match std::env::var("WARDEN_BENCH_DAEMON_WORKERS") {
        Ok(_) => {
            let workers = env_usize("WARDEN_BENCH_DAEMON_WORKERS", 0);
            (format!("workers = {workers}\n"), format!("{workers} worker thread(s)"))
        }
        Err(_) => (String::new(), "one worker thread per core".into()),
    }
}

/// The sizes of a two-client comparison run in rounds, from the
/// `WARDEN_BENCH_*` environment variables.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Knobs {
    /// Timed sequential calls per client, over all rounds.
    pub(crate) calls: usize,
    /// Untimed calls per client before the first round.
    pub(crate) warmup: usize,
    /// Calls per client in the concurrent phases, over all rounds.
    pub(crate) concurrent_calls: usize,
    pub(crate) callers: usize,
    pub(crate) rounds: usize,
    /// Tokio worker threads; tokio's default (one per core) when `None`.
    pub(crate) workers: Option<usize>,
}

impl Knobs {
    /// Reads `WARDEN_BENCH_CALLS`, `_WARMUP`, `_CONCURRENT_CALLS`, `_CALLERS`,
    /// `_ROUNDS` and `_WORKERS`; `defaults` holds the bench's own defaults
    /// (with `workers: None`: tokio's default is the only one).
    pub(crate) fn from_env(defaults: Knobs) -> Knobs {
        Knobs {
            calls: env_usize("WARDEN_BENCH_CALLS", defaults.calls),
            warmup: env_usize("WARDEN_BENCH_WARMUP", defaults.warmup).max(1),
            concurrent_calls: env_usize("WARDEN_BENCH_CONCURRENT_CALLS", defaults.concurrent_calls),
            callers: env_usize("WARDEN_BENCH_CALLERS", defaults.callers).max(1),
            rounds: env_usize("WARDEN_BENCH_ROUNDS", defaults.rounds).max(1),
            workers: std::env::var("WARDEN_BENCH_WORKERS").ok().map(|_| env_usize("WARDEN_BENCH_WORKERS", 0).max(1)),
        }
    }

    /// Timed sequential calls per client in one round.
    pub(crate) fn calls_per_round(&self) -> usize {
        (self.calls / self.rounds).max(1)
    }

    /// Calls each concurrent caller makes in one round.
    pub(crate) fn per_caller_per_round(&self) -> usize {
        (self.concurrent_calls / self.rounds / self.callers).max(1)
    }
}

// ---------------------------------------------------------------------------
// Timing
// ---------------------------------------------------------------------------

/// Untimed calls at the start of every sequential slice, so that switching
/// from one client to the other is not timed.
pub(crate) const SLICE_WARMUP: usize = 20;

/// What a comparison times: one call, checked, so a broken client cannot
/// look fast.
pub(crate) trait Caller: Send + Sync + 'static {
    /// One call by concurrent caller `caller` (0 in sequential phases).
    fn call(&self, caller: usize) -> impl Future<Output = ()> + Send;
}

/// The client order of round `round` (from 0): the first client first in
/// rounds 1, 3, ..., the second first in the others, so that drift in the
/// machine is spread over both.
pub(crate) fn alternating(round: usize) -> [usize; 2] {
    if round.is_multiple_of(2) {
        [0, 1]
    } else {
        [1, 0]
    }
}

/// `warmup` untimed calls, then `calls` timed ones, one after another; the
/// latencies, the wall time and the [`Usage`] of the timed ones.
pub(crate) async fn sequential<C: Caller>(
    client: &Arc<C>,
    warmup: usize,
    calls: usize,
) -> (Vec<Duration>, Duration, Usage) {
    // The caller runs as a task on a worker thread, as a host's request
    // handler would, not on the thread blocked in `block_on`.
    let client = Arc::clone(client);
    tokio::spawn(async move {
        for _ in 0..warmup {
            client.call(0).await;
        }
        let mut latencies = Vec::with_capacity(calls);
        let usage = Usage::now();
        let start = Instant::now();
        for _ in 0..calls {
            let before = Instant::now();
            client.call(0).await;
            latencies.push(before.elapsed());
        }
        let wall = start.elapsed();
        (latencies, wall, Usage::now().since(usage))
    })
    .await
    .expect("the sequential caller ran")
}

/// `callers` tasks making `per_caller` calls each; the wall time and the
/// [`Usage`].
pub(crate) async fn concurrent<C: Caller>(client: &Arc<C>, callers: usize, per_caller: usize) -> (Duration, Usage) {
    let usage = Usage::now();
    let start = Instant::now();
    let tasks: Vec<JoinHandle<()>> = (0..callers)
        .map(|caller| {
            let client = Arc::clone(client);
            tokio::spawn(async move {
                for _ in 0..per_caller {
                    client.call(caller).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a concurrent caller ran");
    }
    (start.elapsed(), Usage::now().since(usage))
}

/// What one round of a two-client comparison measured.
pub(crate) struct Round {
    /// The order the clients ran in.
    pub(crate) order: [usize; 2],
    /// Each client's median sequential latency, in µs.
    pub(crate) p50: [f64; 2],
    /// Each client's concurrent rate, in calls/s.
    pub(crate) rate: [f64; 2],
}

/// Round `round`: each client's sequential slice, then each one's
/// concurrent burst, in [`alternating`] order, pooled into `totals`.
/// `concurrent_clients` may differ from `clients` (a pool of connections).
pub(crate) async fn time_round<C: Caller>(
    round: usize,
    clients: [&Arc<C>; 2],
    concurrent_clients: [&Arc<C>; 2],
    knobs: &Knobs,
    totals: &mut [Totals; 2],
) -> Round {
    let order = alternating(round);
    let (calls, per_caller) = (knobs.calls_per_round(), knobs.per_caller_per_round());
    let mut p50 = [0.0; 2];
    let mut rate = [0.0; 2];
    for &which in &order {
        let (latencies, wall, usage) = sequential(clients[which], SLICE_WARMUP, calls).await;
        p50[which] = micros(percentile_of(latencies.clone(), 50.0));
        totals[which].add_sequential(latencies, wall, usage);
    }
    for &which in &order {
        let (wall, usage) = concurrent(concurrent_clients[which], knobs.callers, per_caller).await;
        rate[which] = (knobs.callers * per_caller) as f64 / wall.as_secs_f64();
        totals[which].add_concurrent(knobs.callers * per_caller, wall, usage);
    }
    Round { order, p50, rate }
}

/// Every round of a two-client comparison ([`time_round`]), one printed
/// line each naming the clients `names` (with their concurrent rates when
/// `rates`); each round's two p50s, in µs, for the bench's own summary.
/// `names` of `None` prints nothing.
pub(crate) async fn run_rounds<C: Caller>(
    clients: [&Arc<C>; 2],
    concurrent_clients: [&Arc<C>; 2],
    names: Option<[&str; 2]>,
    rates: bool,
    knobs: &Knobs,
    totals: &mut [Totals; 2],
) -> Vec<[f64; 2]> {
    let mut p50s = Vec::with_capacity(knobs.rounds);
    for round in 0..knobs.rounds {
        let Round { order, p50, rate } = time_round(round, clients, concurrent_clients, knobs, totals).await;
        p50s.push(p50);
        let Some(names) = names else { continue };
        let rates = if rates {
            format!("   {} callers {:>6.0} / {:>6.0} calls/s", knobs.callers, rate[0], rate[1])
        } else {
            String::new()
        };
        println!(
            "round {:>2} ({} first): p50 {:>7.1} / {:>7.1} µs{rates}   ({} / {})",
            round + 1,
            names[order[0]],
            p50[0],
            p50[1],
            names[0],
            names[1],
        );
    }
    p50s
}

/// One client's numbers, pooled over the rounds.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    pub(crate) latencies: Vec<Duration>,
    pub(crate) sequential_calls: usize,
    pub(crate) sequential_wall: Duration,
    pub(crate) sequential_usage: Usage,
    pub(crate) concurrent_calls: usize,
    pub(crate) concurrent_wall: Duration,
    pub(crate) concurrent_usage: Usage,
}

impl Totals {
    /// Pools a sequential slice.
    pub(crate) fn add_sequential(&mut self, latencies: Vec<Duration>, wall: Duration, usage: Usage) {
        self.sequential_calls += latencies.len();
        self.sequential_wall += wall;
        self.sequential_usage.add(usage);
        self.latencies.extend(latencies);
    }

    /// Pools a concurrent burst of `calls` calls.
    pub(crate) fn add_concurrent(&mut self, calls: usize, wall: Duration, usage: Usage) {
        self.concurrent_calls += calls;
        self.concurrent_wall += wall;
        self.concurrent_usage.add(usage);
    }

    /// A latency percentile, in µs.
    pub(crate) fn latency_us(&self, pct: f64) -> f64 {
        micros(percentile_of(self.latencies.clone(), pct))
    }

    /// Calls per second of the sequential slices.
    pub(crate) fn sequential_rate(&self) -> f64 {
        self.sequential_calls as f64 / self.sequential_wall.as_secs_f64()
    }

    /// Calls per second of the concurrent bursts.
    pub(crate) fn concurrent_rate(&self) -> f64 {
        self.concurrent_calls as f64 / self.concurrent_wall.as_secs_f64()
    }
}

/// Both clients' totals → one number each.
pub(crate) fn both<T>(totals: &[T; 2], metric: impl Fn(&T) -> f64) -> [f64; 2] {
    [metric(&totals[0]), metric(&totals[1])]
}

// ---------------------------------------------------------------------------
// Summaries
// ---------------------------------------------------------------------------

/// The nearest-rank percentile.
pub(crate) fn percentile_of(mut durations: Vec<Duration>, pct: f64) -> Duration {
    durations.sort_unstable();
    let rank = ((pct / 100.0) * durations.len() as f64).ceil() as usize;
    durations[rank.clamp(1, durations.len()) - 1]
}

/// A duration in microseconds.
pub(crate) fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// The least, the median (upper for an even count) and the greatest of
/// per-round numbers, to show whether one round was disturbed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spread {
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) max: f64,
}

impl Spread {
    pub(crate) fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        Spread { min: values[0], median: values[values.len() / 2], max: values[values.len() - 1] }
    }
}

/// The median time of `run`, repeated for at least `budget` (and 5 times).
pub(crate) fn median_time(budget: Duration, mut run: impl FnMut() -> bool) -> Duration {
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || start.elapsed() < budget {
        let one = Instant::now();
        std::hint::black_box(run());
        samples.push(one.elapsed());
    }
    percentile_of(samples, 50.0)
}

// ---------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------

/// How a goal came out, as every table prints it.
pub(crate) fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

/// The table of a two-client comparison: a metric label, the two clients'
/// numbers, the second over the first, then a goal and its verdict or a
/// note. Columns line up with the header whatever the clients are called.
pub(crate) struct ComparisonTable {
    /// The first client's column width.
    first_width: usize,
}

impl ComparisonTable {
    /// Prints the header: `metric`, the two client names, `second/first`,
    /// `goal`. The first client's column is `first_width` wide (the
    /// second's is 10).
    pub(crate) fn new(first: &str, second: &str, first_width: usize) -> ComparisonTable {
        let ratio = format!("{second}/{first}");
        println!("{:<22} {first:>first_width$} {second:>10} {ratio:>16}   goal", "metric");
        ComparisonTable { first_width }
    }

    /// A row with no goal; `decimals` for both numbers.
    pub(crate) fn row(&self, label: &str, values: [f64; 2], decimals: usize) {
        println!("{}", self.cells(label, values, decimals));
    }

    /// A row whose ratio is checked against `goal`.
    pub(crate) fn goal_row(&self, label: &str, values: [f64; 2], decimals: usize, goal: &str, met: bool) {
        println!("{}   {goal:<16} {}", self.cells(label, values, decimals), verdict(met));
    }

    /// A row with a note where the goal would be.
    pub(crate) fn note_row(&self, label: &str, values: [f64; 2], decimals: usize, note: &str) {
        println!("{}   {note}", self.cells(label, values, decimals));
    }

    fn cells(&self, label: &str, [first, second]: [f64; 2], decimals: usize) -> String {
        let width = self.first_width;
        format!("{label:<22} {first:>width$.decimals$} {second:>10.decimals$} {:>15.2}×", second / first)
    }
}

// ---------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------

/// The runtime a bench runs on: multi-thread, with `workers` threads when
/// given (tokio's default, one per core, otherwise).
pub(crate) fn runtime(workers: Option<usize>) -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = workers {
        builder.worker_threads(workers);
    }
    builder.enable_all().build().expect("a tokio runtime")
}

/// A stdio server process spoken to over its pipes (stderr dropped), killed
/// when dropped.
pub(crate) fn spawn_piped(command: &str) -> tokio::process::Child {
    tokio::process::Command::new(command)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{command} starts: {error}"))
}

/// `text` as a TOML basic string, quotes included.
pub(crate) fn toml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// An embedded Warden on `config`, once every server has settled (within
/// 60 s), with no server failed and every one of `tools` listed; so a broken
/// setup stops the bench before anything is timed.
pub(crate) async fn start_warden(config: &WardenConfig, tools: &[&str]) -> Warden {
    let warden = Warden::start(config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(60), warden.settled()).await.expect("the servers settle");
    for status in warden.status() {
        if let ServerState::Failed { reason } = &status.state {
            panic!("server `{}` failed to start under Warden: {reason}", status.name);
        }
    }
    for tool in tools {
        assert!(warden.tools().iter().any(|entry| entry.name == *tool), "Warden lists no {tool}");
    }
    warden
}

/// One call of `tool` on an embedded Warden, checked: it must echo `message`.
pub(crate) async fn embedded_echo(warden: &Warden, tool: &str, message: &str) {
    let result = warden
        .call_tool(tool, serde_json::json!({ "message": message }))
        .await
        .unwrap_or_else(|error| panic!("embedded: echo failed: {error}"));
    assert_eq!(result.text(), message, "embedded: echo answered something else");
}

/// A field of `/proc/PID/status` (`VmRSS`, `VmHWM` in KiB, `Threads`) of
/// process `pid` (`"self"` for this one); 0 when it cannot be read.
#[allow(dead_code)] // Each bench uses some of this file.
pub(crate) fn proc_status(pid: &str, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
