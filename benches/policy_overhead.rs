//! Policy overhead per call: what the leak check of a result adds to a call.
//!
//! One embedded [`warden_actors::Warden`] runs two servers, both the same
//! `warden-test-server` binary with the same `env` (ten secret-looking
//! values, which Warden treats as known secrets, so the scanner holds them):
//!
//! - **plain**: `default_policy = { approval = "never", leaks = "off" }`;
//! - **policed**: `default_policy = { approval = "never", leaks = "redact" }`.
//!
//! Both are called through [`warden_actors::Warden::call_tool`] with the
//! test server's `huge {bytes}` tool, whose result is one text block of
//! exactly 1 KB or 100 KB, holding no secret (the common case: the scan
//! finds nothing and the result is handed over untouched). `huge` rather
//! than `echo` because its arguments are a few bytes, so only the result's
//! scan is in the difference, not a scan of a 100 KB argument as well.
//!
//! Every call on either server resolves the tool's policy and runs the
//! allowlist and approval checks; only `policed` scans the arguments and the
//! result. So `policed − plain` is the cost of the leak checks on the call
//! path, with resolution paid by both columns alike (resolution is a few
//! hash lookups; there is no policy-free path in Warden to compare with).
//!
//! Measured per size and server: p50 and p99 of one caller making
//! sequential calls, and calls/s with `WARDEN_BENCH_CALLERS` concurrent
//! callers. After a warm-up the run is cut into rounds; each round times
//! both servers, `plain` first in odd rounds and `policed` first in even
//! ones, and the table pools the samples. Under the table, the pure cost:
//! [`warden_policy::LeakScanner::find_in_text`] with the same known secrets
//! over the same texts, and, for scale, over realistic JSON-lines output of
//! the same size (a text of `x`s is the scanner's easy case: nothing in it
//! starts a credential shape).
//!
//! Knobs (environment variables, all optional):
//!
//! | variable                        | default | meaning                                          |
//! |---------------------------------|---------|--------------------------------------------------|
//! | `WARDEN_BENCH_CALLS`            | 20000   | timed sequential calls per server and size, all rounds |
//! | `WARDEN_BENCH_WARMUP`           | 200     | untimed calls per server and size before the first round |
//! | `WARDEN_BENCH_CONCURRENT_CALLS` | 64000   | concurrent-phase calls per server and size, all rounds |
//! | `WARDEN_BENCH_CALLERS`          | 32      | concurrent callers                               |
//! | `WARDEN_BENCH_ROUNDS`           | 10      | rounds                                           |
//! | `WARDEN_BENCH_WORKERS`          | cores   | tokio worker threads                             |
//!
//! Run with `cargo bench -p warden-tests --bench policy_overhead`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;
use warden_actors::{ServerState, Warden, WardenConfig};
use warden_policy::{KnownSecret, LeakScanner};
use warden_protocol::ContentBlock;

mod bench_support;
use bench_support::{env_usize, micros, percentile_of, runtime};

/// The test server, built by Cargo alongside this bench.
const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");

/// The result sizes.
const SIZES: [usize; 2] = [1024, 100 * 1024];

/// The two servers, in column order.
const SERVERS: [&str; 2] = ["plain", "policed"];

/// How many `env` values (known secrets) both servers get.
const KNOWN_SECRETS: usize = 10;

/// The goal: the p50 difference on a 1 KB result.
const GOAL_OVERHEAD_1KB_US: f64 = 10.0;

/// Untimed calls at the start of every sequential slice, so that switching
/// from one server to the other is not timed.
const SLICE_WARMUP: usize = 20;

fn main() {
    let settings = Settings::from_env();
    runtime(settings.workers).block_on(run(settings));
}

/// The run's sizes, from the environment.
#[derive(Debug, Clone, Copy)]
struct Settings {
    calls: usize,
    warmup: usize,
    concurrent_calls: usize,
    callers: usize,
    rounds: usize,
    workers: Option<usize>,
}

