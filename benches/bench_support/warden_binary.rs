//! The `warden` binary a bench runs as a daemon or a CLI, built with the
//! bench's profile by the bench itself (`cargo bench` builds only the
//! bench targets).

/// Builds the `warden` binary with this bench's profile; its path.
///
/// `WARDEN_BENCH_BINARY` names a `warden` binary to use instead, unbuilt:
/// for comparing two builds with the same bench.
pub(crate) fn build_warden() -> std::path::PathBuf {
    if let Some(binary) = std::env::var_os("WARDEN_BENCH_BINARY") {
        return binary.into();
    }
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace");
    let mut cargo = std::process::Command::new(env!("CARGO"));
    cargo.args(["build", "--release", "--quiet", "-p", "warden", "--manifest-path"]).arg(workspace.join("Cargo.toml"));
    // What cargo sets for running this bench, not what a user's shell has:
    // `ring`'s build script reruns when `CARGO_MANIFEST_DIR` changes, and
    // with it half the workspace, once here and again at the next
    // `cargo bench` (two minutes a run, and the two builds evicting each
    // other).
    const SET_FOR_A_RUN: &[&str] = &[
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_") || SET_FOR_A_RUN.contains(&&*name) {
            cargo.env_remove(&*name);
        }
    }
    let status = cargo.status().expect("cargo runs");
    assert!(status.success(), "building the warden binary failed");
    warden_tests::bins::binary("warden")
}
