//! `warden config check`: load the config the way the daemon would, start
//! nothing, and show what it resolved to.
//!
//! A config can now come from several files (drop-ins) in several shapes,
//! so the useful answer is not just "valid" but which servers, with what,
//! from which file. Secrets are masked: `env` and `headers` values show as
//! `***`, with their `${VAR}` references named, because this output gets
//! pasted into bug reports. No daemon is involved: it is a pure load, so it
//! works before anything has ever run.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};
use warden_config::{Discovered, ServerConfig, WardenConfig};

/// Checks the config; exit 0 valid (or none), 2 invalid.
pub(super) fn run(config: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let discovered = match WardenConfig::discover(config) {
        Ok(discovered) => discovered,
        Err(error) if json => {
            println!("{}", serde_json::to_string_pretty(&json!({"valid": false, "error": error.to_string()}))?);
            return Ok(ExitCode::from(2));
        }
        Err(error) => return Err(error.into()),
    };
    let Discovered::Loaded { path, config } = &discovered else {
        eprintln!("{}", discovered.notice().unwrap_or_default());
        if json {
            println!("{}", serde_json::to_string_pretty(&json!({"valid": true, "config": null, "servers": []}))?);
        }
        return Ok(ExitCode::SUCCESS);
    };
    if json {
        let servers: Vec<Value> = config.servers.iter().map(|(name, server)| server_json(name, server)).collect();
        let all = json!({"valid": true, "config": path.display().to_string(), "servers": servers});
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        print!("{}", text(path, config));
    }
    Ok(ExitCode::SUCCESS)
}

fn server_json(name: &str, server: &ServerConfig) -> Value {
    json!({
        "name": name,
        "origin": server.origin.as_ref().map(|origin| origin.display().to_string()),
        "command": server.command,
        "args": server.args,
        "env": server.masked.env,
        "url": server.url,
        "headers": server.masked.headers,
        "default_policy": server.default_policy,
        "ignored": server.ignored,
    })
}

/// One block per server: where it came from, then what is set.
fn text(path: &Path, config: &WardenConfig) -> String {
    let mut out = String::new();
    let count = config.servers.len();
    let _ = writeln!(out, "{}: valid, {count} server{}", path.display(), if count == 1 { "" } else { "s" });
    for (name, server) in &config.servers {
        let origin = server.origin.as_deref().unwrap_or(path);
        let _ = writeln!(out, "server '{name}' (from {})", origin.display());
        for ignored in &server.ignored {
            let _ = writeln!(out, "  warning: {ignored}");
        }
        if let Some(command) = &server.command {
            let _ = writeln!(out, "  command: {command}");
        }
        if !server.args.is_empty() {
            let _ = writeln!(out, "  args: {}", json!(server.args));
        }
        if let Some(url) = &server.url {
            let _ = writeln!(out, "  url: {url}");
        }
        for (field, values) in [("env", &server.masked.env), ("headers", &server.masked.headers)] {
            for (key, value) in values {
                let _ = writeln!(out, "  {field}.{key}: {value}");
            }
        }
        if let Some(policy) = &server.default_policy {
            // Only what the layer sets; the rest is left to the layers below.
            let set: Vec<String> = match json!(policy) {
                Value::Object(fields) => fields
                    .into_iter()
                    .filter(|(_, value)| !value.is_null())
                    .map(|(field, value)| format!("{field} = {value}"))
                    .collect(),
                _ => Vec::new(),
            };
            let _ = writeln!(out, "  default_policy: {}", set.join(", "));
        }
    }
    out
}
