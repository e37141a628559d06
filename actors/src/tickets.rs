//! A waiting caller's ticket, and what its leaving tells an actor.
//!
//! Every request a caller waits on — a tool call at a server's actor, an
//! approval at the PolicyGate — gets a ticket no other has in this
//! process, and a guard that casts a message naming the ticket when the
//! caller's future is dropped (cancel the call, withdraw the request). One
//! counter and one guard for every such wait, in a module that imports
//! nothing of the crate, so any part may use them.

use std::sync::atomic::{AtomicU64, Ordering};

use ractor::ActorRef;

/// The next ticket.
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

/// A ticket no other wait in this process has.
pub(crate) fn fresh_ticket() -> u64 {
    NEXT_TICKET.fetch_add(1, Ordering::Relaxed)
}

/// Casts `message` to `actor` when dropped, unless disarmed first: what a
/// caller tells an actor when it stops waiting (the server actor to cancel
/// the request, the policy gate to withdraw an approval request).
pub(crate) struct CastOnDrop<'a, M: ractor::Message> {
    actor: &'a ActorRef<M>,
    message: Option<M>,
}

impl<'a, M: ractor::Message> CastOnDrop<'a, M> {
    pub(crate) fn new(actor: &'a ActorRef<M>, message: M) -> Self {
        CastOnDrop { actor, message: Some(message) }
    }

    /// The caller got its answer: nothing to say.
    pub(crate) fn disarm(mut self) {
        self.message = None;
    }
}

impl<M: ractor::Message> Drop for CastOnDrop<'_, M> {
    fn drop(&mut self) {
        if let Some(message) = self.message.take() {
            let _ = self.actor.cast(message);
        }
    }
}
