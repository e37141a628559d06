//! The server maps of Zed (`context_servers` in `settings.json`) and goose
//! (`extensions` in `config.yaml`), read as Warden servers.
//!
//! Zed writes a custom server either nested (`command = { path, args, env }`)
//! or flat (`command`, `args`, `env`), with `source` and `settings` that
//! only Zed's extensions read. goose writes `type` (`stdio` with `cmd`,
//! `args`, `envs`; `streamable_http` or `sse` with `uri`), and its own
//! `builtin`/`platform`/`frontend` extensions, which are parts of goose,
//! not MCP servers Warden can run: those are left out, as are entries with
//! `enabled: false`. goose's `timeout` is the call timeout
//! (`default_policy.timeout`); a non-empty `available_tools` is Warden's
//! `enabled_tools`. The rest of both files is the editor's own.

use config::{Map, Value, ValueKind};

use super::raw::{kind_name, server_error, RawServer};
use super::ConfigError;

/// One `context_servers` entry; `None` when disabled.
pub(super) fn zed(mut table: RawServer, file: &str, name: &str) -> Result<Option<RawServer>, ConfigError> {
    if !enabled(&mut table, file, name)? {
        return Ok(None);
    }
    table.remove("source");
    table.remove("settings");
    if let Some(Value { kind: ValueKind::Table(mut nested), .. }) = table.get("command").cloned() {
        table.remove("command");
        let path = nested.remove("path").ok_or_else(|| server_error(file, name, "`command` has no `path`".into()))?;
        table.insert("command".into(), path);
        for key in ["args", "env"] {
            if let Some(value) = nested.remove(key) {
                table.insert(key.into(), value);
            }
        }
    }
    Ok(Some(table))
}

/// One goose `extensions` entry; `None` when disabled or not an MCP server.
pub(super) fn goose(mut table: RawServer, file: &str, name: &str) -> Result<Option<RawServer>, ConfigError> {
    if !enabled(&mut table, file, name)? {
        return Ok(None);
    }
    let kind = match table.remove("type").map(|value| value.kind) {
        Some(ValueKind::String(kind)) => kind,
        Some(other) => {
            return Err(server_error(file, name, format!("`type` must be a string, not {}", kind_name(&other))))
        }
        None => "stdio".to_string(),
    };
    if matches!(kind.as_str(), "builtin" | "platform" | "frontend" | "inline_python") {
        return Ok(None);
    }
    if has_items(&table, "available_tools") {
        move_key(&mut table, "available_tools", "enabled_tools");
    }
    for key in ["name", "display_name", "description", "bundled", "env_keys", "available_tools"] {
        table.remove(key);
    }
    move_key(&mut table, "cmd", "command");
    move_key(&mut table, "envs", "env");
    move_key(&mut table, "uri", "url");
    if let Some(timeout) = table.remove("timeout") {
        let slot =
            table.entry("default_policy".into()).or_insert_with(|| Value::new(None, ValueKind::Table(Map::new())));
        if let ValueKind::Table(policy) = &mut slot.kind {
            policy.entry("timeout".into()).or_insert(timeout);
        }
    }
    let kind = match kind.as_str() {
        "stdio" => "stdio",
        "streamable_http" => "http",
        "sse" => "sse",
        other => {
            return Err(server_error(
                file,
                name,
                format!("goose extension type \"{other}\" is not one Warden runs (stdio, streamable_http, sse)"),
            ))
        }
    };
    table.insert("type".into(), Value::new(None, ValueKind::String(kind.into())));
    Ok(Some(table))
}

/// Reads and removes `enabled` (default true).
fn enabled(table: &mut RawServer, file: &str, name: &str) -> Result<bool, ConfigError> {
    match table.remove("enabled").map(|value| value.kind) {
        Some(ValueKind::Boolean(enabled)) => Ok(enabled),
        None => Ok(true),
        Some(other) => {
            Err(server_error(file, name, format!("`enabled` must be true or false, not {}", kind_name(&other))))
        }
    }
}

fn has_items(table: &RawServer, key: &str) -> bool {
    matches!(table.get(key).map(|value| &value.kind), Some(ValueKind::Array(items)) if !items.is_empty())
}

fn move_key(table: &mut RawServer, from: &str, to: &str) {
    if let Some(value) = table.remove(from) {
        table.entry(to.into()).or_insert(value);
    }
}
