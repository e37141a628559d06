use std::alloc::{GlobalAlloc as _, Layout};

use super::{Allocator, LARGE};

/// The process's resident memory, in bytes.
fn resident() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<usize>().unwrap() * 1024
}

fn filled(size: usize) -> (*mut u8, Layout) {
    let layout = Layout::from_size_align(size, 8).unwrap();
    // SAFETY: a layout over zero bytes.
    let block = unsafe { Allocator.alloc(layout) };
    assert!(!block.is_null());
    for i in 0..size {
        // SAFETY: within the block.
        unsafe { *block.add(i) = (i % 251) as u8 };
    }
    (block, layout)
}

fn holds_pattern(block: *const u8, size: usize) -> bool {
    // SAFETY: the caller's block holds at least `size` bytes.
    (0..size).all(|i| unsafe { *block.add(i) } == (i % 251) as u8)
}

#[test]
fn a_block_keeps_its_bytes_as_it_grows_and_shrinks_across_the_large_size() {
    for (from, to) in [(1000, LARGE + 10), (LARGE, 4 * LARGE + 1), (4 * LARGE, LARGE - 1), (3 * LARGE, LARGE)] {
        let (block, layout) = filled(from);
        // SAFETY: a block of this layout, and a new size over zero.
        let moved = unsafe { Allocator.realloc(block, layout, to) };
        assert!(!moved.is_null(), "{from} to {to} bytes");
        assert!(holds_pattern(moved, from.min(to)), "{from} to {to} bytes: the contents changed");
        // SAFETY: the block as resized.
        unsafe { Allocator.dealloc(moved, Layout::from_size_align(to, 8).unwrap()) };
    }
}

#[test]
fn a_large_block_freed_on_another_thread_leaves_resident_memory() {
    const SIZE: usize = 64 << 20;
    let before = resident();
    let (block, layout) = filled(SIZE);
    let touched = resident();
    assert!(touched >= before + SIZE * 3 / 4, "filling 64 MiB: {before} to {touched} bytes resident");
    let address = block as usize;
    std::thread::spawn(move || {
        // SAFETY: the block allocated above, freed once.
        unsafe { Allocator.dealloc(address as *mut u8, layout) };
    })
    .join()
    .unwrap();
    let after = resident();
    assert!(
        after + SIZE * 3 / 4 <= touched,
        "freed on another thread, 64 MiB must leave resident memory: {touched} bytes before, {after} after"
    );
}

#[test]
fn the_daemon_and_the_mcp_server_are_long_lived_and_commands_are_not() {
    let long_lived = |arguments: &[&str]| super::small::is_long_lived(arguments.join("\0").as_bytes());
    assert!(long_lived(&["warden", "serve", "--config", "w.toml"]));
    assert!(long_lived(&["/usr/bin/warden", "-vv", "serve"]));
    assert!(long_lived(&["warden", "mcp", "--no-daemon"]));
    assert!(!long_lived(&["warden", "call", "srv__tool", "{\"a\":1}"]));
    assert!(!long_lived(&["warden", "tools", "serve"]), "only the command counts, not what it is given");
    assert!(!long_lived(&["warden"]));
    assert!(!long_lived(&["warden", "--version"]));
}
