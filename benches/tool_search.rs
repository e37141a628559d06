//! Tool search (issue 49), on generated catalogs of 1,000 and 10,000
//! tools (in-memory servers of 20 tools each, named and described from a
//! vocabulary of verbs, nouns and phrases):
//!
//! - the list a model is handed, in bytes and in tokens (estimated as
//!   bytes / 4), with every tool at full detail against a profile that
//!   defers all (the built-ins only) — goal: ≤ 5% of the full list;
//! - the index's first build (the first search after start, which indexes
//!   every server) and one server's update (the first search after its
//!   list changed, less a search's p50) — goal: update ≤ 10 ms at 10,000;
//! - `find_tools` p50 and p99 over 500 queries — goal: p50 ≤ 1 ms at
//!   10,000.
//!
//! Two runs each (the machine is shared). Retrieval quality is measured
//! on real servers by `tests/tests/tool_search_quality.rs`.
//! Run with `cargo bench -p warden-tests --bench tool_search`.

mod bench_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_support::{env_usize, percentile_of, verdict};
use serde_json::{json, Value};
use warden_actors::{PolicyRules, ProfileChoice, ServerSettings, ServerSpec, Warden};
use warden_policy::{Detail, ToolProfile};
use warden_protocol::{MemoryConnector, MemoryPeer, Message};

const VERBS: [&str; 16] = [
    "create", "read", "update", "delete", "list", "search", "move", "copy", "archive", "restore", "export", "import",
    "merge", "sync", "tag", "share",
];
const NOUNS: [&str; 24] = [
    "issue",
    "file",
    "repository",
    "branch",
    "commit",
    "ticket",
    "invoice",
    "customer",
    "order",
    "message",
    "channel",
    "calendar",
    "event",
    "contact",
    "document",
    "folder",
    "image",
    "dataset",
    "report",
    "dashboard",
    "pipeline",
    "secret",
    "user",
    "team",
];
const PHRASES: [&str; 8] = [
    "in the workspace",
    "for the current project",
    "with its metadata",
    "and returns the result",
    "by its identifier",
    "matching a filter",
    "across every account",
    "on the remote service",
];

/// Tools per in-memory server.
const PER_SERVER: usize = 20;

/// The `n`-th generated tool (`generation` changes its description).
fn tool(n: usize, generation: u64) -> Value {
    let (verb, noun) = (VERBS[n % VERBS.len()], NOUNS[(n / VERBS.len()) % NOUNS.len()]);
    let phrase = PHRASES[(n / 7) % PHRASES.len()];
    json!({
        "name": format!("{verb}_{noun}_{n}"),
        "description": format!("{verb} a {noun} {phrase}. Version {generation} of tool {n}; see the service's docs for limits."),
        "inputSchema": {"type": "object", "properties": {
            "id": {"type": "string", "description": format!("The {noun}'s identifier.")},
            "options": {"type": "object", "description": "Extra options the service takes."}
        }, "required": ["id"]},
        "annotations": {"readOnlyHint": verb == "read" || verb == "list" || verb == "search"}
    })
}

/// Serves server `server`'s 20 tools; its list changes when `generation`
/// does, which `told` announces.
async fn serve(
    mut peer: MemoryPeer,
    server: usize,
    generation: Arc<AtomicU64>,
    mut told: Option<tokio::sync::mpsc::UnboundedReceiver<()>>,
) {
    loop {
        let request = tokio::select! {
            request = peer.recv_request() => match request { Some(request) => request, None => return },
            Some(()) = async { match told.as_mut() { Some(told) => told.recv().await, None => std::future::pending().await } } => {
                peer.send(Message::notification("notifications/tools/list_changed", None));
                continue;
            }
        };
        let result = match request.method.as_str() {
            "initialize" => json!({
                "protocolVersion": warden_protocol::LATEST_PROTOCOL_VERSION,
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": "generated", "version": "1"}
            }),
            "tools/list" => {
                let now = generation.load(Ordering::SeqCst);
                let tools: Vec<Value> = (0..PER_SERVER).map(|at| tool(server * PER_SERVER + at, now)).collect();
                json!({ "tools": tools })
            }
            _ => json!({}),
        };
        peer.send(Message::result(request.id, result));
    }
}

