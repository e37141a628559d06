//! `warden import [CLIENT | FILE]`: another MCP client's servers copied
//! into Warden's config. Shared with `install` (which also moves them):
//! finding Warden's config file, and saying what a merge did.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context as _};
use serde_json::Value;

use crate::clients::client_file::ClientFile;
use crate::clients::known::{self, Client};
use crate::clients::merge::{self, Merged};
use crate::clients::{diff, files};

/// The first lines of a Warden config `import` creates.
const NEW_CONFIG: &str = "# Warden's config: see `warden config check` and examples/warden.toml.\n";

/// Warden's config file import writes into: `--config` (or
/// `$WARDEN_CONFIG`), else the default location. It must be TOML, the one
/// shape Warden edits in place.
pub(super) fn target(config: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = match config {
        Some(path) => warden_config::config_path(path),
        None => warden_config::default_config_path()
            .ok_or_else(|| anyhow!("cannot tell where Warden's config goes: set HOME, or pass --config FILE"))?,
    };
    if matches!(path.extension().and_then(|ext| ext.to_str()), Some("json" | "yaml" | "yml")) {
        return Err(anyhow!(
            "Warden's config {} is not TOML; import and install edit a TOML config in place — pass --config with a \
             .toml file (it may hold just the imported servers, next to yours)",
            path.display()
        ));
    }
    Ok(path)
}

/// Warden's config text (empty when there is none yet).
pub(super) fn target_text(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(error) => Err(error).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// `servers` merged into Warden's config `before`; a new config starts
/// with a line saying what it is.
pub(super) fn merge_into(before: &str, target: &Path, servers: &[(String, Value)]) -> anyhow::Result<Merged> {
    let mut merged = merge::merge(before, target, servers)?;
    if before.is_empty() {
        merged.text = format!("{NEW_CONFIG}\n{}", merged.text);
    }
    Ok(merged)
}

/// The client named `source`, or the file it names: its file and label.
fn source_file(source: &str) -> anyhow::Result<(ClientFile, String)> {
    if let Some(client) = Client::by_id(source) {
        let path = client
            .path()
            .ok_or_else(|| anyhow!("cannot tell where {} keeps its config: HOME is not set", client.label))?;
        if !path.is_file() {
            return Err(anyhow!(
                "no {} config at {} (is {} set up on this machine? `warden clients` lists what is)",
                client.label,
                path.display(),
                client.label
            ));
        }
        return Ok((ClientFile::read(&path, &client)?, client.label.to_string()));
    }
    let path = Path::new(source);
    if !path.is_file() {
        return Err(anyhow!("'{source}' is neither a client ({}) nor a file", known::ids()));
    }
    Ok((ClientFile::read_any(path)?, path.display().to_string()))
}

pub(super) fn run(source: Option<&str>, dry_run: bool, config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let Some(source) = source else {
        return Err(crate::commands::UsageError(format!(
            "name what to import: a client ({}) or a config file; `warden clients` lists the clients found here",
            known::ids()
        ))
        .into());
    };
    let (file, label) = source_file(source)?;
    let (servers, warden) = file.servers()?;
    println!("{label}: {} ({} server{})", file.path.display(), servers.len(), plural(servers.len()));
    if let Some(name) = warden {
        println!("  '{name}' is Warden itself; left out");
    }
    let target = target(config)?;
    let before = target_text(&target)?;
    let merged = merge_into(&before, &target, &servers)?;
    report(&merged, &servers, &target);
    if dry_run {
        print!("{}", diff::unified(&target, &before, &merged.text));
        println!("(dry run: nothing written)");
        return Ok(ExitCode::SUCCESS);
    }
    if merged.added.is_empty() {
        println!("nothing to add to {}", target.display());
        return Ok(if merged.conflicts.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    files::write(&target, &merged.text)?;
    println!(
        "added {} server{} to {}; a running daemon takes {} with `warden reload`",
        merged.added.len(),
        plural(merged.added.len()),
        target.display(),
        if merged.added.len() == 1 { "it" } else { "them" }
    );
    Ok(if merged.conflicts.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// What a merge did, a line a server, and the notes a person should read.
pub(super) fn report(merged: &Merged, servers: &[(String, Value)], target: &Path) {
    let config = target.display();
    for (name, source_name) in &merged.added {
        let server = servers.iter().find(|(source, _)| source == source_name).map(|(_, server)| server);
        println!("  + {name}  {}", server.map(describe).unwrap_or_default());
        if name != source_name {
            println!("    named '{name}': '{source_name}' is not a Warden server name (letters, digits, - and _)");
        }
        for note in server.map(literal_secrets).unwrap_or_default() {
            println!("    note: {note}");
        }
    }
    for name in &merged.same {
        println!("  = {name}  already in {config}, the same");
    }
    for name in &merged.conflicts {
        println!(
            "  ! {name}  {config} has a different '{name}'; not imported — rename or remove one, then run this again"
        );
    }
}

/// `command args…` or the URL.
fn describe(server: &Value) -> String {
    match (server["command"].as_str(), server["url"].as_str()) {
        (Some(command), _) => {
            let args = server["args"].as_array().map(|args| args.iter().filter_map(Value::as_str).collect::<Vec<_>>());
            std::iter::once(command).chain(args.unwrap_or_default()).collect::<Vec<_>>().join(" ")
        }
        (None, Some(url)) => url.to_string(),
        (None, None) => String::new(),
    }
}

/// Secret-looking `env` and `headers` values written out in the source.
fn literal_secrets(server: &Value) -> Vec<String> {
    let secretish = |key: &str| {
        let key = key.to_ascii_lowercase();
        ["token", "key", "secret", "password", "authorization"].iter().any(|word| key.contains(word))
    };
    let mut notes = Vec::new();
    for field in ["env", "headers"] {
        let Some(values) = server[field].as_object() else { continue };
        for (key, value) in values {
            if secretish(key) && value.as_str().is_some_and(|value| !value.contains("${") && !value.is_empty()) {
                notes.push(format!(
                    "{field} {key} is written out in the source and copied as is; consider `${{{key}}}` and setting \
                     {key} in the environment"
                ));
            }
        }
    }
    notes
}

pub(super) fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}
