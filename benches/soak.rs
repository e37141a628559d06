//! A soak (issue 19): an embedded Warden with three test-server processes
//! under steady calls for a long while — 10 minutes by default — with
//! random faults: a server crashed mid-traffic, a reload that adds or
//! drops a server, and client churn (callers ending and new ones
//! starting). Every minute it prints this process's resident memory,
//! open file descriptors, threads and live tokio tasks, the server
//! processes alive, and the calls answered so far; at the end, whether
//! those stayed flat (last minute against the first) and how many
//! test-server processes outlived Warden's shutdown (the goal: none).
//!
//! Not a timed test: a bench that prints a table. Knobs:
//! `WARDEN_SOAK_SECS` (600), `WARDEN_SOAK_REPORT_SECS` (60),
//! `WARDEN_SOAK_CALLERS` (8), `WARDEN_SOAK_FAULT_SECS` (a fault every 5 s
//! on average).
//!
//! Run with `cargo bench -p warden-tests --bench soak`.

mod bench_support;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench_support::{env_usize, proc_status, runtime, start_warden, toml_string};
use serde_json::json;
use tokio::task::JoinHandle;
use warden_actors::{Warden, WardenConfig};

const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");

/// What the callers saw.
#[derive(Default)]
struct Counts {
    ok: AtomicU64,
    errors: AtomicU64,
}

/// One minute's (or report period's) look at the process.
struct Sample {
    at: Duration,
    rss_kib: u64,
    fds: usize,
    threads: u64,
    tasks: usize,
    servers: usize,
    ok: u64,
    errors: u64,
}

fn config(servers: usize) -> WardenConfig {
    let mut text = String::from("[security]\nauto_approve = true\n");
    for n in 0..servers {
        text += &format!("[servers.s{n}]\ncommand = {}\nmax_restarts = 1000\n", toml_string(TEST_SERVER));
    }
    WardenConfig::from_toml(&text, "soak").expect("the soak config is valid")
}

/// The live test-server processes: children of this process, or (after
/// shutdown) any left running with no parent but init.
fn test_servers(children_only: bool) -> usize {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            // `pid (comm) state ppid ...`: the comm may hold spaces.
            let after = stat.rsplit_once(") ").map(|(_, rest)| rest).unwrap_or_default();
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or_default();
            let parent = fields.next().unwrap_or_default();
            let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let ours = command.starts_with(TEST_SERVER.as_bytes()) && state != "Z";
            ours && (!children_only || parent == me)
        })
        .count()
}

fn sample(started: Instant, counts: &Counts) -> Sample {
    Sample {
        at: started.elapsed(),
        rss_kib: proc_status("self", "VmRSS"),
        fds: std::fs::read_dir("/proc/self/fd").map(|entries| entries.count()).unwrap_or(0),
        threads: proc_status("self", "Threads"),
        tasks: tokio::runtime::Handle::current().metrics().num_alive_tasks(),
        servers: test_servers(true),
        ok: counts.ok.load(Ordering::Relaxed),
        errors: counts.errors.load(Ordering::Relaxed),
    }
}

/// Calls a random running server's `echo` until stopped.
fn caller(warden: Warden, counts: Arc<Counts>, seed: u64) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut n = seed;
        loop {
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let server = (n >> 33) % 3;
            let outcome = warden.call_tool(&format!("s{server}__echo"), json!({"message": "soak"})).await;
            let counter = if outcome.is_ok_and(|result| !result.is_error()) { &counts.ok } else { &counts.errors };
            counter.fetch_add(1, Ordering::Relaxed);
            if n % 50 == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    })
}