/// An embedded Warden with `tools` generated tools; the first server's
/// generation, and where to tell it to announce a change.
async fn start(tools: usize) -> (Warden, Arc<AtomicU64>, tokio::sync::mpsc::UnboundedSender<()>) {
    let first = Arc::new(AtomicU64::new(0));
    let (tell, told) = tokio::sync::mpsc::unbounded_channel::<()>();
    let mut told = Some(told);
    let mut specs = Vec::new();
    for server in 0..tools / PER_SERVER {
        let (connector, mut peers) = MemoryConnector::new();
        let generation = if server == 0 { first.clone() } else { Arc::new(AtomicU64::new(0)) };
        let mut announcer = if server == 0 { told.take() } else { None };
        tokio::spawn(async move {
            while let Some(peer) = peers.recv().await {
                tokio::spawn(serve(peer, server, generation.clone(), announcer.take()));
            }
        });
        let name = format!("g{server}");
        specs.push(ServerSpec { name, connector: Arc::new(connector), settings: ServerSettings::default() });
    }
    let rules =
        PolicyRules::default().with_profile("lean", ToolProfile::new(Detail::Deferred, Vec::new()).expect("a profile"));
    let warden = Warden::builder().servers(specs).rules(rules).start().await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(300), warden.settled()).await.expect("the servers settle");
    (warden, first, tell)
}

fn ms(samples: &[Duration], pct: f64) -> f64 {
    percentile_of(samples.to_vec(), pct).as_secs_f64() * 1000.0
}

/// One run at `tools` tools: (full bytes, deferred bytes, build ms, update ms, p50 ms, p99 ms).
async fn measure(tools: usize, queries: usize) -> (usize, usize, f64, f64, f64, f64) {
    let (warden, generation, tell) = start(tools).await;
    let host = warden.host();
    let full = serde_json::to_vec(&host.presented_tools(ProfileChoice::Own).unwrap()).unwrap().len();
    let deferred = serde_json::to_vec(&host.presented_tools(ProfileChoice::Named("lean")).unwrap()).unwrap().len();
    let started = Instant::now();
    assert!(!host.find_tools("create an issue", 5).unwrap().is_empty());
    let build = started.elapsed().as_secs_f64() * 1000.0;
    let mut samples = Vec::with_capacity(queries);
    for n in 0..queries {
        let query = format!(
            "{} the {} {}",
            VERBS[(n * 7) % VERBS.len()],
            NOUNS[(n * 5) % NOUNS.len()],
            PHRASES[n % PHRASES.len()]
        );
        let started = Instant::now();
        std::hint::black_box(host.find_tools(&query, 5).unwrap());
        samples.push(started.elapsed());
    }
    let p50 = ms(&samples, 50.0);
    // One server's list changes: the next search indexes it again.
    let version = warden.snapshot().tools_version();
    generation.store(1, Ordering::SeqCst);
    tell.send(()).expect("the first server listens");
    let waited = Instant::now();
    while warden.snapshot().tools_version() == version {
        assert!(waited.elapsed() < Duration::from_secs(30), "the changed list never arrived");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let started = Instant::now();
    std::hint::black_box(host.find_tools("update the invoice", 5).unwrap());
    let update = (started.elapsed().as_secs_f64() * 1000.0 - p50).max(0.0);
    warden.shutdown().await;
    (full, deferred, build, update, p50, ms(&samples, 99.0))
}

fn main() {
    let queries = env_usize("WARDEN_BENCH_QUERIES", 500);
    let runtime = bench_support::runtime(None);
    println!("tool search on generated catalogs (in-memory servers of {PER_SERVER} tools; tokens ≈ bytes / 4)");
    println!(
        "{:>7} {:>4} {:>14} {:>14} {:>7} {:>10} {:>10} {:>9} {:>9}",
        "tools", "run", "full list", "deferred list", "share", "build ms", "update ms", "p50 ms", "p99 ms"
    );
    let mut goals = Vec::new();
    for tools in [1_000, 10_000] {
        for run in 1..=2 {
            let (full, deferred, build, update, p50, p99) = runtime.block_on(measure(tools, queries));
            let share = deferred as f64 / full as f64 * 100.0;
            println!(
                "{tools:>7} {run:>4} {:>8} tokens {:>8} tokens {share:>6.2}% {build:>10.1} {update:>10.2} {p50:>9.3} {p99:>9.3}",
                full / 4,
                deferred / 4
            );
            goals.push((tools, share, update, p50));
        }
    }
    let at = |tools: usize| goals.iter().filter(move |row| row.0 == tools);
    println!("goals: deferred list ≤ 5% of the full one: {}", verdict(goals.iter().all(|row| row.1 <= 5.0)));
    println!("       find_tools p50 ≤ 1 ms at 10,000 tools: {}", verdict(at(10_000).all(|row| row.3 <= 1.0)));
    println!("       one server's update ≤ 10 ms at 10,000 tools: {}", verdict(at(10_000).all(|row| row.2 <= 10.0)));
}
