//! What speaking MCP 2026-07-28 to a server costs per call, next to the
//! `initialize` revisions: every request then carries the envelope in its
//! `_meta` (protocol version, capabilities, client name), which the
//! caller writes into its request line down the fast lane (spliced in, or
//! merged with the call's own `_meta`), and every answer is checked for
//! being final (`resultType`) — where a legacy request is framed as it
//! came. (Before 2026-07-28 calls took the lane, this measured a modern
//! server at 0.36× a legacy one's throughput.)
//!
//! Two embedded Wardens, each with one server reached through an
//! in-memory connection ([`warden_protocol::MemoryConnector`]) whose far
//! end answers at once — no process, no pipes, so what is timed is
//! Warden's own path:
//!
//! - **legacy**: `protocol_version = "2025-11-25"`, `initialize` once;
//! - **modern**: `protocol_version = "2026-07-28"`, `server/discover` once,
//!   then the envelope on every call.
//!
//! Rounds alternate the order (legacy first in odd rounds); the table
//! pools the samples and gives `modern − legacy` at the p50, with the
//! spread of the per-round differences.
//!
//! Knobs: `WARDEN_BENCH_CALLS` (20000), `_WARMUP` (1000), `_CONCURRENT_CALLS`
//! (32000), `_CALLERS` (16), `_ROUNDS` (10), `_WORKERS`.
//!
//! Run with `cargo bench -p warden-tests --bench era_overhead`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use warden_actors::{PolicyRules, ProtocolChoice, ServerSettings, ServerSpec, Warden};
use warden_protocol::{MemoryConnector, MemoryPeer, Message};

mod bench_support;
use bench_support::{both, run_rounds, runtime, sequential, Caller, Knobs, Spread, Totals};

/// The two clients, in column order.
const ERAS: [&str; 2] = ["legacy", "modern"];

/// Answers a connection as a server of both eras whose one tool returns
/// at once; checks that a modern call carries the envelope.
async fn serve(mut peer: MemoryPeer) {
    while let Some(request) = peer.recv_request().await {
        let enveloped = request
            .params
            .as_ref()
            .and_then(|params| params.pointer("/_meta"))
            .is_some_and(|meta| meta.get("io.modelcontextprotocol/protocolVersion").is_some());
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "memory", "version": "1"}
            }),
            "server/discover" => json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            "tools/list" => json!({"tools": [{
                "name": "echo",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true}
            }]}),
            "tools/call" => json!({"content": [{"type": "text", "text": if enveloped { "modern" } else { "legacy" }}]}),
            _ => json!({}),
        };
        peer.send(Message::result(request.id, result));
    }
}

async fn start(version: &'static str) -> Warden {
    let (connector, mut peers) = MemoryConnector::new();
    tokio::spawn(async move {
        while let Some(peer) = peers.recv().await {
            tokio::spawn(serve(peer));
        }
    });
    let settings = ServerSettings { protocol: ProtocolChoice::Version(version), ..ServerSettings::default() };
    let spec = ServerSpec { name: "mem".into(), connector: Arc::new(connector), settings };
    let warden = Warden::builder().servers(vec![spec]).rules(PolicyRules::default()).start().await.expect("starts");
    tokio::time::timeout(Duration::from_secs(10), warden.settled()).await.expect("the server settles");
    warden
}

/// One call; panics unless the server saw the era it should.
struct Call {
    warden: Warden,
    era: &'static str,
    arguments: Value,
}

impl Caller for Call {
    async fn call(&self, _caller: usize) {
        let result = self.warden.call_tool("mem__echo", self.arguments.clone()).await.expect("the call succeeds");
        assert_eq!(result.text(), self.era, "the server saw the wrong era");
    }
}

fn main() {
    let knobs = Knobs::from_env(Knobs {
        calls: 20_000,
        warmup: 1_000,
        concurrent_calls: 32_000,
        callers: 16,
        rounds: 10,
        workers: None,
    });
    runtime(knobs.workers).block_on(async move {
        let arguments = json!({"message": "hello", "count": 3, "nested": {"a": [1, 2, 3]}});
        let legacy = Arc::new(Call { warden: start("2025-11-25").await, era: "legacy", arguments: arguments.clone() });
        let modern = Arc::new(Call { warden: start("2026-07-28").await, era: "modern", arguments });
        for call in [&legacy, &modern] {
            sequential(call, knobs.warmup, 0).await;
        }
        let mut totals = [Totals::default(), Totals::default()];
        let pair = [&legacy, &modern];
        let p50s = run_rounds(pair, pair, Some(ERAS), true, &knobs, &mut totals).await;
        let differences = Spread::of(p50s.iter().map(|p50| p50[1] - p50[0]).collect());
        println!();
        println!("the envelope per call, in-memory server: {} rounds, samples pooled", knobs.rounds);
        println!("{:<10} {:>10} {:>10} {:>14}", "era", "p50 µs", "p99 µs", "calls/s (16)");
        let p50 = both(&totals, |totals| totals.latency_us(50.0));
        let p99 = both(&totals, |totals| totals.latency_us(99.0));
        let rate = both(&totals, Totals::concurrent_rate);
        for (index, era) in ERAS.iter().enumerate() {
            println!("{era:<10} {:>10.2} {:>10.2} {:>14.0}", p50[index], p99[index], rate[index]);
        }
        println!(
            "modern − legacy, p50: {:+.2} µs ({:.2}×); per round min {:+.2}, median {:+.2}, max {:+.2}; throughput {:.2}×",
            p50[1] - p50[0],
            p50[1] / p50[0],
            differences.min,
            differences.median,
            differences.max,
            rate[1] / rate[0],
        );
    });
}
