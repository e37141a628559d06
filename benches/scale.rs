//! Memory and scale (issue 20): what Warden itself costs as it runs more
//! servers and more calls, and how soon it is up.
//!
//! - **servers**: an embedded Warden with 0, 10, 100 and 1,000 idle stdio
//!   servers (the test server): the time from start to `settled()`, then
//!   Warden's own resident memory (not its children's: they are other
//!   processes), threads and open descriptors, and the memory per server
//!   over the row with none. Goals: ≤ 20 MB at 100 servers; ≤ 80 MB and
//!   settled in ≤ 3 s at 1,000.
//! - **calls**: 10 servers, resident memory after 1,000 warm-up calls and
//!   after 100,000 more (8 callers): the growth, against a bound of 4 MB.
//! - **cold start**: a `warden serve` daemon with 10 servers: from the
//!   process's start to its bridge accepting, and to its `status` saying
//!   settled.
//!
//! Each figure comes from a fresh process (this bench runs itself again
//! with `WARDEN_SCALE_ONE`), so one row's memory does not carry into the
//! next, and each is measured twice (both figures printed: the machine is
//! shared and noisy). The open-file limit is raised as `warden` raises it
//! (`raise_open_file_limit`); the bench says when the system refuses.
//!
//! Knobs: `WARDEN_SCALE_SERVERS` ("0,10,100,1000"), `WARDEN_SCALE_CALLS`
//! (100000). Run with `cargo bench -p warden-tests --bench scale`.

mod bench_support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bench_support::{build_warden, env_usize, proc_status, runtime, toml_string};
use serde_json::{json, Value};
use warden_actors::{CallOptions, Warden, WardenConfig};

const TEST_SERVER: &str = env!("CARGO_BIN_EXE_warden-test-server");

fn config_text(servers: usize) -> String {
    let mut text = String::from("[security]\nauto_approve = true\n");
    for n in 0..servers {
        text += &format!("[servers.s{n}]\ncommand = {}\nargs = [\"--tools\", \"echo\"]\n", toml_string(TEST_SERVER));
    }
    text
}

fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|entries| entries.count()).unwrap_or(0)
}

/// One measurement, in this (fresh) process; printed as one JSON line.
fn one(what: &str) {
    let limit = warden_protocol::raise_open_file_limit();
    let runtime = runtime(None);
    let measured = runtime.block_on(async {
        match what.split(':').collect::<Vec<_>>()[..] {
            ["servers", n] => servers(n.parse().unwrap()).await,
            ["calls", n, calls] => calls_growth(n.parse().unwrap(), calls.parse().unwrap()).await,
            _ => panic!("unknown measurement {what}"),
        }
    });
    let limit = match limit {
        Ok(limit) => json!(limit.now),
        Err(error) => json!(format!("not raised: {error}")),
    };
    println!("{}", json!({"measured": measured, "open_file_limit": limit}));
}

async fn start(servers: usize) -> (Warden, Duration) {
    let config = WardenConfig::from_toml(&config_text(servers), "scale").unwrap();
    let started = Instant::now();
    let warden = Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(Duration::from_secs(120), warden.settled()).await.expect("settled within 120 s");
    let took = started.elapsed();
    let ready = warden.status().iter().filter(|status| status.state.label() == "running").count();
    assert_eq!(ready, servers, "every server running");
    (warden, took)
}

async fn servers(n: usize) -> Value {
    let (warden, settled) = start(n).await;
    // Let start-up garbage go.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let measured = json!({
        "settled_ms": settled.as_secs_f64() * 1e3,
        "rss_kib": proc_status("self", "VmRSS"),
        "threads": proc_status("self", "Threads"),
        "fds": fds(),
    });
    warden.shutdown().await;
    measured
}

async fn calls_growth(n: usize, calls: usize) -> Value {
    let (warden, _) = start(n).await;
    let call_all = |count: usize| {
        let warden = warden.clone();
        async move {
            let callers: Vec<_> = (0..8)
                .map(|caller| {
                    let warden = warden.clone();
                    tokio::spawn(async move {
                        for i in (caller..count).step_by(8) {
                            let tool = format!("s{}__echo", i % n);
                            let arguments = json!({"message": format!("call {i}")});
                            let result =
                                warden.host().call(&tool, arguments, CallOptions::default()).await.expect("answered");
                            assert!(!result.is_error(), "{}", result.text());
                        }
                    })
                })
                .collect();
            for caller in callers {
                caller.await.unwrap();
            }
        }
    };
    call_all(1_000).await;
    let warm = proc_status("self", "VmRSS");
    let started = Instant::now();
    call_all(calls).await;
    let took = started.elapsed();
    let after = proc_status("self", "VmRSS");
    warden.shutdown().await;
    json!({"warm_kib": warm, "after_kib": after, "calls": calls, "secs": took.as_secs_f64()})
}

/// Runs `what` in a fresh process of this bench; its JSON line.
fn fresh(what: &str) -> Value {
    let output = Command::new(std::env::current_exe().unwrap())
        .env("WARDEN_SCALE_ONE", what)
        .stderr(Stdio::inherit())
        .output()
        .expect("the bench runs itself");
    assert!(output.status.success(), "{what} failed");
    let text = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(text.lines().last().unwrap_or_default()).unwrap_or_else(|_| panic!("{what}: {text}"))
}

