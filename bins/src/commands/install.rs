//! `warden install CLIENT`, `warden uninstall CLIENT`, `warden clients`.
//!
//! Install moves a client's servers into Warden's config and leaves the
//! client one entry, `warden mcp --config <Warden's config>`, so everything
//! it ran before now runs supervised and policed. Nothing is half done:
//! a conflict with Warden's config stops it before any file is written;
//! the client's original file is kept byte for byte beside it
//! (`FILE.warden-backup`), and uninstall puts exactly those bytes back —
//! unless the client's file changed since, which it will not overwrite
//! without `--force`. The servers stay in Warden's config (they still
//! work there, and other clients may use them); uninstall says so.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context as _};
use serde_json::json;

use super::import::{merge_into, plural, report, target, target_text};
use crate::clients::client_file::ClientFile;
use crate::clients::entry::WardenEntry;
use crate::clients::known::{self, Client, CLIENTS};
use crate::clients::record::{backup_of, InstallRecord};
use crate::clients::{diff, files};

fn client(id: &str) -> anyhow::Result<Client> {
    Client::by_id(id).ok_or_else(|| anyhow!("unknown client '{id}'; Warden knows {}", known::ids()))
}

fn client_path(client: &Client) -> anyhow::Result<PathBuf> {
    client.path().ok_or_else(|| anyhow!("cannot tell where {} keeps its config: HOME is not set", client.label))
}

pub(super) fn install(id: &str, dry_run: bool, config: Option<&Path>) -> anyhow::Result<ExitCode> {
    let client = client(id)?;
    let path = client_path(&client)?;
    if !path.is_file() {
        return Err(anyhow!("no {} config at {}; nothing to install into", client.label, path.display()));
    }
    let file = ClientFile::read(&path, &client)?;
    let (servers, warden) = file.servers()?;
    if let Some(name) = warden {
        println!("{} already runs Warden (its entry '{name}' in {}); nothing to do", client.label, path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let backup = backup_of(&path);
    if backup.exists() {
        return Err(anyhow!(
            "{} exists from an earlier install; run `warden uninstall {id}` (or move that file away) first",
            backup.display()
        ));
    }
    let config = target(config)?;
    let before = target_text(&config)?;
    let merged = merge_into(&before, &config, &servers)?;
    println!("{}: {} ({} server{})", client.label, path.display(), servers.len(), plural(servers.len()));
    report(&merged, &servers, &config);
    if !merged.conflicts.is_empty() {
        return Err(anyhow!(
            "not installed: Warden's config {} already has different servers named {}; rename them there or in {}, \
             then run this again",
            config.display(),
            merged.conflicts.join(", "),
            path.display()
        ));
    }
    let program = std::env::current_exe().context("cannot tell where this warden program is")?;
    let entry = WardenEntry { program, config: config.clone() };
    let moved: Vec<String> = servers.into_iter().map(|(name, _)| name).collect();
    let written = file.with_warden(&moved, &entry)?;
    // As Warden's config names them, for uninstall's message.
    let moved = merged.added.iter().map(|(name, _)| name.clone()).chain(merged.same.iter().cloned()).collect();
    if dry_run {
        print!("{}", diff::unified(&path, &file.text, &written));
        print!("{}", diff::unified(&config, &before, &merged.text));
        println!("(dry run: nothing written)");
        return Ok(ExitCode::SUCCESS);
    }
    // The bytes the rewrite was made from (not the file read again), 0600.
    files::write(&backup, &file.text)
        .with_context(|| format!("cannot back up {} to {}", path.display(), backup.display()))?;
    let record = InstallRecord { file: path.clone(), backup: backup.clone(), written: written.clone(), moved };
    record.save(id)?;
    files::write(&config, &merged.text)?;
    files::write(&path, &written)?;
    println!(
        "{} now runs its servers through Warden ({}); restart {} to pick it up.\nthe original is {}; \
         `warden uninstall {id}` puts it back",
        client.label,
        config.display(),
        client.label,
        backup.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub(super) fn uninstall(id: &str, force: bool) -> anyhow::Result<ExitCode> {
    let client = client(id)?;
    let Some((record_path, record)) = InstallRecord::load(id)? else {
        return Err(anyhow!(
            "Warden is not installed in {} (no record of an install: `warden install {id}`)",
            client.label
        ));
    };
    let original = std::fs::read(&record.backup).with_context(|| {
        format!("the original of {} is gone from {}", record.file.display(), record.backup.display())
    })?;
    let now = std::fs::read_to_string(&record.file).unwrap_or_default();
    if now != record.written && !force {
        return Err(anyhow!(
            "{} changed since `warden install`; putting the original back would lose that. Compare it with {} and \
             restore by hand, or run `warden uninstall {id} --force` to restore the original anyway",
            record.file.display(),
            record.backup.display()
        ));
    }
    let text = String::from_utf8(original).context("the backup is not text")?;
    files::write(&record.file, &text)?;
    std::fs::remove_file(&record.backup).with_context(|| format!("cannot remove {}", record.backup.display()))?;
    std::fs::remove_file(&record_path).with_context(|| format!("cannot remove {}", record_path.display()))?;
    println!("{} is back as it was: {}", client.label, record.file.display());
    if !record.moved.is_empty() {
        println!(
            "its servers ({}) stay in Warden's config; remove them there if no other client uses them",
            record.moved.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn list(json: bool) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    for client in CLIENTS {
        let path = client.path();
        let found = path.as_deref().is_some_and(Path::is_file);
        let servers = match path.as_deref().filter(|_| found).map(|path| ClientFile::read(path, &client)) {
            Some(Ok(file)) => file.servers().map_err(|error| error.to_string()),
            Some(Err(error)) => Err(error.to_string()),
            None => Ok((Vec::new(), None)),
        };
        let installed = InstallRecord::load(client.id).ok().flatten().is_some();
        let row = match &servers {
            Ok((servers, warden)) => json!({
                "client": client.id, "name": client.label, "path": path, "found": found,
                "servers": servers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
                "uses_warden": warden.is_some(), "installed_by_warden": installed,
            }),
            Err(error) => json!({
                "client": client.id, "name": client.label, "path": path, "found": found, "error": error,
                "uses_warden": false, "installed_by_warden": installed,
            }),
        };
        rows.push(row);
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    for row in &rows {
        let path = row["path"].as_str().unwrap_or("(no home directory)");
        let state = if row["found"] != true {
            "not found".to_string()
        } else if let Some(error) = row["error"].as_str() {
            format!("unreadable: {error}")
        } else if row["uses_warden"] == true {
            format!("uses Warden{}", if row["installed_by_warden"] == true { " (warden install)" } else { "" })
        } else {
            let servers: Vec<&str> =
                row["servers"].as_array().into_iter().flatten().filter_map(|n| n.as_str()).collect();
            format!(
                "{} server{}{}: `warden install {}`",
                servers.len(),
                if servers.len() == 1 { "" } else { "s" },
                if servers.is_empty() { String::new() } else { format!(" ({})", servers.join(", ")) },
                row["client"].as_str().unwrap_or_default()
            )
        };
        println!("{:<15} {state}\n{:<15} {path}", row["name"].as_str().unwrap_or_default(), "");
    }
    Ok(ExitCode::SUCCESS)
}
