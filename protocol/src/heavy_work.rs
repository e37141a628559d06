//! Work on a large message, done where it does not stall the runtime.
//!
//! Reading a 10 MB result off a pipe, decoding it, scanning it for secrets
//! and writing it out again are each milliseconds of CPU with no `.await`
//! inside. On a tokio worker that is worse than a slow call: tokio's I/O
//! driver is polled only by a worker with nothing to run (or every 61
//! tasks), and a worker that woke to one ready task does not wake its idle
//! siblings — they sleep on a condition variable, not in `epoll_wait`. So
//! while one worker spends 30 ms on a large message, *no* socket or pipe is
//! read in the whole process, however many workers it has: measured
//! through the daemon, a small call to another server beside a stream of
//! 10 MB results waited p99 29–37 ms on 2, 4 and 8 workers, against 4–5 ms
//! when the large results went through another daemon (the machine's own
//! share of the wait).
//!
//! Two remedies, one for each kind of work:
//!
//! - a loop that reads a long message, once [`HEAVY_BYTES`] of it are in,
//!   gives the worker back every [`YIELD_EVERY_BYTES`]
//!   (`tokio::task::yield_now`: the worker then polls the driver and runs
//!   what became ready before reading on);
//! - one step that cannot be cut (serde decoding or writing a message, a
//!   leak scan, UTF-8 validation) runs through [`run_heavy`], which for a
//!   message of [`HEAVY_BYTES`] or more tells a multi-thread runtime that
//!   this worker is busy (`block_in_place`): the worker's queue and the
//!   driver are handed to another thread while it works. Smaller messages,
//!   and every message on a current-thread runtime (where there is no
//!   other thread to hand them to, and `block_in_place` would panic), do
//!   the work in place, as before.
//!
//! Both remedies move a message's work between threads: a yielding task
//! may be stolen by another worker, and `block_in_place` leaves the worker
//! to a new thread. Allocators keep a block on the thread that allocated
//! it (mimalloc queues a block another thread frees; glibc returns it to
//! its arena), so a message whose blocks are spread over threads leaves
//! freed copies resident in several heaps: with both remedies from 256 KiB
//! on, the daemon held 6 to 13 copies of a 1 MB result at its peak where
//! two were alive (`large_results`). Hence [`HEAVY_BYTES`]: below it
//! nothing moves, and a message that size stalls its worker a few
//! milliseconds at most; above it the blocks that move are ones the
//! allocator maps on their own and gives back wherever they are freed
//! (mimalloc 3's large blocks; the `warden` binary's allocator).

use tokio::runtime::{Handle, RuntimeFlavor};

/// The size from which a message's work leaves the worker: a step on it
/// through [`run_heavy`], and the reading of a line past it (see above):
/// 4 MiB of JSON is a few milliseconds of decoding.
pub const HEAVY_BYTES: usize = 4 << 20;

/// How many bytes of a long line a reading loop takes between two yields.
/// Four 64 KiB reads: a fraction of a millisecond of copying.
pub(crate) const YIELD_EVERY_BYTES: usize = 256 * 1024;

/// Runs `work` on a message of `bytes` bytes: off the worker when the
/// message is large and the runtime is a multi-thread one, in place
/// otherwise. Either way `work` runs on this thread and its result is
/// returned; only what else the worker had to do moves.
pub fn run_heavy<T>(bytes: usize, work: impl FnOnce() -> T) -> T {
    if bytes >= HEAVY_BYTES && on_multi_thread_runtime() {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// Whether this thread runs in a multi-thread tokio runtime, the one kind
/// `block_in_place` works in.
fn on_multi_thread_runtime() -> bool {
    Handle::try_current().is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread)
}

#[cfg(test)]
mod tests;
