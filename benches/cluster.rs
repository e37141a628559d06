//! The cluster (issue 48), against a real nats-server on loopback:
//!
//! - **a call across nodes** over the same call made locally: host nodes
//!   are `warden serve` daemons exporting the test server; the gateway is
//!   an embedded Warden in this process that joined the cluster and
//!   imports it; beside it the same call made locally, by an embedded
//!   Warden in this process running the same test server. Sequential
//!   calls, p50 and p99 (goal: +0.3 ms p50), in rounds rotating with two
//!   floors (`cluster/floors.rs`): the test server spoken to directly, and
//!   a relay that only forwards (NATS to another process and its own test
//!   server), so Warden's own part of the difference is printed apart from
//!   what NATS and a second process cost. And NATS alone: a request/reply
//!   of a call's size between two clients of this process;
//! - **calls/s with 32 in flight** through the gateway, with one host
//!   replica and with two;
//! - **withdrawal**: a host replica killed (SIGKILL) or frozen (SIGSTOP),
//!   the time until the gateway no longer counts it among the server's
//!   nodes, `WARDEN_BENCH_TRIALS` trials each (default 20; goal: ≤ 3 s in
//!   every one);
//! - **an idle gateway's memory**: the resident size of a gateway daemon
//!   importing 100 servers of a host, beside a gateway daemon importing
//!   none and a daemon outside any cluster (the floor).
//!
//! Run with `cargo bench -p warden-tests --bench cluster`.

mod bench_support;
#[path = "cluster/floors.rs"]
mod floors;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_support::{build_warden, env_usize, percentile_of, proc_status, runtime, toml_string, verdict};
use floors::Floors;
use warden_actors::{Warden, WardenConfig};
use warden_cluster::Cluster;
use warden_tests::nats::NatsServer;

const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");
const MESSAGE: &str = "hello across the cluster";

/// A `warden serve` of the bench, killed when dropped.
struct Node {
    child: Child,
    home: PathBuf,
}

