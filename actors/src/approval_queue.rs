//! An [`Approver`] and [`Elicitor`] that holds what waits for a person
//! until someone answers it by number.
//!
//! The daemon attaches one: a call that needs approval, or a server's
//! question, waits in the queue; `warden pending` lists both from another
//! terminal, `warden approve 3` / `warden deny 3` release a call and
//! `warden answer 4 --accept '{..}'` answers a question. Approval and
//! question numbers come from one counter per Warden, so a number names one
//! thing. Hosts with their own UI can use it the same way (list, show,
//! answer) instead of writing an approver or elicitor.
//!
//! Entries whose asker stopped waiting (a call timed out or its caller
//! left, a server withdrew its question) are dropped from the list the
//! next time it is read, so nobody answers what no longer exists.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

use warden_protocol::ElicitReply;

use crate::approver::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver};
use crate::elicitor::{ElicitationAnswer, ElicitationRequest, Elicitor};

/// Pending approval requests, shared by the gate and whoever answers.
#[derive(Clone, Default)]
pub struct ApprovalQueue {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<BTreeMap<u64, (ApprovalRequest, ApprovalAnswer)>>,
    questions: Mutex<BTreeMap<u64, (ElicitationRequest, ElicitationAnswer)>>,
    arrived: Notify,
}

/// Why an answer was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// No request has that number (answered, timed out, or never asked).
    #[error("no approval request {0} is waiting (it was answered, timed out, or never asked)")]
    NoSuchRequest(u64),
    /// No question has that number.
    #[error("no question {0} is waiting (it was answered, withdrawn, timed out, or never asked)")]
    NoSuchQuestion(u64),
    /// The answer does not fit the question; it still waits.
    #[error("question {id} was not answered: {problem}")]
    Refused {
        /// The question.
        id: u64,
        /// What is wrong with the answer.
        problem: String,
    },
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

    /// The questions still waiting, oldest first.
    pub fn questions(&self) -> Vec<ElicitationRequest> {
        let mut questions = self.lock_questions();
        questions.retain(|_, (_, answer)| !answer.is_abandoned());
        questions.values().map(|(request, _)| request.clone()).collect()
    }

    /// Answers question `id`. An accept that does not fit the form is
    /// refused, and the question goes on waiting.
    pub fn answer_question(&self, id: u64, reply: ElicitReply, answered_by: &str) -> Result<(), QueueError> {
        let entry = self.lock_questions().remove(&id);
        let Some((request, answer)) = entry.filter(|(_, answer)| !answer.is_abandoned()) else {
            return Err(QueueError::NoSuchQuestion(id));
        };
        match answer.send(reply, answered_by) {
            Ok(()) => Ok(()),
            Err(refused) => {
                let problem = refused.error.to_string();
                self.lock_questions().insert(id, (request, refused.answer));
                Err(QueueError::Refused { id, problem })
            }
        }
    }

    fn lock_questions(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, (ElicitationRequest, ElicitationAnswer)>> {
        self.shared.questions.lock().unwrap_or_else(PoisonError::into_inner)
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

impl Elicitor for ApprovalQueue {
    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer) {
        self.lock_questions().insert(request.id, (request, answer));
        self.shared.arrived.notify_waiters();
    }
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue").field("pending", &self.lock().len()).finish()
    }
}
