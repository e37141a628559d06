//! Codex's `config.toml`: `[mcp_servers.NAME]` tables, read as Warden
//! servers with their field names mapped.
//!
//! | codex | Warden |
//! |---|---|
//! | `command`, `args`, `env`, `cwd`, `url` | the same |
//! | `startup_timeout_sec` | `startup_timeout_secs` |
//! | `tool_timeout_sec` | `default_policy.timeout` (below a tool's own) |
//! | `http_headers` | `headers` |
//! | `env_http_headers = { H = "VAR" }` | `headers = { H = "${VAR}" }` |
//! | `bearer_token_env_var = "VAR"` | `headers.Authorization = "Bearer ${VAR}"` |
//! | `env_vars = ["A"]` | passed anyway (servers get Warden's environment); `pass_env` with `inherit_env = false` |
//! | `enabled = false` | the server is left out |
//! | `enabled_tools`, `disabled_tools` | the same (Warden's tool filters) |
//!
//! The rest of a codex file (`model`, `approval_policy`, `[profiles]`…) is
//! codex's own and is not read (`shapes.rs` drops it).

use config::{Map, Value, ValueKind};

use super::raw::{kind_name, server_error, RawServer};
use super::ConfigError;

/// One `[mcp_servers.NAME]` table as a Warden server; `None` when
/// `enabled = false`.
pub(super) fn entry(mut table: RawServer, file: &str, name: &str) -> Result<Option<RawServer>, ConfigError> {
    let error = |problem: String| server_error(file, name, problem);
    match table.remove("enabled").map(|value| value.kind) {
        Some(ValueKind::Boolean(false)) => return Ok(None),
        Some(ValueKind::Boolean(true)) | None => {}
        Some(other) => return Err(error(format!("`enabled` must be true or false, not {}", kind_name(&other)))),
    }
    rename(&mut table, "startup_timeout_sec", "startup_timeout_secs", file, name)?;
    if let Some(timeout) = table.remove("tool_timeout_sec") {
        let policy = table_at(&mut table, "default_policy", file, name)?;
        policy.entry("timeout".into()).or_insert(timeout);
    }
    if let Some(headers) = table.remove("http_headers") {
        let ValueKind::Table(headers) = headers.kind else {
            return Err(error("`http_headers` must be a table of header names and values".into()));
        };
        table_at(&mut table, "headers", file, name)?.extend(headers);
    }
    if let Some(from_env) = table.remove("env_http_headers") {
        let ValueKind::Table(from_env) = from_env.kind else {
            return Err(error("`env_http_headers` must be a table of header names and variable names".into()));
        };
        let mut mapped = Map::new();
        for (header, variable) in from_env {
            let variable = string(variable, &format!("env_http_headers.{header}"), file, name)?;
            mapped.insert(header, text(format!("${{{variable}}}")));
        }
        table_at(&mut table, "headers", file, name)?.extend(mapped);
    }
    if let Some(variable) = table.remove("bearer_token_env_var") {
        let variable = string(variable, "bearer_token_env_var", file, name)?;
        table_at(&mut table, "headers", file, name)?
            .insert("Authorization".into(), text(format!("Bearer ${{{variable}}}")));
    }
    if let Some(names) = table.remove("env_vars") {
        let inherits = !matches!(table.get("inherit_env").map(|v| &v.kind), Some(ValueKind::Boolean(false)));
        if !inherits {
            rename_into_list(&mut table, names, "pass_env");
        }
    }
    Ok(Some(table))
}

fn rename(table: &mut RawServer, from: &str, to: &str, file: &str, name: &str) -> Result<(), ConfigError> {
    let Some(value) = table.remove(from) else { return Ok(()) };
    if table.contains_key(to) {
        return Err(server_error(file, name, format!("has both `{from}` (codex) and `{to}` (Warden); keep one")));
    }
    table.insert(to.into(), value);
    Ok(())
}

/// The table at `key`, made when missing.
fn table_at<'a>(
    table: &'a mut RawServer,
    key: &str,
    file: &str,
    name: &str,
) -> Result<&'a mut Map<String, Value>, ConfigError> {
    let slot = table.entry(key.into()).or_insert_with(|| Value::new(None, ValueKind::Table(Map::new())));
    match &mut slot.kind {
        ValueKind::Table(inner) => Ok(inner),
        other => Err(server_error(file, name, format!("`{key}` must be a table, not {}", kind_name(other)))),
    }
}

fn rename_into_list(table: &mut RawServer, names: Value, key: &str) {
    let slot = table.entry(key.into()).or_insert_with(|| Value::new(None, ValueKind::Array(Vec::new())));
    if let (ValueKind::Array(list), ValueKind::Array(more)) = (&mut slot.kind, names.kind) {
        list.extend(more);
    }
}

fn string(value: Value, field: &str, file: &str, name: &str) -> Result<String, ConfigError> {
    match value.kind {
        ValueKind::String(text) if !text.is_empty() => Ok(text),
        other => Err(server_error(
            file,
            name,
            format!("`{field}` must name an environment variable, not {}", kind_name(&other)),
        )),
    }
}

fn text(value: String) -> Value {
    Value::new(None, ValueKind::String(value))
}
