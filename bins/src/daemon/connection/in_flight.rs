//! A connection's requests in flight: polled inside the connection's own
//! task, answered in the order they came.
//!
//! Why not `futures_util`'s `FuturesOrdered`: once it has polled every
//! future it holds, it wakes its own task before returning `Pending` (its
//! guard against starving the executor). With one request in flight —
//! every sequential caller — that is every time the call is polled, and
//! tokio's multi-thread scheduler treats a task woken while it runs as a
//! yield: it queues the task again and wakes a parked worker thread to come
//! and take it. Measured on the bridge: about one cross-thread wake-up per
//! call, tens of microseconds each on a VM (an idle vCPU has to be woken),
//! and the call's tasks scattered over both workers.
//!
//! Here each request has its own waker, which marks the request woken and
//! wakes the connection's task; a poll polls only the marked requests. The
//! set is small (at most the pipeline depth), so finding the marked ones by
//! a scan costs less than the wake-up it avoids.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// A request's future.
pub(super) type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Futures that end in any order, their outputs taken in the order they were
/// pushed.
pub(super) struct InFlight<T> {
    slots: VecDeque<Slot<T>>,
    /// The task polling the set: woken when any of its futures is.
    owner: Arc<AtomicWaker>,
}

struct Slot<T> {
    /// `None` once it has ended.
    future: Option<Pending<T>>,
    output: Option<T>,
    waker: Arc<SlotWaker>,
}

/// One future's waker: marks it woken, then wakes the owner.
struct SlotWaker {
    woken: AtomicBool,
    owner: Arc<AtomicWaker>,
}

impl Wake for SlotWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.owner.wake();
    }
}

impl<T> Default for InFlight<T> {
    fn default() -> Self {
        InFlight { slots: VecDeque::new(), owner: Arc::new(AtomicWaker::new()) }
    }
}

impl<T> InFlight<T> {
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Adds a future; its output comes after those of every earlier one.
    pub(super) fn push_back(&mut self, future: Pending<T>) {
        // Woken: it has never been polled.
        let waker = Arc::new(SlotWaker { woken: AtomicBool::new(true), owner: Arc::clone(&self.owner) });
        self.slots.push_back(Slot { future: Some(future), output: None, waker });
    }

    /// The next output in order; `Pending` while the oldest future runs
    /// (the task is woken when any future is), `None` when the set is empty.
    pub(super) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.owner.register(cx.waker());
        for slot in &mut self.slots {
            let Some(future) = slot.future.as_mut() else { continue };
            if !slot.waker.woken.swap(false, Ordering::AcqRel) {
                continue;
            }
            let waker = Waker::from(Arc::clone(&slot.waker));
            if let Poll::Ready(output) = future.as_mut().poll(&mut Context::from_waker(&waker)) {
                slot.future = None;
                slot.output = Some(output);
            }
        }
        match self.slots.front_mut() {
            None => Poll::Ready(None),
            Some(oldest) => match oldest.output.take() {
                Some(output) => {
                    self.slots.pop_front();
                    Poll::Ready(Some(output))
                }
                None => Poll::Pending,
            },
        }
    }

    /// [`Self::poll_next`] as a future.
    pub(super) fn next(&mut self) -> impl Future<Output = Option<T>> + '_ {
        std::future::poll_fn(move |cx| self.poll_next(cx))
    }
}

#[cfg(test)]
mod tests;
