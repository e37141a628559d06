//! Which allocator serves the small blocks: mimalloc in the long-lived
//! processes (`warden serve`, `warden mcp`), glibc's malloc in every
//! short command.
//!
//! mimalloc pays for its speed up front: each size class has pages of its
//! own, whose free lists it writes as it starts on them. A `warden call`
//! against a warm daemon touched about 110 pages more under mimalloc than
//! under glibc's malloc (422 page faults to 311), and a fault costs about
//! 2 µs on this machine: the whole command took 2.5 to 3.0 ms under
//! mimalloc, 1.95 to 2.2 under glibc. A command makes a few hundred
//! allocations and exits; the daemon makes dozens a call for days, and
//! there mimalloc's speed is worth its pages (see `allocator.rs`).
//!
//! The choice is made once, at the process's first allocation (its
//! arguments read from `/proc/self/cmdline` into a buffer on the stack),
//! so every block is freed by the allocator that gave it. Without `/proc`
//! mimalloc serves every process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering};

use mimalloc::MiMalloc;

const UNDECIDED: u8 = 0;
const MIMALLOC: u8 = 1;
const SYSTEM: u8 = 2;

/// This process's choice, made at its first allocation.
static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The small blocks' allocator, as this process chose it.
pub(super) struct Small;

impl Small {
    fn is_mimalloc() -> bool {
        match CHOICE.load(Ordering::Relaxed) {
            MIMALLOC => true,
            SYSTEM => false,
            _ => choose(),
        }
    }
}

/// Makes this process's choice (or takes the one another thread made
/// first: both read the same arguments).
#[cold]
fn choose() -> bool {
    let mut buffer = [0u8; 4096];
    let choice = match read_cmdline(&mut buffer) {
        Some(cmdline) if !is_long_lived(cmdline) => SYSTEM,
        _ => MIMALLOC,
    };
    let chosen = match CHOICE.compare_exchange(UNDECIDED, choice, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => choice,
        Err(earlier) => earlier,
    };
    chosen == MIMALLOC
}

/// Whether the arguments (NUL-separated, as `/proc/self/cmdline` has
/// them) run a long-lived command: the first that is not an option
/// (`-v` is the only one before a command) names it.
pub(super) fn is_long_lived(cmdline: &[u8]) -> bool {
    let mut arguments = cmdline.split(|byte| *byte == 0).skip(1);
    arguments.find(|argument| !argument.starts_with(b"-")).is_some_and(|command| matches!(command, b"serve" | b"mcp"))
}

/// The start of this process's arguments, without allocating.
fn read_cmdline(buffer: &mut [u8; 4096]) -> Option<&[u8]> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let descriptor = unsafe { libc::open(c"/proc/self/cmdline".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if descriptor < 0 {
        return None;
    }
    let mut filled = 0;
    while filled < buffer.len() {
        let unread = &mut buffer[filled..];
        // SAFETY: reads at most `unread.len()` bytes into `unread`.
        let read = unsafe { libc::read(descriptor, unread.as_mut_ptr().cast(), unread.len()) };
        if read <= 0 {
            break;
        }
        filled += read as usize;
    }
    // SAFETY: the descriptor opened above, closed once.
    unsafe { libc::close(descriptor) };
    Some(&buffer[..filled])
}

// SAFETY: every call goes to the allocator this process chose, which
// never changes once chosen, so a block is freed by the one that gave it.
unsafe impl GlobalAlloc for Small {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe {
            if Small::is_mimalloc() {
                MiMalloc.alloc(layout)
            } else {
                System.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in alloc.
        unsafe {
            if Small::is_mimalloc() {
                MiMalloc.alloc_zeroed(layout)
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: a block this allocator gave, for this layout.
        unsafe {
            if Small::is_mimalloc() {
                MiMalloc.dealloc(block, layout)
            } else {
                System.dealloc(block, layout)
            }
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in dealloc, with GlobalAlloc::realloc's terms.
        unsafe {
            if Small::is_mimalloc() {
                MiMalloc.realloc(block, layout, new_size)
            } else {
                System.realloc(block, layout, new_size)
            }
        }
    }
}
