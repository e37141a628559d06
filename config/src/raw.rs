//! Config values before the schema sees them: a server's raw table, and
//! the words errors use for what a value is. Shared by every shape reader
//! (`shapes.rs`, `codex.rs`, `editors.rs`, `vscode.rs`, `drop_ins.rs`).

use config::{Map, Value, ValueKind};

use super::ConfigError;

/// A server's fields as a raw table, not yet checked by the schema.
pub(crate) type RawServer = Map<String, Value>;

/// An error about server `server` of `file`.
pub(crate) fn server_error(file: &str, server: &str, problem: String) -> ConfigError {
    ConfigError::Server { file: file.into(), server: server.into(), problem }
}

/// What a value is, in the words of a config file.
pub(crate) fn kind_name(kind: &ValueKind) -> &'static str {
    match kind {
        ValueKind::Nil => "an empty value",
        ValueKind::Boolean(_) => "a boolean",
        ValueKind::I64(_) | ValueKind::I128(_) | ValueKind::U64(_) | ValueKind::U128(_) => "an integer",
        ValueKind::Float(_) => "a number",
        ValueKind::String(_) => "a string",
        ValueKind::Table(_) => "a table",
        ValueKind::Array(_) => "a list",
    }
}

/// Takes out of a server entry written in another program's shape
/// (`shape`: "codex", "VS Code"...) every field Warden's schema does not
/// have, once the shape's own fields were mapped: each is said, not
/// refused, since the file is that program's and valid there. Warden's own
/// `[servers.NAME]` stays strict: an unknown field there is a typo.
pub(crate) fn take_unhonoured(table: &mut RawServer, shape: &str) -> Vec<String> {
    let unknown: Vec<String> =
        table.keys().filter(|key| !crate::server::SERVER_FIELDS.contains(&key.as_str())).cloned().collect();
    unknown
        .into_iter()
        .map(|key| {
            table.remove(&key);
            format!("`{key}` (a {shape} setting) is not something Warden does; it is ignored")
        })
        .collect()
}
