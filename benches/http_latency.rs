//! Tool-call latency and throughput over Streamable HTTP: Warden against a
//! minimal direct hyper client, both talking to the same real server.
//!
//! The server is the pinned `@modelcontextprotocol/server-everything`
//! (installed by [`warden_tests::real_servers`]) in its `streamableHttp`
//! mode on a free loopback port, started by the bench and killed at the end.
//! Both clients call its `echo` tool, each on its own MCP session, in the
//! same run, on the same multi-thread tokio runtime:
//!
//! - **direct**: the floor. A hyper 1 + hyper-util pooled client (keep-alive,
//!   HTTP/1.1) that does `initialize` (keeping `Mcp-Session-Id`), posts
//!   `notifications/initialized`, then for each call POSTs `tools/call` with
//!   the session id, `MCP-Protocol-Version` and
//!   `Accept: application/json, text/event-stream`, collects the answer
//!   and picks the `data:` line whose JSON carries the call's id (the server
//!   answers with SSE). No GET stream, no timers, no actors, no resumption.
//! - **warden**: an embedded [`warden_actors::Warden`] with one `url`
//!   server, called through [`warden_actors::Warden::call_tool`].
//!
//! Measured for each client: latency p50 and p99 of one caller making
//! sequential calls (and their calls/s), and calls/s with
//! `WARDEN_BENCH_CALLERS` concurrent callers. As in `call_latency`, the run
//! is cut into rounds after a warm-up; each round times a slice of
//! sequential calls and a burst of concurrent calls for both clients, in
//! alternating order (direct first in rounds 1, 3, ...), and the table pools
//! every round's samples. Goals: p50 latency within 1.2× of direct, and
//! concurrent throughput at least 1/1.2 of direct.
//!
//! Knobs (environment variables, all optional):
//!
//! | variable                        | default | meaning                                       |
//! |---------------------------------|---------|-----------------------------------------------|
//! | `WARDEN_BENCH_CALLS`            | 3000    | timed sequential calls per client, all rounds |
//! | `WARDEN_BENCH_WARMUP`           | 300     | untimed calls per client before round 1       |
//! | `WARDEN_BENCH_CONCURRENT_CALLS` | 9600    | concurrent-phase calls per client, all rounds |
//! | `WARDEN_BENCH_CALLERS`          | 32      | concurrent callers                            |
//! | `WARDEN_BENCH_ROUNDS`           | 6       | rounds                                        |
//! | `WARDEN_BENCH_WORKERS`          | cores   | tokio worker threads                          |
//!
//! Run with `cargo bench -p warden-tests --bench http_latency` (needs `node`
//! and `npm`, and the npm registry the first time).

use std::sync::Arc;

use warden_actors::{Warden, WardenConfig};
use warden_tests::http_everything::HttpEverything;

mod bench_support;
mod mcp_http;
use bench_support::{
    both, run_rounds, runtime, sequential, start_warden, Caller, ComparisonTable, Knobs, Spread, Totals,
};
use mcp_http::McpHttp;

/// What every call echoes.
const MESSAGE: &str = "hello from the http-latency bench";

/// What server-everything answers to it.
const ECHOED: &str = "Echo: hello from the http-latency bench";

/// The goals the table checks: warden/direct at most this for p50 latency,
/// at least its inverse for concurrent throughput.
const GOAL_RATIO: f64 = 1.2;

fn main() {
    let knobs = Knobs::from_env(Knobs {
        calls: 3_000,
        warmup: 300,
        concurrent_calls: 9_600,
        callers: 32,
        rounds: 6,
        workers: None,
    });
    runtime(knobs.workers).block_on(run(knobs));
}

async fn run(knobs: Knobs) {
    let server = HttpEverything::start().await;
    let direct = Arc::new(Client::Direct(McpHttp::start("direct", &server.url, None).await));
    let config = WardenConfig::from_toml(
        &format!(
            "[servers.remote]\nurl = {:?}\nstartup_timeout_secs = 60\n[security]\nauto_approve = true\n",
            server.url
        ),
        "bench",
    )
    .expect("the bench config is valid");
    let warden = Arc::new(Client::Warden(start_warden(&config, &["remote__echo"]).await));
    let clients = [direct, warden];
    for client in &clients {
        // Fails a broken setup before anything is timed, and warms up.
        sequential(client, knobs.warmup, 0).await;
    }

    let mut totals = [Totals::default(), Totals::default()];
    let pair = [&clients[0], &clients[1]];
    let p50s = run_rounds(pair, pair, Some(["direct", "warden"]), true, &knobs, &mut totals).await;
    let ratios = p50s.iter().map(|p50| p50[1] / p50[0]).collect();

    print_table(&knobs, &totals, ratios);

    let [direct, warden] = clients;
    if let Client::Warden(warden) = &*warden {
        warden.shutdown().await;
    }
    drop(direct);
    server.stop().await;
}

fn print_table(knobs: &Knobs, totals: &[Totals; 2], ratios: Vec<f64>) {
    let p50 = both(totals, |t| t.latency_us(50.0));
    let p50_ratio = p50[1] / p50[0];
    let concurrent = both(totals, Totals::concurrent_rate);
    let concurrent_ratio = concurrent[1] / concurrent[0];

    println!();
    println!(
        "http call latency and throughput, echo via server-everything (streamable HTTP, loopback): {} rounds, each timing both clients in alternating order (direct first in odd rounds), samples pooled over the rounds",
        knobs.rounds,
    );
    println!(
        "  per client: {} timed sequential calls (after {} warm-up), {} calls by {} concurrent callers; direct is a pooled hyper client",
        totals[0].sequential_calls, knobs.warmup, totals[0].concurrent_calls, knobs.callers,
    );
    let table = ComparisonTable::new("direct", "warden", 10);
    table.goal_row("p50 latency (µs)", p50, 1, &format!("≤ {GOAL_RATIO}×"), p50_ratio <= GOAL_RATIO);
    table.row("p99 latency (µs)", both(totals, |t| t.latency_us(99.0)), 1);
    table.row("calls/s, 1 caller", both(totals, Totals::sequential_rate), 0);
    table.goal_row(
        &format!("calls/s, {} callers", knobs.callers),
        concurrent,
        0,
        &format!("≥ 1/{GOAL_RATIO} = {:.2}×", 1.0 / GOAL_RATIO),
        concurrent_ratio >= 1.0 / GOAL_RATIO,
    );
    let ratios = Spread::of(ratios);
    println!(
        "p50 ratio (warden / direct) per round: min {:.2}×, median {:.2}×, max {:.2}×",
        ratios.min, ratios.median, ratios.max,
    );
}

// ---------------------------------------------------------------------------
// The two clients
// ---------------------------------------------------------------------------

/// One of the two clients; each lives in one `Arc` for the whole run, so
/// the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum Client {
    Direct(McpHttp),
    Warden(Warden),
}

impl Caller for Client {
    /// One `echo` call; panics on anything but the echoed text, so a broken
    /// client cannot look fast.
    async fn call(&self, _caller: usize) {
        match self {
            Client::Direct(direct) => {
                let text = direct.call_echo("echo", MESSAGE).await;
                assert_eq!(text, ECHOED, "direct: echo answered something else");
            }
            Client::Warden(warden) => {
                let result = warden
                    .call_tool("remote__echo", serde_json::json!({ "message": MESSAGE }))
                    .await
                    .unwrap_or_else(|error| panic!("warden: echo failed: {error}"));
                assert!(!result.is_error(), "warden: echo failed: {}", result.text());
                assert_eq!(result.text(), ECHOED, "warden: echo answered something else");
            }
        }
    }
}
