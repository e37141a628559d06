//! A server's question, or an approval, met at the terminal during
//! `warden call`.
//!
//! The daemon tells the call about a question of its server at once (a
//! notice line, `call_tool` with `notices`). The question waits in the
//! daemon's queue either way, so it can be answered from anywhere; what
//! this file adds is where the person already is:
//!
//! - on a terminal, it asks in place: the server's message, then each
//!   field with its title, what it takes, its default and choices (Enter
//!   takes the default); `n` declines and `c` cancels at the first prompt.
//!   The answer goes to the daemon on a second connection (`answer`); one
//!   the daemon refuses (a value that does not fit) is said and asked
//!   again. A URL is shown in full with the host it leads to; Warden never
//!   opens it.
//! - not on a terminal, it says on stderr at once what waits and the exact
//!   `warden answer` command that answers it.

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use serde_json::{json, Map, Value};

use warden_protocol::BridgeErrorCode as Code;

use crate::client::{Client, ClientError};
use crate::daemon::lockfile::Lockfile;

/// What happens to a notice the daemon sent for this call.
pub(super) fn on_notice(lockfile: &Lockfile, notice: Value) {
    if notice["kind"] == "approval" {
        return on_approval(lockfile, notice);
    }
    if !std::io::stdin().is_terminal() {
        eprint!("waiting for a person: {}", crate::render::question(&notice));
        return;
    }
    let lockfile = lockfile.clone();
    tokio::spawn(async move {
        let Some(id) = notice["id"].as_u64() else { return };
        loop {
            let question = notice.clone();
            let Ok(Some((action, content))) = tokio::task::spawn_blocking(move || ask(&question)).await else {
                return; // stdin closed: the question waits for `warden answer`.
            };
            let request = json!({"op": "answer", "question": id.to_string(), "action": action, "content": content});
            let mut client = match Client::connect(lockfile.clone()).await {
                Ok(client) => client,
                Err(error) => return eprintln!("  cannot reach the daemon: {error}"),
            };
            match client.request(request).await {
                Ok(_) => return,
                // The answer did not fit; the question still waits.
                Err(ClientError::Bridge(error)) if error.code == Code::ANSWER_REFUSED => {
                    eprintln!("  {}; try again", error.message)
                }
                Err(error) => return eprintln!("  {error}"),
            }
        }
    });
}

/// The call waits for approval: said at once on stderr with the commands
/// that answer it; on a terminal, asked in place (approve once, approve
/// for the daemon's lifetime, or deny with a reason). Ctrl-C cancels the call.
fn on_approval(lockfile: &Lockfile, notice: Value) {
    let id = notice["id"].as_u64().unwrap_or_default();
    let tool = notice["tool"].as_str().unwrap_or("?");
    eprintln!(
        "waiting for approval #{id}: {tool} (server {}, risk {}): {}",
        notice["server"].as_str().unwrap_or("?"),
        notice["risk"].as_str().unwrap_or("?"),
        notice["reason"].as_str().unwrap_or("")
    );
    eprintln!("  arguments: {}", notice["arguments"]);
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "  answer from any terminal: `warden approve {id}` (`--grant` for later calls too) or `warden deny {id} --reason '…'`; Ctrl-C cancels the call"
        );
        return;
    }
    let lockfile = lockfile.clone();
    tokio::spawn(async move {
        let asked = tokio::task::spawn_blocking(|| {
            // Only a choice approves: an empty line (Enter, or what a
            // terminal leaves after Ctrl-C) or a typo asks again.
            let choice = loop {
                let choice = read_line("  [a]pprove once / approve for this [s]ession / [d]eny: ")?;
                if matches!(choice.as_str(), "a" | "approve" | "s" | "session" | "d" | "deny") {
                    break choice;
                }
                eprintln!("  type a, s or d (Ctrl-C cancels the call)");
            };
            let reason = match choice.as_str() {
                "d" | "deny" => Some(read_line("  why (told to the caller): ")?),
                _ => None,
            };
            Some((choice, reason))
        });
        let Ok(Some((choice, reason))) = asked.await else { return };
        let request = match (choice.as_str(), reason) {
            (_, Some(reason)) => json!({"op": "deny", "approval": id.to_string(), "reason": reason}),
            ("s" | "session", None) => json!({"op": "approve", "approval": id.to_string(), "grant": {}}),
            _ => json!({"op": "approve", "approval": id.to_string()}),
        };
        match Client::connect(lockfile).await {
            Ok(mut client) => {
                if let Err(error) = client.request(request).await {
                    eprintln!("  {error}");
                }
            }
            Err(error) => eprintln!("  cannot reach the daemon: {error}"),
        }
    });
}

/// Asks at the terminal; the answer's action and content, or `None` when
/// stdin ended.
fn ask(question: &Value) -> Option<(&'static str, Option<Value>)> {
    let server = question["server"].as_str().unwrap_or("?");
    let during = question["tool"].as_str().map(|tool| format!(" (during {tool})")).unwrap_or_default();
    eprintln!("server '{server}' asks{during}: {}", question["message"].as_str().unwrap_or(""));
    if let Some(url) = question["url"].as_str() {
        eprintln!(
            "  open {url}\n  it leads to {} — check that; Warden does not open it",
            question["host"].as_str().unwrap_or("?")
        );
        return Some(match read_line("  opened it? [Y]es / [n]o (decline) / [c]ancel: ")?.as_str() {
            "n" | "no" => ("decline", None),
            "c" | "cancel" => ("cancel", None),
            _ => ("accept", Some(json!({}))),
        });
    }
    match read_line("  answer it? [Y]es / [n]o (decline) / [c]ancel: ")?.as_str() {
        "n" | "no" => return Some(("decline", None)),
        "c" | "cancel" => return Some(("cancel", None)),
        _ => {}
    }
    let mut content = Map::new();
    for field in question["fields"].as_array().into_iter().flatten() {
        let name = field["name"].as_str().unwrap_or("?");
        let title = field["title"].as_str().unwrap_or(name);
        let mut prompt = format!("  {title} ({})", field["expects"].as_str().unwrap_or("?"));
        if let Some(description) = field["description"].as_str() {
            prompt.push_str(&format!(" — {description}"));
        }
        match &field["default"] {
            Value::Null if field["required"] == true => prompt.push_str(" [required]"),
            Value::Null => {}
            default => prompt.push_str(&format!(" [{default}]")),
        }
        let typed = read_line(&format!("{prompt}: "))?;
        if typed.is_empty() {
            continue; // The default, or nothing.
        }
        let value = if field["expects"].as_str().is_some_and(|expects| expects.starts_with("a list of")) {
            Value::Array(typed.split(',').map(|item| Value::String(item.trim().to_string())).collect())
        } else {
            Value::String(typed)
        };
        content.insert(name.to_string(), value);
    }
    Some(("accept", Some(Value::Object(content))))
}

/// One line from stdin, trimmed; `None` at its end.
pub(super) fn read_line(prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_string()),
    }
}
