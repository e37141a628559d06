//! Text for people (and JSON for scripts) from Warden's answers.
//!
//! The in-process commands and the daemon's answers go through the same
//! wire shapes ([`ToolListing`], [`ServerReport`]), so `warden tools` prints
//! the same table whether a daemon answered or not.

use std::fmt::Write as _;

use serde_json::Value;

mod left_tasks;
mod pending;
pub(crate) use left_tasks::{left_task_result, left_tasks};
pub(crate) use pending::question;
use warden_actors::{ServerState, ServerStatus, ToolEntry};
use warden_protocol::{ServerReport, ToolListing};

/// Widest a description gets in the tool table before it is cut.
const DESCRIPTION_CHARS: usize = 80;

/// One line per tool: the name, then the first line of its description;
/// a tool of another cluster node's server says which node (`servers`:
/// the status rows, whose `nodes` name them).
pub(crate) fn tool_table(tools: &[ToolListing], servers: &[ServerReport]) -> String {
    let width = tools.iter().map(|entry| entry.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for entry in tools {
        let description = entry.tool.description.as_deref().unwrap_or("").lines().next().unwrap_or("");
        let nodes = servers.iter().find(|server| server.name == entry.server).map_or(&[][..], |server| &server.nodes);
        let on = match nodes {
            [] => String::new(),
            nodes => format!("[on {}] ", nodes.join(", ")),
        };
        let _ = writeln!(out, "{:width$}  {on}{}", entry.name, cut(description, DESCRIPTION_CHARS));
    }
    let _ = writeln!(out, "{} tools", tools.len());
    out
}

/// One line per tool: each policy field, and (in brackets) the layer it
/// came from — the question `--policy` answers is "why does this ask?".
pub(crate) fn policy_table(rows: &[Value]) -> String {
    let source = |field: &Value| match field["source"].as_str().unwrap_or("") {
        "tool_override" => "security.tool_policies",
        "server_default" => "default_policy",
        "annotations" => "annotations",
        _ => "default",
    };
    let cell = |policy: &Value, name: &str| {
        let text = match &policy[name]["value"] {
            Value::Number(seconds) => {
                let seconds = format!("{:.3}", seconds.as_f64().unwrap_or(0.0));
                format!("{} s", seconds.trim_end_matches('0').trim_end_matches('.'))
            }
            other => other.as_str().unwrap_or("?").to_string(),
        };
        format!("{name} {text} [{}]", source(&policy[name]))
    };
    let table: Vec<[String; 5]> = rows
        .iter()
        .map(|row| {
            let policy = &row["policy"];
            [
                row["name"].as_str().unwrap_or("?").to_string(),
                cell(policy, "risk"),
                cell(policy, "approval"),
                cell(policy, "timeout"),
                cell(policy, "leaks"),
            ]
        })
        .collect();
    let widths: Vec<usize> =
        (0..5).map(|column| table.iter().map(|row| row[column].len()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &table {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(cell, width)| format!("{cell:width$}")).collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    let _ = writeln!(out, "{} tools", rows.len());
    out
}

/// One line per server: name, state, tool count, protocol, problems.
pub(crate) fn status_table(servers: &[ServerReport]) -> String {
    let width = servers.iter().map(|server| server.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for server in servers {
        let mut line = format!("{:width$}  {}", server.name, server.detail);
        if server.state == "running" {
            let _ = write!(line, ", {} tools", server.tools);
            if let Some(version) = &server.protocol_version {
                let _ = write!(line, ", protocol {version}");
            }
            if let Some(pid) = server.pid {
                let _ = write!(line, ", pid {pid}");
            }
            if let Some(uptime) = server.uptime_secs {
                let _ = write!(line, ", up {}", duration(uptime));
            }
        }
        match server.nodes.as_slice() {
            [] => {}
            [node] => {
                let _ = write!(line, ", on node {node}");
            }
            nodes => {
                let _ = write!(line, ", on nodes {}", nodes.join(", "));
            }
        }
        if server.state == "needs_login" {
            let _ = write!(line, " — run `warden login {}`", server.name);
        }
        if server.restarts > 0 {
            let _ = write!(line, ", {} restart{}", server.restarts, if server.restarts == 1 { "" } else { "s" });
        }
        if server.calls > 0 {
            let _ = write!(line, ", {} call{}", server.calls, if server.calls == 1 { "" } else { "s" });
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

/// The daemon's own lines of `warden status` (its line, then where its MCP
/// front and metrics listen, when they do), from the `daemon` member of a
/// `status` answer.
pub(crate) fn daemon_lines(daemon: &Value) -> String {
    let secs = |key: &str| daemon[key].as_f64().unwrap_or(0.0);
    let idle = match daemon["idle_timeout_secs"].as_f64() {
        None => format!("idle {:.0} s (never exits on idleness: idle_timeout_minutes = 0)", secs("idle_secs")),
        Some(timeout) => {
            let exits = match daemon["exits_in_secs"].as_f64() {
                Some(left) => format!("exits in {left:.0} s if nothing happens"),
                None => format!("{} calls running", daemon["calls_in_flight"]),
            };
            format!("idle {:.0} s of {timeout:.0} s ({exits})", secs("idle_secs"))
        }
    };
    let socket = match daemon["socket"].as_str() {
        Some(socket) => format!(" and {socket}"),
        None => String::new(),
    };
    let mut line = format!(
        "daemon: pid {}, listening on {}{socket}, up {:.0} s, {idle}, config {}\n",
        daemon["pid"],
        daemon["address"].as_str().unwrap_or("?"),
        secs("uptime_secs"),
        daemon["config"].as_str().unwrap_or("?"),
    );
    // Where MCP clients and Prometheus reach it: the port may be one the
    // system chose (`listen = "127.0.0.1:0"`), said nowhere else.
    if let Some(url) = daemon["front"]["url"].as_str() {
        let sessions = daemon["front"]["sessions"].as_u64().unwrap_or(0);
        line += &format!("  MCP front: {url}, {sessions} session{}\n", if sessions == 1 { "" } else { "s" });
    }
    if let Some(url) = daemon["metrics"]["url"].as_str() {
        line += &format!("  metrics: {url} (and /healthz, /readyz)\n");
    }
    line
}

/// The cluster's lines of `warden status` and `warden cluster status`, from
/// the `cluster` member of a `status` answer.
pub(crate) fn cluster_lines(cluster: &Value) -> String {
    let names = |value: &Value| {
        let names: Vec<&str> = value.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        if names.is_empty() {
            "nothing".to_string()
        } else {
            names.join(", ")
        }
    };
    let nodes = cluster["nodes"].as_array().cloned().unwrap_or_default();
    let replicas = cluster["replicas"].as_u64().unwrap_or(1);
    let mut out = format!(
        "cluster: node {}, exports {}, {} other node{}{}; its state on {replicas} NATS server{}\n",
        cluster["node"].as_str().unwrap_or("?"),
        names(&cluster["exports"]),
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s" },
        if cluster["import"] == false { " (import = false: their servers are not used here)" } else { "" },
        if replicas == 1 { "" } else { "s" },
    );
    for node in &nodes {
        let _ = writeln!(
            out,
            "  node {} (warden {}): exports {}; heartbeat {:.1} s ago",
            node["name"].as_str().unwrap_or("?"),
            node["version"].as_str().unwrap_or("?"),
            names(&node["exports"]),
            node["heartbeat_age_secs"].as_f64().unwrap_or(0.0),
        );
    }
    for server in cluster["servers"].as_array().into_iter().flatten() {
        let name = server["name"].as_str().unwrap_or("?");
        let shadowed =
            if server["attached"] == true { "" } else { " (not used here: a server of this node has its name)" };
        let _ = writeln!(out, "  server {name}: served by {}{shadowed}", names(&server["nodes"]));
    }
    out
}

/// A tool as the wire carries it.
pub(crate) fn listing(entry: ToolEntry) -> ToolListing {
    ToolListing { name: entry.name, server: entry.server, tool: entry.tool }
}

/// A server's status as the wire carries it. (Process ids and per-server
/// uptime are not in `ServerStatus` yet, so they are not here either.)
pub(crate) fn server_report(server: &ServerStatus) -> ServerReport {
    let (error, restart_attempt) = match &server.state {
        ServerState::Failed { reason } | ServerState::NeedsLogin { reason } => (Some(reason.clone()), None),
        ServerState::Restarting { reason, attempt, .. } => (Some(reason.clone()), Some(*attempt)),
        ServerState::Starting | ServerState::Running => (None, None),
    };
    ServerReport {
        name: server.name.clone(),
        state: server.state.label().into(),
        detail: server.state.to_string(),
        error,
        restart_attempt,
        tools: server.tools,
        protocol_version: server.protocol_version.clone(),
        server_info: server.server_info.clone(),
        warnings: server.warnings.clone(),
        last_error: server.last_error.clone(),
        pid: server.pid,
        uptime_secs: server
            .connected_at
            .and_then(|at| std::time::SystemTime::now().duration_since(at).ok())
            .map(|uptime| uptime.as_secs()),
        restarts: server.restarts,
        calls: server.calls,
        nodes: Vec::new(),
    }
}

/// `text` up to `max` characters, and `…` when there was more.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The answer of `approvals`, `approve` or `deny`, for people.
pub(crate) fn approvals(result: &Value) -> String {
    if let Some(id) = result.get("answered") {
        return format!("answered #{id} ({})\n", result["action"].as_str().unwrap_or("?"));
    }
    if let Some(questions) = result.get("questions") {
        return pending::render(result["approvals"].as_array(), questions.as_array());
    }
    let id_text = |id: &Value| id.as_str().map_or_else(|| id.to_string(), str::to_string);
    if let Some(id) = result.get("approved") {
        return format!("approved #{}\n", id_text(id));
    }
    if let Some(id) = result.get("denied") {
        return format!("denied #{}\n", id_text(id));
    }
    let waiting = result["approvals"].as_array().map(Vec::as_slice).unwrap_or_default();
    if waiting.is_empty() {
        return "no calls are waiting for approval\n".into();
    }
    approval_lines(waiting)
}

/// Each waiting approval, and how to answer.
fn approval_lines(waiting: &[Value]) -> String {
    let mut text = String::new();
    for request in waiting {
        let agent = request["agent"].as_str().map(|agent| format!(", agent {agent}")).unwrap_or_default();
        text.push_str(&format!(
            "#{} {} (server {}{agent}, risk {}): {}\n    arguments: {}\n",
            request["id"].as_str().map_or_else(|| request["id"].to_string(), str::to_string),
            request["tool"].as_str().unwrap_or("?"),
            request["server"].as_str().unwrap_or("?"),
            request["risk"].as_str().unwrap_or("?"),
            request["reason"].as_str().unwrap_or(""),
            request["arguments"],
        ));
    }
    text.push_str("answer with `warden approve ID [--grant]` or `warden deny ID [--reason TEXT]`\n");
    text
}

/// Seconds as people read them: `42 s`, `3 min 12 s`, `2 h 5 min`.
fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}
