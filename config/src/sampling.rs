//! The `[sampling]` table: the model servers may ask for a completion
//! (`sampling/createMessage`).
//!
//! ```toml
//! [sampling]
//! endpoint = "http://127.0.0.1:8080/v1"  # base URL, or the full …/chat/completions URL
//! model = "gpt-4.1-mini"
//! api_key_env = "OPENAI_API_KEY"          # optional
//! max_tokens = 1024                       # cap on what a server may ask for
//! servers = ["ask", "research"]           # which servers may sample (default: none)
//! approval = "always"                     # always | never | unless_auto_approved
//! review_results = false                  # also approve each completion before the server gets it
//! timeout_secs = 60                       # one completion, the endpoint's answer included
//! tools = false                           # the endpoint can call tools: servers may offer some
//! [sampling.models]                       # a server's model hint (substring) → the model asked
//! claude = "gpt-4.1"
//! ```
//!
//! `endpoint` means what it means in `[summary]`. Without `endpoint`,
//! listed servers sample only through the MCP front's calling clients that
//! declared sampling; unlisted servers are never told Warden can sample. A server must be named in `servers` to sample — a model
//! call costs money and carries what the server chose to say, so no server
//! gets it by default. `approval` defaults to `always`: the spec asks for a
//! person in the loop, and the request (server, model, messages) is shown
//! to the approver like a tool call.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The `[sampling]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingConfig {
    /// The API's base URL or its full `/chat/completions` URL; empty: no sampling.
    #[serde(default)]
    pub endpoint: String,
    /// The model asked when no hint maps to another.
    #[serde(default)]
    pub model: String,
    /// The environment variable holding the API key (a bearer token).
    pub api_key_env: Option<String>,
    /// The most tokens a completion may have, whatever a server asks.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u64,
    /// The servers that may sample.
    #[serde(default)]
    pub servers: Vec<String>,
    /// `always` (default), `never` or `unless_auto_approved`.
    #[serde(default = "default_approval")]
    pub approval: String,
    /// Also put each completion to the approver before the server gets it.
    #[serde(default)]
    pub review_results: bool,
    /// How long one completion may take, in seconds.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: f64,
    /// The endpoint can call tools: servers are told `sampling.tools` and
    /// may offer the model tools (2025-11-25).
    #[serde(default)]
    pub tools: bool,
    /// A server's model hint (matched as a substring of the hint's name) →
    /// the model asked instead of `model`.
    #[serde(default)]
    pub models: BTreeMap<String, String>,
}

fn default_max_tokens() -> u64 {
    1024
}

fn default_approval() -> String {
    "always".into()
}

fn default_timeout_secs() -> f64 {
    60.0
}

impl Default for SamplingConfig {
    fn default() -> Self {
        SamplingConfig {
            endpoint: String::new(),
            model: String::new(),
            api_key_env: None,
            max_tokens: default_max_tokens(),
            servers: Vec::new(),
            approval: default_approval(),
            review_results: false,
            timeout_secs: default_timeout_secs(),
            tools: false,
            models: BTreeMap::new(),
        }
    }
}

/// The `approval` values.
pub const SAMPLING_APPROVALS: [&str; 3] = ["always", "never", "unless_auto_approved"];

impl SamplingConfig {
    /// Whether sampling is configured at all.
    pub fn enabled(&self) -> bool {
        !self.endpoint.is_empty()
    }

    /// The full chat-completions URL.
    pub fn completions_url(&self) -> String {
        crate::summary::completions_url(&self.endpoint)
    }