impl Settings {
    fn from_env() -> Settings {
        Settings {
            calls: env_usize("WARDEN_BENCH_CALLS", 20_000),
            warmup: env_usize("WARDEN_BENCH_WARMUP", 200).max(1),
            concurrent_calls: env_usize("WARDEN_BENCH_CONCURRENT_CALLS", 64_000),
            callers: env_usize("WARDEN_BENCH_CALLERS", 32).max(1),
            rounds: env_usize("WARDEN_BENCH_ROUNDS", 10).max(1),
            workers: std::env::var("WARDEN_BENCH_WORKERS").ok().map(|_| env_usize("WARDEN_BENCH_WORKERS", 0).max(1)),
        }
    }

    fn calls_per_round(&self) -> usize {
        (self.calls / self.rounds).max(1)
    }

    fn per_caller_per_round(&self) -> usize {
        (self.concurrent_calls / self.rounds / self.callers).max(1)
    }
}

/// One server's numbers for one size, pooled over the rounds.
#[derive(Debug, Default)]
struct Totals {
    latencies: Vec<Duration>,
    concurrent_calls: usize,
    concurrent_wall: Duration,
}

async fn run(settings: Settings) {
    let secrets = known_secrets();
    let warden = Arc::new(start_warden(&secrets).await);
    let calls = settings.calls_per_round();
    let per_caller = settings.per_caller_per_round();

    let mut results = Vec::new();
    for size in SIZES {
        let tools = SERVERS.map(|server| Call { tool: format!("{server}__huge"), bytes: size });
        for call in &tools {
            // Fails a broken setup before anything is timed, and warms up.
            sequential(&warden, call, settings.warmup, 0).await;
        }
        let mut totals = [Totals::default(), Totals::default()];
        let mut overheads = Vec::new();
        for round in 0..settings.rounds {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            let mut p50 = [0.0; 2];
            for &which in &order {
                let latencies = sequential(&warden, &tools[which], SLICE_WARMUP, calls).await;
                p50[which] = micros(percentile_of(latencies.clone(), 50.0));
                totals[which].latencies.extend(latencies);
            }
            for &which in &order {
                let wall = concurrent(&warden, &tools[which], settings.callers, per_caller).await;
                totals[which].concurrent_wall += wall;
                totals[which].concurrent_calls += settings.callers * per_caller;
            }
            overheads.push(p50[1] - p50[0]);
        }
        overheads.sort_by(f64::total_cmp);
        println!(
            "{}: per-round p50 overhead min {:+.1}, median {:+.1}, max {:+.1} µs",
            size_label(size),
            overheads[0],
            overheads[overheads.len() / 2],
            overheads[overheads.len() - 1],
        );
        results.push((size, totals));
    }

    print_table(&settings, &results);
    print_pure_cost(&secrets);

    if let Some(warden) = Arc::into_inner(warden) {
        warden.shutdown().await;
    }
}

/// One tool call the bench repeats: `huge {bytes}` on one server.
struct Call {
    tool: String,
    bytes: usize,
}

impl Call {
    /// Makes the call; panics on anything but `bytes` `x`s, so a broken or
    /// redacting path cannot look fast.
    async fn run(&self, warden: &Warden) {
        let result = warden
            .call_tool(&self.tool, serde_json::json!({ "bytes": self.bytes }))
            .await
            .unwrap_or_else(|error| panic!("{}: the call failed: {error}", self.tool));
        assert!(!result.is_error(), "{}: the call failed: {}", self.tool, result.text());
        // Checked in place: `result.text()` would copy 100 KB into both columns.
        match result.content.as_slice() {
            [ContentBlock::Text { text, .. }] if text.len() == self.bytes && text.starts_with('x') => {}
            _ => panic!("{}: expected one text block of {} bytes", self.tool, self.bytes),
        }
    }
}

/// `warmup` untimed calls, then `calls` timed ones, one after another, in a
/// task on a worker thread (as a host's request handler would make them).
async fn sequential(warden: &Arc<Warden>, call: &Call, warmup: usize, calls: usize) -> Vec<Duration> {
    let warden = Arc::clone(warden);
    let call = Call { tool: call.tool.clone(), bytes: call.bytes };
    tokio::spawn(async move {
        for _ in 0..warmup {
            call.run(&warden).await;
        }
        let mut latencies = Vec::with_capacity(calls);
        for _ in 0..calls {
            let before = Instant::now();
            call.run(&warden).await;
            latencies.push(before.elapsed());
        }
        latencies
    })
    .await
    .expect("the sequential caller ran")
}

