//! Real MCP servers, written by other people, for Warden's tests to talk to.
//!
//! Warden's own scriptable test server only proves that Warden agrees with
//! itself. These helpers let the suites run against the reference servers
//! published on npm by the Model Context Protocol project, so that the wire
//! format, the handshake and the notifications are checked against an
//! implementation Warden's authors did not write.
//!
//! Every server is pinned to an exact version (and so is the SDK they are
//! built on), and is installed by [`install`] into a cache under the
//! workspace's `target/` directory:
//! `<target>/real-servers/<hash of the pins>/`. Nothing installed by hand
//! (a global npm package, an `npx` cache) is relied upon; all a machine needs
//! is `node` and `npm` on `PATH` and a reachable npm registry the first time.
//! Changing a pin changes the hash, so a new cache directory is filled and
//! the old one is simply left behind.
//!
//! The install runs once per machine: an exclusive `flock` on a lock file in
//! the cache directory makes parallel test processes (nextest runs every test
//! in its own process) wait for the one that installs, and a stamp file
//! written only after `npm` succeeded tells later runs that the install is
//! complete, so an interrupted install is redone. Within one process a
//! [`OnceLock`] avoids even taking the lock twice.
//!
//! Facts about the pinned versions that tests may rely on (Node 20):
//!
//! * [`EVERYTHING`] (`mcp-servers/everything` 2.0.0): answers protocol
//!   version `2025-11-25`; right after `notifications/initialized` it sends
//!   `notifications/tools/list_changed` (one per tool it registers then: one
//!   for a client with no capabilities, adding `simulate-research-query`),
//!   and with the client capability `roots` it sends a `roots/list` request
//!   about 350 ms later. It exits (status 0) when its stdin closes, unless a
//!   timer is running: for ever after `toggle-simulated-logging`, for 60 s
//!   while a `roots/list` request is unanswered. It dies on `SIGTERM` (no
//!   handler) and exits 0 on `SIGINT`. It prints
//!   `Starting default (STDIO) server...` on stderr.
//! * [`FILESYSTEM`] (`secure-filesystem-server` 0.2.0): takes the allowed
//!   directories as arguments (they must exist), answers `2025-11-25`, sends
//!   nothing after `notifications/initialized` unless the client declares
//!   `roots`, and exits when its stdin closes.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// A pinned npm package that provides a real MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RealServer {
    /// The npm package name, e.g. `@modelcontextprotocol/server-everything`.
    pub package: &'static str,
    /// The exact version installed (never a range).
    pub version: &'static str,
    /// The name of the package's executable under `node_modules/.bin`.
    pub bin: &'static str,
    /// Arguments the server always needs before any extra ones (for the
    /// everything server, the transport `stdio`).
    pub fixed_args: &'static [&'static str],
}

/// The MCP reference server that exercises every protocol feature: tools
/// (`echo`, `get-sum`, ...), resources, prompts, logging, completions and
/// tasks.
pub const EVERYTHING: RealServer = RealServer {
    package: "@modelcontextprotocol/server-everything",
    version: "2026.8.31",
    bin: "mcp-server-everything",
    // Its first argument selects the transport; without it the default is
    // stdio, but then an extra argument would be taken for a transport name.
    fixed_args: &["stdio"],
};

/// The MCP reference filesystem server; give it the allowed directories as
/// extra arguments to [`RealServer::command`].
pub const FILESYSTEM: RealServer = RealServer {
    package: "@modelcontextprotocol/server-filesystem",
    version: "2026.8.31",
    bin: "mcp-server-filesystem",
    fixed_args: &[],
};

/// Every server that [`install`] installs.
const ALL: [RealServer; 2] = [EVERYTHING, FILESYSTEM];

/// Transitive dependencies pinned through npm `overrides`: the servers ask for
/// caret ranges, and the SDK (and zod, which renders the input schemas) decide
/// what goes over the wire.
const OVERRIDES: [(&str, &str); 2] = [("@modelcontextprotocol/sdk", "1.32.2"), ("zod", "4.6.7")];

/// Name of the file whose exclusive `flock` serializes installs.
const LOCK_FILE: &str = ".install.lock";
/// Name of the file written (holding the `package.json` text) once npm succeeded.
const STAMP_FILE: &str = ".installed";

/// Installs every pinned real server (once per machine; safe when many test processes call it at once) and returns the install prefix.
///
/// The prefix holds `package.json` and `node_modules/`.
///
/// # Panics
///
/// When `npm` is missing or the install fails, with npm's output and what
/// to do about it.
pub fn install() -> PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(install_uncached).clone()
}

impl RealServer {
    /// The program and arguments that start this server over stdio (args: extra arguments such as allowed directories).
    ///
    /// The program is `node` and the first argument the absolute path of the
    /// package's entry script (not the `.bin` shim), followed by the server's
    /// [`fixed_args`](RealServer::fixed_args) and then `extra_args`. Calls
    /// [`install`] first, so it may take a while the very first time.
    ///
    /// # Panics
    ///
    /// When [`install`] does, or the installed entry script cannot be found.
    pub fn command(&self, extra_args: &[&str]) -> (String, Vec<String>) {
        let script = self.entry_script(&install());
        let script = script
            .into_os_string()
            .into_string()
            .unwrap_or_else(|path| panic!("the entry script of {} is not a UTF-8 path: {path:?}", self.package));
        let mut args = Vec::with_capacity(1 + self.fixed_args.len() + extra_args.len());
        args.push(script);
        args.extend(self.fixed_args.iter().map(ToString::to_string));
        args.extend(extra_args.iter().map(ToString::to_string));
        ("node".to_string(), args)
    }