impl Node {
    fn start(warden: &Path, dir: &Path, name: &str, config: &str) -> Node {
        let home = dir.join(name);
        std::fs::create_dir_all(&home).unwrap();
        let file = home.join("warden.toml");
        std::fs::write(&file, config).unwrap();
        let _ = std::fs::remove_file(home.join("state").join("daemon.json"));
        let child = Command::new(warden)
            .args(["serve", "--no-idle-exit", "--config"])
            .arg(&file)
            .env("WARDEN_HOME", home.join("state"))
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("warden serve starts");
        bench_support::daemon::lockfile(&home.join("state"), Duration::from_secs(60));
        Node { child, home }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn signal(&self, signal: i32) {
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

fn cluster_table(nats: &NatsServer, node: &str, export: &str) -> String {
    format!("[cluster]\nnats = [\"{}\"]\nnode = \"{node}\"\nexport = [{export}]\n", nats.url())
}

fn host_config(nats: &NatsServer, node: &str, servers: usize) -> String {
    let mut text = String::from("[security]\nauto_approve = true\n");
    for n in 0..servers {
        let name = if servers == 1 { "bench".to_string() } else { format!("s{n}") };
        text += &format!("[servers.{name}]\ncommand = {}\n", toml_string(TEST_SERVER));
    }
    text + &cluster_table(nats, node, "\"*\"")
}

fn main() {
    if let Ok(url) = std::env::var(floors::RELAY_ENV) {
        return floors::relay(&url, TEST_SERVER);
    }
    runtime(None).block_on(run());
}

async fn run() {
    let warden_binary = build_warden();
    let dir = warden_tests::scratch_dir("bench-cluster");
    let nats = tokio::task::block_in_place(|| NatsServer::start(&dir.join("nats"), "max_payload: 8MB"));
    let host = Node::start(&warden_binary, &dir, "host-a", &host_config(&nats, "host-a", 1));

    let gateway_config = config(&format!("[security]\nauto_approve = true\n{}", cluster_table(&nats, "gateway", "")));
    let gateway = Warden::start(&gateway_config).await.expect("the gateway starts");
    let cluster = Cluster::join(&gateway, &gateway_config).await.expect("the gateway joins").expect("[cluster]");
    wait_until("the gateway lists the host's tool", Duration::from_secs(60), || {
        gateway.snapshot().tool("bench__echo").is_some()
    })
    .await;
    let local_config =
        config(&format!("[security]\nauto_approve = true\n[servers.bench]\ncommand = {}\n", toml_string(TEST_SERVER)));
    let local = bench_support::start_warden(&local_config, &["bench__echo"]).await;

    latency(&local, &gateway, &nats).await;
    let one = throughput(&gateway).await;
    let second = Node::start(&warden_binary, &dir, "host-b", &host_config(&nats, "host-b", 1));
    wait_until("both replicas serving", Duration::from_secs(30), || serving(&cluster).len() == 2).await;
    let two = throughput(&gateway).await;
    let local_rate = throughput(&local).await;
    println!("\ncalls/s with 32 in flight, 4,000 calls each (embedded caller; gateway and hosts on this machine)");
    println!("  local, the server in this process's Warden  {local_rate:>8.0}");
    println!("  through the gateway, one host replica       {one:>8.0}   ({:.2}× local)", one / local_rate);
    println!("  through the gateway, two host replicas      {two:>8.0}   ({:.2}× one replica)", two / one);
    drop(second);

    withdrawal(&warden_binary, &dir, &nats, &cluster).await;
    drop(host);
    idle_gateway_memory(&warden_binary, &dir, &nats).await;

    cluster.leave().await;
    gateway.shutdown().await;
    local.shutdown().await;
}

fn config(text: &str) -> WardenConfig {
    WardenConfig::from_toml(text, "bench").expect("the bench's config is valid")
}

async fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

/// The nodes that serve the bench server, as the gateway sees them.
fn serving(cluster: &Cluster) -> Vec<String> {
    cluster
        .view()
        .servers
        .into_iter()
        .find(|server| server.name == "bench")
        .map(|server| server.nodes)
        .unwrap_or_default()
}

async fn echo(warden: &Warden) {
    let result = warden.call_tool("bench__echo", serde_json::json!({"message": MESSAGE})).await;
    let result = result.unwrap_or_else(|error| panic!("echo failed: {error}"));
    assert_eq!(result.text(), MESSAGE);
}

/// Sequential calls, in rounds that rotate which of the four goes first:
/// local, across, and the two floors (`floors.rs`), so that all four see
/// the same moments of a machine whose speed drifts.
async fn latency(local: &Warden, gateway: &Warden, nats: &NatsServer) {
    let rounds = env_usize("WARDEN_BENCH_ROUNDS", 8);
    let calls = env_usize("WARDEN_BENCH_CALLS", 800);
    let mut floors = Floors::start(TEST_SERVER, &nats.url(), MESSAGE).await;
    let mut samples: [Vec<Duration>; 4] = Default::default();
    for round in 0..rounds + 1 {
        for turn in 0..4 {
            let which = (round + turn) % 4;
            for _ in 0..calls / rounds {
                let took = match which {
                    0 => timed(echo(local)).await,
                    1 => timed(echo(gateway)).await,
                    2 => floors.direct().await,
                    _ => floors.relayed().await,
                };
                // The first round warms up.
                if round > 0 {
                    samples[which].push(took);
                }
            }
        }
    }
    floors.stop().await;
    let nats_alone = nats_floor(nats, calls).await;
    let ms = |samples: &Vec<Duration>, pct: f64| percentile_of(samples.clone(), pct).as_secs_f64() * 1000.0;
    let [local, across, direct, relayed] = &samples;
    let over = ms(across, 50.0) - ms(local, 50.0);
    println!("\na call across nodes, over the same call made locally ({calls} sequential calls each, {rounds} rounds rotating)");
    println!("metric               local   across   difference   goal");
    println!(
        "p50 latency (ms)   {:>7.3}  {:>7.3}   {over:>+9.3}   ≤ +0.3 ms: {}",
        ms(local, 50.0),
        ms(across, 50.0),
        verdict(over <= 0.3)
    );
    println!(
        "p99 latency (ms)   {:>7.3}  {:>7.3}   {:>+9.3}",
        ms(local, 99.0),
        ms(across, 99.0),
        ms(across, 99.0) - ms(local, 99.0)
    );
    println!("floors, in the same rounds                                     p50 ms   p99 ms");
    let floor_row = |label: &str, samples: &Vec<Duration>| {
        println!("  {label:<60} {:>7.3}  {:>7.3}", ms(samples, 50.0), ms(samples, 99.0));
    };
    floor_row("direct: the test server on this process's pipes", direct);
    floor_row("a relay that only forwards: NATS, a process, the same pipes", relayed);
    floor_row(&format!("NATS alone (after the rounds): request/reply of {} bytes", nats_alone.0), &nats_alone.1);
    let floor_gap = ms(relayed, 50.0) - ms(direct, 50.0);
    println!(
        "p50: of the difference, {floor_gap:.3} ms is the floors' (relay − direct: NATS both ways, a second process); \
         Warden's own is local − direct {:+.3} ms on one node, across − relay {:+.3} ms over two",
        ms(local, 50.0) - ms(direct, 50.0),
        ms(across, 50.0) - ms(relayed, 50.0)
    );
}

async fn timed(call: impl std::future::Future<Output = ()>) -> Duration {
    let started = Instant::now();
    call.await;
    started.elapsed()
}

/// NATS alone, the floor under a call across nodes: `calls` sequential
/// request/replies between two clients of this process, the request the
/// size of a bench call's and the reply of its result's. The size, and
/// the times.
async fn nats_floor(nats: &NatsServer, calls: usize) -> (usize, Vec<Duration>) {
    use futures_util::StreamExt as _;
    let request = bytes::Bytes::from(vec![b'x'; 300]);
    let reply = bytes::Bytes::from(vec![b'y'; 200]);
    let answering = async_nats::connect(nats.url()).await.expect("NATS");
    let asking = async_nats::connect(nats.url()).await.expect("NATS");
    let mut requests = answering.subscribe("bench.floor").await.expect("a subscription");
    answering.flush().await.expect("flushed");
    let responder = tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            if let Some(to) = request.reply {
                let _ = answering.publish(to, reply.clone()).await;
            }
        }
    });
    for _ in 0..50 {
        asking.request("bench.floor", request.clone()).await.expect("an answer");
    }
    let mut samples = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        asking.request("bench.floor", request.clone()).await.expect("an answer");
        samples.push(started.elapsed());
    }
    responder.abort();
    (request.len(), samples)
}

