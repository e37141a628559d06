//! One `[servers.NAME]` entry: its fields, and the checks and `${VAR}`
//! expansion it gets at load time.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use warden_policy::PolicyLayer;

use crate::{check_ca_cert, expand, masked, CrashRetry, Masked, DEFAULT_STARTUP_TIMEOUT, HTTP_TRANSPORTS};

/// One server.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// stdio: the program to start.
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables added to Warden's own.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: the working directory.
    pub cwd: Option<PathBuf>,
    /// HTTP: the endpoint.
    pub url: Option<String>,
    /// HTTP: headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// HTTP: a PEM file of CA certificates trusted for this server besides
    /// the system's, for a server with a private CA.
    pub ca_cert: Option<PathBuf>,
    /// HTTP: `auto` (default: Streamable HTTP, falling back to the legacy
    /// HTTP+SSE transport for a server that refuses it), `streamable-http`
    /// or `sse` (legacy only).
    pub transport: Option<String>,
    /// HTTP: how Warden logs in to a server behind OAuth (all optional).
    pub oauth: Option<crate::OAuthConfig>,
    /// Only these of the server's tools (its own names, or globs) are
    /// listed and callable; absent: all of them.
    pub enabled_tools: Option<Vec<String>>,
    /// These of the server's tools (its own names, or globs) are never
    /// listed or callable, even when `enabled_tools` names them.
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    /// New names for some of the server's tools: its own name → the name
    /// callers (and policy rules) use. Filters still match its own names.
    #[serde(default)]
    pub rename: BTreeMap<String, String>,
    /// How long the handshake plus tool discovery may take, in seconds.
    pub startup_timeout_secs: Option<f64>,
    /// stdio: start with Warden's environment (default) or an empty one.
    #[serde(default = "yes")]
    pub inherit_env: bool,
    /// stdio, with `inherit_env = false`: Warden's variables passed anyway
    /// (e.g. `["PATH", "HOME"]`).
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// stdio: consecutive restarts after crashes before the server is
    /// failed (default 5; 0 turns restarts off).
    pub max_restarts: Option<u32>,
    /// stdio: the first restart's delay in seconds, doubled for each further
    /// one (default 1: 1, 2, 4, 8, 16 s).
    pub restart_delay_secs: Option<f64>,
    /// Which calls are repeated when the server crashed while running them:
    /// `safe` (default: tools annotated read-only or idempotent), `always`,
    /// or `never`.
    pub retry_after_crash: Option<String>,
    /// Which MCP revision to speak: `auto` (default: probe, prefer the
    /// newest both speak) or a version such as `2026-07-28` or `2025-11-25`.
    pub protocol_version: Option<String>,
    /// The policy for this server's tools, below `security.tool_policies`
    /// and above the server's own annotations.
    pub default_policy: Option<PolicyLayer>,
    /// The directories this server is told it may work in (`roots/list`),
    /// instead of the config's top-level `roots`: `file://` URIs (absolute
    /// paths are turned into them at load time).
    pub roots: Option<Vec<String>>,
    /// The file this server was read from: the config, or a drop-in of its
    /// `mcp_server_dir`. Set at load time.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
    /// `env` and `headers` as they may be shown: values masked, `${VAR}`
    /// references named. Set at load time.
    #[serde(skip)]
    pub masked: Masked,
    /// What its entry in another program's shape (codex, VS Code, Claude,
    /// Zed, goose) set that Warden does not honour, each said as a
    /// warning. Set at load time.
    #[serde(skip)]
    pub ignored: Vec<String>,
}

/// Every field of a server in Warden's schema, as a file writes it.
pub(crate) const SERVER_FIELDS: [&str; 21] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "ca_cert",
    "transport",
    "oauth",
    "enabled_tools",
    "disabled_tools",
    "rename",
    "startup_timeout_secs",
    "inherit_env",
    "pass_env",
    "max_restarts",
    "restart_delay_secs",
    "retry_after_crash",
    "protocol_version",
    "default_policy",
    "roots",
];

fn yes() -> bool {
    true
}

