//! The server lists other MCP products write, read into Warden's own shape.
//!
//! Warden's schema keeps servers in a `servers` map keyed by name. Two other
//! shapes are common enough that a user should be able to point Warden at
//! the file they already have:
//!
//! - a `mcp_servers:` list whose entries carry their `name`, as agent hosts
//!   write it in YAML;
//! - a `mcpServers` map, as desktop and editor MCP clients write it in JSON,
//!   where an entry may say `type = "stdio" | "http" | "streamable-http" | "sse"`;
//! - codex's `[mcp_servers.NAME]` tables, their fields mapped (`codex.rs`),
//!   the file's other (codex) settings left unread;
//! - Zed's `context_servers` and goose's `extensions` (`editors.rs`), the
//!   same way; VS Code's `servers` with `type`, `envFile` and `inputs`
//!   (`vscode.rs`).
//!
//! This step works on the raw value tree, before the strict schema sees it:
//! it moves both shapes into `servers` and checks `type` against
//! `command`/`url`, then drops it, because Warden knows the transport from
//! which of the two is set — except `"sse"`, the legacy HTTP+SSE transport,
//! which becomes `transport = "sse"`. Everything else is left to the schema, so a typo
//! in a foreign shape is the same `unknown field` error as in Warden's own.

use config::{Map, Value, ValueKind};

use super::raw::{kind_name, server_error, take_unhonoured, RawServer};
use super::ConfigError;

/// The top-level keys that hold servers, in the order they are read.
pub(super) const SECTIONS: [&str; 5] = ["servers", "mcp_servers", "mcpServers", "context_servers", "extensions"];

/// The top-level keys of Warden's schema: in a codex file, every other key
/// is codex's own setting and is not read.
const WARDEN_KEYS: [&str; 18] = [
    "servers",
    "max_message_bytes",
    "call_timeout_secs",
    "output_limit_bytes",
    "security",
    "agents",
    "naming",
    "tool_profiles",
    "daemon",
    "summary",
    "front",
    "metrics",
    "audit",
    "telemetry",
    "roots",
    "sampling",
    "mcp_server_dir",
    "cluster",
];

/// What an entry in another program's shape set that Warden does not
/// honour, by server: said as warnings ([`ServerConfig::ignored`]).
///
/// [`ServerConfig::ignored`]: crate::ServerConfig::ignored
pub(crate) type Ignored = Vec<(String, Vec<String>)>;

/// Moves `mcp_servers` and `mcpServers` into `servers`; errors name `file`.
pub(super) fn normalise(root: &mut Map<String, Value>, file: &str) -> Result<Ignored, ConfigError> {
    // VS Code's prompts: Warden reads `${input:ID}` from the environment.
    root.remove("inputs");
    let codex = matches!(root.get("mcp_servers").map(|value| &value.kind), Some(ValueKind::Table(_)));
    if codex || root.contains_key("context_servers") || root.contains_key("extensions") {
        // A codex, Zed or goose file: the rest of it (models, themes,
        // profiles) is that program's business.
        root.retain(|key, _| SECTIONS.contains(&key.as_str()) || WARDEN_KEYS.contains(&key.as_str()));
    }
    let mut servers: Vec<(String, Value, &str)> = Vec::new();
    let mut ignored = Ignored::new();
    for section in SECTIONS {
        let Some(value) = root.remove(section) else { continue };
        for (name, server, unhonoured) in entries(section, value, file)? {
            if let Some((_, _, first)) = servers.iter().find(|(seen, _, _)| *seen == name) {
                return Err(ConfigError::Duplicate {
                    server: name,
                    first: format!("'{file}' (`{first}`)"),
                    second: format!("'{file}' (`{section}`)"),
                });
            }
            if !unhonoured.is_empty() {
                ignored.push((name.clone(), unhonoured));
            }
            servers.push((name, server, section));
        }
    }
    if !servers.is_empty() {
        let map: Map<String, Value> = servers.into_iter().map(|(name, server, _)| (name, server)).collect();
        root.insert("servers".into(), Value::new(None, map));
    }
    Ok(ignored)
}

/// How a shape's entry becomes a Warden server (`None`: left out).
type Reader = fn(RawServer, &str, &str) -> Result<Option<RawServer>, ConfigError>;

/// One server of a section: its name, its raw entry, and what of it
/// Warden does not honour.
type Entry = (String, Value, Vec<String>);

/// A server entry in `shape` (another program's): the fields Warden does
/// not have taken out and said.
fn foreign(name: String, mut table: RawServer, shape: &str) -> Entry {
    let unhonoured = take_unhonoured(&mut table, shape);
    (name, Value::new(None, table), unhonoured)
}

