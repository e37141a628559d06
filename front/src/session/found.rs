//! The tools a session found with `find_tools` (tool search): listed
//! after the tools its profile presents, so a client that lists again
//! calls them like any other (as Docker's `mcp-add` adds found tools to
//! the session), and announced with `notifications/tools/list_changed`
//! when a find adds one. Only the [`MOST`] most recently found are kept:
//! the list never grows back to everything. A client that never lists
//! again calls them by name anyway, or through `call_tool`.
//!
//! What a session found is its own: another session, or another replica
//! of a replicated front, does not list it.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::Notify;
use warden_actors::{CallError, CallToolResult};

use super::Session;

/// How many found tools a session lists at most.
pub(super) const MOST: usize = 32;

/// The found tools of one session, most recent last.
#[derive(Default)]
pub(crate) struct Found {
    names: Mutex<Vec<String>>,
    /// Told when a find added a tool to the list.
    pub(crate) changed: Notify,
}

impl Session {
    /// Notes the tools a `find_tools` answer named.
    pub(super) fn found(&self, result: &CallToolResult) {
        let Some(Value::Array(tools)) = result.structured_content.as_ref().map(|content| &content["tools"]) else {
            return;
        };
        let added = {
            let mut names = self.inner.found.names.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let before: HashSet<String> = names.iter().cloned().collect();
            for name in tools.iter().filter_map(|tool| tool["name"].as_str()) {
                names.retain(|known| known != name);
                names.push(name.to_string());
            }
            let excess = names.len().saturating_sub(MOST);
            names.drain(..excess);
            names.iter().any(|name| !before.contains(name))
        };
        if added {
            self.inner.found.changed.notify_one();
        }
    }

    /// The tools this session lists: what its view presents, then the
    /// tools it found that are not among them (at full detail).
    pub(crate) fn listed_tools(&self) -> Result<Vec<Value>, CallError> {
        let mut tools = self.inner.view.tools()?;
        let names = self.inner.found.names.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        if names.is_empty() || self.inner.view.server.is_some() {
            return Ok(tools);
        }
        let listed: HashSet<String> =
            tools.iter().filter_map(|tool| tool["name"].as_str().map(str::to_string)).collect();
        for name in names.iter().filter(|name| !listed.contains(*name)) {
            // A tool gone since (its server stopped, a reload) is left out.
            if let Ok(definition) = self.inner.view.describe(name) {
                tools.push(definition);
            }
        }
        Ok(tools)
    }
}