    /// The absolute path of the script the package's `.bin` link points to.
    fn entry_script(&self, prefix: &Path) -> PathBuf {
        let link = bin_link(prefix, self);
        fs::canonicalize(&link).unwrap_or_else(|e| {
            panic!(
                "cannot resolve {} ({} {}): {e}; delete {} to force a reinstall",
                link.display(),
                self.package,
                self.version,
                prefix.display()
            )
        })
    }
}

fn bin_link(prefix: &Path, server: &RealServer) -> PathBuf {
    prefix.join("node_modules").join(".bin").join(server.bin)
}

/// The `package.json` that pins every server; its hash names the cache dir.
fn package_json() -> String {
    let entries = |pairs: &mut dyn Iterator<Item = (&str, &str)>| {
        pairs.map(|(name, version)| format!("    \"{name}\": \"{version}\"")).collect::<Vec<_>>().join(",\n")
    };
    let deps = entries(&mut ALL.iter().map(|s| (s.package, s.version)));
    let overrides = entries(&mut OVERRIDES.iter().copied());
    format!(
        "{{\n  \"name\": \"warden-real-servers\",\n  \"private\": true,\n  \
         \"description\": \"Pinned real MCP servers for Warden's tests (generated by warden-tests)\",\n  \
         \"dependencies\": {{\n{deps}\n  }},\n  \"overrides\": {{\n{overrides}\n  }}\n}}\n"
    )
}

/// 64-bit FNV-1a: a hash that, unlike `DefaultHasher`, never changes between
/// Rust releases, so the cache directory name is stable.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// `CARGO_TARGET_DIR` when set (relative to the workspace root when relative),
/// else the workspace's `target/`.
fn target_dir() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir.parent().unwrap_or(manifest_dir);
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace.join(dir), // join keeps an absolute path as is
        _ => workspace.join("target"),
    }
}

fn is_installed(prefix: &Path, manifest: &str) -> bool {
    fs::read_to_string(prefix.join(STAMP_FILE)).is_ok_and(|stamp| stamp == manifest)
        && ALL.iter().all(|s| bin_link(prefix, s).exists())
}

fn install_uncached() -> PathBuf {
    let manifest = package_json();
    let prefix = target_dir().join("real-servers").join(format!("{:016x}", fnv1a(manifest.as_bytes())));
    if is_installed(&prefix, &manifest) {
        return prefix;
    }
    fs::create_dir_all(&prefix)
        .unwrap_or_else(|e| panic!("cannot create the real-server cache {}: {e}", prefix.display()));
    let _lock = lock_exclusive(&prefix.join(LOCK_FILE));
    // Another process may have finished the install while this one waited.
    if !is_installed(&prefix, &manifest) {
        run_npm_install(&prefix, &manifest);
    }
    prefix
    // `_lock` is dropped here: closing the file releases the flock.
}

/// Opens (creating) `path` and holds an exclusive `flock` on it until the
/// returned file is dropped.
fn lock_exclusive(path: &Path) -> File {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot open the lock file {}: {e}", path.display()));
    loop {
        // SAFETY: the descriptor belongs to `file`, which outlives the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return file;
        }
        let err = io::Error::last_os_error();
        assert!(err.kind() == io::ErrorKind::Interrupted, "cannot lock {}: {err}", path.display());
    }
}

/// Runs `npm install` in `prefix`, then writes the stamp. Panics on failure.
fn run_npm_install(prefix: &Path, manifest: &str) {
    let stamp = prefix.join(STAMP_FILE);
    // A stale stamp (from other pins, which cannot happen with a hashed
    // directory, or a removed node_modules) must not survive a failed run.
    let _ = fs::remove_file(&stamp);
    write_file(&prefix.join("package.json"), manifest);

    let pins: Vec<String> = ALL.iter().map(|s| format!("{}@{}", s.package, s.version)).collect();
    eprintln!("warden-tests: installing real MCP servers {} into {}", pins.join(", "), prefix.display());
    let what_to_do = format!(
        "the real-server tests need Node.js (>= 18) with npm on PATH and, the first time, the npm registry; \
         install them (e.g. `apt-get install nodejs npm`) and rerun: the install is retried on every run \
         until it succeeds (delete {} to start from scratch)",
        prefix.display()
    );
    let output = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(prefix)
        .current_dir(prefix)
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `npm` ({e}); {what_to_do}"));
    assert!(
        output.status.success(),
        "`npm install --no-audit --no-fund --prefix {}` failed ({}) installing {}.\n\
             --- npm stderr ---\n{}\n--- npm stdout ---\n{}\n---\n{what_to_do}",
        prefix.display(),
        output.status,
        pins.join(", "),
        String::from_utf8_lossy(&output.stderr).trim_end(),
        String::from_utf8_lossy(&output.stdout).trim_end(),
    );
    if let Some(missing) = ALL.iter().find(|s| !bin_link(prefix, s).exists()) {
        panic!(
            "npm succeeded but {} is missing ({} {}); {what_to_do}",
            bin_link(prefix, missing).display(),
            missing.package,
            missing.version
        );
    }
    // Written last, and atomically, so that only a complete install counts.
    let tmp = prefix.join(format!("{STAMP_FILE}.tmp"));
    write_file(&tmp, manifest);
    fs::rename(&tmp, &stamp).unwrap_or_else(|e| panic!("cannot write {}: {e}", stamp.display()));
}

fn write_file(path: &Path, contents: &str) {
    fs::write(path, contents).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