/// Calls/s of 4,000 calls by 32 concurrent callers.
async fn throughput(warden: &Warden) -> f64 {
    let warden = Arc::new(warden.clone());
    let started = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let warden = warden.clone();
        callers.spawn(async move {
            for _ in 0..125 {
                echo(&warden).await;
            }
        });
    }
    while let Some(done) = callers.join_next().await {
        done.expect("a caller panicked");
    }
    4000.0 / started.elapsed().as_secs_f64()
}

/// Trials of a host replica killed and frozen: the time until the gateway
/// no longer counts it.
async fn withdrawal(warden_binary: &Path, dir: &Path, nats: &NatsServer, cluster: &Cluster) {
    let trials = env_usize("WARDEN_BENCH_TRIALS", 20);
    let mut rows = Vec::new();
    for (label, signal) in [("SIGKILL", libc::SIGKILL), ("SIGSTOP", libc::SIGSTOP)] {
        let mut times = Vec::new();
        let mut node = Node::start(warden_binary, dir, "replica", &host_config(nats, "replica", 1));
        for _ in 0..trials {
            wait_until("the replica serving", Duration::from_secs(30), || serving(cluster).contains(&"replica".into()))
                .await;
            let pid = node.pid();
            node.signal(signal);
            let gone = wait_until("the replica withdrawn", Duration::from_secs(30), || {
                !serving(cluster).contains(&"replica".into())
            })
            .await;
            times.push(gone);
            if signal == libc::SIGKILL {
                drop(node);
                node = Node::start(warden_binary, dir, "replica", &host_config(nats, "replica", 1));
            } else {
                unsafe { libc::kill(pid as i32, libc::SIGCONT) };
            }
        }
        drop(node);
        rows.push((label, times));
    }
    println!(
        "\nwithdrawal of a host replica, {trials} trials each (the gateway stops counting it among the server's nodes)"
    );
    for (label, times) in rows {
        let within = times.iter().filter(|time| **time <= Duration::from_secs(3)).count();
        let secs = |pct| percentile_of(times.clone(), pct).as_secs_f64();
        println!(
            "  {label}: p50 {:.2} s, max {:.2} s; within 3 s in {within} of {} (goal: all): {}",
            secs(50.0),
            secs(100.0),
            times.len(),
            verdict(within == times.len())
        );
    }
}

/// Resident memory of a gateway daemon importing 100 servers, and of one
/// importing none.
async fn idle_gateway_memory(warden_binary: &Path, dir: &Path, nats: &NatsServer) {
    let gateway = |name: &str| {
        let text = format!("[security]\nauto_approve = true\n{}", cluster_table(nats, name, ""));
        Node::start(warden_binary, dir, name, &text)
    };
    let rss = |node: &Node| proc_status(&node.pid().to_string(), "VmRSS") as f64 / 1024.0;
    let alone = Node::start(warden_binary, dir, "no-cluster", "[security]\nauto_approve = true\n");
    // Before any node exports anything: a gateway with nothing to import.
    let empty = gateway("gateway-none");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (alone_rss, empty_rss) = (rss(&alone), rss(&empty));
    drop(empty);
    let host = Node::start(warden_binary, dir, "host-100", &host_config(nats, "host-100", 100));
    let full = gateway("gateway-100");
    // Settled: 100 servers attached, their tools listed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    println!("\nan idle gateway daemon's resident memory");
    println!("  a daemon outside a cluster {alone_rss:>6.1} MB   (no servers: the floor)");
    println!("  a gateway, nothing to import {empty_rss:>4.1} MB");
    println!(
        "  a gateway importing 100 servers {:>4.1} MB   (their host, running them: {:.1} MB)",
        rss(&full),
        rss(&host)
    );
}
