//! What Warden's record of a call costs: the metrics (always on) and the
//! audit log (a sink the daemon attaches).
//!
//! Two embedded [`warden_actors::Warden`]s, each with one server reached
//! through an in-memory connection ([`warden_protocol::MemoryConnector`])
//! whose far end answers `tools/call` at once — no process, no pipes, so
//! what is timed is Warden's own path (handle, policy, the server actor,
//! decoding, policing, and the record):
//!
//! - **plain**: no audit sink;
//! - **audited**: an audit sink that writes each record as a JSON line to a
//!   file, as the daemon's `audit.jsonl` does (digest of the arguments and
//!   serialisation on the call's task, into a buffer written out every
//!   100 ms).
//!
//! `audited − plain` is the audit log's cost per call. The metrics are in
//! both columns; to price them, run this bench on a commit from before
//! they existed (the bench needs only APIs that predate them, with the
//! audited column left out: `WARDEN_BENCH_PLAIN_ONLY=1`) and compare the
//! `plain` p50 of the two runs.
//!
//! After a warm-up the run is cut into rounds; each round times a slice of
//! sequential calls on both Wardens, `plain` first in odd rounds; the table
//! pools the samples.
//!
//! Knobs: `WARDEN_BENCH_CALLS` (timed calls per client, all rounds;
//! default 40000), `WARDEN_BENCH_WARMUP` (2000), `WARDEN_BENCH_ROUNDS`
//! (10), `WARDEN_BENCH_WORKERS` (cores), `WARDEN_BENCH_PLAIN_ONLY`,
//! `WARDEN_BENCH_NULL_SINK` (the audited Warden's sink keeps nothing: the
//! cost of building records alone).
//!
//! Run with `cargo bench -p warden-tests --bench record_overhead`.

use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use warden_actors::{PolicyRules, ServerSettings, ServerSpec, Warden};
use warden_protocol::{MemoryConnector, MemoryPeer, Message};

mod bench_support;

use bench_support::{env_usize, percentile_of};

/// Answers a connection as a server whose one tool returns at once.
async fn serve(mut peer: MemoryPeer) {
    while let Some(request) = peer.recv_request().await {
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": warden_protocol::LATEST_PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "memory", "version": "1"}
            }),
            "tools/list" => json!({"tools": [{
                "name": "echo",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}
            }]}),
            "tools/call" => json!({"content": [{"type": "text", "text": "ok"}]}),
            _ => json!({}),
        };
        peer.send(Message::result(request.id, result));
    }
}

/// An embedded Warden with one in-memory server, `audit` attached if given.
async fn start(audit: Option<Arc<dyn warden_actors::AuditSink>>) -> Warden {
    let (connector, mut peers) = MemoryConnector::new();
    tokio::spawn(async move {
        while let Some(peer) = peers.recv().await {
            tokio::spawn(serve(peer));
        }
    });
    let spec = ServerSpec { name: "mem".into(), connector: Arc::new(connector), settings: ServerSettings::default() };
    let mut builder = Warden::builder().servers(vec![spec]).rules(PolicyRules::default());
    if let Some(sink) = audit {
        builder = builder.audit(sink);
    }
    let warden = builder.start().await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(10), warden.settled()).await.expect("the server settles");
    warden
}

/// The daemon's way of keeping records (`bins/src/daemon/audit_log.rs`):
/// one JSON line each into a buffer on the call's task, written out by a
/// thread every 100 ms.
struct JsonLines(Arc<Mutex<std::io::BufWriter<std::fs::File>>>);

impl JsonLines {
    fn to(file: std::fs::File) -> JsonLines {
        let buffer = Arc::new(Mutex::new(std::io::BufWriter::new(file)));
        let flushed = Arc::clone(&buffer);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(100));
            let _ = flushed.lock().expect("sink lock").flush();
        });
        JsonLines(buffer)
    }
}

/// A sink that keeps nothing (`WARDEN_BENCH_NULL_SINK`): what building
/// the record costs, without writing it.
struct Discard;

