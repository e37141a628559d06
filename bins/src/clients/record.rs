//! What `warden install` did to a client, kept in Warden's state
//! directory (`installs/CLIENT.json`, 0600) so `warden uninstall` can undo
//! exactly that: the file it changed, where the original is, and what it
//! wrote — a file changed since is not overwritten unasked.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// One install.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct InstallRecord {
    /// The client's file.
    pub(crate) file: PathBuf,
    /// Its original bytes, beside it.
    pub(crate) backup: PathBuf,
    /// What install wrote to it.
    pub(crate) written: String,
    /// The servers that moved into Warden's config, by their names there.
    pub(crate) moved: Vec<String>,
}

/// Where a client's record is.
pub(crate) fn path_of(client: &str) -> anyhow::Result<PathBuf> {
    let state = warden_config::state_home(|name| std::env::var_os(name))
        .context("cannot tell where Warden keeps its state: set WARDEN_HOME (or XDG_STATE_HOME, or HOME)")?;
    Ok(state.join("installs").join(format!("{client}.json")))
}

impl InstallRecord {
    /// The record of `client`'s install, if there is one.
    pub(crate) fn load(client: &str) -> anyhow::Result<Option<(PathBuf, InstallRecord)>> {
        let path = path_of(client)?;
        let Ok(text) = std::fs::read_to_string(&path) else { return Ok(None) };
        let record = serde_json::from_str(&text).with_context(|| format!("{} is damaged", path.display()))?;
        Ok(Some((path, record)))
    }

    /// Saves it as `client`'s.
    pub(crate) fn save(&self, client: &str) -> anyhow::Result<PathBuf> {
        let path = path_of(client)?;
        super::files::write(&path, &serde_json::to_string_pretty(self)?)?;
        Ok(path)
    }
}

/// The backup's path for a client's `file`.
pub(crate) fn backup_of(file: &Path) -> PathBuf {
    let mut name = file.file_name().unwrap_or_default().to_os_string();
    name.push(".warden-backup");
    file.with_file_name(name)
}
