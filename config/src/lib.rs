//! Warden's configuration: which servers to run and how.
//!
//! One schema, read with the `config` crate from TOML:
//!
//! ```toml
//! [servers.everything]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]
//! env = { API_KEY = "${MY_API_KEY}" }
//! startup_timeout_secs = 30
//! ```
//!
//! A server has exactly one of `command` (stdio) or `url` (Streamable HTTP,
//! or the legacy HTTP+SSE transport: `transport = "auto" | "streamable-http" | "sse"`).
//! Unknown keys are errors, because a typo like `comand` silently ignored is
//! a server that never starts for a reason nobody can see. `${VAR}` in `env`
//! and `headers` values is replaced from Warden's environment at load time;
//! an unset variable is an error, so a missing token is found before a
//! server runs with an empty one. `$${` writes a literal `${`.
//!
//! An `https://` server behind a private certificate authority names that
//! CA's certificate with `ca_cert = "path/to/ca.pem"` (relative to Warden's
//! working directory, like `cwd`). The file is read at load time: a missing
//! or unreadable one is a config error, not a handshake failure later.
//!
//! TOML is canonical; YAML and JSON are read too, by the file's extension
//! (`.toml`, `.yaml`/`.yml`, `.json`), and the server lists other MCP
//! products write (`mcp_servers:` lists, `mcpServers` maps) are read into
//! the same schema (`shapes.rs`). `mcp_server_dir` names a directory of
//! one-server-per-file drop-ins (`drop_ins.rs`). Where a config is looked
//! for when none is named is `discovery.rs`'s business.
//!
//! Every error names the file, the server and the field. Loading is all or
//! nothing: a config with one bad server is an error, never a config with
//! that server missing.
//!
//! This crate is plain data and checks: no actors, no async runtime, so the
//! CLI's `config check`, the daemon and an embedding host all read configs
//! the same way, and its tests run in milliseconds. The tour:
//!
//! - this file: [`WardenConfig`], [`ServerConfig`], [`ConfigError`],
//!   loading, `${VAR}` expansion and the per-server checks;
//! - `shapes.rs`: `mcp_servers` lists and `mcpServers` maps read into the
//!   same schema; `drop_ins.rs`: `mcp_server_dir`; `discovery.rs`: where a
//!   config is looked for (`--config`, `$WARDEN_CONFIG`, XDG);
//! - `security.rs` (`[security]`, `[[agents]]`), `profiles.rs`
//!   (`[tool_profiles]`), `naming.rs` (`[naming]`), `summary.rs`
//!   (`[summary]`), `daemon.rs` (`[daemon]`), `crash_retry.rs`
//!   (`retry_after_crash`), `ca_cert.rs` (`ca_cert`);
//! - `masked.rs`: env and header values as `config check` shows them.
//!
//! What the values *mean* at run time lives with the code that applies
//! them: policy resolution in `warden_policy`, server settings and the call
//! pipeline in `warden_actors`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::cell::RefCell;

use serde::Deserialize;
use warden_policy::PolicyLayer;

mod ca_cert;
mod crash_retry;
mod daemon;
mod discovery;
mod drop_ins;
mod masked;
mod naming;
mod profiles;
mod security;
mod shapes;
mod summary;

pub use ca_cert::{ca_roots, check_ca_cert};
pub use crash_retry::CrashRetry;
pub use daemon::{DaemonConfig, DEFAULT_IDLE_TIMEOUT};
pub use discovery::Discovered;
pub use masked::Masked;
pub use naming::NamingConfig;
pub use profiles::ProfileConfig;
pub use security::{AgentConfig, SecurityConfig};
pub use summary::SummaryConfig;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WardenConfig {
    /// The servers, by name. The name prefixes their tools: `name__tool`.
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
    /// The largest single message accepted from a server, in bytes.
    #[serde(default = "default_max_message_bytes")]
    pub max_message_bytes: usize,
    /// How long one tool call may take before it is cancelled, in seconds.
    #[serde(default = "default_call_timeout_secs")]
    pub call_timeout_secs: f64,
    /// The most text, in bytes, a model is handed from one tool result or
    /// resource read; longer output is cut with a note saying how much.
    #[serde(default = "default_output_limit_bytes")]
    pub output_limit_bytes: usize,
    /// Tool policies, approval and secrets: `[security]`.
    #[serde(default)]
    pub security: SecurityConfig,
    /// Agents and the tools each may use: `[[agents]]`.
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    /// How tool names are built: `[naming]`.
    #[serde(default)]
    pub naming: NamingConfig,
    /// How tool definitions are shown to models: `[tool_profiles.NAME]`.
    #[serde(default)]
    pub tool_profiles: BTreeMap<String, ProfileConfig>,
    /// Every secret Warden hands to a server, as (label, value): the values
    /// of `env` and `headers`, every `${VAR}` it expanded, and the variables
    /// `security.secrets` names. Filled at load time; leak detection looks
    /// for them in results and arguments.
    #[serde(skip)]
    pub known_secrets: Vec<(String, String)>,
    /// How `warden serve` listens and when it exits.
    #[serde(default)]
    pub daemon: DaemonConfig,
    /// Background one-sentence tool summaries: `[summary]`.
    #[serde(default)]
    pub summary: SummaryConfig,
}

