//! Tool-call latency and throughput through the daemon's bridge, against
//! the embedded `Warden` it wraps.
//!
//! Both clients call the `echo` tool of the same `warden-test-server`
//! binary, each through its own Warden (so its own server process), in the
//! same run:
//!
//! - **embedded**: the floor. A [`warden_actors::Warden`] in this process,
//!   called through [`warden_actors::Warden::call_tool`] as a host would.
//! - **bridge**: a real `warden serve` daemon (a child process, with its own
//!   `WARDEN_HOME`), called over its Unix socket (as the CLI calls it; the
//!   breakdown sets its TCP port beside it) with the bridge protocol by a
//!   minimal pipelining client: each connection has one writer and one reader
//!   task, and requests wait in a FIFO for their answers (the daemon answers
//!   in request order). What the bridge adds per call is the JSON line each
//!   way, two socket hops, the daemon's request decoding and its answer
//!   encoding — everything a host pays for running Warden out of process.
//!
//! Measured for each: latency p50 and p99 of one caller making sequential
//! calls (and their calls/s), and calls/s with `WARDEN_BENCH_CALLERS`
//! concurrent callers (for the bridge: that many connections, one caller
//! each). As in `call_latency`, the run is cut into rounds after a warm-up,
//! the order alternates from round to round, and the table pools the
//! samples. Goal: bridge p50 within 50 µs of embedded.
//!
//! Then the wall time of whole `warden call` processes against the warm
//! daemon (process start, lockfile, connect, one call, print): what a shell
//! script pays per call, beside its floors in the same run (a process that
//! does nothing, one call on a fresh connection, `warden --version`); its
//! goal is a ratio, `warden call` p50 ≤ 1.5× `warden --version` p50 (the
//! line starting `cli:`). Last,
//! where a call's time goes, against floors measured in the same run
//! ([`bridge_breakdown`]): what any extra process
//! on the path costs on this machine, and what the daemon itself adds.
//!
//! Knobs (environment variables, all optional):
//!
//! | variable                        | default | meaning                                          |
//! |---------------------------------|---------|--------------------------------------------------|
//! | `WARDEN_BENCH_CALLS`            | 5000    | timed sequential calls per client, all rounds    |
//! | `WARDEN_BENCH_WARMUP`           | 300     | untimed calls per client before round 1          |
//! | `WARDEN_BENCH_CONCURRENT_CALLS` | 19200   | concurrent-phase calls per client, all rounds    |
//! | `WARDEN_BENCH_CALLERS`          | 32      | concurrent callers / bridge connections          |
//! | `WARDEN_BENCH_ROUNDS`           | 6       | rounds                                           |
//! | `WARDEN_BENCH_CLI_RUNS`         | 30      | `warden call` processes timed                    |
//! | `WARDEN_BENCH_WORKERS`          | cores   | tokio worker threads                             |
//! | `WARDEN_BENCH_DAEMON_WORKERS`   | cores   | the daemon's `[daemon] workers`                  |
//!
//! The `warden` binary belongs to another package, so Cargo does not build
//! it for this bench; the bench builds it (`cargo build --release -p
//! warden`, into the same target directory) before it starts.
//!
//! Run with `cargo bench -p warden-tests --bench bridge_latency`.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use warden_actors::{Warden, WardenConfig};

mod bench_support;
mod bridge_breakdown;
mod floor_process;
use bench_support::{
    both, build_warden, daemon, daemon_workers, embedded_echo, env_usize, percentile_of, run_rounds, runtime,
    sequential, start_warden, toml_string, verdict, Caller, ComparisonTable, Knobs, Spread, Totals,
};

/// The test server, built by Cargo alongside this bench.
const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");

/// What every call echoes.
const MESSAGE: &str = "hello from the bridge-latency bench";

/// The goal the table checks.
const GOAL_P50_OVERHEAD_US: f64 = 50.0;

fn main() {
    if let Some(floor) = bridge_breakdown::floor_process() {
        return runtime(None).block_on(floor);
    }
    let settings = Settings::from_env();
    let warden_bin = build_warden();
    runtime(settings.knobs.workers).block_on(run(settings, &warden_bin));
}

#[derive(Debug, Clone, Copy)]
struct Settings {
    knobs: Knobs,
    /// `warden call` processes timed.
    cli_runs: usize,
}