impl warden_actors::AuditSink for Discard {
    fn record(&self, record: &warden_actors::AuditRecord) {
        std::hint::black_box(record);
    }
}

impl warden_actors::AuditSink for JsonLines {
    fn record(&self, record: &warden_actors::AuditRecord) {
        let Ok(mut line) = serde_json::to_string(record) else { return };
        line.push('\n');
        let _ = self.0.lock().expect("sink lock").write_all(line.as_bytes());
    }
}

async fn call(warden: &Warden, arguments: &Value) {
    let result = warden.call_tool("mem__echo", arguments.clone()).await.expect("the call succeeds");
    assert_eq!(result.text(), "ok");
}

fn main() {
    let calls = env_usize("WARDEN_BENCH_CALLS", 40_000);
    let warmup = env_usize("WARDEN_BENCH_WARMUP", 2_000);
    let rounds = env_usize("WARDEN_BENCH_ROUNDS", 10).max(1);
    let plain_only = std::env::var_os("WARDEN_BENCH_PLAIN_ONLY").is_some();
    let runtime = bench_support::runtime(std::env::var("WARDEN_BENCH_WORKERS").ok().and_then(|w| w.parse().ok()));
    runtime.block_on(async {
        let file = std::env::temp_dir().join(format!("warden-bench-audit-{}.jsonl", std::process::id()));
        let sink = JsonLines::to(std::fs::File::create(&file).expect("audit file"));
        let plain = start(None).await;
        let sink: Arc<dyn warden_actors::AuditSink> =
            if std::env::var_os("WARDEN_BENCH_NULL_SINK").is_some() { Arc::new(Discard) } else { Arc::new(sink) };
        let audited = if plain_only { None } else { Some(start(Some(sink)).await) };
        let arguments = json!({"message": "hello", "count": 3});
        let clients: Vec<(&str, &Warden)> =
            std::iter::once(("plain", &plain)).chain(audited.as_ref().map(|warden| ("audited", warden))).collect();
        for (_, warden) in &clients {
            for _ in 0..warmup {
                call(warden, &arguments).await;
            }
        }
        let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); clients.len()];
        let per_round = (calls / rounds).max(1);
        for round in 0..rounds {
            let mut order: Vec<usize> = (0..clients.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            let mut medians = Vec::new();
            for index in order {
                let mut round_samples = Vec::with_capacity(per_round);
                for _ in 0..per_round {
                    let started = Instant::now();
                    call(clients[index].1, &arguments).await;
                    round_samples.push(started.elapsed());
                }
                medians.push((clients[index].0, percentile_of(round_samples.clone(), 50.0)));
                samples[index].extend(round_samples);
            }
            let shown: Vec<String> =
                medians.iter().map(|(name, p50)| format!("{name} {:.2} µs", p50.as_secs_f64() * 1e6)).collect();
            println!("round {:>2}: p50 {}", round + 1, shown.join(", "));
        }
        println!();
        println!(
            "Warden's own call path, in-memory server: {rounds} rounds, {per_round} sequential calls per client each"
        );
        println!("{:<16} {:>10} {:>10} {:>10}", "client", "p50 µs", "p99 µs", "mean µs");
        let mut p50s = Vec::new();
        for (index, (name, _)) in clients.iter().enumerate() {
            let all = &samples[index];
            let mean = all.iter().map(Duration::as_secs_f64).sum::<f64>() / all.len() as f64 * 1e6;
            let p50 = percentile_of(all.clone(), 50.0).as_secs_f64() * 1e6;
            let p99 = percentile_of(all.clone(), 99.0).as_secs_f64() * 1e6;
            println!("{name:<16} {p50:>10.2} {p99:>10.2} {mean:>10.2}");
            p50s.push(p50);
        }
        if let [plain, audited] = p50s[..] {
            println!(
                "audit log cost (audited − plain, p50): {:+.2} µs per call ({:.2}×)",
                audited - plain,
                audited / plain
            );
        }
        let _ = std::fs::remove_file(&file);
    });
}
