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
//! The same goes for servers written with the official Python SDK (`mcp` on
//! PyPI): [`python_server_command`] runs a script from `tests/python/` with
//! the interpreter of a virtualenv, `<target>/real-servers/python-<hash>/venv`,
//! that [`install_python`] creates with `python3 -m venv` and fills with
//! `pip install -r tests/python/requirements.txt`. That file pins `mcp` and
//! every package it pulls in with `==` (it is the `pip freeze` of a working
//! install), because the SDK's own ranges would let uvicorn, starlette or
//! pydantic drift under the tests. The hash covers the requirements and the
//! `python3 --version`, and the install is guarded by the same lock and
//! stamp as the npm one. A machine needs `python3` with its `venv` module
//! (`ensurepip`; on Debian and Ubuntu the `python3-venv` package).
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

/// The MCP reference memory server (a knowledge graph of entities,
/// relations and observations); tool search's catalog uses its tools.
pub const MEMORY: RealServer = RealServer {
    package: "@modelcontextprotocol/server-memory",
    version: "2026.8.31",
    bin: "mcp-server-memory",
    fixed_args: &[],
};

/// Every server that [`install`] installs.
const ALL: [RealServer; 3] = [EVERYTHING, FILESYSTEM, MEMORY];

/// Transitive dependencies pinned through npm `overrides`: the servers ask for
/// caret ranges, and the SDK (and zod, which renders the input schemas) decide
/// what goes over the wire.
const OVERRIDES: [(&str, &str); 2] = [("@modelcontextprotocol/sdk", "1.32.2"), ("zod", "4.6.7")];

/// Name of the file whose exclusive `flock` serializes installs.
const LOCK_FILE: &str = ".install.lock";
/// Name of the file written (holding the manifest text: `package.json`, or
/// the Python requirements) once the install succeeded.
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

fn is_installed(prefix: &Path, manifest: &str, complete: &dyn Fn(&Path) -> bool) -> bool {
    fs::read_to_string(prefix.join(STAMP_FILE)).is_ok_and(|stamp| stamp == manifest) && complete(prefix)
}

/// Fills the cache directory `<target>/real-servers/<kind><hash of manifest>`
/// once per machine and returns it.
///
/// `complete` tells whether the files the tests use are there; `fill` does
/// the install (panicking on failure). The stamp holding `manifest` is
/// removed before `fill` and written, atomically, only after it and
/// `complete` succeeded, so an interrupted install is redone. All of it
/// happens under an exclusive `flock`, so parallel test processes wait for
/// the one that installs.
pub(crate) fn install_guarded(
    kind: &str,
    manifest: &str,
    complete: &dyn Fn(&Path) -> bool,
    fill: &dyn Fn(&Path),
) -> PathBuf {
    let prefix = target_dir().join("real-servers").join(format!("{kind}{:016x}", fnv1a(manifest.as_bytes())));
    if is_installed(&prefix, manifest, complete) {
        return prefix;
    }
    fs::create_dir_all(&prefix)
        .unwrap_or_else(|e| panic!("cannot create the real-server cache {}: {e}", prefix.display()));
    let _lock = lock_exclusive(&prefix.join(LOCK_FILE));
    // Another process may have finished the install while this one waited.
    if !is_installed(&prefix, manifest, complete) {
        let stamp = prefix.join(STAMP_FILE);
        // A stale stamp (from other pins, which cannot happen with a hashed
        // directory, or a removed install) must not survive a failed run.
        let _ = fs::remove_file(&stamp);
        fill(&prefix);
        assert!(complete(&prefix), "the install into {} left files missing; delete it and rerun", prefix.display());
        // Written last, and atomically, so that only a complete install counts.
        let tmp = prefix.join(format!("{STAMP_FILE}.tmp"));
        write_file(&tmp, manifest);
        fs::rename(&tmp, &stamp).unwrap_or_else(|e| panic!("cannot write {}: {e}", stamp.display()));
    }
    prefix
    // `_lock` is dropped here: closing the file releases the flock.
}

