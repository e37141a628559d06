//! Tool search: many tools, few of them in the model's context.
//!
//! A tool profile may leave tools out of the presented list
//! (`deferred`); the list then carries the built-in [`FIND_TOOLS`], with
//! which the model finds the tools it needs by what it wants done, and
//! gets their full definitions to call them by name at once.
//!
//! One index serves every caller (`bm25.rs`, words made by `words.rs`):
//! it follows the Registry's snapshot — a search after a change first
//! indexes again the servers whose tools changed — and is never built per
//! session or per query. An agent's allowlist applies before ranking: a
//! search never names a tool the agent cannot call.
//!
//! Why an index of our own, not a search crate: the documents are a few
//! thousand short definitions whose fields weigh differently (a word of
//! the name is worth more than one of a parameter's description), whose
//! names must be split (`create_issue`, `createIssue`), and which change a
//! server at a time; a full-text engine (tantivy) brings segments, a
//! schema and a writer thread for what is a few hundred lines here. The
//! stemming, where language knowledge lives, is Snowball's
//! (`rust-stemmers`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use warden_protocol::CallToolResult;

use crate::registry::{Snapshot, ToolEntry};

mod bm25;
mod words;

/// The name of Warden's built-in tool that finds tools by what they do.
pub const FIND_TOOLS: &str = "find_tools";

/// The name of Warden's built-in tool that calls a tool by name, for
/// clients that never list again: `{"name", "arguments"}`, the same as
/// calling the tool itself (the same policy, approval and leak checks).
pub const CALL_TOOL: &str = "call_tool";

/// How many tools a search returns unless asked for another number.
pub(crate) const DEFAULT_LIMIT: usize = 5;

/// The most a search returns.
pub(crate) const MOST: usize = 20;

/// A tool a search found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FoundTool {
    /// Its name, to call it by.
    pub name: String,
    /// How well it matched (BM25; only the order means something).
    pub score: f64,
    /// Which words of the query matched where.
    pub reason: String,
    /// Its full definition (with its namespaced name), as `describe_tool`
    /// gives it.
    pub definition: Value,
}

/// The index, and the tools version it was last made to match.
#[derive(Default)]
pub(crate) struct ToolSearch {
    index: Mutex<(Option<u64>, bm25::Index)>,
}

impl ToolSearch {
    /// The `limit` tools of `snapshot` that best match `query`, among those
    /// `allowed` lets through; best first.
    pub(crate) fn find(
        &self,
        snapshot: &Snapshot,
        allowed: &dyn Fn(&str) -> bool,
        query: &str,
        limit: usize,
    ) -> Vec<FoundTool> {
        let hits = {
            let mut guard = self.index.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let (version, index) = &mut *guard;
            if *version != Some(snapshot.tools_version()) {
                let mut by_server: HashMap<&str, Vec<Arc<ToolEntry>>> = HashMap::new();
                for entry in snapshot.tools.values() {
                    by_server.entry(entry.server.as_str()).or_default().push(entry.clone());
                }
                index.sync(by_server);
                *version = Some(snapshot.tools_version());
            }
            index.search(query, allowed, limit.clamp(1, MOST))
        };
        hits.into_iter()
            .map(|hit| FoundTool {
                name: hit.entry.name.clone(),
                score: hit.score,
                reason: hit.reason,
                definition: hit.entry.definition(),
            })
            .collect()
    }
}

/// `find_tools` itself, as a model is shown it.
pub(crate) fn definition() -> Value {
    json!({
        "name": FIND_TOOLS,
        "description": "Finds the tools you need among many more than are listed. Most tools are not in your \
            list: before saying you cannot do something, or when no listed tool fits, call this with what you \
            want to do in plain words (\"read a file\", \"list open pull requests\", \"what time is it in \
            Tokyo\"). It returns the best-matching tools with their full definitions; call any of them by its \
            name right away, as if it had been listed. Search again with other words if none fits.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": { "type": "string", "description": "What you want to do, in a few words." },
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MOST,
                    "description": format!("How many tools to return (default {DEFAULT_LIMIT})."),
                }
            },
            "required": ["query"]
        },
        "annotations": { "readOnlyHint": true }
    })
}

/// `call_tool` itself, as a model is shown it.
pub(crate) fn call_tool_definition() -> Value {
    json!({
        "name": CALL_TOOL,
        "description": "Calls a tool by its name with its arguments: for a tool find_tools returned that your \
            list does not show. The same as calling that tool directly.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "The tool's name, as find_tools gave it." },
                "arguments": { "type": "object", "description": "The tool's arguments, as its input schema says." }
            },
            "required": ["name"]
        }
    })
}

/// The tool and arguments a `call_tool` call names, or what is wrong.
pub(crate) fn called_by(arguments: &Value) -> Result<(String, Value), String> {
    let name = arguments.get("name").and_then(Value::as_str).filter(|name| !name.is_empty());
    let Some(name) = name else {
        return Err(format!("{CALL_TOOL} takes {{\"name\": \"<tool>\", \"arguments\": {{...}}}}"));
    };
    if name == CALL_TOOL {
        return Err(format!("{CALL_TOOL} calls other tools, not itself"));
    }
    let arguments = arguments.get("arguments").cloned().unwrap_or(Value::Null);
    Ok((name.to_string(), arguments))
}

/// Answers a call of [`FIND_TOOLS`]: what was found as text and as
/// structured content; a mistake in the arguments is a result the model
/// reads (`isError`).
pub(crate) fn answer(found: Result<Vec<FoundTool>, String>) -> CallToolResult {
    let found = match found {
        Ok(found) => found,
        Err(mistake) => return CallToolResult::error(mistake),
    };
    let tools: Vec<Value> = found
        .iter()
        .map(|tool| {
            let mut shown = tool.definition.clone();
            shown["reason"] = Value::String(tool.reason.clone());
            shown
        })
        .collect();
    let text = if tools.is_empty() {
        "No tool matched. Try other words for what you want to do.".to_string()
    } else {
        serde_json::to_string_pretty(&tools).expect("JSON serialises")
    };
    CallToolResult { structured_content: Some(json!({ "tools": tools })), ..CallToolResult::success(text) }
}

/// The query and limit of a `find_tools` call, or what is wrong with them.
pub(crate) fn arguments_of(arguments: &serde_json::Map<String, Value>) -> Result<(String, usize), String> {
    let Some(query) = arguments.get("query").and_then(Value::as_str).filter(|query| !query.trim().is_empty()) else {
        return Err(format!("{FIND_TOOLS} takes {{\"query\": \"<what you want to do>\", \"limit\": 5}}"));
    };
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(limit) => match limit.as_u64() {
            Some(limit) if (1..=MOST as u64).contains(&limit) => limit as usize,
            _ => return Err(format!("`limit` is a whole number from 1 to {MOST}")),
        },
    };
    Ok((query.to_string(), limit))
}
