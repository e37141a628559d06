//! The fault matrix's stdio rows (issue 19; the rows themselves are in
//! `warden_tests::fault_matrix::stdio`): each fault done to a real
//! test-server process while calls are in flight through the embedded
//! handle, every call accounted for. The goal in every row: 0 lost, 0
//! duplicated, 0 mixed, and every error saying what happened — and here,
//! what each fault must look like to its callers.
//!
//! `cargo test -p warden-tests --test fault_matrix -- --nocapture` prints
//! the table.

use std::time::Duration;

use warden_tests::fault_matrix::{assert_nothing_lost, print, stdio};
use warden_tests::scratch_dir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_fault_loses_duplicates_or_mixes_up_a_call() {
    let dir = scratch_dir("fault-matrix");
    let (rows, orphan) = stdio::rows(&dir).await;
    print(&rows);
    assert!(!orphan, "the process whose stdout closed was left running");
    assert_nothing_lost(&rows);
    // What each fault must look like to the callers.
    let [kill, garbage, hang, stop, flood, notices, junk, exits, hangs, closed] = &rows[..] else { unreachable!() };
    assert_eq!(kill.ok, 20, "the 20 calls safe to repeat were repeated on the restarted server: {kill:?}");
    assert_eq!(kill.errors, 20, "the 20 others were not, and say so: {kill:?}");
    assert!(kill.said.iter().all(|said| said.contains("crashed while running '…'")), "{:?}", kill.said);
    assert!(kill.recovery.is_some_and(|time| time < Duration::from_secs(3)), "{kill:?}");
    assert_eq!((garbage.ok, garbage.errors), (40, 0), "{garbage:?}");
    assert_eq!((hang.ok, hang.errors), (20, 5), "{hang:?}");
    assert!(hang.said.iter().all(|said| said.starts_with("'…' timed out after 0.5 s")), "{:?}", hang.said);
    assert_eq!((stop.ok, stop.errors), (20, 0), "{stop:?}");
    assert_eq!((flood.ok, flood.errors), (21, 0), "{flood:?}");
    assert_eq!((notices.ok, notices.errors), (21, 0), "{notices:?}");
    assert_eq!((junk.ok, junk.errors), (22, 0), "nothing the junk said answered a call: {junk:?}");
    // The ten calls safe to repeat ran again on the restarted server; the
    // ten others, and the call that closed the output, say it went down.
    assert_eq!((closed.ok, closed.errors), (10, 11), "{closed:?}");
    assert!(closed.recovery.is_some_and(|time| time < Duration::from_secs(5)), "{closed:?}");
    assert_eq!((exits.ok, exits.errors), (0, 10), "{exits:?}");
    assert!(exits.said.iter().all(|said| said.contains("fatal: exiting at start as asked")), "{:?}", exits.said);
    assert_eq!((hangs.ok, hangs.errors), (0, 10), "{hangs:?}");
    assert!(hangs.said.iter().all(|said| said.contains("did not finish its handshake")), "{:?}", hangs.said);
}
