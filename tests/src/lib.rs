//! Shared pieces of Warden's integration suites.
//!
//! - [`real_servers`]: MCP servers other people wrote, installed at pinned
//!   versions into a cache under `target/`, so the suites test Warden against
//!   the servers users run rather than against Warden's own idea of MCP.
//! - [`http_everything`]: server-everything over Streamable HTTP on a
//!   loopback port, for the HTTP suites and benchmark; [`listening`] finds
//!   which port a child started on port 0 got.
//! - [`python_http`]: a server on the pinned Python SDK over Streamable
//!   HTTP on a free loopback port.
//! - [`test_certs`]: a private CA and a server certificate made at test
//!   time, for HTTPS test servers.
//! - [`oauth_server`]: an authorization server and an MCP server it
//!   protects, in one scriptable in-process HTTP server, for the OAuth
//!   suites; [`browser`] follows its redirects as a person's browser would.
//! - [`conformance`]: the official MCP conformance suite and the Node 22
//!   it runs on, pinned by a lockfile; `warden-conformance-client` is the
//!   client command its auth scenarios drive (`warden` on a config made
//!   from the scenario's context).
//! - [`bins`]: where the binaries built by this package are (the scriptable
//!   `warden-test-server`, the `embed-host` example), for tests elsewhere.
//! - The scriptable test server itself is `src/bin/warden-test-server/`,
//!   written from scratch so it shares no code (and no bugs) with Warden.

pub mod bins;
pub mod browser;
pub mod conformance;
pub mod fault_matrix;
pub mod http_everything;
pub mod listening;
pub mod nats;
pub mod oauth_server;
pub mod python_http;
pub mod real_servers;
pub mod test_certs;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh, empty directory for one test, under `warden-tests/` in the
/// system temp directory. Named after this process, so the first call
/// removes what test processes that are gone left behind: the suites
/// leave their directories for a failing test to be looked into, and
/// without the sweep every run added some hundreds.
pub fn scratch_dir(label: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    let parent = std::env::temp_dir().join("warden-tests");
    SWEPT.call_once(|| sweep_scratch_dirs(&parent));
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!("{}-{label}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temp directory is writable");
    dir
}

/// Removes the scratch directories of test processes no longer running.
fn sweep_scratch_dirs(parent: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name.to_str().and_then(|name| name.split('-').next()).and_then(|pid| pid.parse::<u32>().ok());
        if pid.is_some_and(|pid| !process_alive(pid)) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// One state directory for every test of this test binary, set as
/// `WARDEN_HOME` the first time (the OAuth suites keep tokens there; their
/// servers differ by port, so their token files do too).
pub fn shared_home(label: &str) -> PathBuf {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = scratch_dir(label);
        std::env::set_var("WARDEN_HOME", &dir);
        dir
    })
    .clone()
}

/// True while a process with this id exists (and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the field after the parenthesised command name.
        Ok(stat) => stat.rsplit_once(')').map(|(_, rest)| !rest.trim_start().starts_with('Z')).unwrap_or(false),
        Err(_) => false,
    }
}

/// Waits (up to `limit`) for a process to be gone; true if it went.
pub fn wait_until_gone(pid: u32, limit: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if !process_alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    !process_alive(pid)
}

/// A TOML server table running `program` with `args`, a startup timeout
/// generous enough for a first `node` start on a busy machine, and `extra`
/// TOML lines.
pub fn server_table(name: &str, (program, args): (String, Vec<String>), extra: &str) -> String {
    format!("[servers.{name}]\ncommand = {program:?}\nargs = {args:?}\nstartup_timeout_secs = 60\n{extra}")
}

/// Config text that turns auto-approval on. Suites about transports,
/// supervision and real servers add it: the tools they call mostly carry no
/// annotations, so Warden's default policy would ask a person for each call.
/// The policy suites leave it out.
pub const AUTO_APPROVE: &str = "\n[security]\nauto_approve = true\n";

/// Parses `toml` plus [`AUTO_APPROVE`] (into its own `[security]` table when
/// it has one).
pub fn test_config(toml: &str) -> Result<warden_actors::WardenConfig, warden_actors::ConfigError> {
    let text = match toml.split_once("[security]\n") {
        Some((before, after)) => format!("{before}[security]\nauto_approve = true\n{after}"),
        None => format!("{toml}{AUTO_APPROVE}"),
    };
    warden_actors::WardenConfig::from_toml(&text, "test config")
}

/// What a model reads from a call that must succeed (`call_tool_text`).
pub async fn model_text(warden: &warden_actors::Warden, name: &str, arguments: serde_json::Value) -> String {
    let rendered = warden
        .host()
        .call_text(name, arguments.clone(), warden_actors::CallOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!rendered.is_error, "{name} {arguments}: {}", rendered.text);
    rendered.text
}

/// Starts Warden with `toml` (auto-approval on) and waits (up to 90 s) until
/// every server is running; panics naming any that is not.
pub async fn start_running(toml: &str) -> warden_actors::Warden {
    let config = test_config(toml).expect("valid config");
    let warden = warden_actors::Warden::start(&config).await.expect("Warden starts");
    tokio::time::timeout(std::time::Duration::from_secs(90), warden.settled()).await.expect("servers settle");
    for status in warden.status() {
        assert_eq!(status.state, warden_actors::ServerState::Running, "{}", status.name);
    }
    warden
}
