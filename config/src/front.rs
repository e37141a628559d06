//! The `[front]` table: Warden as a Streamable HTTP MCP server on the daemon.
//!
//! ```toml
//! [front]
//! listen = "127.0.0.1:7300"      # off when absent
//! tokens = [ { token = "${WARDEN_FRONT_TOKEN}", agent = "coder" }, { token = "${OPS_TOKEN}" } ]
//! allowed_origins = []           # Origin values accepted besides none
//! allowed_hosts = []             # Host values accepted besides this listener's own
//! # auth = "none"                # loopback only: for local tools that cannot send a token
//! session_idle_secs = 1800       # a session unused this long is ended
//! max_sessions = 256             # more are refused with 503
//! resource_tools = false         # also list srv__read_resource & co. as tools
//! ```
//!
//! Like the bridge, the front hands out every tool to whoever may connect,
//! so it is loopback-only unless `allow_non_loopback = true`, and it does
//! not start without tokens unless `auth = "none"` says, on a loopback
//! listener, that no token is wanted. Token values are `${VAR}`-expanded
//! and counted among the known secrets (never logged, redacted if a server
//! echoes one).

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

/// The `[front]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontConfig {
    /// Where the HTTP front listens; no front when absent.
    #[serde(default)]
    pub listen: Option<String>,
    /// Allow a `listen` address that is not loopback.
    #[serde(default)]
    pub allow_non_loopback: bool,
    /// The bearer tokens accepted, each one identity.
    #[serde(default)]
    pub tokens: Vec<FrontToken>,
    /// `"token"` (the default) or `"none"`.
    #[serde(default = "default_auth")]
    pub auth: String,
    /// `Origin` values accepted besides none.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted besides the listener's own.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Seconds a session may go unused before it is ended.
    #[serde(default = "default_session_idle_secs")]
    pub session_idle_secs: f64,
    /// The most sessions at once.
    #[serde(default = "default_max_sessions")]
    pub max_sessions: usize,
    /// List the primitive tools (`srv__read_resource`, ...) on the front too.
    #[serde(default)]
    pub resource_tools: bool,
}

/// One accepted bearer token.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontToken {
    /// The token (`${VAR}` expanded at load).
    pub token: String,
    /// The agent this identity is; `None`: the host's own view.
    #[serde(default)]
    pub agent: Option<String>,
    /// What logs and the audit record call whoever shows it (`ci`,
    /// `laptop`); `None`: its place in the list (`token #2`).
    #[serde(default)]
    pub name: Option<String>,
}

fn default_auth() -> String {
    "token".into()
}

fn default_session_idle_secs() -> f64 {
    30.0 * 60.0
}

fn default_max_sessions() -> usize {
    256
}

impl Default for FrontConfig {
    fn default() -> Self {
        FrontConfig {
            listen: None,
            allow_non_loopback: false,
            tokens: Vec::new(),
            auth: default_auth(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            session_idle_secs: default_session_idle_secs(),
            max_sessions: default_max_sessions(),
            resource_tools: false,
        }
    }
}

impl FrontConfig {
    /// The checked listen address, when the front is on.
    pub fn listen_addr(&self) -> Result<Option<SocketAddr>, (&'static str, String)> {
        let Some(listen) = &self.listen else { return Ok(None) };
        crate::daemon::checked_listen("front", listen, "127.0.0.1:7300", self.allow_non_loopback).map(Some)
    }

    /// Whether requests go without a token.
    pub fn open(&self) -> bool {
        self.auth == "none"
    }

    /// How long an unused session is kept.
    pub fn session_idle(&self) -> Duration {
        Duration::from_secs_f64(self.session_idle_secs)
    }

