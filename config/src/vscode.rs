//! VS Code's `mcp.json` (`.vscode/mcp.json` or the user profile's): a
//! `servers` map whose entries say `type` and may name an `envFile`, and
//! an `inputs` list that values reference as `${input:ID}`.
//!
//! - `type` is checked like `mcpServers`' (`shapes::typed`).
//! - `envFile`: its `KEY=VALUE` lines join the server's `env` (the entry's
//!   own `env` wins). `${workspaceFolder}` in it is the folder holding
//!   `.vscode/` (or the config's own folder), as VS Code means it.
//! - `inputs` are prompts VS Code shows; Warden reads `${input:ID}` from
//!   the environment variable `ID` (or `ID` in upper snake case, so
//!   `api-key` is also `API_KEY`), at load time like any `${VAR}`, and says
//!   which to set when neither is (`expand.rs`). A command run
//!   at a terminal asks for the ones still unset first ([`unset_inputs`]
//!   lists them; the CLI asks and sets the variable).

use std::path::{Path, PathBuf};

use config::{Map, Value, ValueKind};

use super::raw::{kind_name, server_error, RawServer};
use super::ConfigError;

/// Moves an entry's `envFile` into its `env`.
pub(super) fn env_file(mut table: RawServer, file: &str, name: &str) -> Result<RawServer, ConfigError> {
    let Some(env_file) = table.remove("envFile") else { return Ok(table) };
    let error = |problem: String| server_error(file, name, problem);
    let ValueKind::String(env_file) = env_file.kind else {
        return Err(error(format!("`envFile` must be a path, not {}", kind_name(&env_file.kind))));
    };
    let path = resolve(&env_file, Path::new(file));
    let text = std::fs::read_to_string(&path)
        .map_err(|e| error(format!("`envFile` '{}' cannot be read: {e}", path.display())))?;
    let slot = table.entry("env".into()).or_insert_with(|| Value::new(None, ValueKind::Table(Map::new())));
    let ValueKind::Table(env) = &mut slot.kind else {
        return Err(error("`env` must be a table of variables".into()));
    };
    for (line_number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(error(format!("`envFile` '{}' line {}: not KEY=VALUE", path.display(), line_number + 1)));
        };
        let value = value.trim();
        let unquoted = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        env.entry(key.trim().to_string()).or_insert_with(|| Value::new(None, ValueKind::String(unquoted.to_string())));
    }
    Ok(table)
}

/// `${workspaceFolder}` and a relative path, as VS Code resolves them.
fn resolve(text: &str, config_file: &Path) -> PathBuf {
    let dir = config_file.parent().unwrap_or(Path::new(""));
    let workspace = if dir.ends_with(".vscode") { dir.parent().unwrap_or(dir) } else { dir };
    let text = text.replace("${workspaceFolder}", &workspace.display().to_string());
    dir.join(text)
}

/// A VS Code `promptString` input a config refers to as `${input:ID}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptInput {
    /// Its `id`.
    pub id: String,
    /// What VS Code would show as the prompt.
    pub description: Option<String>,
    /// Typed without echo.
    pub password: bool,
    /// The environment variable that sets it (`ID` in upper snake case).
    pub variable: String,
}

/// The inputs the VS Code file `path` declares and refers to, which no
/// environment variable sets (through `env`). Any other file, or one that
/// does not parse (the loader will say why), has none.
pub fn unset_inputs(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<PromptInput> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let Ok(file) = serde_json::from_str::<serde_json::Value>(&text) else { return Vec::new() };
    let declared = file.get("inputs").and_then(serde_json::Value::as_array).map(Vec::as_slice).unwrap_or_default();
    declared
        .iter()
        .filter(|input| input["type"] == "promptString")
        .filter_map(|input| {
            let id = input["id"].as_str()?;
            let [exact, snake] = crate::expand::input_variables(id);
            let wanted = text.contains(&format!("${{input:{id}}}"));
            (wanted && env(&exact).is_none() && env(&snake).is_none()).then(|| PromptInput {
                id: id.to_string(),
                description: input["description"].as_str().map(str::to_string),
                password: input["password"] == true,
                variable: snake,
            })
        })
        .collect()
}
