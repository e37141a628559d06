//! Servers added to Warden's own config file, edited in place: the
//! person's comments, order and layout stay; each server becomes a
//! `[servers.NAME]` table at the end.
//!
//! A name that is not a valid Warden server name (a dot, a space) is
//! turned into one and the change said. A name Warden's config already
//! has is *the same* server when the tables are equal (nothing to do) and
//! a *conflict* otherwise: it is named and not written, never overwritten.
//! The merged text must load (with any `${VAR}` taken as set) before
//! anyone writes it.

use std::path::Path;

use anyhow::Context as _;
use serde_json::Value;

/// What merging did.
#[derive(Debug, Default)]
pub(crate) struct Merged {
    /// The file's new text.
    pub(crate) text: String,
    /// Servers added: (name in Warden, name in the source).
    pub(crate) added: Vec<(String, String)>,
    /// Servers Warden's config already has, the same.
    pub(crate) same: Vec<String>,
    /// Servers Warden's config has under the name, different.
    pub(crate) conflicts: Vec<String>,
}

/// `servers` added to Warden's config `text` (at `path`, for messages).
pub(crate) fn merge(text: &str, path: &Path, servers: &[(String, Value)]) -> anyhow::Result<Merged> {
    let (existing, _): (Vec<(String, Value)>, _) = warden_config::foreign_servers(text, path)?;
    let mut document: toml_edit::DocumentMut =
        text.parse().with_context(|| format!("{} is not valid TOML", path.display()))?;
    let mut merged = Merged::default();
    // The config reader keeps no order: by name, so runs agree.
    let mut servers: Vec<&(String, Value)> = servers.iter().collect();
    servers.sort_by(|a, b| a.0.cmp(&b.0));
    for (source_name, server) in servers {
        let name = server_name(source_name);
        match existing.iter().find(|(have, _)| *have == name) {
            Some((_, have)) if have == server => merged.same.push(name),
            Some(_) => merged.conflicts.push(name),
            None if merged.added.iter().any(|(added, _)| *added == name) => merged.conflicts.push(name),
            None => {
                let servers = document.entry("servers").or_insert_with(|| {
                    let mut table = toml_edit::Table::new();
                    table.set_implicit(true);
                    toml_edit::Item::Table(table)
                });
                let servers = servers
                    .as_table_like_mut()
                    .with_context(|| format!("`servers` in {} is not a table", path.display()))?;
                servers.insert(&name, toml_edit::Item::Table(table_of(server)));
                merged.added.push((name, source_name.clone()));
            }
        }
    }
    merged.text = document.to_string();
    let lenient = |name: &str| Some(std::env::var(name).unwrap_or_else(|_| "set".into()));
    warden_config::WardenConfig::from_toml_with(&merged.text, &path.display().to_string(), &lenient)
        .context("the merged config would not load, so nothing was written")?;
    Ok(merged)
}

/// A valid Warden server name for `name`: a letter first, then letters,
/// digits, `-` and single `_`, at most 32 characters.
pub(crate) fn server_name(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let out = out.trim_start_matches(|c: char| !c.is_ascii_alphabetic());
    let out: String = out.chars().take(32).collect();
    let out = out.trim_end_matches('_').to_string();
    if out.is_empty() {
        "server".into()
    } else {
        out
    }
}

/// The fields a person reads first, in this order; the rest follow sorted.
const FIRST_FIELDS: [&str; 7] = ["command", "args", "env", "cwd", "url", "headers", "transport"];

/// A server's fields as a TOML table; nested tables (`env`, `headers`)
/// inline, as a person writes them.
fn table_of(server: &Value) -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    let Value::Object(fields) = server else { return table };
    let mut keys: Vec<&String> = fields.keys().collect();
    keys.sort_by_key(|key| (FIRST_FIELDS.iter().position(|first| first == key).unwrap_or(FIRST_FIELDS.len()), *key));
    for key in keys {
        if let Some(value) = toml_value(&fields[key]) {
            table.insert(key, toml_edit::Item::Value(value));
        }
    }
    table
}

fn toml_value(value: &Value) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Object(fields) if fields.is_empty() => return None,
        Value::Bool(flag) => (*flag).into(),
        Value::Number(number) => match number.as_i64() {
            Some(integer) => integer.into(),
            None => number.as_f64()?.into(),
        },
        Value::String(text) => text.as_str().into(),
        Value::Array(items) => toml_edit::Value::Array(items.iter().filter_map(toml_value).collect()),
        Value::Object(fields) => {
            let mut inline = toml_edit::InlineTable::new();
            let mut fields: Vec<_> = fields.iter().collect();
            fields.sort_by_key(|(key, _)| *key);
            for (key, value) in fields {
                if let Some(value) = toml_value(value) {
                    inline.insert(key, value);
                }
            }
            toml_edit::Value::InlineTable(inline)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_server_names() {
        assert_eq!(server_name("brave-search"), "brave-search");
        assert_eq!(server_name("my.server v2"), "my-server-v2");
        assert_eq!(server_name("2fa__tool"), "fa_tool");
        assert_eq!(server_name("…"), "server");
    }

    #[test]
    fn servers_are_added_in_place_and_conflicts_named() {
        let text = "# my servers\n[servers.keep]\ncommand = \"a\" # the first\n";
        let servers = vec![
            ("keep".to_string(), serde_json::json!({"command": "b"})),
            ("gh".to_string(), serde_json::json!({"command": "npx", "env": {"TOKEN": "${GH_TOKEN}"}})),
        ];
        let merged = merge(text, Path::new("warden.toml"), &servers).unwrap();
        assert_eq!(merged.conflicts, ["keep"]);
        assert_eq!(merged.added, [("gh".to_string(), "gh".to_string())]);
        assert_eq!(
            merged.text,
            "# my servers\n[servers.keep]\ncommand = \"a\" # the first\n\n[servers.gh]\ncommand = \"npx\"\nenv = { TOKEN = \"${GH_TOKEN}\" }\n"
        );
    }
}
