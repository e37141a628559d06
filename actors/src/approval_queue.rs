//! An [`Approver`] that holds requests until someone answers them by number.
//!
//! The daemon attaches one: a call that needs approval waits in the queue,
//! `warden approvals` lists it from another terminal, and `warden approve 3`
//! or `warden deny 3` releases it. Hosts with their own UI can use it the
//! same way (list, show, answer) instead of writing an approver.
//!
//! Requests whose call stopped waiting (it timed out, or its caller left)
//! are dropped from the list the next time it is read, so nobody approves a
//! call that no longer exists.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use crate::approver::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver};

/// Pending approval requests, shared by the gate and whoever answers.
#[derive(Clone, Default)]
pub struct ApprovalQueue {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<BTreeMap<u64, (ApprovalRequest, ApprovalAnswer)>>,
    arrived: Notify,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// No request has that number (answered, timed out, or never asked).
    #[error("no approval request {0} is waiting (it was answered, timed out, or never asked)")]
    NoSuchRequest(u64),
}

impl ApprovalQueue {
    /// An empty queue.
    pub fn new() -> ApprovalQueue {
        ApprovalQueue::default()
    }

    /// The requests still waiting, oldest first.
    pub fn pending(&self) -> Vec<ApprovalRequest> {
        let mut pending = self.lock();
        pending.retain(|_, (_, answer)| !answer.is_abandoned());
        pending.values().map(|(request, _)| request.clone()).collect()
    }

    /// How many requests are waiting.
    pub fn len(&self) -> usize {
        self.pending().len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Answers request `id`.
    pub fn answer(&self, id: u64, decision: ApprovalDecision, decided_by: &str) -> Result<(), QueueError> {
        let entry = self.lock().remove(&id);
        match entry {
            Some((_, answer)) if !answer.is_abandoned() => {
                answer.send(decision, decided_by);
                Ok(())
            }
            _ => Err(QueueError::NoSuchRequest(id)),
        }
    }

    /// Waits until at least `count` requests are waiting, and returns them
    /// (for a UI that shows requests as they come).
    pub async fn wait_for_pending(&self, count: usize) -> Vec<ApprovalRequest> {
        loop {
            // Registered before the check, so an arrival in between wakes it.
            let arrived = self.shared.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let pending = self.pending();
            if pending.len() >= count {
                return pending;
            }
            arrived.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (ApprovalRequest, ApprovalAnswer)>> {
        // A panic while holding the lock leaves a map that is still valid.
        self.shared.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Approver for ApprovalQueue {
    fn request(&self, request: ApprovalRequest, answer: ApprovalAnswer) {
        self.lock().insert(request.id, (request, answer));
        self.shared.arrived.notify_waiters();
    }
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue").field("pending", &self.lock().len()).finish()
    }
}
