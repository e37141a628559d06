use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::Runs;

#[tokio::test]
async fn one_id_runs_once_whether_asked_during_or_after_the_run() {
    let runs = Arc::new(Runs::default());
    let started = Arc::new(AtomicUsize::new(0));
    let run = |answer: &'static str| {
        let started = started.clone();
        move || async move {
            started.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Bytes::from(answer)
        }
    };
    let (first, second) = tokio::join!(runs.answer("a", run("first")), runs.answer("a", run("second")));
    assert_eq!((first.as_ref(), second.as_ref()), (&b"first"[..], &b"first"[..]));
    assert_eq!(runs.answer("a", run("third")).await.as_ref(), b"first");
    assert_eq!(started.load(Ordering::SeqCst), 1, "the tool ran once for three requests");
    assert_eq!(runs.answer("b", run("other")).await.as_ref(), b"other");
    assert_eq!(runs.running(), 0);
}

#[tokio::test]
async fn a_cancelled_run_stops_and_says_so_to_everyone_waiting() {
    let runs = Arc::new(Runs::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let done = finished.clone();
    let long = move || async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        done.fetch_add(1, Ordering::SeqCst);
        Bytes::from("late")
    };
    let waiting = tokio::spawn({
        let runs = runs.clone();
        async move { runs.answer("x", long).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(runs.running(), 1);
    assert!(runs.cancel("x"));
    let answer = waiting.await.unwrap();
    assert!(String::from_utf8_lossy(&answer).contains("cancelled by its caller"), "{answer:?}");
    let again = runs.answer("x", || async { Bytes::from("rerun") }).await;
    assert!(String::from_utf8_lossy(&again).contains("cancelled"), "a cancelled id is not run again: {again:?}");
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert!(!runs.cancel("unknown"));
}
