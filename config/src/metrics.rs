//! The `[metrics]` table: Prometheus metrics and health checks.
//!
//! ```toml
//! [metrics]
//! listen = "127.0.0.1:9464"             # a listener of their own (off when absent)
//! token = "${WARDEN_METRICS_TOKEN}"     # Bearer token `GET /metrics` must send
//! # allow_non_loopback = true           # then `token` is required
//! ```
//!
//! `GET /metrics`, `/healthz` and `/readyz` are served on the front's
//! listener when there is one, and on `listen` for a daemon without a
//! front (or to keep scrapes off the front's port). Metrics name the
//! servers and tools a daemon runs, so off loopback they need the token;
//! health checks answer anyone (a load balancer sends no token).

use std::net::SocketAddr;

use serde::Deserialize;

/// The `[metrics]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// A listener for metrics and health checks alone; none when absent.
    #[serde(default)]
    pub listen: Option<String>,
    /// Allow a `listen` address that is not loopback (with a `token`).
    #[serde(default)]
    pub allow_non_loopback: bool,
    /// The bearer token `GET /metrics` must carry (`${VAR}` expanded);
    /// none: metrics answer on loopback listeners only.
    #[serde(default)]
    pub token: Option<String>,
}

impl MetricsConfig {
    /// The checked listen address, when metrics have a listener of their own.
    pub fn listen_addr(&self) -> Result<Option<SocketAddr>, (&'static str, String)> {
        let Some(listen) = &self.listen else { return Ok(None) };
        crate::daemon::checked_listen("metrics", listen, "127.0.0.1:9464", self.allow_non_loopback).map(Some)
    }

    /// Checks the table and expands the token; returns it for the known
    /// secrets.
    pub(super) fn check(
        &mut self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<String>, (String, String)> {
        let addr = self.listen_addr().map_err(|(field, problem)| (field.to_string(), problem))?;
        if let Some(token) = &mut self.token {
            *token = crate::expand(token, lookup).map_err(|problem| ("metrics.token".to_string(), problem))?;
            if token.len() < 16 {
                return Err((
                    "metrics.token".into(),
                    "is shorter than 16 characters (or its variable is empty); use a long random token, e.g. \
                     `openssl rand -hex 32`"
                        .into(),
                ));
            }
        }
        if addr.is_some_and(|addr| !addr.ip().is_loopback()) && self.token.is_none() {
            return Err((
                "metrics.token".into(),
                "is needed for a `listen` address that is not loopback: the metrics name every server and tool".into(),
            ));
        }
        Ok(self.token.clone())
    }
}

#[cfg(test)]
mod tests {
    use crate::WardenConfig;

    fn load(text: &str) -> Result<WardenConfig, String> {
        let lookup = |name: &str| (name == "METRICS_TOKEN").then(|| "0123456789abcdef0123".to_string());
        WardenConfig::from_toml_with(text, "warden.toml", &lookup).map_err(|error| error.to_string())
    }

    #[test]
    fn metrics_off_loopback_need_a_token_and_the_token_is_a_secret() {
        let error = load("[metrics]\nlisten = \"0.0.0.0:9464\"\nallow_non_loopback = true").unwrap_err();
        assert!(error.contains("`metrics.token` is needed for a `listen` address that is not loopback"), "{error}");
        let error = load("[metrics]\nlisten = \"0.0.0.0:9464\"").unwrap_err();
        assert!(error.contains("`metrics.listen` is 0.0.0.0:9464, which is not a loopback address"), "{error}");
        let error = load("[metrics]\ntoken = \"short\"").unwrap_err();
        assert!(error.contains("`metrics.token` is shorter than 16"), "{error}");
        let config = load("[metrics]\nlisten = \"127.0.0.1:9464\"\ntoken = \"${METRICS_TOKEN}\"").unwrap();
        assert_eq!(config.metrics.token.as_deref(), Some("0123456789abcdef0123"));
        assert!(config.known_secrets.iter().any(|(_, value)| value == "0123456789abcdef0123"));
        assert_eq!(load("").unwrap().metrics.listen_addr(), Ok(None));
    }
}
