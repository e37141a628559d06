//! Text for people (and JSON for scripts) from Warden's answers.

use std::fmt::Write as _;

use serde_json::{json, Value};
use warden_actors::{ServerStatus, ToolEntry};

/// Widest a description gets in the tool table before it is cut.
const DESCRIPTION_CHARS: usize = 80;

/// One line per tool: the name, then the first line of its description.
pub(crate) fn tool_table(tools: &[ToolEntry]) -> String {
    let width = tools.iter().map(|entry| entry.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for entry in tools {
        let description = entry.tool.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
        let _ = writeln!(out, "{:width$}  {}", entry.name, cut(description, DESCRIPTION_CHARS));
    }
    let _ = writeln!(out, "{} tools", tools.len());
    out
}

/// One line per server: name, state, tool count, protocol, problems.
pub(crate) fn status_table(statuses: &[ServerStatus]) -> String {
    let width = statuses.iter().map(|server| server.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for server in statuses {
        let mut line = format!("{:width$}  {}", server.name, server.state);
        if server.state == warden_actors::ServerState::Running {
            let _ = write!(line, ", {} tools", server.tools);
            if let Some(version) = &server.protocol_version {
                let _ = write!(line, ", protocol {version}");
            }
        }
        let _ = writeln!(out, "{line}");
        for warning in &server.warnings {
            let _ = writeln!(out, "{:width$}  warning: {warning}", "");
        }
        if let Some(error) = &server.last_error {
            let _ = writeln!(out, "{:width$}  last error: {error}", "");
        }
    }
    out
}

pub(crate) fn status_json(server: &ServerStatus) -> Value {
    let (state, error) = match &server.state {
        warden_actors::ServerState::Failed { reason } => ("failed", Some(reason.clone())),
        warden_actors::ServerState::Starting => ("starting", None),
        warden_actors::ServerState::Restarting { reason, .. } => ("restarting", Some(reason.clone())),
        warden_actors::ServerState::Running => ("running", None),
    };
    json!({
        "name": server.name,
        "state": state,
        "error": error,
        "tools": server.tools,
        "protocol_version": server.protocol_version,
        "server_info": server.server_info,
        "warnings": server.warnings,
        "last_error": server.last_error,
    })
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}
