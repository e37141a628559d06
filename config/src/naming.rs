//! `[naming]`: how tool names handed to models are built.
//!
//! ```toml
//! [naming]
//! separator = "__"   # or "_" for hosts that expect it
//! max_length = 64    # the strictest major provider's limit
//! ```
//!
//! Names follow `^[a-zA-Z0-9_-]{1,max_length}$` whatever the server calls
//! its tools; `warden_policy`'s naming module says how names are mapped,
//! shortened and kept unique.

use serde::Deserialize;
use warden_policy::NameRules;

/// The `[naming]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamingConfig {
    /// Between server and tool: `__` or `_`.
    #[serde(default = "default_separator")]
    pub separator: String,
    /// The longest name, in characters.
    #[serde(default = "default_max_length")]
    pub max_length: usize,
}

impl Default for NamingConfig {
    fn default() -> Self {
        NamingConfig { separator: default_separator(), max_length: default_max_length() }
    }
}

fn default_separator() -> String {
    "__".into()
}

fn default_max_length() -> usize {
    warden_policy::MAX_TOOL_NAME_CHARS
}

impl NamingConfig {
    /// The rules, or what is wrong with the table.
    pub fn rules(&self) -> Result<NameRules, String> {
        NameRules::new(&self.separator, self.max_length).map_err(|error| error.to_string())
    }
}
