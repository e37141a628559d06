//! What a client costs this process, beyond wall time: CPU, context
//! switches and heap allocations.
//!
//! CPU and context switches come from `getrusage`. Allocations come from
//! this bench's own global allocator, the system's with a count in front:
//! an allocation is the same count on every run, whatever the machine's
//! noise, so a change that removes one shows at once, where a few hundred
//! nanoseconds of CPU drown in a shared machine's spread.
//!
//! Counting must not cost what it measures: each thread adds to its own
//! cache line with a plain load and store (no locked instruction, no line
//! shared between cores). A thread past the slots, or one whose
//! thread-local is already torn down, adds atomically to a shared line.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The system allocator, counting allocations and reallocations.
struct Counting;

#[global_allocator]
static COUNTING: Counting = Counting;

/// Threads with a line of their own; later threads share the last one.
const SLOTS: usize = 63;

/// One thread's count, alone on its cache line.
#[repr(align(128))]
struct Slot(AtomicU64);

static COUNTS: [Slot; SLOTS + 1] = [const { Slot(AtomicU64::new(0)) }; SLOTS + 1];
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot; `usize::MAX` until its first allocation.
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn count_one() {
    let slot = SLOT
        .try_with(|slot| {
            if slot.get() == usize::MAX {
                slot.set(NEXT_SLOT.fetch_add(1, Ordering::Relaxed).min(SLOTS));
            }
            slot.get()
        })
        .unwrap_or(SLOTS);
    let count = &COUNTS[slot].0;
    if slot < SLOTS {
        // This thread is the slot's only writer.
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    } else {
        count.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged; counting touches
// no heap memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        System.realloc(ptr, layout, new_size)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

/// Allocations and reallocations by every thread of this process so far.
fn allocations() -> u64 {
    COUNTS.iter().map(|slot| slot.0.load(Ordering::Relaxed)).sum()
}

/// CPU time, context switches and heap allocations of this process (all
/// its threads, not a server's), taken outside the timed calls. Only one
/// client runs at a time, so the difference over a phase is that client's
/// cost.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Usage {
    pub(crate) cpu: Duration,
    pub(crate) voluntary_switches: i64,
    /// Allocations and reallocations.
    pub(crate) allocations: u64,
}

impl Usage {
    pub(crate) fn now() -> Usage {
        // SAFETY: getrusage only writes the struct it is given.
        let usage = unsafe {
            let mut usage = std::mem::zeroed::<libc::rusage>();
            libc::getrusage(libc::RUSAGE_SELF, &mut usage);
            usage
        };
        let time = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
        Usage {
            cpu: time(usage.ru_utime) + time(usage.ru_stime),
            voluntary_switches: usage.ru_nvcsw,
            allocations: allocations(),
        }
    }

    pub(crate) fn since(self, start: Usage) -> Usage {
        Usage {
            cpu: self.cpu.saturating_sub(start.cpu),
            voluntary_switches: self.voluntary_switches - start.voluntary_switches,
            allocations: self.allocations.saturating_sub(start.allocations),
        }
    }

    pub(crate) fn add(&mut self, other: Usage) {
        self.cpu += other.cpu;
        self.voluntary_switches += other.voluntary_switches;
        self.allocations += other.allocations;
    }
}
