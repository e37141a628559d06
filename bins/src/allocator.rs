//! The `warden` binary's allocator: mimalloc or glibc's malloc for the
//! small blocks (by the command: `allocator/small.rs`), and large blocks
//! mapped from the kernel on their own.
//!
//! mimalloc in the daemon, not glibc's malloc: a call through it
//! allocates and frees dozens of small blocks and a few over 1 KB (a
//! request's future, hyper's buffers), and each of those made glibc
//! consolidate its free lists — 16% of the front daemon's CPU under load
//! went to malloc and free. mimalloc's per-thread free lists have no such
//! step.
//!
//! But mimalloc keeps a large block that another thread frees: a block
//! belongs to the thread that allocated it, a free from elsewhere only
//! queues it (or, for its largest blocks, marks the pages `MADV_FREE`,
//! which the kernel still counts as resident). A tool's 10 MB result is
//! read on one worker and freed on another, so the daemon stayed two
//! copies of it larger than the copies alive (`large_results`: 3 to 4
//! copies held at the peak where 2 were alive, varying with which
//! thread freed what). Blocks of [`LARGE`] or more are therefore mapped
//! on their own and unmapped when freed, whichever thread frees them, and
//! grown with `mremap`, which moves the pages instead of copying them.
//! A mapping costs two system calls and a fault per page, nothing beside
//! reading a result that large. Only the binary: an embedding host keeps
//! its own allocator.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr;

use small::Small;

mod small;

/// Blocks this large or larger are mapped on their own: far above any
/// block a call allocates (its largest are a few KB), so only data the
/// size of a large result or message comes here. Not lower: a fresh
/// mapping's pages fault in one by one, about 0.5 ms a megabyte on this
/// machine, where mimalloc hands a freed block's pages on still mapped —
/// at 256 KiB, a 1 MB result's call took 2 to 3 ms longer (of 3 to 6).
/// Blocks of several megabytes mimalloc maps afresh too, so no time is
/// lost there.
pub(crate) const LARGE: usize = 4 << 20;

// A message of `HEAVY_BYTES` or more has its work moved between threads
// (`protocol/src/heavy_work.rs`); its blocks must be mappings, unmapped
// wherever they are freed, or freed copies stay resident in other
// threads' heaps.
const _: () = assert!(LARGE <= warden_protocol::HEAVY_BYTES, "large messages move between threads: map their blocks");

/// The alignment a mapping always has (the smallest page size).
const MAPPED_ALIGN: usize = 4096;

/// Small blocks from [`Small`], large ones mapped (see the module doc).
pub(crate) struct Allocator;

fn is_large(size: usize, align: usize) -> bool {
    size >= LARGE && align <= MAPPED_ALIGN
}

/// A fresh zeroed mapping of `size` bytes, or null.
unsafe fn map(size: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping at an address the kernel picks.
    let mapped = unsafe {
        libc::mmap(
            ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if mapped == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        mapped.cast()
    }
}

// SAFETY: every block is either Small's or a mapping of its own, told
// apart by its layout, which Rust passes back unchanged (or as resized by
// `realloc`, which moves a block between the two when it crosses LARGE).
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            // SAFETY: a size over zero.
            unsafe { map(layout.size()) }
        } else {
            // SAFETY: the caller's layout, as GlobalAlloc requires.
            unsafe { Small.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size(), layout.align()) {
            // SAFETY: as in alloc; a fresh mapping is zeroed.
            unsafe { map(layout.size()) }
        } else {
            // SAFETY: as in alloc.
            unsafe { Small.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if is_large(layout.size(), layout.align()) {
            // SAFETY: a mapping made for this layout (see the impl's note).
            unsafe { libc::munmap(block.cast(), layout.size()) };
        } else {
            // SAFETY: a block Small gave for this layout.
            unsafe { Small.dealloc(block, layout) }
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (was_large, is_now_large) = (is_large(layout.size(), layout.align()), is_large(new_size, layout.align()));
        match (was_large, is_now_large) {
            // SAFETY: Small's block, as GlobalAlloc::realloc requires.
            (false, false) => unsafe { Small.realloc(block, layout, new_size) },
            (true, true) => {
                // SAFETY: a mapping of layout.size() bytes; the kernel moves
                // its pages when they cannot grow in place.
                let moved = unsafe { libc::mremap(block.cast(), layout.size(), new_size, libc::MREMAP_MAYMOVE) };
                if moved == libc::MAP_FAILED {
                    ptr::null_mut()
                } else {
                    moved.cast()
                }
            }
            // Across LARGE: to the other kind of block, copied.
            _ => {
                // SAFETY: new_size is over zero and, with the same
                // alignment, a valid layout (GlobalAlloc::realloc's terms).
                let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: as in alloc.
                let moved = unsafe { self.alloc(new_layout) };
                if !moved.is_null() {
                    // SAFETY: both blocks hold at least the smaller size,
                    // and they are distinct.
                    unsafe {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests;
