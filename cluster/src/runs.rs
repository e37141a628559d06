//! The calls this node runs for others, by call id: a call id is run once.
//!
//! A caller repeats a call under the same id when it cannot know whether
//! the first request arrived (its connection to NATS broke, a node was
//! slow to answer); NATS may deliver a request twice across a reconnect.
//! So the first request with an id starts the run, a request with the id
//! of a run under way waits for that run's answer, and one with the id of a
//! finished run gets the answer it had — none runs the tool again. Answers
//! are kept [`KEEP`] (at most [`MOST`] of them), long past any retry.
//!
//! A cancellation aborts the run: the call's future is dropped, which
//! cancels it on the server as a caller leaving always does, and the run's
//! answer says it was cancelled.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::{abortable, AbortHandle, Aborted};
use tokio::sync::watch;

use crate::wire::{CallReply, Outcome};

/// How long a finished run's answer is kept.
const KEEP: Duration = Duration::from_secs(600);
/// The most finished answers kept; the oldest go first.
const MOST: usize = 10_000;

/// The runs, by call id.
#[derive(Default)]
pub(crate) struct Runs {
    runs: Mutex<HashMap<String, Run>>,
}

enum Run {
    Running { answer: watch::Receiver<Option<Bytes>>, task: AbortHandle },
    Done { answer: Bytes, at: Instant },
}

impl Runs {
    /// The answer of the call `id`: `start`'s, run in the caller's own
    /// task when this is the first request with that id (a task of its own
    /// was one more wake-up on every call), or the answer of the run the id
    /// already has.
    pub(crate) async fn answer<F>(&self, id: &str, start: impl FnOnce() -> F) -> Bytes
    where
        F: Future<Output = Bytes>,
    {
        let next = {
            let mut runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match runs.get(id) {
                Some(Run::Done { answer, .. }) => return answer.clone(),
                Some(Run::Running { answer, .. }) => Err(answer.clone()),
                None => {
                    prune(&mut runs);
                    let (sender, receiver) = watch::channel(None);
                    let (future, task) = abortable(start());
                    runs.insert(id.to_string(), Run::Running { answer: receiver, task });
                    Ok((future, sender))
                }
            }
        };
        let mut waiting = match next {
            Ok((future, sender)) => {
                // Should the run panic, `sender` goes with it, and whoever
                // waits is told the call was cancelled.
                let answer = match future.await {
                    Ok(answer) => {
                        self.finish(id, answer.clone());
                        answer
                    }
                    Err(Aborted) => cancelled(),
                };
                let _ = sender.send(Some(answer.clone()));
                return answer;
            }
            Err(waiting) => waiting,
        };
        let answer = match waiting.wait_for(Option::is_some).await {
            Ok(answer) => answer.clone().expect("waited for an answer"),
            // The run was aborted: a cancellation came first.
            Err(_) => cancelled(),
        };
        answer
    }

    /// Aborts the run of call `id`, if one is under way; its answer says it
    /// was cancelled. `false` when there was none.
    pub(crate) fn cancel(&self, id: &str) -> bool {
        let mut runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(Run::Running { task, .. }) = runs.get(id) else { return false };
        task.abort();
        runs.insert(id.to_string(), Run::Done { answer: cancelled(), at: Instant::now() });
        true
    }

    /// How many runs are under way.
    #[cfg(test)]
    pub(crate) fn running(&self) -> usize {
        let runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        runs.values().filter(|run| matches!(run, Run::Running { .. })).count()
    }

    fn finish(&self, id: &str, answer: Bytes) {
        let mut runs = self.runs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        runs.insert(id.to_string(), Run::Done { answer, at: Instant::now() });
    }
}

/// Forgets answers older than [`KEEP`], and the oldest past [`MOST`].
fn prune(runs: &mut HashMap<String, Run>) {
    if runs.len() < MOST {
        return;
    }
    runs.retain(|_, run| !matches!(run, Run::Done { at, .. } if at.elapsed() > KEEP));
    if runs.len() >= MOST {
        let mut done: Vec<(Instant, String)> = runs
            .iter()
            .filter_map(|(id, run)| match run {
                Run::Done { at, .. } => Some((*at, id.clone())),
                Run::Running { .. } => None,
            })
            .collect();
        done.sort();
        for (_, id) in done.into_iter().take(MOST / 10) {
            runs.remove(&id);
        }
    }
}

fn cancelled() -> Bytes {
    let reply = CallReply::Error { outcome: Outcome::Unknown, message: "the call was cancelled by its caller".into() };
    Bytes::from(serde_json::to_vec(&reply).expect("a reply serialises"))
}

#[cfg(test)]
mod tests;
