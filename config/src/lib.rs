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
//! - this file: [`WardenConfig`], [`ConfigError`],
//!   loading and `${VAR}` expansion; `server.rs`: [`ServerConfig`] and its
//!   checks;
//! - `shapes.rs`: `mcp_servers` lists and `mcpServers` maps read into the
//!   same schema; `drop_ins.rs`: `mcp_server_dir`; `discovery.rs`: where a
//!   config is looked for (`--config`, `$WARDEN_CONFIG`, XDG);
//! - `security.rs` (`[security]`, `[[agents]]`), `profiles.rs`
//!   (`[tool_profiles]`), `naming.rs` (`[naming]`), `summary.rs`
//!   (`[summary]`), `daemon.rs` (`[daemon]`), `crash_retry.rs`
//!   (`retry_after_crash`), `protocol_version.rs` (`protocol_version`),
//!   `ca_cert.rs` (`ca_cert`);
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

mod audit;
mod ca_cert;
mod cluster;
mod codex;
mod crash_retry;
mod daemon;
mod discovery;
mod drop_ins;
mod editors;
mod expand;
mod foreign;
mod front;
mod kinds;
mod masked;
mod metrics;
mod naming;
mod oauth;
mod profiles;
#[cfg(test)]
mod properties;
mod protocol_version;
mod raw;
mod roots;
mod sampling;
mod security;
mod server;
mod shapes;
mod summary;
mod telemetry;
mod vscode;

pub use audit::AuditConfig;
pub use ca_cert::{ca_roots, check_ca_cert};
pub use cluster::ClusterConfig;
pub use crash_retry::CrashRetry;
pub use daemon::{DaemonConfig, DEFAULT_IDLE_TIMEOUT};
pub use discovery::{absolute as config_path, config_file, default_config_path, Discovered};
pub(crate) use expand::expand;
pub use foreign::{foreign_servers, ForeignServers};
pub use front::{FrontConfig, FrontToken};
pub use masked::Masked;
pub use metrics::MetricsConfig;
pub use naming::NamingConfig;
pub use oauth::{state_home, OAuthConfig, OAuthGrant, OAUTH_SIGNING_ALGS};
pub use profiles::ProfileConfig;
pub use protocol_version::{ProtocolChoice, KNOWN_PROTOCOL_VERSIONS};
pub use sampling::{SamplingConfig, SAMPLING_APPROVALS};
pub use security::{AgentConfig, SecurityConfig};
pub use server::ServerConfig;
pub use summary::SummaryConfig;
pub use telemetry::TelemetryConfig;
pub use vscode::{unset_inputs, PromptInput};

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
    /// The daemon's HTTP MCP front: `[front]`.
    #[serde(default)]
    pub front: FrontConfig,
    /// Prometheus metrics and health checks: `[metrics]`.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// The daemon's record of every call: `[audit]`.
    #[serde(default)]
    pub audit: AuditConfig,
    /// Traces over OTLP: `[telemetry]`.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// The directories servers are told they may work in (`roots/list`),
    /// unless a server's entry has its own `roots`: `file://` URIs
    /// (absolute paths are turned into them at load time).
    #[serde(default)]
    pub roots: Vec<String>,
    /// The model servers may ask for completions: `[sampling]`.
    #[serde(default)]
    pub sampling: SamplingConfig,
    /// Nodes that share servers through NATS: `[cluster]`.
    #[serde(default)]
    pub cluster: Option<ClusterConfig>,
}

fn default_output_limit_bytes() -> usize {
    warden_policy::DEFAULT_OUTPUT_LIMIT
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
            return Err(ConfigError::Unreadable { file, problem: "no such file".into() });
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
        let ignored = shapes::normalise(&mut root, file)?;
        kinds::check_root(&root, file)?;
        let drop_ins = match root.remove("mcp_server_dir").map(|dir| dir.kind) {
            Some(config::ValueKind::String(dir)) => drop_ins::read_dir(Path::new(&dir), file)?,
            Some(other) => {
                return Err(ConfigError::Setting {
                    file: file.into(),
                    field: "mcp_server_dir",
                    problem: format!("must be the path of a directory, not {}", raw::kind_name(&other)),
                })
            }
            None => Vec::new(),
        };
        let mut config: WardenConfig = config::Value::new(None, root).try_deserialize().map_err(unreadable)?;
        for server in config.servers.values_mut() {
            server.origin = Some(PathBuf::from(file));
        }
        for (name, unhonoured) in ignored {
            if let Some(server) = config.servers.get_mut(&name) {
                server.ignored = unhonoured;
            }
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
        roots::normalise(&mut self.roots).map_err(|problem| ConfigError::Setting {
            file: file.into(),
            field: "roots",
            problem,
        })?;
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
            let oauth_secret = server.oauth.as_ref().and_then(|oauth| oauth.client_secret.clone());
            secrets.extend(oauth_secret.map(|secret| ("oauth.client_secret".to_string(), secret)));
        }
        secrets.extend(self.security.secrets.iter().filter_map(|name| Some((name.clone(), lookup(name)?))));
        secrets.extend(summary_key);
        let servers = &self.servers;
        let sampling_key = self
            .sampling
            .check(|name| servers.contains_key(name), lookup)
            .map_err(|(field, problem)| ConfigError::Setting { file: file.into(), field, problem })?;
        secrets.extend(sampling_key);
        // The front's error fields are indexed (`front.tokens[0].token`).
        let front_tokens = self.front.check(lookup).map_err(policy_error)?;
        secrets.extend(front_tokens);
        let metrics_token = self.metrics.check(lookup).map_err(policy_error)?;
        self.audit.check().map_err(policy_error)?;
        self.telemetry.check().map_err(policy_error)?;
        secrets.extend(metrics_token.map(|token| ("metrics token".to_string(), token)));
        if let Some(cluster) = &mut self.cluster {
            let servers = &self.servers;
            secrets.extend(cluster.check(|name| servers.contains_key(name), lookup).map_err(policy_error)?);
        }
        self.known_secrets = secrets;
        Ok(())
    }

    /// How long a tool call may take.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.call_timeout_secs)
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
        ("enum Detail ", "\"full\", \"summary\", \"brief\" or \"deferred\""),
    ];
    match EXPECTED.iter().find(|(name, _)| problem.contains(name)) {
        Some((_, values)) => format!("{problem}; expected {values}"),
        None => problem,
    }
}

#[cfg(test)]
mod tests;
