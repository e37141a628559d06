//! The `[cluster]` table: Warden nodes that share their servers through NATS.
//!
//! ```toml
//! [cluster]
//! nats = ["nats://127.0.0.1:4222"]  # one or more NATS URLs (nats:// or tls://)
//! node = "build-box"                 # this node's unique name (default: the host name)
//! export = ["git", "db"]             # local servers offered to the cluster ("*": all)
//! import = true                      # use servers other nodes export
//! # subject_prefix = "warden"        # to share one NATS with other deployments
//! # token = "${NATS_TOKEN}"          # or nkey_seed = "${NATS_NKEY}", or credentials = "~/.nats/warden.creds"
//! # ca_cert = "/etc/nats/ca.pem"     # for tls:// URLs signed by a private CA
//! # allow_insecure = true            # a nats:// URL that is not loopback
//! ```
//!
//! Every check is made here, at load time, so a node never starts with a
//! cluster it cannot join: a URL NATS cannot use, a node name that cannot
//! be a subject token, an export naming no configured server. A `nats://`
//! URL off loopback is refused unless `allow_insecure` says so: tool calls'
//! arguments and results, approvals and grants would cross the network in
//! clear text, readable and changeable by anyone on the path.

use std::path::PathBuf;

use serde::Deserialize;

/// The `[cluster]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// The NATS servers to connect to (any one will do; the client fails
    /// over between them).
    pub nats: Vec<String>,
    /// This node's name, unique in the cluster; the host name when absent
    /// (filled in by the checks).
    #[serde(default)]
    pub node: Option<String>,
    /// The local servers other nodes may call (`"*"`: every one).
    #[serde(default)]
    pub export: Vec<String>,
    /// Whether servers other nodes export are used here.
    #[serde(default = "yes")]
    pub import: bool,
    /// The first token(s) of every subject and the start of every bucket
    /// name, so deployments can share one NATS.
    #[serde(default = "default_prefix")]
    pub subject_prefix: String,
    /// Allows a `nats://` URL that is not loopback.
    #[serde(default)]
    pub allow_insecure: bool,
    /// A NATS token (`${VAR}` expanded).
    #[serde(default)]
    pub token: Option<String>,
    /// An nkey seed (`${VAR}` expanded).
    #[serde(default)]
    pub nkey_seed: Option<String>,
    /// A `.creds` file (JWT and nkey seed), `~` expanded.
    #[serde(default)]
    pub credentials: Option<PathBuf>,
    /// A PEM file of CA certificates for `tls://` URLs.
    #[serde(default)]
    pub ca_cert: Option<PathBuf>,
}

fn yes() -> bool {
    true
}

fn default_prefix() -> String {
    "warden".to_string()
}

impl ClusterConfig {
    /// This node's name (the checks have filled it in).
    pub fn node_name(&self) -> &str {
        self.node.as_deref().unwrap_or("")
    }

    /// Whether the server named `server` is offered to the cluster.
    pub fn exports(&self, server: &str) -> bool {
        self.export.iter().any(|name| name == "*" || name == server)
    }

    /// Checks the table, fills in the node name, expands secrets; returns
    /// the secrets for the known-secrets list. `is_server` tells whether a
    /// name is a configured server.
    pub(super) fn check(
        &mut self,
        is_server: impl Fn(&str) -> bool,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>, (String, String)> {
        if self.nats.is_empty() {
            return Err((
                "cluster.nats".into(),
                "is empty; give at least one NATS URL, e.g. \"nats://127.0.0.1:4222\"".into(),
            ));
        }
        for (index, url) in self.nats.iter().enumerate() {
            check_url(url, self.allow_insecure).map_err(|problem| (format!("cluster.nats[{index}]"), problem))?;
        }
        let node = match self.node.take() {
            Some(node) => node,
            None => host_name().ok_or_else(|| {
                ("cluster.node".to_string(), "is not set and the host name could not be read; set it".to_string())
            })?,
        };
        check_token(&node).map_err(|problem| ("cluster.node".to_string(), format!("\"{node}\" {problem}")))?;
        self.node = Some(node);
        for (index, token) in self.subject_prefix.split('.').enumerate() {
            check_token(token).map_err(|problem| {
                ("cluster.subject_prefix".to_string(), format!("token {} (\"{token}\") {problem}", index + 1))
            })?;
        }
        for (index, name) in self.export.iter().enumerate() {
            if name != "*" && !is_server(name) {
                return Err((
                    format!("cluster.export[{index}]"),
                    format!("names \"{name}\", which is not a configured server (use \"*\" to export every server)"),
                ));
            }
        }
        let mut secrets = Vec::new();
        for (field, value) in [("cluster.token", &mut self.token), ("cluster.nkey_seed", &mut self.nkey_seed)] {
            if let Some(value) = value {
                *value = crate::expand(value, lookup).map_err(|problem| (field.to_string(), problem))?;
                if value.is_empty() {
                    return Err((field.to_string(), "is empty (is its variable set?)".into()));
                }
                secrets.push((field.to_string(), value.clone()));
            }
        }
        if [self.token.is_some(), self.nkey_seed.is_some(), self.credentials.is_some()]
            .iter()
            .filter(|set| **set)
            .count()
            > 1
        {
            return Err((
                "cluster".into(),
                "sets more than one of `token`, `nkey_seed` and `credentials`; NATS takes one way to authenticate"
                    .into(),
            ));
        }
        for path in [&mut self.credentials, &mut self.ca_cert].into_iter().flatten() {
            *path = expand_home(path);
        }
        if let Some(ca_cert) = &self.ca_cert {
            crate::check_ca_cert(ca_cert).map_err(|problem| ("cluster.ca_cert".to_string(), problem))?;
        }
        Ok(secrets)
    }
}

/// Checks one NATS URL: `nats://` or `tls://`, a host, and no clear text
/// off loopback unless allowed.
fn check_url(url: &str, allow_insecure: bool) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("\"{url}\" is not a URL; write it as \"nats://HOST:PORT\" or \"tls://HOST:PORT\""))?;
    if !matches!(scheme, "nats" | "tls") {
        return Err(format!("\"{url}\" has the scheme `{scheme}`; Warden speaks `nats://` and `tls://`"));
    }
    // Credentials in the URL would be logged with it: they go in their
    // own keys.
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.contains('@') {
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        return Err(format!(
            "\"{scheme}://***@{host}\" carries credentials; put them in `token`, `nkey_seed` or `credentials` instead"
        ));
    }
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    };
    if host.is_empty() {
        return Err(format!("\"{url}\" has no host"));
    }
    let loopback = host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if scheme == "nats" && !loopback && !allow_insecure {
        return Err(format!(
            "\"{url}\" is not on loopback and not `tls://`: tool calls, their results, approvals and grants would \
             cross the network in clear text; use `tls://`, or set `allow_insecure = true` in [cluster] if the \
             network is private"
        ));
    }
    Ok(())
}

/// A node name or prefix token: it becomes one subject token and part of
/// key and bucket names, which allow letters, digits, `-` and `_`.
fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() || token.len() > 64 {
        return Err("must be 1 to 64 characters".into());
    }
    if let Some(bad) = token.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_')) {
        return Err(format!("contains `{bad}`; use letters, digits, `-` and `_`"));
    }
    Ok(())
}

/// The machine's host name, cut at its first dot.
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()?;
    let name = name.trim().split('.').next()?.to_string();
    (!name.is_empty()).then_some(name)
}

fn expand_home(path: &std::path::Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests;