impl Settings {
    fn from_env() -> Settings {
        let knobs = Knobs::from_env(Knobs {
            calls: 5_000,
            warmup: 300,
            concurrent_calls: 19_200,
            callers: 32,
            rounds: 6,
            workers: None,
        });
        Settings { knobs, cli_runs: env_usize("WARDEN_BENCH_CLI_RUNS", 30) }
    }
}

async fn run(settings: Settings, warden_bin: &Path) {
    let scratch = warden_tests::scratch_dir("bridge-bench");
    let config = scratch.join("warden.toml");
    let server = toml_string(TEST_SERVER);
    let (workers, _) = daemon_workers();
    let text = format!(
        "[daemon]\nidle_timeout_minutes = 60\n{workers}[security]\nauto_approve = true\n[servers.bench]\ncommand = {server}\n"
    );
    std::fs::write(&config, text).unwrap();
    let home = scratch.join("home");

    let embedded = WardenConfig::load(&config).expect("the bench config is valid");
    let embedded = Arc::new(Client::Embedded(start_warden(&embedded, &["bench__echo"]).await));
    let daemon = Daemon::start(warden_bin, &config, &home).await;
    let bridge = Arc::new(Client::Bridge(vec![daemon.connect().await]));
    let clients = [embedded, bridge];
    let knobs = settings.knobs;
    for client in &clients {
        sequential(client, knobs.warmup, 0).await;
    }
    // One connection per concurrent caller for the bridge.
    let mut connections = Vec::with_capacity(knobs.callers);
    for _ in 0..knobs.callers {
        connections.push(daemon.connect().await);
    }
    let bridge_many = Arc::new(Client::Bridge(connections));

    let mut totals = [Totals::default(), Totals::default()];
    let (embedded, bridge) = ([&clients[0], &clients[1]], [&clients[0], &bridge_many]);
    let p50s = run_rounds(embedded, bridge, Some(["embedded", "bridge"]), false, &knobs, &mut totals).await;
    let overheads = p50s.iter().map(|p50| p50[1] - p50[0]).collect();
    let cli = cli_wall_times(warden_bin, &config, &home, &daemon, settings.cli_runs).await;
    print_table(&settings, &totals, overheads, &cli);
    bridge_breakdown::print(&daemon.lockfile, Arc::clone(&clients[0]), &knobs).await;

    drop(bridge_many);
    let [embedded, bridge] = clients;
    drop(bridge);
    daemon.stop().await;
    if let Client::Embedded(warden) = &*embedded {
        warden.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Whole `warden call` processes, each beside its floor: a process that
/// does nothing (`true`, started the same way) and one call on a fresh
/// connection from this process. Their sum is what any CLI pays here; the
/// rest is the `warden` binary's own: `warden --version` tells loading it
/// (mapping, relocating, parsing arguments) from what the call does after.
#[derive(Default)]
struct CliTimes {
    warden: Vec<Duration>,
    process: Vec<Duration>,
    version: Vec<Duration>,
    fresh_connection: Vec<Duration>,
}

/// The wall time of `runs` whole `warden call` processes and their floors,
/// alternating.
async fn cli_wall_times(warden_bin: &Path, config: &Path, home: &Path, daemon: &Daemon, runs: usize) -> CliTimes {
    let mut times = CliTimes::default();
    for _ in 0..runs {
        let start = Instant::now();
        let output = tokio::process::Command::new(warden_bin)
            .args(["call", "bench__echo", &json!({"message": MESSAGE}).to_string(), "--config"])
            .arg(config)
            .env("WARDEN_HOME", home)
            .env_remove("RUST_LOG")
            .output()
            .await
            .expect("warden call runs");
        times.warden.push(start.elapsed());
        assert!(output.status.success(), "warden call failed: {}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim_end(), MESSAGE);

        let start = Instant::now();
        let output = tokio::process::Command::new("true").output().await.expect("`true` runs");
        times.process.push(start.elapsed());
        assert!(output.status.success(), "`true` failed");

        let start = Instant::now();
        let output = tokio::process::Command::new(warden_bin).arg("--version").output().await.expect("warden runs");
        times.version.push(start.elapsed());
        assert!(output.status.success(), "`warden --version` failed");

        let start = Instant::now();
        let connection = daemon.connect().await;
        let answer = connection.echo().await;
        drop(connection);
        times.fresh_connection.push(start.elapsed());
        assert!(answer.contains(MESSAGE), "the daemon answered {answer}");
    }
    times
}

fn print_table(settings: &Settings, totals: &[Totals; 2], overheads: Vec<f64>, cli: &CliTimes) {
    let knobs = &settings.knobs;
    let p50 = both(totals, |t| t.latency_us(50.0));
    let overhead = p50[1] - p50[0];

    println!();
    println!(
        "bridge vs embedded, echo via warden-test-server (stdio): {} rounds in alternating order, samples pooled",
        knobs.rounds
    );
    println!(
        "  per client: {} timed sequential calls (after {} warm-up), {} calls by {} concurrent callers (bridge: one connection each); the daemon on {}",
        totals[0].sequential_calls, knobs.warmup, totals[0].concurrent_calls, knobs.callers, daemon_workers().1,
    );
    let table = ComparisonTable::new("embedded", "bridge", 11);
    let goal = format!("within +{GOAL_P50_OVERHEAD_US} µs");
    table.goal_row("p50 latency (µs)", p50, 1, &goal, overhead <= GOAL_P50_OVERHEAD_US);
    table.row("p99 latency (µs)", both(totals, |t| t.latency_us(99.0)), 1);
    table.row("calls/s, 1 caller", both(totals, Totals::sequential_rate), 0);
    table.row(&format!("calls/s, {} callers", knobs.callers), both(totals, Totals::concurrent_rate), 0);
    let overheads = Spread::of(overheads);
    println!(
        "p50 overhead (bridge − embedded): {overhead:+.1} µs per call (goal ≤ {GOAL_P50_OVERHEAD_US} µs: {}); per round: min {:+.1}, median {:+.1}, max {:+.1} µs",
        verdict(overhead <= GOAL_P50_OVERHEAD_US),
        overheads.min,
        overheads.median,
        overheads.max,
    );
    if !cli.warden.is_empty() {
        let ms = |times: &[Duration], percentile: f64| percentile_of(times.to_vec(), percentile).as_secs_f64() * 1e3;
        let line = |label: &str, times: &[Duration]| {
            println!(
                "  {label:<52} p50 {:>5.2} ms, min {:>5.2}, max {:>5.2}",
                ms(times, 50.0),
                ms(times, 0.0),
                ms(times, 100.0)
            )
        };
        println!(
            "`warden call` against the warm daemon, {} runs, alternating with its floors (whole process: start, lockfile, connect, call, print):",
            cli.warden.len()
        );
        line("`warden call`", &cli.warden);
        line("a process that does nothing (`true`)", &cli.process);
        line("one call on a fresh connection, from this process", &cli.fresh_connection);
        line("`warden --version` (load the binary, parse, exit)", &cli.version);
        let [warden, nothing, fresh, version] =
            [&cli.warden, &cli.process, &cli.fresh_connection, &cli.version].map(|times| ms(times, 50.0));
        let floor = nothing + fresh;
        println!(
            "  so: the floor (nothing + fresh call) {floor:.2} ms; `warden call` {:+.2} ms over it ({:.2}×): \
             loading the binary {:+.2} ms (version − nothing), the rest {:+.2} ms (call − version − fresh call)",
            warden - floor,
            warden / floor,
            version - nothing,
            warden - version - fresh,
        );
        // The goal is a ratio to a floor measured in the same run (#47):
        // the CLI's own work on top of starting a process.
        println!(
            "cli: warden call p50 {warden:.2} ms, warden --version p50 {version:.2} ms, ratio {:.2}× (goal ≤ 1.5×: {})",
            warden / version,
            verdict(warden <= 1.5 * version)
        );
    }
}

// ---------------------------------------------------------------------------
// The two clients
// ---------------------------------------------------------------------------

#[allow(clippy::large_enum_variant)]
enum Client {
    Embedded(Warden),
    /// One or more bridge connections; caller `n` uses connection `n % len`.
    Bridge(Vec<BridgeConnection>),
}

impl Caller for Client {
    async fn call(&self, caller: usize) {
        match self {
            Client::Embedded(warden) => embedded_echo(warden, "bench__echo", MESSAGE).await,
            Client::Bridge(connections) => {
                let answer = connections[caller % connections.len()].echo().await;
                let answer: Value = serde_json::from_str(&answer).expect("the bridge answers JSON");
                assert_eq!(answer["result"]["content"][0]["text"], MESSAGE, "bridge: {answer}");
            }
        }
    }
}

/// A `warden serve` child process with its own state directory.
struct Daemon {
    child: tokio::process::Child,
    lockfile: Value,
}

impl Daemon {
    async fn start(warden_bin: &Path, config: &Path, home: &Path) -> Daemon {
        let child = tokio::process::Command::new(warden_bin)
            .args(["serve", "--config"])
            .arg(config)
            .env("WARDEN_HOME", home)
            // Logging as a user's daemon logs (info, to daemon.log).
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("warden serve starts");
        let home = home.to_path_buf();
        let lockfile = tokio::task::spawn_blocking(move || daemon::lockfile(&home, Duration::from_secs(20)))
            .await
            .expect("the daemon's lockfile");
        Daemon { child, lockfile }
    }

    /// A connection as the CLI makes one: to the daemon's Unix socket.
    async fn connect(&self) -> BridgeConnection {
        let address = self.lockfile["socket"].as_str().expect("the daemon's socket");
        let token = self.lockfile["token"].as_str().expect("a token");
        BridgeConnection::connect(address, token).await
    }

    async fn stop(mut self) {
        let pid = self.child.id().expect("the daemon runs") as i32;
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        if tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// The request of every bridge call.
fn call_line(token: &str) -> Value {
    json!({"op": "call_tool", "server": "bench", "tool": "echo", "args": {"message": MESSAGE}, "token": token})
}

/// A pipelining bridge client on one connection.
struct BridgeConnection {
    writer: tokio::sync::Mutex<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>,
    /// Callers waiting for answers, in the order their requests were sent.
    waiting: Arc<Mutex<VecDeque<oneshot::Sender<String>>>>,
    /// The request line, built once: every call sends the same one.
    request: Vec<u8>,
    reader: tokio::task::JoinHandle<()>,
}

impl BridgeConnection {
    async fn connect(address: &str, token: &str) -> BridgeConnection {
        BridgeConnection::with_line(address, &call_line(token)).await
    }

    /// A connection that sends `request` every time, to `address`: a
    /// Unix socket's path (it starts with `/`), or TCP's host and port.
    async fn with_line(address: &str, request: &Value) -> BridgeConnection {
        let waiting: Arc<Mutex<VecDeque<oneshot::Sender<String>>>> = Arc::default();
        let (reader, writer): (_, Box<dyn tokio::io::AsyncWrite + Send + Unpin>) = if address.starts_with('/') {
            let stream = tokio::net::UnixStream::connect(address).await.expect("the socket accepts");
            let (read, writer) = stream.into_split();
            (tokio::spawn(read_answers(BufReader::new(read), Arc::clone(&waiting))), Box::new(writer))
        } else {
            let stream = TcpStream::connect(address).await.expect("the daemon accepts");
            stream.set_nodelay(true).expect("TCP_NODELAY");
            let (read, writer) = stream.into_split();
            (tokio::spawn(read_answers(BufReader::new(read), Arc::clone(&waiting))), Box::new(writer))
        };
        let mut request = request.to_string().into_bytes();
        request.push(b'\n');
        BridgeConnection { writer: tokio::sync::Mutex::new(writer), waiting, request, reader }
    }

    async fn echo(&self) -> String {
        let (done, answer) = oneshot::channel();
        {
            // Queue and write under one lock, so the FIFO matches the wire.
            let mut writer = self.writer.lock().await;
            self.waiting.lock().expect("never poisoned").push_back(done);
            writer.write_all(&self.request).await.expect("the daemon reads");
        }
        answer.await.expect("the daemon answers")
    }
}

impl Drop for BridgeConnection {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_answers<R: tokio::io::AsyncRead + Unpin>(
    mut reader: BufReader<R>,
    waiting: Arc<Mutex<VecDeque<oneshot::Sender<String>>>>,
) {
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let waiter = waiting.lock().expect("never poisoned").pop_front();
        if let Some(waiter) = waiter {
            let _ = waiter.send(std::mem::take(&mut line));
        }
    }
}