/// One section's servers.
fn entries(section: &str, value: Value, file: &str) -> Result<Vec<Entry>, ConfigError> {
    let kind = kind_name(&value.kind);
    let section_error = |expected: &str| ConfigError::Setting {
        file: file.into(),
        field: section_name(section),
        problem: format!("must be {expected}, not {kind}"),
    };
    match (section, &value.kind) {
        // Warden's own shape is left to the schema; VS Code's `type` and
        // `envFile` are read first, and an entry with either is VS Code's.
        ("servers", ValueKind::Table(_)) => value_table(value)
            .into_iter()
            .map(|(name, entry)| {
                let ValueKind::Table(table) = entry.kind else { return Ok((name, entry, Vec::new())) };
                let vscode = table.contains_key("type") || table.contains_key("envFile");
                let table = crate::vscode::env_file(typed(table, file, &name)?, file, &name)?;
                Ok(match vscode {
                    true => foreign(name, table, "VS Code"),
                    false => (name, Value::new(None, table), Vec::new()),
                })
            })
            .collect(),
        ("servers", _) => Err(section_error("a table of servers by name")),
        ("mcp_servers", ValueKind::Array(_)) => {
            let ValueKind::Array(list) = value.kind else { unreachable!("matched above") };
            list.into_iter()
                .enumerate()
                .map(|(index, entry)| listed(index, entry, file).map(|(name, entry)| (name, entry, Vec::new())))
                .collect()
        }
        // Codex's `[mcp_servers.NAME]` tables.
        ("mcp_servers", ValueKind::Table(_)) => {
            let mut servers = Vec::new();
            for (name, entry) in value_table(value) {
                let table = server_table(entry, &name, file)?;
                if let Some(table) = crate::codex::entry(table, file, &name)? {
                    let table = typed(table, file, &name)?;
                    servers.push(foreign(name, table, "codex"));
                }
            }
            Ok(servers)
        }
        ("mcp_servers", _) => Err(section_error("a list of servers, each with a `name`, or codex's tables by name")),
        ("context_servers" | "extensions", ValueKind::Table(_)) => {
            let (read, shape) = match section {
                "context_servers" => (crate::editors::zed as Reader, "Zed"),
                _ => (crate::editors::goose as Reader, "goose"),
            };
            let mut servers = Vec::new();
            for (name, entry) in value_table(value) {
                let table = server_table(entry, &name, file)?;
                if let Some(table) = read(table, file, &name)? {
                    let table = typed(table, file, &name)?;
                    servers.push(foreign(name, table, shape));
                }
            }
            Ok(servers)
        }
        // `mcpServers` (Claude, Cursor, Windsurf, Cline...): `disabled =
        // true` (Cline's) leaves the server out, as the client would.
        (_, ValueKind::Table(_)) => {
            let mut servers = Vec::new();
            for (name, entry) in value_table(value) {
                let mut table = server_table(entry, &name, file)?;
                match table.remove("disabled").map(|value| value.kind) {
                    Some(ValueKind::Boolean(true)) => continue,
                    Some(ValueKind::Boolean(false)) | None => {}
                    Some(other) => {
                        let problem = format!("`disabled` must be true or false, not {}", kind_name(&other));
                        return Err(server_error(file, &name, problem));
                    }
                }
                let table = typed(table, file, &name)?;
                servers.push(foreign(name, table, "`mcpServers`"));
            }
            Ok(servers)
        }
        _ => Err(section_error("a map of servers by name")),
    }
}

/// One `mcp_servers` entry: its `name` taken out as the key.
fn listed(index: usize, entry: Value, file: &str) -> Result<(String, Value), ConfigError> {
    let place = format!("mcp_servers[{index}]");
    let mut table = server_table(entry, &place, file)?;
    let name = match table.remove("name").map(|name| name.kind) {
        Some(ValueKind::String(name)) => name,
        Some(other) => {
            return Err(server_error(file, &place, format!("`name` must be a string, not {}", kind_name(&other))))
        }
        None => {
            return Err(server_error(
                file,
                &place,
                "has no `name`; every entry of `mcp_servers` needs one (it prefixes the server's tools)".into(),
            ))
        }
    };
    let table = typed(table, file, &name)?;
    Ok((name, Value::new(None, table)))
}

/// Checks and removes `type`: it must agree with `command` or `url`.
pub(super) fn typed(mut table: RawServer, file: &str, server: &str) -> Result<RawServer, ConfigError> {
    let Some(kind) = table.remove("type") else { return Ok(table) };
    let error = |problem: String| server_error(file, server, problem);
    let ValueKind::String(kind) = kind.kind else {
        return Err(error(format!("`type` must be a string, not {}", kind_name(&kind.kind))));
    };
    let (has_command, has_url) = (table.contains_key("command"), table.contains_key("url"));
    match kind.as_str() {
        "stdio" if !has_command || has_url => Err(error(
            "`type` is \"stdio\", which needs `command` (and no `url`); for a remote server write `type = \"http\"` \
             with `url`"
                .into(),
        )),
        "http" | "streamable-http" | "sse" if !has_url || has_command => Err(error(format!(
            "`type` is \"{kind}\", which needs `url` (and no `command`); for a local server write `type = \"stdio\"` \
             with `command`"
        ))),
        "stdio" | "http" | "streamable-http" => Ok(table),
        "sse" => match table.get("transport").map(|transport| transport.kind.clone()) {
            None => {
                table.insert("transport".into(), Value::new(None, ValueKind::String("sse".into())));
                Ok(table)
            }
            Some(ValueKind::String(transport)) if transport == "sse" => Ok(table),
            Some(_) => Err(error(
                "`type` is \"sse\" (the legacy HTTP+SSE transport) but `transport` says otherwise; keep one of them"
                    .into(),
            )),
        },
        _ => Err(error(format!(
            "`type` \"{kind}\" is not supported; Warden runs \"stdio\" servers (with `command`), \"http\" or \
             \"streamable-http\" servers (Streamable HTTP, with `url`) and \"sse\" servers (legacy HTTP+SSE, with `url`)"
        ))),
    }
}

/// An entry's table, or an error saying it is not one.
pub(super) fn server_table(entry: Value, server: &str, file: &str) -> Result<RawServer, ConfigError> {
    match entry.kind {
        ValueKind::Table(table) => Ok(table),
        other => Err(server_error(
            file,
            server,
            format!("must be a table of settings (`command` or `url`, …), not {}", kind_name(&other)),
        )),
    }
}

fn value_table(value: Value) -> Map<String, Value> {
    match value.kind {
        ValueKind::Table(table) => table,
        _ => Map::new(),
    }
}

/// The section's name with a `'static` lifetime, for [`ConfigError::Setting`].
fn section_name(section: &str) -> &'static str {
    SECTIONS.into_iter().find(|known| *known == section).unwrap_or("servers")
}
