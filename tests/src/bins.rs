//! Paths of the binaries this workspace builds, for tests that run them.
//!
//! Cargo tells an integration test where its own package's binaries are
//! (`CARGO_BIN_EXE_*`), but not another package's: the CLI tests in `bins/`
//! need the test server built here. Every binary lands in the same target
//! directory as the test executable's parent (`target/debug/deps/..`), so
//! look there. `cargo test --workspace` builds them all before any test runs.

use std::path::PathBuf;

/// The path of binary `name` in the target directory the tests run from.
///
/// Panics with what to do if it was not built.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable has a path");
    let mut dir = exe.parent().expect("the test executable is in a directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{} was not built; run the tests with `cargo test --workspace` (it builds every binary)",
        path.display()
    );
    path
}

/// The scriptable test MCP server.
pub fn test_server() -> PathBuf {
    binary("warden-test-server")
}

/// The test browser of the OAuth suites (set as `$BROWSER`).
pub fn test_browser() -> PathBuf {
    binary("warden-test-browser")
}
