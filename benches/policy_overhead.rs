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
use std::time::Duration;

use warden_actors::{Warden, WardenConfig};
use warden_policy::{KnownSecret, LeakScanner};
use warden_protocol::ContentBlock;

mod bench_support;
use bench_support::{
    both, median_time, micros, run_rounds, runtime, sequential, start_warden, toml_string, verdict, Caller, Knobs,
    Spread, Totals,
};

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

fn main() {
    let knobs = Knobs::from_env(Knobs {
        calls: 20_000,
        warmup: 200,
        concurrent_calls: 64_000,
        callers: 32,
        rounds: 10,
        workers: None,
    });
    runtime(knobs.workers).block_on(run(knobs));
}

async fn run(knobs: Knobs) {
    let secrets = known_secrets();
    let warden = Arc::new(start_bench_warden(&secrets).await);

    let mut results = Vec::new();
    for size in SIZES {
        let tools = SERVERS
            .map(|server| Arc::new(Call { warden: Arc::clone(&warden), tool: format!("{server}__huge"), bytes: size }));
        for call in &tools {
            // Fails a broken setup before anything is timed, and warms up.
            sequential(call, knobs.warmup, 0).await;
        }
        let mut totals = [Totals::default(), Totals::default()];
        let pair = [&tools[0], &tools[1]];
        let p50s = run_rounds(pair, pair, None, false, &knobs, &mut totals).await;
        let overheads = Spread::of(p50s.iter().map(|p50| p50[1] - p50[0]).collect());
        println!(
            "{}: per-round p50 overhead min {:+.1}, median {:+.1}, max {:+.1} µs",
            size_label(size),
            overheads.min,
            overheads.median,
            overheads.max,
        );
        results.push((size, totals));
    }

    print_table(&knobs, &results);
    print_pure_cost(&secrets);

    warden.shutdown().await;
}

/// One tool call the bench repeats: `huge {bytes}` on one server.
struct Call {
    warden: Arc<Warden>,
    tool: String,
    bytes: usize,
}

impl Caller for Call {
    /// Makes the call; panics on anything but `bytes` `x`s, so a broken or
    /// redacting path cannot look fast.
    async fn call(&self, _caller: usize) {
        let result = self
            .warden
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

fn print_table(knobs: &Knobs, results: &[(usize, [Totals; 2])]) {
    println!();
    println!(
        "policy overhead per call: `huge` via warden-test-server (stdio), leaks = \"off\" (plain) against \"redact\" (policed) with {KNOWN_SECRETS} known secrets; {} rounds in alternating order (plain first in odd rounds), samples pooled",
        knobs.rounds,
    );
    println!(
        "  per server and size: {} timed sequential calls (after {} warm-up), {} calls by {} concurrent callers",
        knobs.calls_per_round() * knobs.rounds,
        knobs.warmup,
        knobs.per_caller_per_round() * knobs.callers * knobs.rounds,
        knobs.callers,
    );
    println!(
        "{:>6}  {:<20} {:>10} {:>10} {:>15} {:>14}   goal",
        "size", "metric", "plain", "policed", "policed/plain", "overhead µs"
    );
    for (size, totals) in results {
        let p50 = both(totals, |t| t.latency_us(50.0));
        let p99 = both(totals, |t| t.latency_us(99.0));
        let rate = both(totals, Totals::concurrent_rate);
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
            format!("calls/s, {} callers", knobs.callers),
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
        cells.push((size, median_time(budget, || scanner.find_in_text(black_box(&served)).is_empty())));
        cells.push((size, median_time(budget, || scanner.find_in_text(black_box(&realistic)).is_empty())));
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

/// The `env` values both servers get: secret-looking, 24 to 40 characters.
fn known_secrets() -> Vec<KnownSecret> {
    (0..KNOWN_SECRETS)
        .map(|n| {
            let value = format!("kv{n:03}-{}", hex(n as u64 * 7919 + 13).repeat(2 + n % 3));
            KnownSecret { label: format!("BENCH_SECRET_{n}"), value }
        })
        .collect()
}

async fn start_bench_warden(secrets: &[KnownSecret]) -> Warden {
    let path = toml_string(TEST_SERVER);
    let env = secrets.iter().map(|secret| format!("{} = \"{}\"", secret.label, secret.value)).collect::<Vec<_>>();
    let env = env.join(", ");
    let toml = SERVERS
        .iter()
        .zip(["off", "redact"])
        .map(|(server, leaks)| {
            format!(
                "[servers.{server}]\ncommand = {path}\nenv = {{ {env} }}\ndefault_policy = {{ approval = \"never\", leaks = \"{leaks}\" }}\n"
            )
        })
        .collect::<String>();
    let config = WardenConfig::from_toml(&toml, "bench").expect("the bench config is valid");
    let tools = SERVERS.map(|server| format!("{server}__huge"));
    start_warden(&config, &tools.each_ref().map(String::as_str)).await
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
