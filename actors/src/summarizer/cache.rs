//! `summaries.jsonl`: every summary ever made, one JSON object a line.
//!
//! Appending a line per summary means a crash loses at most the line being
//! written, and two Wardens sharing the cache only ever add. On load a line
//! that does not parse is skipped (a torn last line after a crash), and for
//! the same (server, tool, hash) the last line wins.

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name of the cache file inside the cache directory.
pub(crate) const CACHE_FILE: &str = "summaries.jsonl";

/// One line of the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Line {
    server: String,
    tool: String,
    hash: String,
    summary: String,
    model: String,
    /// Seconds since the Unix epoch.
    created_at: u64,
}

/// The summaries on disk, by (server, tool, hash).
pub(crate) struct Cache {
    path: PathBuf,
    entries: HashMap<(String, String, String), String>,
}

impl Cache {
    /// Reads `summaries.jsonl` in `dir`; a missing file is an empty cache.
    pub(crate) fn load(dir: &Path) -> Cache {
        let path = dir.join(CACHE_FILE);
        let mut entries = HashMap::new();
        let text = fs::read_to_string(&path).unwrap_or_default();
        let mut skipped = 0;
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            match serde_json::from_str::<Line>(line) {
                Ok(line) => {
                    entries.insert((line.server, line.tool, line.hash), line.summary);
                }
                Err(_) => skipped += 1,
            }
        }
        if skipped > 0 {
            tracing::warn!(file = %path.display(), skipped, "skipped tool summary cache lines that do not parse");
        }
        Cache { path, entries }
    }

    /// The cached summary of this version of the tool.
    pub(crate) fn get(&self, server: &str, tool: &str, hash: &str) -> Option<&str> {
        self.entries.get(&(server.to_string(), tool.to_string(), hash.to_string())).map(String::as_str)
    }

    /// Records a summary and appends it to the file. A write that fails is
    /// logged; the summary is still used until Warden stops.
    pub(crate) fn insert(&mut self, server: &str, tool: &str, hash: &str, summary: &str, model: &str) {
        let created_at = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
        let line = Line {
            server: server.into(),
            tool: tool.into(),
            hash: hash.into(),
            summary: summary.into(),
            model: model.into(),
            created_at,
        };
        let mut text = serde_json::to_string(&line).expect("a cache line serialises");
        text.push('\n');
        let written = self
            .path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| OpenOptions::new().create(true).append(true).open(&self.path))
            // One write call per line, so concurrent appenders do not interleave within a line.
            .and_then(|mut file| file.write_all(text.as_bytes()));
        if let Err(error) = written {
            tracing::warn!(file = %self.path.display(), %error, "could not save a tool summary");
        }
        self.entries.insert((line.server, line.tool, line.hash), line.summary);
    }
}

/// The cache key of a tool's text: SHA-256 of its description and its input
/// schema as canonical JSON (object keys sorted), so re-ordered keys are the
/// same tool and any change of wording or schema is a new one.
pub(crate) fn tool_hash(description: &str, input_schema: &Value) -> String {
    let mut text = String::from(description);
    text.push('\0');
    write_canonical(input_schema, &mut text);
    crate::sha256::sha256_hex(text.as_bytes())
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