fn mib(kib: &Value) -> f64 {
    kib.as_f64().unwrap_or(0.0) / 1024.0
}

/// A `warden serve` with `servers` servers: (to accepting, to settled).
fn cold_start(warden_bin: &std::path::Path, servers: usize) -> (Duration, Duration) {
    let home = warden_tests::scratch_dir("scale-cold");
    let config = home.join("warden.toml");
    std::fs::write(&config, config_text(servers)).unwrap();
    let started = Instant::now();
    let mut child = Command::new(warden_bin)
        .args(["serve", "--no-idle-exit", "--config"])
        .arg(&config)
        .env("WARDEN_HOME", home.join("state"))
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("warden serve starts");
    let lockfile = home.join("state").join("daemon.json");
    let (mut stream, token) = loop {
        let found = std::fs::read_to_string(&lockfile).ok().and_then(|text| serde_json::from_str::<Value>(&text).ok());
        if let Some(found) = found {
            let address = found["address"].as_str().unwrap().to_string();
            if let Ok(stream) = std::net::TcpStream::connect(&address) {
                break (stream, found["token"].as_str().unwrap().to_string());
            }
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the daemon did not listen within 20 s");
        std::thread::sleep(Duration::from_micros(500));
    };
    let listening = started.elapsed();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let settled = loop {
        stream.write_all(format!("{}\n", json!({"op": "status", "token": token})).as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status: Value = serde_json::from_str(&line).unwrap();
        if status["result"]["settled"] == true {
            break started.elapsed();
        }
        assert!(started.elapsed() < Duration::from_secs(30), "not settled within 30 s: {status}");
        std::thread::sleep(Duration::from_millis(2));
    };
    let _ = child.kill();
    let _ = child.wait();
    (listening, settled)
}

fn main() {
    if let Ok(what) = std::env::var("WARDEN_SCALE_ONE") {
        return one(&what);
    }
    let counts: Vec<usize> = std::env::var("WARDEN_SCALE_SERVERS")
        .unwrap_or_else(|_| "0,10,100,1000".into())
        .split(',')
        .map(|n| n.trim().parse().expect("WARDEN_SCALE_SERVERS: numbers"))
        .collect();
    let calls = env_usize("WARDEN_SCALE_CALLS", 100_000);
    println!("\nWarden's own process with N idle stdio servers (two fresh runs each: first / second)\n");
    println!(
        "{:>8} {:>19} {:>17} {:>17} {:>19} {:>9} {:>11}",
        "servers", "settled in (ms)", "RSS (MB)", "over 0 (MB)", "per server (KB)", "threads", "open fds"
    );
    let mut floor = [0.0f64; 2];
    let mut limit = Value::Null;
    for n in counts {
        let runs = [fresh(&format!("servers:{n}")), fresh(&format!("servers:{n}"))];
        limit = runs[0]["open_file_limit"].clone();
        let rss = [mib(&runs[0]["measured"]["rss_kib"]), mib(&runs[1]["measured"]["rss_kib"])];
        if n == 0 {
            floor = rss;
        }
        let over = [rss[0] - floor[0], rss[1] - floor[1]];
        let per = |over: f64| if n == 0 { 0.0 } else { over * 1024.0 / n as f64 };
        println!(
            "{:>8} {:>9.0} / {:>7.0} {:>7.1} / {:>7.1} {:>7.1} / {:>7.1} {:>8.0} / {:>8.0} {:>4} / {:>2} {:>5} / {:>4}",
            n,
            runs[0]["measured"]["settled_ms"].as_f64().unwrap(),
            runs[1]["measured"]["settled_ms"].as_f64().unwrap(),
            rss[0],
            rss[1],
            over[0],
            over[1],
            per(over[0]),
            per(over[1]),
            runs[0]["measured"]["threads"],
            runs[1]["measured"]["threads"],
            runs[0]["measured"]["fds"],
            runs[1]["measured"]["fds"],
        );
    }
    println!("open-file limit of the measuring process: {limit}");

    println!("\nWarden's own process over {calls} calls (10 servers, 8 callers; first / second run)\n");
    let runs = [fresh(&format!("calls:10:{calls}")), fresh(&format!("calls:10:{calls}"))];
    for (run, figures) in runs.iter().enumerate() {
        let measured = &figures["measured"];
        let growth = mib(&measured["after_kib"]) - mib(&measured["warm_kib"]);
        println!(
            "run {}: RSS {:.1} MB after 1,000 warm-up calls, {:.1} MB after {} more ({:.0} calls/s): grew {:.2} MB (bound: 4 MB) {}",
            run + 1,
            mib(&measured["warm_kib"]),
            mib(&measured["after_kib"]),
            measured["calls"],
            measured["calls"].as_f64().unwrap() / measured["secs"].as_f64().unwrap(),
            growth,
            if growth <= 4.0 { "ok" } else { "OVER" },
        );
    }

    println!("\nCold start of `warden serve` with 10 servers (first / second run)\n");
    let warden_bin = build_warden();
    let first = cold_start(&warden_bin, 10);
    let second = cold_start(&warden_bin, 10);
    let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
    println!("start to listening (bridge accepts): {:.1} / {:.1} ms", ms(first.0), ms(second.0));
    println!("start to settled (status says so):   {:.1} / {:.1} ms", ms(first.1), ms(second.1));
}