fn install_uncached() -> PathBuf {
    let npm_complete = |prefix: &Path| ALL.iter().all(|s| bin_link(prefix, s).exists());
    let manifest = package_json();
    install_guarded("", &manifest, &npm_complete, &|prefix| run_npm_install(prefix, &manifest))
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

/// Writes `package.json` and runs `npm install` in `prefix`. Panics on failure.
fn run_npm_install(prefix: &Path, manifest: &str) {
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
}

fn write_file(path: &Path, contents: &str) {
    fs::write(path, contents).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// The program and arguments that run the Node script `name` from
/// `tests/node/` (an MCP client written with the TypeScript SDK) against
/// the pinned SDK: the script is copied into the install prefix, so that
/// Node resolves `@modelcontextprotocol/sdk` from the prefix's
/// `node_modules` (the SDK is pinned there by the npm `overrides`).
///
/// # Panics
///
/// When [`install`] does, or the script cannot be copied.
pub fn node_script(name: &str) -> (String, Vec<String>) {
    let prefix = install();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("node").join(name);
    let copy = prefix.join(name);
    let text = fs::read_to_string(&source).unwrap_or_else(|e| panic!("cannot read {}: {e}", source.display()));
    // Written to a temporary name and renamed: parallel tests may copy at
    // once, from several processes and from several threads of one.
    static COPIES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let nth = COPIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let partial = prefix.join(format!(".{name}.{}.{nth}", std::process::id()));
    write_file(&partial, &text);
    fs::rename(&partial, &copy).unwrap_or_else(|e| panic!("cannot write {}: {e}", copy.display()));
    ("node".to_string(), vec![copy.display().to_string()])
}

/// The pins for the Python SDK servers: `mcp` and everything it pulls in,
/// each with `==` (regenerate with `pip freeze` from a working venv).
const PYTHON_REQUIREMENTS: &str = include_str!("../python/requirements.txt");

/// The path of a server script in `tests/python/`, e.g.
/// `streamable_server.py`.
pub fn python_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("python").join(name)
}

/// The program and arguments that run the Python script `script` (see
/// [`python_script`]) with the pinned SDK: the venv's `python` and the
/// script's path. Calls [`install_python`] first, so it may take a while
/// the very first time.
///
/// # Panics
///
/// When [`install_python`] does, or a path is not UTF-8.
pub fn python_server_command(script: &Path) -> (String, Vec<String>) {
    let utf8 =
        |path: PathBuf| path.into_os_string().into_string().unwrap_or_else(|path| panic!("not a UTF-8 path: {path:?}"));
    (utf8(venv_python(&install_python())), vec![utf8(script.to_path_buf())])
}

/// Creates the virtualenv with the pinned Python SDK (once per machine; safe
/// when many test processes call it at once) and returns the cache directory;
/// the venv is its `venv/` subdirectory.
///
/// # Panics
///
/// When `python3`, its `venv` module or `pip install` fails, with their
/// output and what to do about it.
pub fn install_python() -> PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX
        .get_or_init(|| {
            // The venv runs the interpreter it was made with: a new Python gets
            // a new venv.
            let manifest = format!("# {}\n{PYTHON_REQUIREMENTS}", python3_version());
            let complete = |prefix: &Path| venv_python(prefix).exists();
            install_guarded("python-", &manifest, &complete, &run_pip_install)
        })
        .clone()
}

fn venv_python(prefix: &Path) -> PathBuf {
    prefix.join("venv").join("bin").join("python")
}

/// What to do when the Python install fails.
const PYTHON_HELP: &str = "the Python SDK tests need python3 (>= 3.10) with its venv module and ensurepip \
     (on Debian/Ubuntu `apt-get install python3 python3-venv`) and, the first time, PyPI";

/// `python3 --version`, e.g. `Python 3.11.7`.
fn python3_version() -> String {
    let output = Command::new("python3")
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `python3` ({e}); {PYTHON_HELP}"));
    assert!(output.status.success(), "`python3 --version` failed ({}); {PYTHON_HELP}", output.status);
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Runs `command` and panics with its output unless it succeeds.
fn run_or_panic(command: &mut Command, what: &str, prefix: &Path) {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {what} ({e}); {PYTHON_HELP}"));
    assert!(
        output.status.success(),
        "{what} failed ({}).\n--- stderr ---\n{}\n--- stdout ---\n{}\n---\n{PYTHON_HELP}; \
         the install is retried on every run until it succeeds (delete {} to start from scratch)",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim_end(),
        String::from_utf8_lossy(&output.stdout).trim_end(),
        prefix.display()
    );
}

/// Writes `requirements.txt`, creates `prefix/venv` and installs the pins
/// into it. Panics on failure.
fn run_pip_install(prefix: &Path) {
    let requirements = prefix.join("requirements.txt");
    write_file(&requirements, PYTHON_REQUIREMENTS);
    let venv = prefix.join("venv");
    eprintln!("warden-tests: installing the Python MCP SDK into {}", venv.display());
    // `--clear`: a venv left half-made by an interrupted run starts over.
    run_or_panic(
        Command::new("python3").args(["-m", "venv", "--clear"]).arg(&venv),
        "`python3 -m venv` (a missing `ensurepip` means the python3-venv package is not installed)",
        prefix,
    );
    run_or_panic(
        Command::new(venv_python(prefix))
            .args(["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "-r"])
            .arg(&requirements),
        "`pip install -r requirements.txt` in the venv",
        prefix,
    );
}

/// Warden with server-everything as `everything` (after the TOML lines
/// `top_level`), its tool list complete: one tool is registered only after
/// `initialized`, announced by `list_changed`.
pub async fn start_everything(top_level: &str) -> warden_actors::Warden {
    let table = crate::server_table("everything", EVERYTHING.command(&[]), "");
    let warden = crate::start_running(&format!("{top_level}{table}")).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !warden.tools().iter().any(|entry| entry.name == "everything__simulate-research-query") {
        assert!(std::time::Instant::now() < deadline, "server-everything never listed simulate-research-query");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    warden
}

/// A file of server-everything's `dist/docs/` folder, which its static
/// resources serve.
pub fn everything_doc(file: &str) -> String {
    let path = install().join("node_modules/@modelcontextprotocol/server-everything/dist/docs").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
