//! Lane calls time out by one timer, armed for the earliest deadline.
//!
//! As the actor does for its own calls (`calls.rs`), and for the same
//! reason: a timer per call — registered in tokio's wheel when the call
//! starts, taken out when it ends — cost every call about 600 instructions
//! (callgrind, `benches/call_latency.rs`), while most calls end long before
//! their deadline. Calls to one server mostly share a timeout, so a steady
//! stream of them arms the timer about once a timeout.

use std::sync::{Arc, MutexGuard};

use tokio::time::Instant;

use super::{cancel_on, Lane, LaneState};
use crate::error::{secs, CallError};

impl Lane {
    /// Makes sure the timer fires no later than `deadline`; a timer set
    /// for earlier is kept.
    pub(super) fn arm(self: &Arc<Self>, state: &mut MutexGuard<'_, LaneState>, deadline: Instant) {
        if let Some((at, _)) = &state.timer {
            if *at <= deadline {
                return;
            }
        }
        if let Some((_, timer)) = state.timer.take() {
            timer.abort();
        }
        let lane = Arc::downgrade(self);
        let timer = tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            if let Some(lane) = lane.upgrade() {
                lane.deadline_reached();
            }
        });
        state.timer = Some((deadline, timer));
    }

    /// Times out every call whose deadline has passed, oldest request
    /// first: its caller reads a timeout, the server is asked to cancel.
    /// The timer is armed again for the earliest deadline left.
    fn deadline_reached(self: &Arc<Self>) {
        let now = Instant::now();
        let (mut expired, outbound, poke) = {
            let mut state = self.lock();
            state.timer = None;
            let ids: Vec<i64> =
                state.calls.iter().filter(|(_, call)| call.deadline <= now).map(|(id, _)| *id).collect();
            let expired: Vec<_> =
                ids.into_iter().filter_map(|id| state.calls.remove(&id).map(|call| (id, call))).collect();
            state.in_flight -= expired.len();
            if let Some(next) = state.calls.values().map(|call| call.deadline).min() {
                self.arm(&mut state, next);
            }
            let poke = !expired.is_empty() && state.queued > 0;
            (expired, state.outbound.clone(), poke)
        };
        expired.sort_unstable_by_key(|(id, _)| *id);
        for (id, call) in expired {
            cancel_on(outbound.as_deref(), id, &format!("timed out after {}", secs(call.timeout)));
            let error = CallError::Timeout { name: call.name, timeout: call.timeout, sent: true };
            let _ = call.reply.send(Err(error));
        }
        if poke {
            self.poke();
        }
    }
}
