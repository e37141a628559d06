use std::sync::mpsc;
use std::time::Duration;

use super::*;

/// A runtime of one worker: whatever else it has to run waits on the one
/// thread unless that thread is handed over.
fn one_worker() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// Runs `run_heavy(bytes, ..)` with work that waits for a task spawned on
/// the same runtime just before: whether that task could run meanwhile.
async fn other_task_ran_during(bytes: usize) -> bool {
    let (sender, receiver) = mpsc::channel();
    tokio::spawn(async move { sender.send(()).unwrap() });
    run_heavy(bytes, || receiver.recv_timeout(Duration::from_millis(500)).is_ok())
}

#[test]
fn a_large_message_leaves_the_worker_to_the_other_tasks() {
    assert!(one_worker().block_on(async { tokio::spawn(other_task_ran_during(HEAVY_BYTES)).await.unwrap() }));
}

#[test]
fn a_small_message_is_worked_on_in_place() {
    // The one worker is busy with the work: the other task waits for it.
    assert!(!one_worker().block_on(async { tokio::spawn(other_task_ran_during(HEAVY_BYTES - 1)).await.unwrap() }));
}

#[tokio::test(flavor = "current_thread")]
async fn a_current_thread_runtime_works_in_place_and_does_not_panic() {
    assert!(!other_task_ran_during(HEAVY_BYTES).await);
}

#[test]
fn outside_any_runtime_the_work_is_just_done() {
    assert_eq!(run_heavy(HEAVY_BYTES * 4, || 7), 7);
}