fn default_output_limit_bytes() -> usize {
    warden_policy::DEFAULT_OUTPUT_LIMIT
}

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
    /// The policy for this server's tools, below `security.tool_policies`
    /// and above the server's own annotations.
    pub default_policy: Option<PolicyLayer>,
    /// The file this server was read from: the config, or a drop-in of its
    /// `mcp_server_dir`. Set at load time.
    #[serde(skip)]
    pub origin: Option<PathBuf>,
    /// `env` and `headers` as they may be shown: values masked, `${VAR}`
    /// references named. Set at load time.
    #[serde(skip)]
    pub masked: Masked,
}

fn yes() -> bool {
    true
}

/// The default for `startup_timeout_secs`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The default for `call_timeout_secs`.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// The default for `max_message_bytes`: the transports' own default
/// (`warden_protocol::DEFAULT_MAX_MESSAGE_BYTES`; a test in the actors crate
/// checks the two agree — this crate does not depend on the transports).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The `transport` values of a `url` server.
pub const HTTP_TRANSPORTS: [&str; 3] = ["auto", "streamable-http", "sse"];

fn default_max_message_bytes() -> usize {
    DEFAULT_MAX_MESSAGE_BYTES
}

fn default_call_timeout_secs() -> f64 {
    DEFAULT_CALL_TIMEOUT.as_secs_f64()
}

