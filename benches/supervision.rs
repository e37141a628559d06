//! How fast Warden's supervision gets servers up and back: a table.
//!
//! - **settle, 50 slow servers**: `Warden::start` to `settled()` with 50
//!   test servers that each wait 200 ms before reading their stdin. Servers
//!   start concurrently, so this should cost about one slow start, not 50:
//!   the goal is under 1 s on 2 cores. One server alone is measured beside
//!   it, as the floor.
//! - **recovery after SIGKILL**: a running test server is killed with
//!   SIGKILL; a caller keeps calling `echo` and the time from the kill to
//!   the first successful call through Warden is measured. The goal is the
//!   first backoff step (1 s) plus one handshake and discovery, measured
//!   here too (the settle time of one fresh server), and no more.
//!
//! Real processes and real time; each measurement is repeated and the
//! median and worst are printed. `WARDEN_BENCH_ROUNDS` sets the rounds
//! (default 5).

use std::time::{Duration, Instant};

use serde_json::json;
use warden_actors::{CallError, Warden, WardenConfig};

const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");

fn main() {
    let rounds: usize = std::env::var("WARDEN_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime");
    runtime.block_on(async {
        let one = measure(rounds, || settle_time(1, 0)).await;
        let fifty = measure(rounds, || settle_time(50, 200)).await;
        let handshake = measure(rounds, || settle_time(1, 0)).await;
        let recovery = measure(rounds, recovery_time).await;
        let goal = Duration::from_secs(1) + handshake.median;

        println!("supervision timings, warden-test-server over stdio, {rounds} rounds each (median / worst)");
        println!("{:<44} {:>10} {:>10}   goal", "metric", "median", "worst");
        row("settle, 1 server (floor)", &one, String::new());
        let verdict = if fifty.median < Duration::from_secs(1) { "met" } else { "MISSED" };
        row("settle, 50 servers × 200 ms start", &fifty, format!("< 1000 ms          {verdict}"));
        println!(
            "{:<44} {:>9.2}×",
            "  50 servers / 1 server (median)",
            fifty.median.as_secs_f64() / one.median.as_secs_f64()
        );
        let verdict = if recovery.median <= goal + Duration::from_millis(50) { "met" } else { "MISSED" };
        row(
            "SIGKILL → next successful call",
            &recovery,
            format!("≤ {:.0} ms (1 s backoff + handshake) {verdict}", goal.as_secs_f64() * 1000.0),
        );
        println!(
            "{:<44} {:>8.0} ms",
            "  recovery − backoff − handshake (median)",
            (recovery.median.as_secs_f64() - goal.as_secs_f64()) * 1000.0
        );
    });
}

struct Timings {
    median: Duration,
    worst: Duration,
}

async fn measure<F, Fut>(rounds: usize, mut once: F) -> Timings
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Duration>,
{
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        samples.push(once().await);
    }
    samples.sort();
    Timings { median: samples[samples.len() / 2], worst: *samples.last().expect("at least one round") }
}

fn row(metric: &str, timings: &Timings, goal: String) {
    println!(
        "{:<44} {:>7.0} ms {:>7.0} ms   {goal}",
        metric,
        timings.median.as_secs_f64() * 1000.0,
        timings.worst.as_secs_f64() * 1000.0
    );
}

fn config(servers: usize, startup_delay_ms: u64) -> WardenConfig {
    let mut text = String::new();
    for i in 0..servers {
        text.push_str(&format!(
            "[servers.s{i}]\ncommand = {TEST_SERVER:?}\nargs = [\"--startup-delay-ms\", \"{startup_delay_ms}\"]\n"
        ));
    }
    // The test server's tools carry no annotations: approve them unasked.
    text.push_str("[security]\nauto_approve = true\n");
    WardenConfig::from_toml(&text, "bench").expect("the bench config is valid")
}

/// `Warden::start` to `settled()`, with every server running.
async fn settle_time(servers: usize, startup_delay_ms: u64) -> Duration {
    let config = config(servers, startup_delay_ms);
    let started = Instant::now();
    let warden = Warden::start(&config).await.expect("Warden starts");
    warden.settled().await;
    let elapsed = started.elapsed();
    let running = warden.status().iter().filter(|s| s.state == warden_actors::ServerState::Running).count();
    assert_eq!(running, servers, "every server runs: {:?}", warden.status());
    warden.shutdown().await;
    elapsed
}

/// SIGKILL of a running server to the first successful call after it.
async fn recovery_time() -> Duration {
    let warden = Warden::start(&config(1, 0)).await.expect("Warden starts");
    warden.settled().await;
    let pid: i32 = call(&warden).await.expect("the server answers").parse().expect("a pid");
    let killed = Instant::now();
    // SAFETY: kill only sends a signal, to the test server this bench started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    loop {
        match call(&warden).await {
            Ok(new_pid) if new_pid != pid.to_string() => break,
            // Answered by the old process before the kill landed, or lost
            // in the crash (`pid` is not marked idempotent): call again.
            Ok(_) | Err(CallError::CrashedMidCall { .. } | CallError::ServerGone { .. }) => {}
            Err(other) => panic!("unexpected error while the server restarts: {other}"),
        }
    }
    let elapsed = killed.elapsed();
    warden.shutdown().await;
    elapsed
}

async fn call(warden: &Warden) -> Result<String, CallError> {
    let result = warden.call_tool("s0__pid", json!({})).await?;
    Ok(result.text())
}
