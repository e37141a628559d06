//! Where a bridge call's time goes, against floors measured in the same run.
//!
//! The bridge's overhead over embedded has two parts: a process hop that any
//! out-of-process Warden pays (a loopback round trip, and one more process
//! to wake on each call), and the daemon's own work. On this kind of
//! machine the first part is not small — a wake-up of an idle vCPU costs
//! tens of microseconds — so the bench measures it rather than assuming it:
//!
//! - an **echo process** that only echoes lines on loopback TCP (the hop);
//! - the **test server over stdio** from this process, with no Warden (the
//!   embedded path's floor);
//! - a **relay process** that forwards each line to its own test server
//!   and back, matching answers to connections by id and doing nothing
//!   else (the bridge's floor: hop, one more process, and the server);
//!
//! beside the daemon's `ping`, the embedded call and the bridge call, one
//! sequential caller each, in rotating order. Then the same for throughput:
//! many concurrent callers, embedded, through the relay and through the
//! bridge, with the CPU per call of the relay and of the daemon — on two
//! cores, throughput is what every process on the path spends per call. The
//! floor processes are this bench's own binary, started with
//! [`FLOOR_PROCESS`] set.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::Mutex;

use super::bench_support::{concurrent, percentile_of, spawn_piped, Caller as _, Knobs};
use super::floor_process::{start_floor_process, FLOOR_PROCESS};
use super::{call_line, BridgeConnection, Client, MESSAGE, TEST_SERVER};

mod relay;

/// The floor process this run is, if it is one ([`FLOOR_PROCESS`] is `echo` or `relay`).
pub(crate) fn floor_process() -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>> {
    match std::env::var(FLOOR_PROCESS).ok()?.as_str() {
        "echo" => Some(Box::pin(serve_floor(false))),
        "relay" => Some(Box::pin(serve_floor(true))),
        other => panic!("{FLOOR_PROCESS}={other}: expected `echo` or `relay`"),
    }
}

/// Prints the breakdown tables: one caller's latency, then throughput.
/// Requests go over Unix sockets, as the CLI's do (the daemon's `socket`,
/// the floors' own); the throughput table sets TCP beside them.
pub(crate) async fn print(lockfile: &Value, embedded: Arc<Client>, knobs: &Knobs) {
    let calls = knobs.calls_per_round();
    let socket = lockfile["socket"].as_str().expect("the daemon's socket");
    let token = lockfile["token"].as_str().expect("a token");
    let (mut echo, echo_addresses) = start_floor_process("echo").await;
    let (mut relay, relay_addresses) = start_floor_process("relay").await;
    let (_, echo_socket) = echo_addresses.split_once(' ').expect("the echo's address and socket");
    let relay_addresses = relay_addresses.split_once(' ').expect("the relay's address and socket");
    let server = Arc::new(Mutex::new(TestServer::start().await));
    let tool_call = tool_call_line();
    let probes: Vec<(&str, Probe)> = vec![
        (
            "round trip to an echo process",
            Probe::Line(BridgeConnection::with_line(echo_socket, &call_line(token)).await),
        ),
        (
            "bridge `ping` (hop + daemon line handling)",
            Probe::Line(BridgeConnection::with_line(socket, &json!({"op": "ping", "token": token})).await),
        ),
        ("test server over stdio, no Warden", Probe::Stdio(Arc::clone(&server))),
        ("embedded Warden call", Probe::Embedded(Arc::clone(&embedded))),
        (
            "relay process forwarding to a test server",
            Probe::Line(BridgeConnection::with_line(relay_addresses.1, &tool_call).await),
        ),
        ("bridge `call_tool` echo", Probe::Line(BridgeConnection::with_line(socket, &call_line(token)).await)),
    ];
    let per_round = calls.max(1_000);
    println!(
        "\nwhere a bridge call's time goes (one caller; 4 rounds of {per_round} sequential requests per row, \
         the order rotating; p50 of the pooled samples):"
    );
    let probes: Vec<(&str, Arc<Probe>)> = probes.into_iter().map(|(label, probe)| (label, Arc::new(probe))).collect();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); probes.len()];
    for round in 0..4 {
        for turn in 0..probes.len() {
            let row = (turn + round) % probes.len();
            let probe = Arc::clone(&probes[row].1);
            let latencies = tokio::spawn(async move {
                for _ in 0..100 {
                    probe.once().await;
                }
                let mut latencies = Vec::with_capacity(per_round);
                for _ in 0..per_round {
                    let started = Instant::now();
                    probe.once().await;
                    latencies.push(started.elapsed());
                }
                latencies
            })
            .await
            .expect("the breakdown caller ran");
            samples[row].extend(latencies);
        }
    }
    let p50: Vec<f64> =
        samples.into_iter().map(|latencies| percentile_of(latencies, 50.0).as_secs_f64() * 1e6).collect();
    for ((label, _), p50) in probes.iter().zip(&p50) {
        println!("  {label:<44} {p50:>7.1} µs");
    }
    let [echo_p50, ping, direct, in_process, relayed, bridge] = p50[..] else { unreachable!("six rows") };
    println!("  so:");
    println!("    the daemon's line handling (ping − echo)            {:+7.1} µs", ping - echo_p50);
    println!("    Warden in process (embedded − stdio)                {:+7.1} µs", in_process - direct);
    println!("    any extra process on the path (relay − stdio)       {:+7.1} µs", relayed - direct);
    println!("    the daemon's own work on a call (bridge − relay)    {:+7.1} µs", bridge - relayed);
    println!("    the bridge over embedded (bridge − embedded)        {:+7.1} µs", bridge - in_process);
    let _ = echo.start_kill();
    let relay_pid = relay.id().expect("the relay runs");
    print_throughput(lockfile, embedded, relay_pid, relay_addresses, knobs).await;
    let _ = relay.start_kill();
}

