//! The `[summary]` table: one-sentence tool summaries written by a model.
//!
//! ```toml
//! [summary]
//! enabled = true
//! model = "gpt-4o-mini"
//! endpoint = "https://api.openai.com/v1"   # or the full …/chat/completions URL
//! api_key_env = "OPENAI_API_KEY"           # the variable holding the key
//! concurrency = 3                          # requests at once
//! # cache_dir = "/var/cache/warden"        # default: $XDG_CACHE_HOME/warden
//! ```
//!
//! `endpoint` is the base URL of an OpenAI-compatible API (Warden appends
//! `/chat/completions`) or, when it already ends in `/chat/completions`,
//! the full URL, so both spellings users copy from provider docs work.
//! The key is read from the environment at load time and becomes a known
//! secret: leak detection looks for it and Warden never logs it.

use std::path::PathBuf;

use serde::Deserialize;

/// The `[summary]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummaryConfig {
    /// Generate summaries; `false` (the default) makes none and ignores the
    /// cache, which stays on disk.
    #[serde(default)]
    pub enabled: bool,
    /// The model asked, e.g. `gpt-4o-mini`.
    #[serde(default)]
    pub model: String,
    /// The API's base URL or its full `/chat/completions` URL.
    #[serde(default)]
    pub endpoint: String,
    /// The environment variable holding the API key (sent as a bearer
    /// token); none for endpoints without authentication.
    pub api_key_env: Option<String>,
    /// How many requests run at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Where `summaries.jsonl` lives; default `$XDG_CACHE_HOME/warden`,
    /// else `~/.cache/warden`, overridden by `WARDEN_CACHE_DIR`.
    pub cache_dir: Option<PathBuf>,
}

/// An `endpoint` as the full chat-completions URL: a base URL gets
/// `/chat/completions`, a full one is kept (`[summary]`, `[sampling]`).
pub(crate) fn completions_url(endpoint: &str) -> String {
    let endpoint = endpoint.trim_end_matches('/');
    if endpoint.ends_with("/chat/completions") {
        endpoint.to_string()
    } else {
        format!("{endpoint}/chat/completions")
    }
}

fn default_concurrency() -> usize {
    3
}

impl Default for SummaryConfig {
    fn default() -> Self {
        SummaryConfig {
            enabled: false,
            model: String::new(),
            endpoint: String::new(),
            api_key_env: None,
            concurrency: default_concurrency(),
            cache_dir: None,
        }
    }
}

impl SummaryConfig {
    /// The full chat-completions URL.
    pub fn completions_url(&self) -> String {
        completions_url(&self.endpoint)
    }

    /// The directory of `summaries.jsonl`: `cache_dir`, else
    /// `WARDEN_CACHE_DIR`, else `$XDG_CACHE_HOME/warden`, else
    /// `~/.cache/warden`; `None` when none of them is set.
    pub fn cache_dir(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        self.cache_dir
            .clone()
            .or_else(|| set("WARDEN_CACHE_DIR"))
            .or_else(|| set("XDG_CACHE_HOME").map(|dir| dir.join("warden")))
            .or_else(|| set("HOME").map(|home| home.join(".cache").join("warden")))
    }

    /// Checks the table when enabled and reads the API key; returns it as
    /// (variable, value) for the known secrets. A disabled table is not
    /// checked, so turning summaries off never breaks a config.
    pub(super) fn check(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<(String, String)>, (&'static str, String)> {
        if !self.enabled {
            return Ok(None);
        }
        if self.model.trim().is_empty() {
            return Err(("summary.model", "must name the model to ask, e.g. \"gpt-4o-mini\"".into()));
        }
        let endpoint = &self.endpoint;
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) || endpoint.contains(' ') {
            return Err((
                "summary.endpoint",
                format!(
                    "must be the http:// or https:// URL of an OpenAI-compatible API, such as \
                     \"https://api.openai.com/v1\", not \"{endpoint}\""
                ),
            ));
        }
        if self.concurrency == 0 {
            return Err(("summary.concurrency", "must be at least 1".into()));
        }
        let Some(name) = &self.api_key_env else { return Ok(None) };
        match lookup(name) {
            Some(key) if !key.is_empty() => Ok(Some((name.clone(), key))),
            _ => Err((
                "summary.api_key_env",
                format!("names `{name}`, which is not set; set it to the API key, or remove `api_key_env`"),
            )),
        }
    }
}
