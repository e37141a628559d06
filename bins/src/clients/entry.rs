//! The one entry `warden install` gives a client: `warden mcp` with
//! Warden's config, and how to recognise it (or one a person wrote).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The name of the entry `install` writes.
pub(crate) const ENTRY_NAME: &str = "warden";

/// How the client starts Warden.
#[derive(Debug, Clone)]
pub(crate) struct WardenEntry {
    /// The `warden` program, absolute.
    pub(crate) program: PathBuf,
    /// Warden's config, absolute.
    pub(crate) config: PathBuf,
}

impl WardenEntry {
    /// The program and arguments a client runs.
    pub(crate) fn command(&self) -> (String, Vec<String>) {
        let args = vec!["mcp".to_string(), "--config".to_string(), self.config.display().to_string()];
        (self.program.display().to_string(), args)
    }
}

/// Whether a server (in Warden's schema) is `warden mcp`.
pub(crate) fn runs_warden(server: &Value) -> bool {
    let program = server["command"].as_str().map(Path::new).and_then(Path::file_name);
    let first = server["args"].get(0).and_then(Value::as_str);
    program.is_some_and(|name| name == "warden") && first == Some("mcp")
}
