//! `[tool_profiles.NAME]`: how tool definitions are shown to a model.
//!
//! ```toml
//! [tool_profiles.compact]
//! default = "full"
//! tools = { "fs__*" = "brief", "github__*" = "summary" }
//! ```
//!
//! A host picks a profile when it asks for the tool list
//! (`Warden::presented_tools`), or an agent names one with `profile =
//! "compact"`. What each detail shows is documented in `warden_policy`'s
//! profiles module; the globs are the same as in allowlists.

use std::collections::BTreeMap;

use serde::Deserialize;
use warden_policy::{Detail, ToolProfile};

/// One `[tool_profiles.NAME]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// The detail of tools no rule names.
    #[serde(default = "full")]
    pub default: Detail,
    /// Tool names or globs, and their detail.
    #[serde(default)]
    pub tools: BTreeMap<String, Detail>,
}

fn full() -> Detail {
    Detail::Full
}

impl ProfileConfig {
    /// The compiled profile, or the field and what is wrong with it.
    pub fn compile(&self, name: &str) -> Result<ToolProfile, (String, String)> {
        let rules = self.tools.iter().map(|(pattern, detail)| (pattern.clone(), *detail)).collect();
        ToolProfile::new(self.default, rules)
            .map_err(|error| (format!("tool_profiles.{name}.tools"), error.to_string()))
    }
}

#[cfg(test)]
mod tests;