    /// Checks the table and expands the tokens; returns them as (label,
    /// value) for the known secrets.
    pub(super) fn check(
        &mut self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>, (String, String)> {
        let addr = self.listen_addr().map_err(|(field, problem)| (field.to_string(), problem))?;
        if !matches!(self.auth.as_str(), "token" | "none") {
            return Err(("front.auth".into(), format!("must be \"token\" or \"none\", not \"{}\"", self.auth)));
        }
        if self.open() && addr.is_some_and(|addr| !addr.ip().is_loopback()) {
            return Err((
                "front.auth".into(),
                "is \"none\" on a listener that is not loopback: anyone on the network could run every tool; \
                 give tokens instead"
                    .into(),
            ));
        }
        if addr.is_some() && !self.open() && self.tokens.is_empty() {
            return Err((
                "front.tokens".into(),
                "is empty, so no client could use the front: add `tokens = [{ token = \"${WARDEN_FRONT_TOKEN}\" }]` \
                 (or `auth = \"none\"` for a loopback listener whose clients cannot send a token)"
                    .into(),
            ));
        }
        if !(self.session_idle_secs.is_finite() && self.session_idle_secs > 0.0) {
            return Err((
                "front.session_idle_secs".into(),
                format!("must be a positive number of seconds, not {}", self.session_idle_secs),
            ));
        }
        if self.max_sessions == 0 {
            return Err(("front.max_sessions".into(), "must be at least 1".into()));
        }
        let mut secrets = Vec::new();
        for (index, entry) in self.tokens.iter_mut().enumerate() {
            let field = format!("front.tokens[{index}].token");
            entry.token = crate::expand(&entry.token, lookup).map_err(|problem| (field.clone(), problem))?;
            if entry.token.len() < 16 {
                return Err((
                    field,
                    "is shorter than 16 characters (or its variable is empty); use a long random token, e.g. \
                     `openssl rand -hex 32`"
                        .into(),
                ));
            }
            secrets.push((format!("front token {index}"), entry.token.clone()));
        }
        Ok(secrets)
    }
}

#[cfg(test)]
mod tests {
    use crate::WardenConfig;

    fn load(text: &str) -> Result<WardenConfig, String> {
        let lookup = |name: &str| (name == "FRONT_TOKEN").then(|| "0123456789abcdef0123".to_string());
        WardenConfig::from_toml_with(text, "warden.toml", &lookup).map_err(|error| error.to_string())
    }

    #[test]
    fn a_front_without_tokens_or_on_the_network_is_refused_saying_how_to_fix_it() {
        let cases = [
            ("[front]\nlisten = \"127.0.0.1:7300\"", "`front.tokens` is empty, so no client could use the front"),
            (
                "[front]\nlisten = \"0.0.0.0:7300\"\ntokens = [{ token = \"${FRONT_TOKEN}\" }]",
                "`front.listen` is 0.0.0.0:7300, which is not a loopback address",
            ),
            (
                "[front]\nlisten = \"0.0.0.0:7300\"\nallow_non_loopback = true\nauth = \"none\"",
                "`front.auth` is \"none\" on a listener that is not loopback",
            ),
            (
                "[front]\nlisten = \"127.0.0.1:7300\"\ntokens = [{ token = \"short\" }]",
                "`front.tokens[0].token` is shorter than 16",
            ),
            ("[front]\nlisten = \"127.0.0.1:7300\"\nauth = \"maybe\"", "`front.auth` must be \"token\" or \"none\""),
            ("[front]\nlisten = 7300", "`front.listen`"),
        ];
        for (text, expected) in cases {
            let error = load(text).unwrap_err();
            assert!(error.contains(expected), "{text}:\n{error}");
        }
    }

    #[test]
    fn front_tokens_are_expanded_and_known_as_secrets() {
        let config = load(
            "[front]\nlisten = \"127.0.0.1:7300\"\ntokens = [{ token = \"${FRONT_TOKEN}\", agent = \"coder\" }]\n\
             [[agents]]\nname = \"coder\"\nallowed_tools = [\"*\"]",
        )
        .unwrap();
        assert_eq!(config.front.tokens[0].token, "0123456789abcdef0123");
        assert_eq!(config.front.tokens[0].agent.as_deref(), Some("coder"));
        assert!(config.known_secrets.iter().any(|(_, value)| value == "0123456789abcdef0123"));
        // Off by default: no table, no listener, nothing to check.
        assert_eq!(load("").unwrap().front.listen_addr(), Ok(None));
    }
}