/// What is wrong with a configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read or parsed.
    #[error("config file '{file}': {problem}")]
    Unreadable {
        /// The file.
        file: String,
        /// What the parser said.
        problem: String,
    },
    /// A server entry is wrong.
    #[error("config file '{file}', server '{server}': {problem}")]
    Server {
        /// The file.
        file: String,
        /// The server's name.
        server: String,
        /// What is wrong, and what to write instead.
        problem: String,
    },
    /// A policy setting (`security`, `agents`) is wrong.
    #[error("config file '{file}': `{field}` {problem}")]
    Policy {
        /// The file.
        file: String,
        /// The setting's path, e.g. `agents[0].allowed_tools`.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// Two servers have the same name.
    #[error("server '{server}' is defined twice: in {first} and in {second}; server names must be unique")]
    Duplicate {
        /// The name.
        server: String,
        /// Where it was first defined: the file (and section).
        first: String,
        /// Where it was defined again.
        second: String,
    },
    /// A top-level setting is wrong.
    #[error("config file '{file}': `{field}` {problem}")]
    Setting {
        /// The file.
        file: String,
        /// The setting.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
}

impl WardenConfig {
    /// Reads, checks and expands a config file: TOML, or YAML or JSON by
    /// its extension (anything else is read as TOML).
    pub fn load(path: &Path) -> Result<WardenConfig, ConfigError> {
        let file = path.display().to_string();
        if !path.is_file() {
            return Err(ConfigError::Unreadable {
                file,
                problem: "no such file; pass --config with the path of a warden.toml".into(),
            });
        }
        let format = file_format(path).unwrap_or(config::FileFormat::Toml);
        Self::from_source(config::File::from(path).format(format), &file, &|name| std::env::var(name).ok())
    }

    /// [`WardenConfig::load`] with `${VAR}` read through `lookup`.
    #[cfg(test)]
    pub(crate) fn load_with(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Result<WardenConfig, ConfigError> {
        let format = file_format(path).unwrap_or(config::FileFormat::Toml);
        Self::from_source(config::File::from(path).format(format), &path.display().to_string(), lookup)
    }

    /// Reads, checks and expands TOML text; `origin` names it in errors, and
    /// a relative `mcp_server_dir` is relative to its directory.
    pub fn from_toml(text: &str, origin: &str) -> Result<WardenConfig, ConfigError> {
        Self::from_toml_with(text, origin, &|name| std::env::var(name).ok())
    }

    /// [`WardenConfig::from_toml`] with `${VAR}` (and the environment the
    /// defaults read, such as `HOME`) looked up through `lookup`.
    pub fn from_toml_with(
        text: &str,
        origin: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WardenConfig, ConfigError> {
        Self::from_source(config::File::from_str(text, config::FileFormat::Toml), origin, lookup)
    }

    fn from_source<S>(
        source: S,
        file: &str,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WardenConfig, ConfigError>
    where
        S: config::Source + Send + Sync + 'static,
    {
        let unreadable = |error: config::ConfigError| ConfigError::Unreadable {
            file: file.to_string(),
            problem: with_expected_values(error.to_string()),
        };
        let built = config::Config::builder().add_source(source).build();
        let mut root = built.and_then(|built| config::Source::collect(&built)).map_err(unreadable)?;
        shapes::normalise(&mut root, file)?;
        let drop_ins = match root.remove("mcp_server_dir").map(|dir| dir.kind) {
            Some(config::ValueKind::String(dir)) => drop_ins::read_dir(Path::new(&dir), file)?,
            Some(other) => {
                return Err(ConfigError::Setting {
                    file: file.into(),
                    field: "mcp_server_dir",
                    problem: format!("must be the path of a directory, not {}", shapes::kind_name(&other)),
                })
            }
            None => Vec::new(),
        };
        let mut config: WardenConfig = config::Value::new(None, root).try_deserialize().map_err(unreadable)?;
        for server in config.servers.values_mut() {
            server.origin = Some(PathBuf::from(file));
        }
        for drop_in in drop_ins {
            if let Some(first) = config.servers.get(&drop_in.name) {
                let first = first.origin.as_deref().unwrap_or(Path::new(file)).display();
                return Err(ConfigError::Duplicate {
                    server: drop_in.name,
                    first: format!("'{first}'"),
                    second: format!("'{}'", drop_in.file.display()),
                });
            }
            let server = ServerConfig { origin: Some(drop_in.file), ..drop_in.server };
            config.servers.insert(drop_in.name, server);
        }
        config.check_and_expand(file, lookup)?;
        Ok(config)
    }

    /// Validates every entry and replaces `${VAR}` references using `lookup`.
    pub fn check_and_expand(&mut self, file: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        if !(self.call_timeout_secs.is_finite() && self.call_timeout_secs > 0.0) {
            return Err(ConfigError::Setting {
                file: file.into(),
                field: "call_timeout_secs",
                problem: format!("must be a positive number of seconds, not {}", self.call_timeout_secs),
            });
        }
        if self.output_limit_bytes < 256 {
            return Err(ConfigError::Setting {
                file: file.into(),
                field: "output_limit_bytes",
                problem: format!("must be at least 256, not {}", self.output_limit_bytes),
            });
        }
        if self.max_message_bytes < 1024 {
            return Err(ConfigError::Setting {
                file: file.into(),
                field: "max_message_bytes",
                problem: format!("must be at least 1024, not {}", self.max_message_bytes),
            });
        }
        self.daemon.check().map_err(|(field, problem)| ConfigError::Setting { file: file.into(), field, problem })?;
        let policy_error = |(field, problem)| ConfigError::Policy { file: file.into(), field, problem };
        self.security.check().map_err(policy_error)?;
        let summary_key = self.summary.check(lookup).map_err(|(field, problem)| ConfigError::Setting {
            file: file.into(),
            field,
            problem,
        })?;
        security::check_agents(&self.agents).map_err(policy_error)?;
        for (name, profile) in &self.tool_profiles {
            profile.compile(name).map_err(policy_error)?;
        }
        for (index, agent) in self.agents.iter().enumerate() {
            if let Some(profile) = agent.profile.as_ref().filter(|name| !self.tool_profiles.contains_key(*name)) {
                return Err(policy_error((
                    format!("agents[{index}] ('{}').profile", agent.name),
                    format!("names \"{profile}\", which is not a [tool_profiles.{profile}] table"),
                )));
            }
        }
        // Every `${VAR}` expanded is a secret handed to a server.
        let expanded = RefCell::new(Vec::new());
        let recording = |name: &str| {
            let value = lookup(name);
            if let Some(value) = &value {
                expanded.borrow_mut().push((name.to_string(), value.clone()));
            }
            value
        };
        let names = self.naming.rules().map_err(|problem| policy_error(("naming".into(), problem)))?;
        for (name, server) in &mut self.servers {
            // A drop-in's errors name the drop-in.
            let file = server.origin.as_ref().map(|origin| origin.display().to_string()).unwrap_or(file.into());
            let error = |problem: String| ConfigError::Server { file: file.clone(), server: name.clone(), problem };
            names.validate_server_name(name).map_err(|e| error(e.to_string()))?;
            server.check(&recording).map_err(error)?;
        }
        let mut secrets = expanded.into_inner();
        for server in self.servers.values() {
            secrets.extend(server.env.iter().chain(&server.headers).map(|(key, value)| (key.clone(), value.clone())));
        }
        secrets.extend(self.security.secrets.iter().filter_map(|name| Some((name.clone(), lookup(name)?))));
        secrets.extend(summary_key);
        self.known_secrets = secrets;
        Ok(())
    }

    /// How long a tool call may take.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.call_timeout_secs)
    }
}

impl ServerConfig {
    fn check(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("has both `command` and `url`; set `command` for a local (stdio) server or `url` for a remote (HTTP) one, not both".into()),
            (None, None) => return Err("has neither `command` nor `url`; set `command` for a local (stdio) server or `url` for a remote (HTTP) one".into()),
            (Some(command), None) if command.trim().is_empty() => return Err("`command` is empty".into()),
            (Some(_), None) if !self.headers.is_empty() => return Err("`headers` only applies to `url` servers; use `env` for a `command` server".into()),
            (Some(_), None) if self.ca_cert.is_some() => return Err("`ca_cert` only applies to `https://` `url` servers".into()),
            (Some(_), None) if self.transport.is_some() => return Err("`transport` only applies to `url` servers".into()),
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
        if let Some(retry) = &self.retry_after_crash {
            if CrashRetry::parse(retry).is_none() {
                return Err(format!("`retry_after_crash` must be \"safe\", \"always\" or \"never\", not \"{retry}\""));
            }
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

/// The format of a config file, by its extension; `None` for other files.
pub(crate) fn file_format(path: &Path) -> Option<config::FileFormat> {
    match path.extension()?.to_str()? {
        "toml" => Some(config::FileFormat::Toml),
        "yaml" | "yml" => Some(config::FileFormat::Yaml),
        "json" => Some(config::FileFormat::Json),
        _ => None,
    }
}

/// The `config` crate names a bad enum value without the good ones
/// ("enum Risk does not have variant constructor extreme for key ..."):
/// add them, so the user learns what to write.
fn with_expected_values(problem: String) -> String {
    const EXPECTED: [(&str, &str); 4] = [
        ("enum Risk ", "\"low\", \"medium\" or \"high\""),
        ("enum Approval ", "\"never\", \"always\" or \"unless_auto_approved\""),
        ("enum LeakAction ", "\"redact\", \"block\" or \"off\""),
        ("enum Detail ", "\"full\", \"summary\" or \"brief\""),
    ];
    match EXPECTED.iter().find(|(name, _)| problem.contains(name)) {
        Some((_, values)) => format!("{problem}; expected {values}"),
        None => problem,
    }
}

/// Replaces `${VAR}` with the variable's value; `$${` is a literal `${`.
pub(crate) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = rest.strip_prefix("${") {
            let end = after.find('}').ok_or_else(|| format!("`${{` without a closing `}}` in \"{text}\""))?;
            let name = &after[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("`${{{name}}}` is not a valid variable name (letters, digits and '_')"));
            }
            let value = lookup(name).ok_or_else(|| {
                format!("environment variable `{name}` is not set; set it before starting Warden, or write `$${{` for a literal `${{`")
            })?;
            out.push_str(&value);
            rest = &after[end + 1..];
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests;