impl ServerConfig {
    pub(crate) fn check(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("has both `command` and `url`; set `command` for a local (stdio) server or `url` for a remote (HTTP) one, not both".into()),
            (None, None) => return Err("has neither `command` nor `url`; set `command` for a local (stdio) server or `url` for a remote (HTTP) one".into()),
            (Some(command), None) if command.trim().is_empty() => return Err("`command` is empty".into()),
            (Some(_), None) if !self.headers.is_empty() => return Err("`headers` only applies to `url` servers; use `env` for a `command` server".into()),
            (Some(_), None) if self.ca_cert.is_some() => return Err("`ca_cert` only applies to `https://` `url` servers".into()),
            (Some(_), None) if self.transport.is_some() => return Err("`transport` only applies to `url` servers".into()),
            (Some(_), None) if self.oauth.is_some() => return Err("`oauth` only applies to `url` servers".into()),
            (None, Some(_))
                if !self.args.is_empty()
                    || !self.env.is_empty()
                    || self.cwd.is_some()
                    || !self.inherit_env
                    || !self.pass_env.is_empty() =>
            {
                return Err("`args`, `env`, `cwd`, `inherit_env` and `pass_env` only apply to `command` servers; a `url` server takes `headers`".into())
            }
            (None, Some(_)) if self.max_restarts.is_some() || self.restart_delay_secs.is_some() => {
                return Err("`max_restarts` and `restart_delay_secs` only apply to `command` servers: HTTP servers are not restarted".into())
            }
            _ => {}
        }
        if let Some(url) = &self.url {
            let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
            if !scheme_ok || url.contains(char::is_whitespace) {
                return Err(format!(
                    "`url` must be an http:// or https:// address of the server's MCP endpoint, not \"{url}\""
                ));
            }
        }
        if let (Some(path), Some(url)) = (&self.ca_cert, &self.url) {
            if !url.starts_with("https://") {
                return Err("`ca_cert` only applies to `https://` URLs; this server's `url` is plain `http://`".into());
            }
            check_ca_cert(path)?;
        }
        for (field, secs) in
            [("startup_timeout_secs", self.startup_timeout_secs), ("restart_delay_secs", self.restart_delay_secs)]
        {
            if let Some(secs) = secs {
                if !(secs.is_finite() && secs > 0.0) {
                    return Err(format!("`{field}` must be a positive number of seconds, not {secs}"));
                }
            }
        }
        if let Some(policy) = &self.default_policy {
            policy.validate().map_err(|problem| format!("`default_policy`: {problem}"))?;
        }
        if let Some(transport) = &self.transport {
            if !HTTP_TRANSPORTS.contains(&transport.as_str()) {
                return Err(format!(
                    "`transport` must be \"auto\", \"streamable-http\" or \"sse\", not \"{transport}\""
                ));
            }
        }
        if let Some(oauth) = &mut self.oauth {
            if self.headers.keys().any(|header| header.eq_ignore_ascii_case("authorization")) {
                return Err(
                    "has both `oauth` and an `Authorization` header; Warden's OAuth sends its own — remove one".into(),
                );
            }
            oauth.check(lookup)?;
        }
        for (field, patterns) in [
            ("enabled_tools", self.enabled_tools.as_deref().unwrap_or_default()),
            ("disabled_tools", &self.disabled_tools),
        ] {
            warden_policy::ToolPatterns::new(patterns).map_err(|error| format!("`{field}`: {error}"))?;
        }
        check_renames(&self.rename)?;
        if let Some(retry) = &self.retry_after_crash {
            if CrashRetry::parse(retry).is_none() {
                return Err(format!("`retry_after_crash` must be \"safe\", \"always\" or \"never\", not \"{retry}\""));
            }
        }
        if let Some(version) = &self.protocol_version {
            crate::ProtocolChoice::parse(version)?;
        }
        if let Some(roots) = &mut self.roots {
            crate::roots::normalise(roots).map_err(|problem| format!("`roots` {problem}"))?;
        }
        if self.inherit_env && !self.pass_env.is_empty() {
            return Err(
                "`pass_env` only applies with `inherit_env = false` (with the default, every variable is passed)"
                    .into(),
            );
        }
        let mask = |values: &BTreeMap<String, String>| {
            values.iter().map(|(key, value)| (key.clone(), masked::mask(value))).collect()
        };
        self.masked = Masked { env: mask(&self.env), headers: mask(&self.headers) };
        for (field, values) in [("env", &mut self.env), ("headers", &mut self.headers)] {
            for (key, value) in values.iter_mut() {
                *value = expand(value, lookup).map_err(|problem| format!("`{field}.{key}`: {problem}"))?;
            }
        }
        Ok(())
    }

    /// How long the handshake plus tool discovery may take.
    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout_secs.map(Duration::from_secs_f64).unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }
}

/// `rename`: every new name is a usable tool name, and no two tools get
/// the same one (which would leave one of them unreachable).
fn check_renames(renames: &BTreeMap<String, String>) -> Result<(), String> {
    let mut targets = BTreeMap::new();
    for (old, new) in renames {
        if new.trim().is_empty() || new.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!(
                "`rename`: '{old}' → '{new}': a tool name must be non-empty, without spaces or control characters"
            ));
        }
        if let Some(first) = targets.insert(new, old) {
            return Err(format!("`rename` gives '{first}' and '{old}' the same name '{new}'; pick two names"));
        }
    }
    Ok(())
}