/// Rounds of the throughput comparison.
const THROUGHPUT_ROUNDS: usize = 4;

/// Calls/s with `knobs.callers` concurrent callers: embedded, through the
/// relay floor, through the bridge (one connection per caller for both,
/// over TCP and over a Unix socket), with the CPU the relay and the daemon
/// spent per call. The relay listens at `relay` (TCP address, socket path).
async fn print_throughput(lockfile: &Value, embedded: Arc<Client>, relay_pid: u32, relay: (&str, &str), knobs: &Knobs) {
    let token = lockfile["token"].as_str().expect("a token");
    let daemon_pid = lockfile["pid"].as_u64().expect("a pid") as u32;
    let connections = |address: &str, line: Value| {
        let address = address.to_string();
        async move {
            let mut connections = Vec::with_capacity(knobs.callers);
            for _ in 0..knobs.callers {
                connections.push(BridgeConnection::with_line(&address, &line).await);
            }
            Arc::new(Client::Bridge(connections))
        }
    };
    let (address, socket) = (lockfile["address"].as_str().expect("an address"), lockfile["socket"].as_str());
    let rows: [(&str, Arc<Client>, Option<u32>); 5] = [
        ("embedded Warden, in process", embedded, None),
        ("relay process (floor), TCP", connections(relay.0, tool_call_line()).await, Some(relay_pid)),
        ("relay process (floor), Unix socket", connections(relay.1, tool_call_line()).await, Some(relay_pid)),
        ("bridge, TCP", connections(address, call_line(token)).await, Some(daemon_pid)),
        ("bridge, Unix socket", connections(socket.expect("a socket"), call_line(token)).await, Some(daemon_pid)),
    ];
    let per_caller = (knobs.concurrent_calls / THROUGHPUT_ROUNDS / knobs.callers).max(1);
    for (_, client, _) in &rows {
        concurrent(client, knobs.callers, (per_caller / 10).max(1)).await;
    }
    let mut wall = [Duration::ZERO; 5];
    let mut cpu = [Duration::ZERO; 5];
    for round in 0..THROUGHPUT_ROUNDS {
        for turn in 0..rows.len() {
            let row = (turn + round) % rows.len();
            let (_, client, pid) = &rows[row];
            let before = pid.map(cpu_of).unwrap_or_default();
            let (took, _) = concurrent(client, knobs.callers, per_caller).await;
            wall[row] += took;
            cpu[row] += pid.map(cpu_of).unwrap_or_default().saturating_sub(before);
        }
    }
    let calls = (per_caller * knobs.callers * THROUGHPUT_ROUNDS) as f64;
    let rate: Vec<f64> = wall.iter().map(|wall| calls / wall.as_secs_f64()).collect();
    let cpu_us: Vec<f64> = cpu.iter().map(|cpu| cpu.as_secs_f64() * 1e6 / calls).collect();
    println!(
        "\nthroughput with {} concurrent callers (relay and bridge: a connection each; {THROUGHPUT_ROUNDS} rounds \
         of {} calls per row, the order rotating), and CPU per call of the process in the middle:",
        knobs.callers,
        per_caller * knobs.callers,
    );
    for (row, (label, _, pid)) in rows.iter().enumerate() {
        let cpu = if pid.is_some() { format!("{:>6.1} µs CPU a call", cpu_us[row]) } else { String::new() };
        println!("  {label:<44} {:>8.0} calls/s   {cpu}", rate[row]);
    }
    println!("  so:");
    let so = |what: &str, first: String, second: String| println!("    {what:<52}{first:>8}, {second}");
    let times = |ratio: f64, of: &str| format!("{ratio:.2}× {of}");
    so(
        "any extra process on the path (relay / embedded)",
        times(rate[1] / rate[0], "TCP"),
        times(rate[2] / rate[0], "Unix"),
    );
    so("a Unix socket instead of TCP", times(rate[2] / rate[1], "relay"), times(rate[4] / rate[3], "bridge"));
    so("the daemon's own work (bridge / relay)", times(rate[3] / rate[1], "TCP"), times(rate[4] / rate[2], "Unix"));
    let micros = |micros: f64, of: &str| format!("{micros:+.1} µs {of}");
    so(
        "the daemon's CPU a call over the relay's",
        micros(cpu_us[3] - cpu_us[1], "TCP"),
        micros(cpu_us[4] - cpu_us[2], "Unix"),
    );
    so("the bridge over embedded", times(rate[3] / rate[0], "TCP"), times(rate[4] / rate[0], "Unix"));
}