/// `callers` tasks making `per_caller` calls each; the wall time.
async fn concurrent(warden: &Arc<Warden>, call: &Call, callers: usize, per_caller: usize) -> Duration {
    let start = Instant::now();
    let tasks: Vec<JoinHandle<()>> = (0..callers)
        .map(|_| {
            let warden = Arc::clone(warden);
            let call = Call { tool: call.tool.clone(), bytes: call.bytes };
            tokio::spawn(async move {
                for _ in 0..per_caller {
                    call.run(&warden).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("a concurrent caller ran");
    }
    start.elapsed()
}

fn print_table(settings: &Settings, results: &[(usize, [Totals; 2])]) {
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!();
    println!(
        "policy overhead per call: `huge` via warden-test-server (stdio), leaks = \"off\" (plain) against \"redact\" (policed) with {KNOWN_SECRETS} known secrets; {} rounds in alternating order (plain first in odd rounds), samples pooled",
        settings.rounds,
    );
    println!(
        "  per server and size: {} timed sequential calls (after {} warm-up), {} calls by {} concurrent callers",
        settings.calls_per_round() * settings.rounds,
        settings.warmup,
        settings.per_caller_per_round() * settings.callers * settings.rounds,
        settings.callers,
    );
    println!(
        "{:>6}  {:<20} {:>10} {:>10} {:>15} {:>14}   goal",
        "size", "metric", "plain", "policed", "policed/plain", "overhead µs"
    );
    for (size, totals) in results {
        let p50 = totals.each(|t| micros(percentile_of(t.latencies.clone(), 50.0)));
        let p99 = totals.each(|t| micros(percentile_of(t.latencies.clone(), 99.0)));
        let rate = totals.each(|t| t.concurrent_calls as f64 / t.concurrent_wall.as_secs_f64());
        let overhead = p50[1] - p50[0];
        let goal = if *size == 1024 {
            format!("≤ {GOAL_OVERHEAD_1KB_US} µs p50: {}", verdict(overhead <= GOAL_OVERHEAD_1KB_US))
        } else {
            String::new()
        };
        let label = size_label(*size);
        let row = format!(
            "{label:>6}  {:<20} {:>10.1} {:>10.1} {:>14.2}× {:>+14.1}   {goal}",
            "p50 latency (µs)",
            p50[0],
            p50[1],
            p50[1] / p50[0],
            overhead,
        );
        println!("{}", row.trim_end());
        println!(
            "{label:>6}  {:<20} {:>10.1} {:>10.1} {:>14.2}× {:>+14.1}",
            "p99 latency (µs)",
            p99[0],
            p99[1],
            p99[1] / p99[0],
            p99[1] - p99[0],
        );
        // Per-call cost under load: the difference of the inverse rates.
        let loaded = 1e6 / rate[1] - 1e6 / rate[0];
        println!(
            "{label:>6}  {:<20} {:>10.0} {:>10.0} {:>14.2}× {:>+14.1}   (wall µs per call, 1/rate)",
            format!("calls/s, {} callers", settings.callers),
            rate[0],
            rate[1],
            rate[1] / rate[0],
            loaded,
        );
    }
}

/// The scan alone, with the same known secrets, over the served text and a
/// realistic one of the same size.
fn print_pure_cost(secrets: &[KnownSecret]) {
    let scanner = LeakScanner::new(secrets.to_vec());
    let budget = Duration::from_millis(200);
    let mut cells = Vec::new();
    for size in SIZES {
        let served = "x".repeat(size);
        let realistic = tool_output(size);
        assert!(scanner.find_in_text(&served).is_empty() && scanner.find_in_text(&realistic).is_empty());
        cells.push((size, median(budget, || scanner.find_in_text(black_box(&served)).is_empty())));
        cells.push((size, median(budget, || scanner.find_in_text(black_box(&realistic)).is_empty())));
    }
    let show = |cell: &(usize, Duration)| format!("{} {:.2} µs", size_label(cell.0), micros(cell.1));
    println!(
        "pure scan, LeakScanner::find_in_text with the same {KNOWN_SECRETS} known secrets (median): served `x` text {}, {}; realistic JSON lines {}, {}",
        show(&cells[0]),
        show(&cells[2]),
        show(&cells[1]),
        show(&cells[3]),
    );
}

/// The median time of `run`, repeated for at least `budget` (and 5 times).
fn median(budget: Duration, mut run: impl FnMut() -> bool) -> Duration {
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.len() < 5 || start.elapsed() < budget {
        let one = Instant::now();
        black_box(run());
        samples.push(one.elapsed());
    }
    percentile_of(samples, 50.0)
}

/// `[plain, policed]` → one number each.
trait Each {
    fn each(&self, metric: impl Fn(&Totals) -> f64) -> [f64; 2];
}

impl Each for [Totals; 2] {
    fn each(&self, metric: impl Fn(&Totals) -> f64) -> [f64; 2] {
        [metric(&self[0]), metric(&self[1])]
    }
}

/// The `env` values both servers get: secret-looking, 24 to 40 characters.
fn known_secrets() -> Vec<KnownSecret> {
    (0..KNOWN_SECRETS)
        .map(|n| {
            let value = format!("kv{n:03}-{}", hex(n as u64 * 7919 + 13).repeat(2 + n % 3));
            KnownSecret { label: format!("BENCH_SECRET_{n}"), value }
        })
        .collect()
}

async fn start_warden(secrets: &[KnownSecret]) -> Warden {
    // A TOML basic string: escape backslashes and quotes.
    let path = TEST_SERVER.replace('\\', "\\\\").replace('"', "\\\"");
    let env = secrets.iter().map(|secret| format!("{} = \"{}\"", secret.label, secret.value)).collect::<Vec<_>>();
    let env = env.join(", ");
    let toml = SERVERS
        .iter()
        .zip(["off", "redact"])
        .map(|(server, leaks)| {
            format!(
                "[servers.{server}]\ncommand = \"{path}\"\nenv = {{ {env} }}\ndefault_policy = {{ approval = \"never\", leaks = \"{leaks}\" }}\n"
            )
        })
        .collect::<String>();
    let config = WardenConfig::from_toml(&toml, "bench").expect("the bench config is valid");
    let warden = Warden::start(&config).await.expect("Warden starts");
    warden.settled().await;
    for status in warden.status() {
        if let ServerState::Failed { reason } = &status.state {
            panic!("a bench server failed to start under Warden: {reason}");
        }
    }
    for server in SERVERS {
        let tool = format!("{server}__huge");
        assert!(warden.tools().iter().any(|entry| entry.name == tool), "Warden lists no {tool}");
    }
    warden
}

/// Exactly `size` bytes of JSON lines like a code-hosting API's answer
/// (ids, SHAs, UUIDs, paths, URLs, prose, a little base64), without secrets.
fn tool_output(size: usize) -> String {
    let mut text = String::with_capacity(size + 512);
    let mut n: u64 = 0;
    while text.len() < size {
        let sha = format!("{}{}{}{}{}", hex(n), hex(n + 1), hex(n + 2), hex(n + 3), hex(n + 4));
        text.push_str(&format!(
            concat!(
                r#"{{"id":{},"sha":"{}","path":"src/module_{}/file.rs","#,
                r#""url":"https://api.example.com/repos/acme/widgets/commits/{}?page={}","#,
                r#""message":"fix: handle the empty case in parser step {} (see #{})","#,
                r#""avatar":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}"#,
                "\n"
            ),
            n,
            sha,
            n % 97,
            sha,
            n % 13,
            n,
            n * 7,
        ));
        n += 1;
    }
    // ASCII, so any byte offset is a character boundary.
    text.truncate(size);
    text
}

/// Eight hex digits derived from `n`.
fn hex(n: u64) -> String {
    format!("{:08x}", (n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32)
}

fn size_label(bytes: usize) -> String {
    format!("{} KB", bytes / 1024)
}
