//! The MCP front: what it costs over calling Warden embedded, and how it
//! compares with the gateways a user would pick instead.
//!
//! Every client calls `echo` on the same release `warden-test-server`
//! (stdio), in one run, on one multi-thread tokio runtime:
//!
//! - **embedded**: an embedded [`warden_actors::Warden`] (`bench__echo`);
//! - **front**: a real `warden serve` daemon with `[front]` on a loopback
//!   port, called through its Streamable HTTP face by the minimal pooled
//!   client of `benches/mcp_http.rs` (one session, keep-alive);
//! - **supergateway** (npm 4.0.0, `--stateful --outputTransport
//!   streamableHttp`) and **mcp-proxy** (PyPI 0.13.0, in a virtualenv of its
//!   own: it pins an older `mcp` than the tests) exposing the same stdio
//!   server over Streamable HTTP, called by the same client.
//!
//! Table 1 is embedded vs front (p50, p99, calls/s with 1 and
//! `WARDEN_BENCH_CALLERS` callers), rounds in alternating order, samples
//! pooled. Goals: front p50 within +100 µs of embedded, throughput with 32
//! callers at least 0.7× embedded. Tables 2 and 3 hold those goals against
//! the **HTTP relay floor** ([`front_floor`]), the cheapest HTTP front
//! there can be, measured the same way: embedded vs the floor says whether
//! any HTTP front can reach the goals on this machine, the floor vs the
//! front what Warden's own work costs. Tables 4 and 5 put the front next
//! to each gateway the same way, with fewer calls (they are slow). Goal:
//! Warden ≥ 10× each one's 32-caller throughput, and front p50 ≤ 1 ms.
//! The gateways are installed under `target/bench-gateways/` on the first
//! run (npm and pip, network needed); when that fails the bench says why
//! and prints table 1 alone.
//!
//! Knobs: `WARDEN_BENCH_CALLS` (3000), `WARDEN_BENCH_WARMUP` (300),
//! `WARDEN_BENCH_CONCURRENT_CALLS` (9600), `WARDEN_BENCH_CALLERS` (32),
//! `WARDEN_BENCH_ROUNDS` (6), `WARDEN_BENCH_WORKERS` (cores); the gateway
//! tables take a fifth of the calls and 2 rounds.
//!
//! Run with `cargo bench -p warden-tests --bench front_latency`.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use warden_actors::{Warden, WardenConfig};

mod bench_support;
mod floor_process;
mod front_floor;
mod mcp_http;
use bench_support::{
    both, build_warden, daemon, embedded_echo, run_rounds, runtime, sequential, start_warden, toml_string, Caller,
    ComparisonTable, Knobs, Totals,
};
use mcp_http::McpHttp;
use warden_tests::listening::listening_port;

/// The test server, built by Cargo alongside this bench.
const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");
/// What every call echoes.
const MESSAGE: &str = "hello from the front-latency bench";
/// The front's bearer token.
const TOKEN: &str = "front-bench-token-0123456789abcdef";
const SUPERGATEWAY: &str = "4.0.0";
const MCP_PROXY: &str = "0.13.0";
/// The front's goals against embedded: p50 over it, and 32-caller throughput.
const GOAL_P50_OVER_US: f64 = 100.0;
const GOAL_RATE: f64 = 0.7;

fn main() {
    if let Some(floor) = front_floor::floor_process() {
        return runtime(None).block_on(floor);
    }
    let knobs = Knobs::from_env(Knobs {
        calls: 3_000,
        warmup: 300,
        concurrent_calls: 9_600,
        callers: 32,
        rounds: 6,
        workers: None,
    });
    let warden_bin = build_warden();
    runtime(knobs.workers).block_on(run(knobs, &warden_bin));
}

