//! Every field has one kind of value, in every shape.
//!
//! The `config` crate reads a value into whatever the schema asks for: a
//! JSON `"command": 5` became the command `"5"`, and `"inherit_env":
//! "yes"` or `startup_timeout_secs = "30"` were read as well. A value of the
//! wrong kind is nearly always a mistake (a misplaced field, a number meant
//! as a string of digits, a quoted boolean), so before the schema sees the
//! raw tree, each known field's value is checked against the kind it must
//! be, and an error names the field, what it must be and what it is.
//! Unknown fields are left to the schema, which refuses them by name.

use config::{Map, Value, ValueKind};

use crate::raw::{kind_name, server_error, RawServer};
use crate::ConfigError;

/// What a field's value must be.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    /// Integer or not.
    Number,
    Integer,
    Boolean,
    TextList,
    /// A table whose values are text (`env`, `headers`).
    TextTable,
}

const SERVER_FIELDS: [(&str, Kind); 16] = [
    ("command", Kind::Text),
    ("args", Kind::TextList),
    ("env", Kind::TextTable),
    ("cwd", Kind::Text),
    ("url", Kind::Text),
    ("headers", Kind::TextTable),
    ("ca_cert", Kind::Text),
    ("transport", Kind::Text),
    ("startup_timeout_secs", Kind::Number),
    ("inherit_env", Kind::Boolean),
    ("pass_env", Kind::TextList),
    ("max_restarts", Kind::Integer),
    ("restart_delay_secs", Kind::Number),
    ("retry_after_crash", Kind::Text),
    ("protocol_version", Kind::Text),
    ("roots", Kind::TextList),
];

/// Fields outside `servers`, by their full dotted name.
const SETTINGS: [(&str, Kind); 42] = [
    ("call_timeout_secs", Kind::Number),
    ("max_message_bytes", Kind::Integer),
    ("output_limit_bytes", Kind::Integer),
    ("roots", Kind::TextList),
    ("daemon.listen", Kind::Text),
    ("daemon.idle_timeout_minutes", Kind::Number),
    ("daemon.allow_non_loopback", Kind::Boolean),
    ("daemon.connection_idle_secs", Kind::Number),
    ("daemon.log_max_mb", Kind::Number),
    ("daemon.log_files", Kind::Integer),
    ("daemon.workers", Kind::Integer),
    ("front.listen", Kind::Text),
    ("front.allow_non_loopback", Kind::Boolean),
    ("front.auth", Kind::Text),
    ("front.allowed_origins", Kind::TextList),
    ("front.allowed_hosts", Kind::TextList),
    ("front.session_idle_secs", Kind::Number),
    ("front.max_sessions", Kind::Integer),
    ("front.resource_tools", Kind::Boolean),
    ("metrics.listen", Kind::Text),
    ("metrics.allow_non_loopback", Kind::Boolean),
    ("metrics.token", Kind::Text),
    ("audit.enabled", Kind::Boolean),
    ("audit.arguments", Kind::Text),
    ("audit.max_mb", Kind::Number),
    ("audit.files", Kind::Integer),
    ("telemetry.otlp_endpoint", Kind::Text),
    ("telemetry.service_name", Kind::Text),
    ("security.auto_approve", Kind::Boolean),
    ("security.approver", Kind::Text),
    ("security.approval_timeout_secs", Kind::Number),
    ("security.secrets", Kind::TextList),
    ("naming.separator", Kind::Text),
    ("sampling.endpoint", Kind::Text),
    ("sampling.model", Kind::Text),
    ("sampling.api_key_env", Kind::Text),
    ("sampling.max_tokens", Kind::Integer),
    ("sampling.servers", Kind::TextList),
    ("sampling.approval", Kind::Text),
    ("sampling.review_results", Kind::Boolean),
    ("sampling.timeout_secs", Kind::Number),
    ("sampling.tools", Kind::Boolean),
];

/// Checks one server's fields; errors name the server and the field.
pub(crate) fn check_server(table: &RawServer, file: &str, server: &str) -> Result<(), ConfigError> {
    for (field, kind) in SERVER_FIELDS {
        if let Some(value) = table.get(field) {
            check(value, kind).map_err(|problem| server_error(file, server, format!("`{field}` {problem}")))?;
        }
    }
    Ok(())
}

/// Checks the known fields outside `servers`, and every server in it.
pub(crate) fn check_root(root: &Map<String, Value>, file: &str) -> Result<(), ConfigError> {
    for (field, kind) in SETTINGS {
        let value = match field.split_once('.') {
            Some((table, key)) => match root.get(table).map(|value| &value.kind) {
                Some(ValueKind::Table(table)) => table.get(key),
                _ => None,
            },
            None => root.get(field),
        };
        if let Some(value) = value {
            check(value, kind).map_err(|problem| ConfigError::Setting { file: file.into(), field, problem })?;
        }
    }
    if let Some(ValueKind::Table(servers)) = root.get("servers").map(|value| &value.kind) {
        for (name, server) in servers {
            if let ValueKind::Table(table) = &server.kind {
                check_server(table, file, name)?;
            }
        }
    }
    Ok(())
}

/// `Err` says what the value must be and what it is.
fn check(value: &Value, kind: Kind) -> Result<(), String> {
    let is = |found: &ValueKind| match (kind, found) {
        (Kind::Text, ValueKind::String(_)) | (Kind::Boolean, ValueKind::Boolean(_)) => true,
        (
            Kind::Number | Kind::Integer,
            ValueKind::I64(_) | ValueKind::I128(_) | ValueKind::U64(_) | ValueKind::U128(_),
        ) => true,
        (Kind::Number, ValueKind::Float(_)) => true,
        _ => false,
    };
    let wrong = |expected: &str, found: &ValueKind| format!("must be {expected}, not {}", kind_name(found));
    match (kind, &value.kind) {
        (Kind::TextList, ValueKind::Array(items)) => {
            match items.iter().position(|item| !matches!(item.kind, ValueKind::String(_))) {
                Some(at) => Err(format!("must be a list of strings, but item {at} is {}", kind_name(&items[at].kind))),
                None => Ok(()),
            }
        }
        (Kind::TextList, found) => Err(wrong("a list of strings", found)),
        (Kind::TextTable, ValueKind::Table(entries)) => {
            match entries.iter().find(|(_, entry)| !matches!(entry.kind, ValueKind::String(_))) {
                Some((key, entry)) => Err(format!("`{key}` must be a string, not {}", kind_name(&entry.kind))),
                None => Ok(()),
            }
        }
        (Kind::TextTable, found) => Err(wrong("a table of strings", found)),
        (_, found) if is(found) => Ok(()),
        (Kind::Text, found) => Err(wrong("a string", found)),
        (Kind::Number, found) => Err(wrong("a number", found)),
        (Kind::Integer, found) => Err(wrong("a whole number", found)),
        (Kind::Boolean, found) => Err(wrong("true or false", found)),
    }
}
