//! One client's config file: the servers it has (in Warden's schema,
//! `${VAR}` references kept), whether one of them already is Warden, and
//! the file rewritten so that one Warden entry replaces the servers that
//! moved into Warden's config.
//!
//! The rewrite changes only the client's server section: in TOML (codex)
//! the file is edited in place; JSON is written back with its keys in
//! their order; a JSON file with comments (Zed's, often VS Code's) is not
//! rewritten at all — a rewrite would lose them — and the person is shown
//! the entry to paste instead. Entries Warden did not take (disabled ones,
//! goose's built-in extensions) stay where they are.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};
use serde_json::{json, Map, Value};

use super::entry::{runs_warden, WardenEntry, ENTRY_NAME};
use super::jsonc;
use super::known::{Client, Format};

/// A client's file, as read.
#[derive(Debug, Clone)]
pub(crate) struct ClientFile {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Its bytes, as read (the backup is these).
    pub(crate) text: String,
    format: Format,
    section: &'static str,
}

/// Why the file cannot be rewritten by Warden.
#[derive(Debug, thiserror::Error)]
#[error(
    "{file} holds comments, which rewriting it would lose; edit it by hand: in `{section}`, remove the servers \
     Warden now runs ({moved}) and add\n{snippet}"
)]
pub(crate) struct HandEditNeeded {
    file: String,
    section: &'static str,
    moved: String,
    snippet: String,
}

impl ClientFile {
    /// Reads `path`, a file in `client`'s shape.
    pub(crate) fn read(path: &Path, client: &Client) -> anyhow::Result<ClientFile> {
        Self::read_as(path, client.format, client.section)
    }

    /// Reads `path` by its extension (for `warden import FILE`).
    pub(crate) fn read_any(path: &Path) -> anyhow::Result<ClientFile> {
        let format = match path.extension().and_then(|ext| ext.to_str()) {
            Some("json") => Format::Jsonc,
            Some("yaml" | "yml") => Format::Yaml,
            _ => Format::Toml,
        };
        Self::read_as(path, format, "")
    }

    fn read_as(path: &Path, format: Format, section: &'static str) -> anyhow::Result<ClientFile> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        Ok(ClientFile { path: path.to_path_buf(), text, format, section })
    }

    /// Its text as the config loader reads it.
    fn plain(&self) -> String {
        match self.format {
            Format::Jsonc => jsonc::to_json(&self.text),
            _ => self.text.clone(),
        }
    }

    /// Every server in the file, in Warden's schema, and the name of an
    /// entry that already runs Warden (left out of the servers). What an
    /// entry sets that Warden does not honour is said on stderr.
    pub(crate) fn servers(&self) -> anyhow::Result<(Vec<(String, Value)>, Option<String>)> {
        let (mut servers, ignored): (Vec<(String, Value)>, _) =
            warden_config::foreign_servers(&self.plain(), &self.path)?;
        for (server, unhonoured) in ignored {
            for warning in unhonoured {
                eprintln!("warning: server '{server}': {warning}");
            }
        }
        let warden = servers.iter().position(|(_, server)| runs_warden(server));
        let warden = warden.map(|index| servers.remove(index).0);
        Ok((servers, warden))
    }

    /// The file with `moved` taken out of its server section and the
    /// Warden entry put in.
    pub(crate) fn with_warden(&self, moved: &[String], entry: &WardenEntry) -> anyhow::Result<String> {
        match self.format {
            Format::Toml => self.toml_with_warden(moved, entry),
            Format::Yaml => super::goose_yaml::with_warden(&self.text, moved, entry),
            Format::Json | Format::Jsonc => {
                if self.format == Format::Jsonc && jsonc::has_comments(&self.text) {
                    let snippet = serde_json::to_string_pretty(&json!({ENTRY_NAME: self.json_entry(entry)}))?;
                    return Err(HandEditNeeded {
                        file: self.path.display().to_string(),
                        section: self.section,
                        moved: moved.join(", "),
                        snippet,
                    }
                    .into());
                }
                let mut root: Value = serde_json::from_str(&self.plain())
                    .with_context(|| format!("{} is not valid JSON", self.path.display()))?;
                let root_map =
                    root.as_object_mut().ok_or_else(|| anyhow!("{} is not a JSON object", self.path.display()))?;
                let section = root_map.entry(self.section).or_insert_with(|| Value::Object(Map::new()));
                let section = section
                    .as_object_mut()
                    .ok_or_else(|| anyhow!("`{}` in {} is not an object", self.section, self.path.display()))?;
                section.retain(|name, _| !moved.contains(name));
                section.insert(ENTRY_NAME.into(), self.json_entry(entry));
                Ok(serde_json::to_string_pretty(&root)? + "\n")
            }
        }
    }

    /// The entry in this client's JSON dialect.
    fn json_entry(&self, entry: &WardenEntry) -> Value {
        let (command, args) = entry.command();
        match self.section {
            "servers" => json!({"type": "stdio", "command": command, "args": args}),
            _ => json!({"command": command, "args": args}),
        }
    }

    fn toml_with_warden(&self, moved: &[String], entry: &WardenEntry) -> anyhow::Result<String> {
        let mut document: toml_edit::DocumentMut =
            self.text.parse().with_context(|| format!("{} is not valid TOML", self.path.display()))?;
        let section = document
            .entry(self.section)
            .or_insert_with(|| {
                let mut table = toml_edit::Table::new();
                table.set_implicit(true);
                toml_edit::Item::Table(table)
            })
            .as_table_like_mut()
            .ok_or_else(|| anyhow!("`{}` in {} is not a table", self.section, self.path.display()))?;
        for name in moved {
            section.remove(name);
        }
        let (command, args) = entry.command();
        let mut table = toml_edit::Table::new();
        table.insert("command", toml_edit::value(command));
        table.insert("args", toml_edit::value(args.iter().collect::<toml_edit::Array>()));
        section.insert(ENTRY_NAME, toml_edit::Item::Table(table));
        Ok(document.to_string())
    }
}
