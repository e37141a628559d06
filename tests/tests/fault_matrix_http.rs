//! The fault matrix's HTTP rows (issue 19; the rows and their scripted
//! Streamable HTTP server are in `warden_tests::fault_matrix::http`): HTTP
//! 500s, a lost session (404), an answer stream cut mid-event, an answer
//! that never comes, a TLS handshake that stalls — every call accounted
//! for, and each fault looking to its callers as it must.
//! `-- --nocapture` prints the table.

use warden_tests::fault_matrix::{assert_nothing_lost, http, print};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_http_fault_loses_duplicates_or_mixes_up_a_call() {
    let rows = http::rows().await;
    print(&rows);
    assert_nothing_lost(&rows);
    let [five_hundreds, lost_session, cut, silent, tls] = &rows[..] else { unreachable!() };
    assert!(five_hundreds.said.iter().all(|said| said.contains("500")), "{five_hundreds:?}");
    assert!(lost_session.ok > 0 && lost_session.recovery.is_some(), "{lost_session:?}");
    // Sent again under a new id when safe to repeat (the 10 `work_safe`),
    // else said to have maybe taken effect: never sent twice.
    assert_eq!((cut.ok, cut.errors), (10, 10), "{cut:?}");
    assert!(cut.said.iter().all(|said| said.contains("may or may not have taken effect")), "{:?}", cut.said);
    assert_eq!((silent.ok, silent.errors), (0, 20), "{silent:?}");
    assert!(silent.said.iter().all(|said| said.contains("timed out after 1 s")), "{:?}", silent.said);
    assert_eq!((tls.ok, tls.errors), (0, 20), "{tls:?}");
}
