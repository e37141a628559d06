//! The fault matrix as one printed report (issue 19): every row of the
//! stdio and HTTP suites — a real test-server process SIGKILLed, stopped,
//! hung, flooding, writing junk, closing its stdout, never coming up; a
//! scripted HTTP server answering 500s, losing its session, cutting an
//! answer stream, never answering, stalling its TLS handshake — run with
//! calls in flight through the embedded handle, and one table: calls
//! made, answered ok, answered with an error, lost (no answer within the
//! deadline + 1 s), duplicated (a call not safe to repeat executed twice,
//! counted on the server's side), mixed (another call's answer), and the
//! time from the fault to the next good answer; under each row, what its
//! errors said. The last line sums lost, duplicated and mixed (the goal:
//! 0, 0, 0) and exits non-zero otherwise.
//!
//! The same rows are asserted one by one in the `fault_matrix` and
//! `fault_matrix_http` suites. The faults of the daemon's faces have their
//! own tests in `bins/tests/` (bridge floods and trickles:
//! `daemon_bridge.rs`; front floods, unread streams, a client leaving
//! mid-call, 50 sessions × 100 calls through a crash: `front_http.rs`,
//! `front_http_hostile.rs`; the daemon SIGKILLed with calls in flight:
//! `daemon.rs`).
//!
//! Run with `cargo bench -p warden-tests --bench faults`.

mod bench_support;

use bench_support::runtime;
use warden_tests::fault_matrix::{http, print, stdio, Row};
use warden_tests::scratch_dir;

fn main() {
    let runtime = runtime(Some(2));
    let started = std::time::Instant::now();
    let (rows, orphan) = runtime.block_on(async {
        let (mut rows, orphan) = stdio::rows(&scratch_dir("faults-bench")).await;
        rows.extend(http::rows().await);
        (rows, orphan)
    });
    print(&rows);
    let sum = |count: fn(&Row) -> usize| rows.iter().map(count).sum::<usize>();
    let (lost, duplicated, mixed) = (sum(|row| row.lost), sum(|row| row.duplicated), sum(|row| row.mixed));
    let unanswered = sum(|row| row.made - row.ok - row.errors - row.lost - row.mixed);
    println!(
        "\n{} faults, {} calls in {:.1} s: {lost} lost, {duplicated} duplicated, {mixed} mixed, \
         {unanswered} unaccounted for; a process left running after its stdout closed: {}",
        rows.len(),
        sum(|row| row.made),
        started.elapsed().as_secs_f64(),
        if orphan { "yes" } else { "no" },
    );
    if lost + duplicated + mixed + unanswered > 0 || orphan {
        std::process::exit(1);
    }
}
