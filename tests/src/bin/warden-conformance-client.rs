//! The client command the conformance suite's auth scenarios drive:
//! `warden-conformance-client SERVER_URL`, run by the suite with the
//! scenario's name in `$MCP_CONFORMANCE_SCENARIO` and, for scenarios that
//! need them, credentials in `$MCP_CONFORMANCE_CONTEXT`.
//!
//! It does what a user of Warden does: writes a config with the server as
//! a `url` server (the context's `client_id`, `client_secret` or private
//! key as its `oauth` table; the `client-credentials` scenarios with
//! `grant = "client_credentials"`), then runs
//! `warden call --no-daemon s__test-tool {}` — the tool every auth
//! scenario's server has — with `$BROWSER` set to the test browser, so
//! Warden logs in by itself as it would with a person at the browser. No
//! MCP or OAuth is spoken here: everything the suite checks is Warden's.
//!
//! `$WARDEN_CONFORMANCE_WARDEN` is the `warden` binary to run and
//! `$WARDEN_CONFORMANCE_BROWSER` the browser; each run gets a fresh
//! state directory (no tokens from an earlier scenario).

use std::os::unix::fs::OpenOptionsExt as _;
use std::process::{Command, ExitCode};

use serde_json::Value;

fn main() -> ExitCode {
    let url = std::env::args().last().expect("usage: warden-conformance-client SERVER_URL");
    let warden = std::env::var("WARDEN_CONFORMANCE_WARDEN").expect("$WARDEN_CONFORMANCE_WARDEN names warden");
    let browser = std::env::var("WARDEN_CONFORMANCE_BROWSER").expect("$WARDEN_CONFORMANCE_BROWSER names a browser");
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .map(|text| serde_json::from_str(&text).expect("the scenario's context is JSON"))
        .unwrap_or(Value::Null);
    let dir = warden_tests::scratch_dir("conformance-client");
    let config = dir.join("warden.toml");
    std::fs::write(&config, config_text(&url, &scenario, &context, &dir)).expect("the config is written");
    let status = Command::new(warden)
        .args(["call", "--no-daemon", "--config"])
        .arg(&config)
        .args(["s__test-tool", "{}"])
        .env("WARDEN_HOME", dir.join("state"))
        .env("BROWSER", browser)
        .env_remove("WARDEN_CONFIG")
        .status()
        .expect("warden runs");
    ExitCode::from(u8::try_from(status.code().unwrap_or(1)).unwrap_or(1))
}

/// The config a user would write for this server and these credentials.
fn config_text(url: &str, scenario: &str, context: &Value, dir: &std::path::Path) -> String {
    // The suite's tool has no annotations: without this the call would
    // wait for a person to approve it.
    let mut text = format!("[security]\nauto_approve = true\n\n[servers.s]\nurl = {}\n", toml_string(url));
    let mut oauth = Vec::new();
    for field in ["client_id", "client_secret"] {
        if let Some(value) = context[field].as_str() {
            oauth.push(format!("{field} = {}", toml_string(value)));
        }
    }
    if let Some(pem) = context["private_key_pem"].as_str() {
        let key = dir.join("client-key.pem");
        let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&key);
        std::io::Write::write_all(file.as_mut().expect("the key file opens"), pem.as_bytes()).expect("written");
        oauth.push(format!("private_key_file = {}", toml_string(&key.display().to_string())));
        let alg = context["signing_algorithm"].as_str().unwrap_or("RS256");
        oauth.push(format!("signing_alg = {}", toml_string(alg)));
    }
    if scenario.starts_with("auth/client-credentials") {
        oauth.push("grant = \"client_credentials\"".to_string());
    }
    if !oauth.is_empty() {
        text += &format!("\n[servers.s.oauth]\n{}\n", oauth.join("\n"));
    }
    text
}

/// A TOML basic string: JSON's escapes are TOML's.
fn toml_string(value: &str) -> String {
    Value::from(value).to_string()
}