/// The CPU time process `pid` has used, all threads: the sum of its
/// threads' run time in `schedstat` (nanoseconds, unlike `stat`'s ticks).
fn cpu_of(pid: u32) -> Duration {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Duration::ZERO };
    let nanos: u64 = threads
        .flatten()
        .filter_map(|thread| std::fs::read_to_string(thread.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// One row's request.
enum Probe {
    /// A line over a socket, answered by one line.
    Line(BridgeConnection),
    /// `tools/call` to a test server this process started.
    Stdio(Arc<Mutex<TestServer>>),
    /// A call through the embedded Warden.
    Embedded(Arc<Client>),
}

impl Probe {
    async fn once(&self) {
        match self {
            Probe::Line(connection) => {
                connection.echo().await;
            }
            Probe::Stdio(server) => server.lock().await.call().await,
            Probe::Embedded(client) => client.call(0).await,
        }
    }
}

/// The `tools/call` the stdio and relay rows send (the bridge's call, as
/// JSON-RPC).
fn tool_call_line() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": MESSAGE}}})
}

/// A `warden-test-server` child spoken to line by line, initialized.
struct TestServer {
    /// Held so the server lives as long as this; killed when dropped.
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    request: Vec<u8>,
    answer: String,
}

impl TestServer {
    async fn start() -> TestServer {
        let mut child = spawn_piped(TEST_SERVER);
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let request = line_of(&tool_call_line());
        let mut server = TestServer { _child: child, stdin, stdout, request, answer: String::new() };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
        server.exchange(&line_of(&initialize)).await;
        let initialized = line_of(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server.stdin.write_all(&initialized).await.expect("the test server reads");
        server
    }

    async fn call(&mut self) {
        let request = std::mem::take(&mut self.request);
        self.exchange(&request).await;
        self.request = request;
    }

    /// Writes `line`, reads one answer line.
    async fn exchange(&mut self, line: &[u8]) {
        self.stdin.write_all(line).await.expect("the test server reads");
        self.answer.clear();
        let read = self.stdout.read_line(&mut self.answer).await.expect("the test server answers");
        assert!(read > 0 && self.answer.contains("\"result\""), "the test server answered: {}", self.answer);
    }
}

fn line_of(value: &Value) -> Vec<u8> {
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

/// A floor process: a tokio runtime as the daemon's, listening on loopback
/// TCP and on a Unix socket; each line is echoed, or (`relay`) forwarded to
/// this process's own test server and its answer line sent back
/// ([`relay`]). Prints its address and its socket's path; ends with its
/// stdin.
async fn serve_floor(relay: bool) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let address = listener.local_addr().expect("bound");
    // Each floor also listens on a Unix socket, as the daemon does.
    let kind = if relay { "relay" } else { "echo" };
    let socket = std::env::temp_dir().join(format!("warden-bench-{kind}-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let unix = tokio::net::UnixListener::bind(&socket).expect("a Unix socket in the temp directory");
    println!("{address} {}", socket.display());
    let relay = if relay {
        let TestServer { _child: server, stdin, stdout, .. } = TestServer::start().await;
        Some((relay::Relay::start(stdin, stdout), server))
    } else {
        None
    };
    let serve = move |stream: Box<dyn Stream>| match &relay {
        Some((relay, _)) => tokio::spawn(Arc::clone(relay).serve(stream)),
        None => tokio::spawn(echo(stream)),
    };
    let serve = Arc::new(serve);
    let over_tcp = Arc::clone(&serve);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            over_tcp(Box::new(stream));
        }
    });
    tokio::spawn(async move {
        while let Ok((stream, _)) = unix.accept().await {
            serve(Box::new(stream));
        }
    });
    let _ = tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await;
    let _ = std::fs::remove_file(&socket);
}

/// A floor's connection: TCP or a Unix socket.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for S {}

/// The echo floor: each line back as it came.
async fn echo(stream: Box<dyn Stream>) {
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read);
    let mut line = String::new();
    while lines.read_line(&mut line).await.is_ok_and(|n| n > 0) {
        if write.write_all(line.as_bytes()).await.is_err() {
            return;
        }
        line.clear();
    }
}
