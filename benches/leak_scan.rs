//! Leak scanning speed: [`warden_policy::LeakScanner`] over tool output.
//!
//! Every argument and result that passes the policy gate is scanned, so the
//! scan must cost little next to the call itself. This bench redacts
//! realistic tool output (JSON lines of a code-hosting API: ids, paths, git
//! SHAs, UUIDs, URLs, prose, a little base64) of 1 KB, 100 KB and 1 MB,
//! holding three secrets (a GitHub token, an AWS key and, when the scanner
//! knows any, one of its known values), with 0, 10 and 100 known secrets.
//!
//! Each cell times `redact_text` (find, merge and rebuild the text: the
//! gate's path when something is found) for at least the time budget and
//! reports the median scan. The baseline is one `str::contains` pass over
//! the same text for a needle that is not there — the cheapest possible full
//! read of the text — so the ratio says how many such passes a scan costs.
//! The goal is well under 1 ms per KB; the aim is under 10 ms per MB.
//!
//! Knobs (environment variables, all optional):
//!
//! | variable                  | default | meaning                          |
//! |---------------------------|---------|----------------------------------|
//! | `WARDEN_BENCH_LEAK_MS`    | 300     | time budget per cell, in ms      |
//!
//! Run with `cargo bench -p warden-tests --bench leak_scan`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use warden_policy::{KnownSecret, LeakScanner};

mod bench_support;
use bench_support::{env_usize, median_time, micros, verdict};

/// The text sizes scanned.
const SIZES: [usize; 3] = [1024, 100 * 1024, 1024 * 1024];

/// How many known secrets the scanner holds.
const KNOWN_COUNTS: [usize; 3] = [0, 10, 100];

/// The aim for a 1 MB scan.
const GOAL_MS_PER_MB: f64 = 10.0;

fn main() {
    let budget = Duration::from_millis(env_usize("WARDEN_BENCH_LEAK_MS", 300) as u64);
    println!();
    println!("leak scan: LeakScanner::redact_text over JSON-lines tool output holding 3 secrets; median of each cell");
    println!(
        "{:>8} {:>6} {:>14} {:>10} {:>10} {:>16} {:>12}",
        "size", "known", "time/scan", "µs/KB", "MB/s", "contains/scan", "vs contains"
    );
    let mut worst_ms_per_mb: f64 = 0.0;
    for size in SIZES {
        for count in KNOWN_COUNTS {
            let known = known_secrets(count);
            let text = tool_output(size, known.first().map(|secret| secret.value.as_str()));
            let scanner = LeakScanner::new(known);
            let (redacted, leaks) = scanner.redact_text(&text).expect("the text holds secrets");
            let expected = if count == 0 { 2 } else { 3 };
            assert_eq!(leaks.len(), expected, "{leaks:?}");
            assert_eq!(text.len(), size);
            assert!(!redacted.contains("ghp_"), "the GitHub token was redacted");

            let scan = median_time(budget, || black_box(scanner.redact_text(black_box(&text))).is_some());
            let baseline = median_time(budget, || black_box(&text).contains(black_box("-----BEGIN NOWHERE")));
            let kb = text.len() as f64 / 1024.0;
            let mb = text.len() as f64 / (1024.0 * 1024.0);
            worst_ms_per_mb = worst_ms_per_mb.max(scan.as_secs_f64() * 1e3 / mb);
            println!(
                "{:>8} {:>6} {:>14} {:>10.2} {:>10.0} {:>16} {:>11.1}×",
                size_label(text.len()),
                count,
                duration_label(scan),
                micros(scan) / kb,
                mb / scan.as_secs_f64(),
                duration_label(baseline),
                scan.as_secs_f64() / baseline.as_secs_f64(),
            );
        }
    }
    let compile = {
        let start = Instant::now();
        black_box(LeakScanner::new(known_secrets(100)));
        start.elapsed()
    };
    println!(
        "worst: {worst_ms_per_mb:.2} ms per MB (aim ≤ {GOAL_MS_PER_MB} ms: {}); LeakScanner::new with 100 known secrets: {}",
        verdict(worst_ms_per_mb <= GOAL_MS_PER_MB),
        duration_label(compile),
    );
}

/// `count` known secrets of 24 to 40 characters, labelled `SECRET_<n>`.
fn known_secrets(count: usize) -> Vec<KnownSecret> {
    (0..count)
        .map(|n| {
            let value = format!("kv{n:03}-{}", hex(n as u64 * 7919 + 13).repeat(1 + n % 3));
            KnownSecret { label: format!("SECRET_{n}"), value }
        })
        .collect()
}

/// Exactly `size` bytes of JSON lines, with a GitHub token a quarter of the
/// way in, an AWS key half way and `known` (if any) three quarters in, each
/// on its own short line.
fn tool_output(size: usize, known: Option<&str>) -> String {
    let mut secrets = vec![format!("ghp_{}", "a1B2c3D4e5".repeat(4)), format!("AKIA{}", "IOSFODNN7EXAMPLE")];
    secrets.extend(known.map(str::to_string));
    let secret_lines: Vec<String> = secrets.iter().map(|secret| format!("{{\"env\":\"{secret}\"}}\n")).collect();
    let filler_size = size - secret_lines.iter().map(String::len).sum::<usize>();
    let mut filler = String::with_capacity(size + 512);
    let mut n: u64 = 0;
    while filler.len() < filler_size {
        filler.push_str(&line(n));
        n += 1;
    }
    // ASCII, so any byte offset is a character boundary.
    filler.truncate(filler_size);
    let mut text = String::with_capacity(size);
    let mut from = 0;
    for (quarter, secret_line) in (1..).zip(&secret_lines) {
        let at = filler_size * quarter / 4;
        let at = filler[at..].find('\n').map_or(filler_size, |newline| at + newline + 1).max(from);
        text.push_str(&filler[from..at]);
        text.push_str(secret_line);
        from = at;
    }
    text.push_str(&filler[from..]);
    text
}

/// One line of a fake code-hosting API answer.
fn line(n: u64) -> String {
    let sha = format!("{}{}{}{}{}", hex(n), hex(n + 1), hex(n + 2), hex(n + 3), hex(n + 4));
    let uuid = format!("{}-{}-4{}-a{}-{}", hex(n * 3), &hex(n)[..4], &hex(n + 9)[..3], &hex(n + 5)[..3], hex(n * 11));
    format!(
        concat!(
            r#"{{"id":{},"sha":"{}","request_id":"{}","path":"src/module_{}/file.rs","#,
            r#""url":"https://api.example.com/repos/acme/widgets/commits/{}?page={}","#,
            r#""message":"fix: handle the empty case in parser step {} (see #{}); e.g. v1.{}.0 works","#,
            r#""avatar":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}}"#,
            "\n"
        ),
        n,
        sha,
        uuid,
        n % 97,
        sha,
        n % 13,
        n,
        n * 7,
        n % 30,
    )
}

/// Eight hex digits derived from `n`.
fn hex(n: u64) -> String {
    format!("{:08x}", (n.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32)
}

fn size_label(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else {
        format!("{:.0} KB", bytes as f64 / 1024.0)
    }
}

fn duration_label(duration: Duration) -> String {
    let us = micros(duration);
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}