    /// Checks the table (when `endpoint` is set) against the configured
    /// `servers` and reads the API key, returned as (variable, value) for
    /// the known secrets.
    pub(super) fn check<'a>(
        &self,
        configured: impl Fn(&str) -> bool + 'a,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(String, String)>, (&'static str, String)> {
        if let Some(unknown) = self.servers.iter().find(|server| !configured(server)) {
            return Err(("sampling.servers", format!("names '{unknown}', which is not a configured server")));
        }
        if !self.enabled() {
            // Listed servers sample through their calling clients only (the front).
            return Ok(None);
        }
        let endpoint = &self.endpoint;
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) || endpoint.contains(' ') {
            return Err((
                "sampling.endpoint",
                format!("must be the http:// or https:// URL of an OpenAI-compatible API, such as \"https://api.openai.com/v1\", not \"{endpoint}\""),
            ));
        }
        if self.model.trim().is_empty() {
            return Err((
                "sampling.model",
                "must name the model servers' requests go to, e.g. \"gpt-4.1-mini\"".into(),
            ));
        }
        if self.max_tokens == 0 {
            return Err(("sampling.max_tokens", "must be at least 1".into()));
        }
        if !SAMPLING_APPROVALS.contains(&self.approval.as_str()) {
            return Err((
                "sampling.approval",
                format!("must be \"always\", \"never\" or \"unless_auto_approved\", not \"{}\"", self.approval),
            ));
        }
        if !(self.timeout_secs.is_finite() && self.timeout_secs > 0.0) {
            return Err((
                "sampling.timeout_secs",
                format!("must be a positive number of seconds, not {}", self.timeout_secs),
            ));
        }
        let Some(name) = &self.api_key_env else { return Ok(None) };
        match lookup(name) {
            Some(key) if !key.is_empty() => Ok(Some((name.clone(), key))),
            _ => Err((
                "sampling.api_key_env",
                format!("names `{name}`, which is not set; set it to the API key, or remove `api_key_env`"),
            )),
        }
    }

    /// The model for a request whose hints are `hints` (in the server's
    /// order of preference): the first hint a `models` key is part of.
    pub fn model_for<'a>(&self, hints: impl IntoIterator<Item = &'a str>) -> &str {
        hints
            .into_iter()
            .find_map(|hint| self.models.iter().find(|(key, _)| hint.contains(key.as_str())).map(|(_, model)| model))
            .unwrap_or(&self.model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table from its TOML body.
    fn table(toml: &str) -> SamplingConfig {
        let source = config::File::from_str(toml, config::FileFormat::Toml);
        config::Config::builder().add_source(source).build().unwrap().try_deserialize().unwrap()
    }

    #[test]
    fn a_configured_table_is_checked_field_by_field() {
        let known = |server: &str| server == "ask";
        let none = |_: &str| None;
        let ok = table("endpoint = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\nservers = [\"ask\"]\n");
        assert_eq!(ok.check(known, &none), Ok(None));
        assert_eq!(ok.completions_url(), "http://127.0.0.1:9/v1/chat/completions");
        let unknown = table("endpoint = \"http://x/v1\"\nmodel = \"m\"\nservers = [\"nope\"]\n");
        assert_eq!(
            unknown.check(known, &none),
            Err(("sampling.servers", "names 'nope', which is not a configured server".into()))
        );
        let approval = table("endpoint = \"http://x/v1\"\nmodel = \"m\"\napproval = \"sometimes\"\n");
        assert_eq!(approval.check(known, &none).unwrap_err().0, "sampling.approval");
        let relay_only = table("servers = [\"ask\"]\n");
        assert_eq!(relay_only.check(known, &none), Ok(None), "without an endpoint: through calling clients only");
        assert_eq!(SamplingConfig::default().check(known, &none), Ok(None), "an absent table is fine");
    }

    #[test]
    fn model_hints_pick_a_configured_model() {
        let sampling =
            table("endpoint = \"http://x/v1\"\nmodel = \"default\"\n[models]\nclaude = \"big\"\nfast = \"small\"\n");
        assert_eq!(sampling.model_for(["claude-3-sonnet"]), "big");
        assert_eq!(sampling.model_for(["gpt", "something-fast"]), "small");
        assert_eq!(sampling.model_for(["unknown"]), "default");
        assert_eq!(sampling.model_for([]), "default");
    }
}
