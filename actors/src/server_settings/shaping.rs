//! Which of a server's tools exist for Warden's callers, and under what
//! names: the config's `enabled_tools`, `disabled_tools` and `rename`.
//!
//! Applied in the ServerActor to every list the server sends, before the
//! Registry namespaces the tools and before any policy sees them: a tool
//! filtered out is unknown everywhere (embedded, bridge, CLI, front), and a
//! renamed tool is known only by its new name — policy rules, allowlists,
//! the front's one-server view and summaries all use that name. The name
//! the server itself knows (`ToolEntry::upstream_name`) is used only on
//! the wire, for `tools/call`.
//!
//! Filters match the server's own names: they say which of *its* tools to
//! keep, and a rename must not make a filtered tool reappear.

use std::collections::{BTreeMap, HashMap, HashSet};

use warden_policy::ToolPatterns;
use warden_protocol::Tool;

/// One server's filters and renames. A reload that changes only these
/// applies them to the running server (it lists its tools again).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolShaping {
    /// Only these of the server's tools are listed (its own names or
    /// globs); `None`: all of them.
    pub enabled: Option<ToolPatterns>,
    /// These of the server's tools are never listed.
    pub disabled: ToolPatterns,
    /// The server's own name → the name callers see.
    pub renames: BTreeMap<String, String>,
    /// What the server's entry set that Warden does not honour (another
    /// program's settings): said in its status with the shaping warnings,
    /// so they are seen where a server's problems are looked for.
    pub ignored: Vec<String>,
}

/// A server's tool list after shaping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShapedTools {
    /// The tools callers see, renamed.
    pub tools: Vec<Tool>,
    /// For each renamed tool, its new name → the server's own name.
    pub upstream_names: HashMap<String, String>,
    /// Renames that could not be applied, for the server's status.
    pub warnings: Vec<String>,
}

impl ToolShaping {
    /// A configured server's filters and renames (their patterns were
    /// checked at load time).
    pub fn of(server: &warden_config::ServerConfig) -> ToolShaping {
        ToolShaping {
            enabled: server.enabled_tools.as_ref().and_then(|tools| ToolPatterns::new(tools).ok()),
            disabled: ToolPatterns::new(&server.disabled_tools).unwrap_or_default(),
            renames: server.rename.clone(),
            ignored: server.ignored.clone(),
        }
    }

    /// Whether the server's tool `name` (its own name) is shown at all.
    pub fn shows(&self, name: &str) -> bool {
        self.enabled.as_ref().is_none_or(|enabled| enabled.matches(name)) && !self.disabled.matches(name)
    }

    /// Filters then renames what the server listed. A rename is skipped,
    /// with a warning, when its new name is one another kept tool already
    /// has (under its own name or a rename), and when the server lists no
    /// tool by its old name (a typo would otherwise go unnoticed).
    pub fn shape(&self, server: &str, listed: Vec<Tool>) -> ShapedTools {
        let mut tools: Vec<Tool> = listed.into_iter().filter(|tool| self.shows(&tool.name)).collect();
        let mut warnings: Vec<String> =
            self.ignored.iter().map(|ignored| format!("server '{server}': {ignored}")).collect();
        let kept: HashSet<String> = tools.iter().map(|tool| tool.name.clone()).collect();
        for old in self.renames.keys() {
            if !kept.contains(old) {
                warnings.push(format!(
                    "`rename` of server '{server}' names tool '{old}', which the server does not list (or a filter \
                     hides)"
                ));
            }
        }
        // The names every kept tool ends up with, claimed in list order:
        // the first claim wins; a rename that loses keeps the old name.
        let mut taken: HashSet<String> =
            tools.iter().filter(|tool| !self.renames.contains_key(&tool.name)).map(|tool| tool.name.clone()).collect();
        let mut upstream_names = HashMap::new();
        for tool in &mut tools {
            let Some(new) = self.renames.get(&tool.name) else { continue };
            if new == &tool.name {
                continue;
            }
            if !taken.insert(new.clone()) {
                warnings.push(format!(
                    "`rename` of server '{server}': tool '{}' cannot be renamed '{new}', another of its tools is \
                     called that; it keeps its own name (rename or disable the other one too)",
                    tool.name
                ));
                taken.insert(tool.name.clone());
                continue;
            }
            upstream_names.insert(new.clone(), std::mem::replace(&mut tool.name, new.clone()));
        }
        ShapedTools { tools, upstream_names, warnings }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> Tool {
        serde_json::from_value(serde_json::json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
    }

    fn names(shaped: &ShapedTools) -> Vec<&str> {
        shaped.tools.iter().map(|tool| tool.name.as_str()).collect()
    }

    #[test]
    fn filters_match_own_names_and_renames_apply_to_what_is_kept() {
        let shaping = ToolShaping {
            enabled: Some(ToolPatterns::new(&["read_*", "write_file"]).unwrap()),
            disabled: ToolPatterns::new(&["read_secret"]).unwrap(),
            renames: [("read_file", "cat"), ("write_file", "save"), ("read_secret", "open")]
                .into_iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            ignored: vec!["`alwaysAllow` (a `mcpServers` setting) is not something Warden does; it is ignored".into()],
        };
        let listed = ["read_file", "read_secret", "write_file", "delete", "read_dir"].map(tool).to_vec();
        let shaped = shaping.shape("files", listed);
        assert_eq!(names(&shaped), ["cat", "save", "read_dir"]);
        assert_eq!(shaped.upstream_names["cat"], "read_file");
        assert_eq!(shaped.upstream_names["save"], "write_file");
        assert_eq!(shaped.warnings.len(), 2, "{:?}", shaped.warnings);
        assert!(shaped.warnings[0].starts_with("server 'files': `alwaysAllow`"), "{:?}", shaped.warnings);
        assert!(shaped.warnings[1].contains("'read_secret'"), "{:?}", shaped.warnings);
    }

    #[test]
    fn a_rename_onto_a_kept_name_is_skipped_and_said() {
        let renames = [("a", "b")].into_iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let shaping = ToolShaping { renames, ..ToolShaping::default() };
        let shaped = shaping.shape("s", ["a", "b"].map(tool).to_vec());
        assert_eq!(names(&shaped), ["a", "b"]);
        assert!(shaped.upstream_names.is_empty());
        assert!(shaped.warnings[0].contains("cannot be renamed 'b'"), "{:?}", shaped.warnings);
    }

    #[test]
    fn two_tools_may_swap_names() {
        let renames = [("a", "b"), ("b", "a")].into_iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let shaping = ToolShaping { renames, ..ToolShaping::default() };
        let shaped = shaping.shape("s", ["a", "b"].map(tool).to_vec());
        assert_eq!(names(&shaped), ["b", "a"]);
        assert_eq!(shaped.upstream_names["b"], "a");
        assert_eq!(shaped.upstream_names["a"], "b");
        assert!(shaped.warnings.is_empty());
    }
}
