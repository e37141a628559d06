//! Links the unwinder into the `warden` binary instead of loading it.
//!
//! Rust's standard library takes its unwinder (`_Unwind_*`, what a
//! caught panic and a backtrace need) from libgcc_s.so on glibc targets.
//! Loading that library costs every `warden` process: a fourth shared
//! object to map and resolve, and its constructor asks the CPU for its
//! features with `cpuid`, which traps to the hypervisor on a virtual
//! machine. `warden call` is a whole process per call (goal: 2 ms), and
//! a hello-world Rust program starts 0.05 to 0.1 ms sooner without the
//! library (0.92–1.00 ms against 0.82–0.89 here, `true` 0.8). The same
//! unwinder, statically linked (`libgcc_eh.a`, from the same GCC), is
//! found before libgcc_s, and the linker's `--as-needed` then drops the
//! library. Unwinding behaves the same: panics are still caught (ractor's
//! supervision, tokio's tasks).
//!
//! Only where the archive exists (asked of the C compiler Rust links
//! with); elsewhere the binary links as before.

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The archive is asked of this compiler: another one may answer otherwise.
    println!("cargo:rerun-if-env-changed=CC");
    let target = |key: &str| env::var(key).unwrap_or_default();
    let glibc = target("CARGO_CFG_TARGET_OS") == "linux" && target("CARGO_CFG_TARGET_ENV") == "gnu";
    let static_crt = target("CARGO_CFG_TARGET_FEATURE").split(',').any(|feature| feature == "crt-static");
    if glibc && !static_crt && unwinder_archive_exists() {
        println!("cargo:rustc-link-lib=static=gcc_eh");
    }
}

/// Whether the C compiler knows `libgcc_eh.a` (it answers the bare name
/// when it does not).
fn unwinder_archive_exists() -> bool {
    let compiler = env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(output) = Command::new(compiler).arg("-print-file-name=libgcc_eh.a").output() else {
        return false;
    };
    let path = String::from_utf8_lossy(&output.stdout);
    let path = path.trim();
    output.status.success() && path.contains('/') && std::path::Path::new(path).is_file()
}