async fn run(knobs: Knobs, warden_bin: &Path) {
    let scratch = warden_tests::scratch_dir("front-bench");
    let config = scratch.join("warden.toml");
    // The front on a port the kernel picks (a released one can be taken
    // before the daemon binds it); the daemon's `status` names it.
    std::fs::write(
        &config,
        format!(
            "[daemon]\nidle_timeout_minutes = 60\n[security]\nauto_approve = true\n[servers.bench]\ncommand = {}\n\
             [front]\nlisten = \"127.0.0.1:0\"\ntokens = [{{ token = \"{TOKEN}\" }}]\n",
            toml_string(TEST_SERVER)
        ),
    )
    .unwrap();
    let embedded = WardenConfig::load(&config).expect("the bench config is valid");
    let embedded = Arc::new(Client::Embedded(start_warden(&embedded, &["bench__echo"]).await));
    let state_dir = scratch.join("home");
    let daemon = Child::spawn(
        "warden serve",
        tokio::process::Command::new(warden_bin)
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .env("WARDEN_HOME", &state_dir),
    );
    let port =
        tokio::task::spawn_blocking(move || daemon::front_port(&daemon::lockfile(&state_dir, Duration::from_secs(60))))
            .await
            .expect("the daemon's front port");
    let front = Arc::new(Client::http("front", port, Some(TOKEN), "bench__echo").await);
    let mut totals = [Totals::default(), Totals::default()];
    for client in [&embedded, &front] {
        sequential(client, knobs.warmup, 0).await;
    }
    let pair = [&embedded, &front];
    run_rounds(pair, pair, Some(["embedded", "front"]), true, &knobs, &mut totals).await;
    print_table("embedded", "front", &knobs, &totals, Goals::Embedded);

    let (floor_process, floor_port) = front_floor::start().await;
    let floor = Arc::new(Client::http("http relay floor", floor_port, None, "echo").await);
    sequential(&floor, knobs.warmup, 0).await;
    for (pair, names, goals) in [
        ([&embedded, &floor], ["embedded", "floor"], Goals::Reachable),
        ([&floor, &front], ["floor", "front"], Goals::OverFloor),
    ] {
        let mut totals = [Totals::default(), Totals::default()];
        run_rounds(pair, pair, Some(names), true, &knobs, &mut totals).await;
        print_table(names[0], names[1], &knobs, &totals, goals);
    }
    drop(floor);
    drop(floor_process);

    let gateway_knobs = Knobs {
        calls: knobs.calls / 5,
        warmup: knobs.warmup / 5,
        concurrent_calls: knobs.concurrent_calls / 5,
        rounds: 2,
        ..knobs
    };
    match gateways().await {
        Err(problem) => println!("\nthe gateways are not compared: {problem}"),
        Ok(gateways) => {
            for gateway in gateways {
                let (name, child, client) = gateway;
                let mut totals = [Totals::default(), Totals::default()];
                sequential(&client, gateway_knobs.warmup, 0).await;
                let pair = [&front, &client];
                run_rounds(pair, pair, Some(["front", name]), true, &gateway_knobs, &mut totals).await;
                print_table("front", name, &gateway_knobs, &totals, Goals::Gateway);
                drop(client);
                child.stop().await;
            }
        }
    }
    drop(front);
    daemon.stop().await;
    if let Client::Embedded(warden) = &*embedded {
        warden.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Installs and starts supergateway and mcp-proxy, each serving the test server.
async fn gateways() -> Result<Vec<(&'static str, Child, Arc<Client>)>, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-gateways");
    let npm = dir.join(format!("supergateway-{SUPERGATEWAY}"));
    let script = npm.join("node_modules/supergateway/dist/index.js");
    if !script.is_file() {
        install(
            std::process::Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&npm)
                .arg(format!("supergateway@{SUPERGATEWAY}")),
        )?;
    }
    let venv = dir.join(format!("mcp-proxy-{MCP_PROXY}"));
    let proxy = venv.join("bin/mcp-proxy");
    if !proxy.is_file() {
        install(std::process::Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
        install(std::process::Command::new(venv.join("bin/pip")).args([
            "install",
            "-q",
            &format!("mcp-proxy=={MCP_PROXY}"),
        ]))?;
    }
    let mut started = Vec::new();
    let (child, port) = Child::start(
        "supergateway",
        tokio::process::Command::new("node").arg(&script).args([
            "--stdio",
            TEST_SERVER,
            "--outputTransport",
            "streamableHttp",
            "--stateful",
            "--port",
            "0",
            "--logLevel",
            "none",
        ]),
    )
    .await;
    started.push(("supergateway", child, Arc::new(Client::http("supergateway", port, None, "echo").await)));
    let (child, port) = Child::start(
        "mcp-proxy",
        tokio::process::Command::new(&proxy).args(["--host", "127.0.0.1", "--port", "0", TEST_SERVER]),
    )
    .await;
    started.push(("mcp-proxy", child, Arc::new(Client::http("mcp-proxy", port, None, "echo").await)));
    Ok(started)
}

fn install(command: &mut std::process::Command) -> Result<(), String> {
    let output = command.output().map_err(|error| format!("{command:?} did not run: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed: {}", String::from_utf8_lossy(&output.stderr)))
    }
}

/// Which goals a table checks.
#[derive(Clone, Copy, PartialEq)]
enum Goals {
    /// The front's own goals, against embedded.
    Embedded,
    /// The same goals held by the HTTP relay floor: can any HTTP front
    /// reach them here?
    Reachable,
    /// The front against the floor: Warden's own share.
    OverFloor,
    Gateway,
}

fn print_table(first: &str, second: &str, knobs: &Knobs, totals: &[Totals; 2], goals: Goals) {
    println!();
    println!(
        "{first} vs {second}, echo via warden-test-server (stdio): {} rounds in alternating order, samples pooled",
        knobs.rounds
    );
    println!(
        "  per client: {} timed sequential calls (after {} warm-up), {} calls by {} concurrent callers",
        totals[0].sequential_calls, knobs.warmup, totals[0].concurrent_calls, knobs.callers
    );
    let table = ComparisonTable::new(first, second, 12);
    let p50 = both(totals, |t| t.latency_us(50.0));
    let rate = both(totals, Totals::concurrent_rate);
    match goals {
        Goals::Embedded => {
            let overhead = p50[1] - p50[0];
            table.goal_row(
                "p50 latency (µs)",
                p50,
                1,
                &format!("front within +{GOAL_P50_OVER_US} µs ({overhead:+.1})"),
                overhead <= GOAL_P50_OVER_US,
            );
            table.row("p99 latency (µs)", both(totals, |t| t.latency_us(99.0)), 1);
            table.row("calls/s, 1 caller", both(totals, Totals::sequential_rate), 0);
            let ratio = rate[1] / rate[0];
            let label = format!("calls/s, {} callers", knobs.callers);
            table.goal_row(&label, rate, 0, &format!("front ≥ {GOAL_RATE}× ({ratio:.2}×)"), ratio >= GOAL_RATE);
        }
        Goals::Reachable | Goals::OverFloor => {
            table.row("p50 latency (µs)", p50, 1);
            table.row("p99 latency (µs)", both(totals, |t| t.latency_us(99.0)), 1);
            table.row("calls/s, 1 caller", both(totals, Totals::sequential_rate), 0);
            table.row(&format!("calls/s, {} callers", knobs.callers), rate, 0);
            let (overhead, ratio) = (p50[1] - p50[0], rate[1] / rate[0]);
            if goals == Goals::OverFloor {
                println!(
                    "Warden's own work over the floor: p50 {overhead:+.1} µs, {} callers {ratio:.2}× the floor's throughput",
                    knobs.callers,
                );
                return;
            }
            let reachable = |met: bool| if met { "reachable" } else { "out of reach of any HTTP front here" };
            println!(
                "the floor over embedded: p50 {overhead:+.1} µs (goal +{GOAL_P50_OVER_US} µs: {}), {} callers {ratio:.2}× (goal {GOAL_RATE}×: {})",
                reachable(overhead <= GOAL_P50_OVER_US),
                knobs.callers,
                reachable(ratio >= GOAL_RATE),
            );
        }
        Goals::Gateway => {
            table.goal_row(
                "p50 latency (µs)",
                p50,
                1,
                &format!("front ≤ 1 ms ({:.2}×)", p50[1] / p50[0]),
                p50[0] <= 1_000.0,
            );
            table.row("p99 latency (µs)", both(totals, |t| t.latency_us(99.0)), 1);
            table.row("calls/s, 1 caller", both(totals, Totals::sequential_rate), 0);
            let ratio = rate[0] / rate[1];
            let label = format!("calls/s, {} callers", knobs.callers);
            table.goal_row(&label, rate, 0, &format!("front ≥ 10× ({ratio:.1}×)"), ratio >= 10.0);
        }
    }
}

// ---------------------------------------------------------------------------
// Clients and processes
// ---------------------------------------------------------------------------

#[allow(clippy::large_enum_variant)]
enum Client {
    Embedded(Warden),
    Http { mcp: McpHttp, tool: &'static str, expected: String },
}

impl Client {
    async fn http(label: &'static str, port: u16, token: Option<&str>, tool: &'static str) -> Client {
        let mcp = McpHttp::start(label, &format!("http://127.0.0.1:{port}/mcp"), token).await;
        Client::Http { mcp, tool, expected: MESSAGE.to_string() }
    }
}

impl Caller for Client {
    async fn call(&self, _caller: usize) {
        match self {
            Client::Embedded(warden) => embedded_echo(warden, "bench__echo", MESSAGE).await,
            Client::Http { mcp, tool, expected } => {
                assert_eq!(&mcp.call_echo(tool, MESSAGE).await, expected, "echo answered something else");
            }
        }
    }
}

/// A process the bench started, killed at the end.
struct Child {
    child: tokio::process::Child,
}

impl Child {
    /// Starts `command`, which listens on a port the kernel picks (port
    /// 0), and waits (up to 60 s) until it listens: its port, read from
    /// `/proc` (a port taken free and released could be taken by anything
    /// before the gateway binds it).
    async fn start(name: &str, command: &mut tokio::process::Command) -> (Child, u16) {
        let child = Child::spawn(name, command);
        let pid = child.child.id().expect("the child runs");
        let name = name.to_string();
        let port = tokio::task::spawn_blocking(move || listening_port(pid, &name, Duration::from_secs(60)))
            .await
            .expect("the child's port");
        (child, port)
    }

    /// Starts `command`, its output discarded.
    fn spawn(name: &str, command: &mut tokio::process::Command) -> Child {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("{name} does not start: {error}"));
        Child { child }
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}
