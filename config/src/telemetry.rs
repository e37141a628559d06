//! The `[telemetry]` table: traces exported over OTLP.
//!
//! ```toml
//! [telemetry]
//! otlp_endpoint = "http://127.0.0.1:4318"   # an OTLP/HTTP collector; off when absent
//! service_name = "warden"                   # the `service.name` resource attribute
//! ```
//!
//! Off by default: nothing is exported, and no exporter task runs, unless
//! an endpoint is set. The endpoint is the collector's base URL (traces go
//! to `/v1/traces` under it, as OTLP/HTTP defines), or the full traces URL.

use serde::Deserialize;

/// The `[telemetry]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector; none: no traces are exported.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    /// `service.name` on everything exported.
    #[serde(default = "default_service_name")]
    pub service_name: String,
}

fn default_service_name() -> String {
    "warden".into()
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig { otlp_endpoint: None, service_name: default_service_name() }
    }
}

impl TelemetryConfig {
    /// Where spans are sent: the endpoint with `/v1/traces` unless it
    /// names that path already.
    pub fn traces_url(&self) -> Option<String> {
        let endpoint = self.otlp_endpoint.as_deref()?.trim_end_matches('/');
        Some(if endpoint.ends_with("/v1/traces") { endpoint.to_string() } else { format!("{endpoint}/v1/traces") })
    }

    pub(super) fn check(&self) -> Result<(), (String, String)> {
        let Some(endpoint) = &self.otlp_endpoint else { return Ok(()) };
        if endpoint.starts_with("https://") {
            return Err((
                "telemetry.otlp_endpoint".into(),
                format!(
                    "is {endpoint}: only http:// collectors are supported yet; run a local collector (or an agent) \
                     that forwards over TLS"
                ),
            ));
        }
        if !endpoint.starts_with("http://") || endpoint.len() <= "http://".len() {
            return Err((
                "telemetry.otlp_endpoint".into(),
                format!("must be an http:// URL such as \"http://127.0.0.1:4318\", not \"{endpoint}\""),
            ));
        }
        if self.service_name.trim().is_empty() {
            return Err(("telemetry.service_name".into(), "must not be empty".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::WardenConfig;

    fn load(text: &str) -> Result<WardenConfig, String> {
        WardenConfig::from_toml_with(text, "warden.toml", &|_| None).map_err(|error| error.to_string())
    }

    #[test]
    fn the_endpoint_is_checked_and_gets_the_traces_path() {
        let config = load("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/\"").unwrap();
        assert_eq!(config.telemetry.traces_url().as_deref(), Some("http://127.0.0.1:4318/v1/traces"));
        let config = load("[telemetry]\notlp_endpoint = \"http://c:4318/v1/traces\"").unwrap();
        assert_eq!(config.telemetry.traces_url().as_deref(), Some("http://c:4318/v1/traces"));
        assert_eq!(load("").unwrap().telemetry.traces_url(), None);
        let error = load("[telemetry]\notlp_endpoint = \"https://c:4318\"").unwrap_err();
        assert!(error.contains("only http:// collectors are supported yet"), "{error}");
        let error = load("[telemetry]\notlp_endpoint = \"c:4318\"").unwrap_err();
        assert!(error.contains("must be an http:// URL"), "{error}");
    }
}