fn main() {
    let secs = env_usize("WARDEN_SOAK_SECS", 600) as u64;
    let report = Duration::from_secs(env_usize("WARDEN_SOAK_REPORT_SECS", 60) as u64);
    let callers = env_usize("WARDEN_SOAK_CALLERS", 8);
    let fault_every = env_usize("WARDEN_SOAK_FAULT_SECS", 5) as u64;
    let runtime = runtime(Some(2));
    let (samples, orphans, faults) = runtime.block_on(async move {
        let warden = start_warden(&config(3), &["s0__echo", "s1__echo", "s2__echo"]).await;
        let counts = Arc::new(Counts::default());
        let mut running: Vec<JoinHandle<()>> =
            (0..callers).map(|n| caller(warden.clone(), counts.clone(), n as u64 + 1)).collect();
        let started = Instant::now();
        // The baseline: all three servers, two seconds into the traffic.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut samples = vec![sample(started, &counts)];
        print_sample(&samples[0]);
        let mut next_report = started + report;
        let mut faults = [0u64; 3];
        let mut n: u64 = 0x9E37_79B9;
        while started.elapsed() < Duration::from_secs(secs) {
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let pause = Duration::from_millis(((n >> 40) % (2_000 * fault_every)).max(100));
            tokio::time::sleep(pause).await;
            match (n >> 20) % 3 {
                // A server crashed mid-traffic (`crash` exits at once).
                0 => {
                    let _ = warden.call_tool(&format!("s{}__crash", (n >> 8) % 3), json!({"code": 9})).await;
                    faults[0] += 1;
                }
                // A reload that drops the third server, or brings it back.
                1 => {
                    let servers = if warden.status().len() == 3 { 2 } else { 3 };
                    let _ = warden.reload(&config(servers)).await;
                    faults[1] += 1;
                }
                // Client churn: one caller ends, another starts.
                _ => {
                    let index = ((n >> 12) as usize) % running.len();
                    running.swap_remove(index).abort();
                    running.push(caller(warden.clone(), counts.clone(), n));
                    faults[2] += 1;
                }
            }
            if Instant::now() >= next_report {
                let now = sample(started, &counts);
                print_sample(&now);
                samples.push(now);
                next_report += report;
            }
        }
        // The last look in the baseline's shape: all three servers back,
        // two seconds into steady traffic.
        warden.reload(&config(3)).await.ok();
        let _ = tokio::time::timeout(Duration::from_secs(30), warden.settled()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let last = sample(started, &counts);
        print_sample(&last);
        samples.push(last);
        for task in running {
            task.abort();
        }
        warden.shutdown().await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        (samples, test_servers(false), faults)
    });
    print_summary(&samples, orphans, faults);
}

fn print_sample(sample: &Sample) {
    println!(
        "{:>6.0} s  rss {:>7} KiB  fds {:>4}  threads {:>3}  tasks {:>5}  servers {}  calls ok {:>8}  errors {:>6}",
        sample.at.as_secs_f64(),
        sample.rss_kib,
        sample.fds,
        sample.threads,
        sample.tasks,
        sample.servers,
        sample.ok,
        sample.errors
    );
}

fn print_summary(samples: &[Sample], orphans: usize, faults: [u64; 3]) {
    let (first, last) = (&samples[0], &samples[samples.len() - 1]);
    println!(
        "\nsoak: {:.0} s, faults: {} crashes, {} reloads, {} caller churns",
        last.at.as_secs_f64(),
        faults[0],
        faults[1],
        faults[2]
    );
    println!("{:<22} {:>12} {:>12} {:>8}", "(3 servers, steady calls)", "at 2 s", "at the end", "ratio");
    let rows: [(&str, f64, f64); 4] = [
        ("resident memory (KiB)", first.rss_kib as f64, last.rss_kib as f64),
        ("open descriptors", first.fds as f64, last.fds as f64),
        ("threads", first.threads as f64, last.threads as f64),
        ("live tokio tasks", first.tasks as f64, last.tasks as f64),
    ];
    for (name, first, last) in rows {
        println!("{name:<22} {first:>12.0} {last:>12.0} {:>7.2}×", last / first.max(1.0));
    }
    println!("calls answered: {} ok, {} with an error", last.ok, last.errors);
    println!("test-server processes left after shutdown: {orphans} (goal: 0)");
}
