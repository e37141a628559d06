//! Where the config is, when nobody says.
//!
//! In order: the path given (`--config`), then `$WARDEN_CONFIG`, then the
//! XDG location, `$XDG_CONFIG_HOME/warden/warden.toml` (`~/.config` when
//! `XDG_CONFIG_HOME` is unset or empty). A path that is given must exist: a
//! typo there is an error. The XDG file may be absent: no config means no
//! servers, and a host embedding Warden goes on without MCP tools, so that
//! is an answer ([`Discovered::Nothing`]), not an error. It carries the
//! places looked at, for the message that says how to add a server.
//!
//! Paths come back absolute (canonical when the file exists), so a daemon
//! started from another directory finds the same file and a client can
//! tell whether a running daemon serves it.

use std::path::{Path, PathBuf};

use super::{ConfigError, WardenConfig};

/// What [`WardenConfig::discover`] found.
#[derive(Debug)]
pub enum Discovered {
    /// A config, read and checked.
    Loaded {
        /// Its file, absolute.
        path: PathBuf,
        /// The config.
        config: Box<WardenConfig>,
    },
    /// No config anywhere: no servers.
    Nothing {
        /// The default location, which was looked at and is absent.
        looked_at: Option<PathBuf>,
    },
}

impl Discovered {
    /// What to tell a user who has no config: where Warden looked and how
    /// to add a server.
    pub fn notice(&self) -> Option<String> {
        let Discovered::Nothing { looked_at } = self else { return None };
        let (looked, create) = match looked_at {
            Some(path) => (format!("--config, $WARDEN_CONFIG and {}", path.display()), path.display().to_string()),
            None => (
                "--config and $WARDEN_CONFIG; neither $XDG_CONFIG_HOME nor $HOME is set".into(),
                "a warden.toml".into(),
            ),
        };
        Some(format!(
            "no config file found (looked at {looked}); create {create} with a [servers.NAME] table — see \
             examples/warden.toml"
        ))
    }
}

impl WardenConfig {
    /// Finds and loads the config: `explicit`, else `$WARDEN_CONFIG`, else
    /// the XDG location if that file exists.
    pub fn discover(explicit: Option<&Path>) -> Result<Discovered, ConfigError> {
        Self::discover_with(explicit, &|name| std::env::var(name).ok())
    }

    /// [`WardenConfig::discover`] with the environment read through `env`.
    pub fn discover_with(
        explicit: Option<&Path>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Discovered, ConfigError> {
        let path = match locate(explicit, env) {
            Ok(path) => path,
            Err(looked_at) => return Ok(Discovered::Nothing { looked_at }),
        };
        let config = WardenConfig::load(&path)?;
        Ok(Discovered::Loaded { path, config: Box::new(config) })
    }
}

/// The file [`WardenConfig::discover`] would load, without loading it (to
/// ask for what it needs first); `None` when there is none.
pub fn config_file(explicit: Option<&Path>) -> Option<PathBuf> {
    locate(explicit, &|name| std::env::var(name).ok()).ok()
}

/// The config's path, absolute; else the default location looked at.
fn locate(explicit: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, Option<PathBuf>> {
    let given = explicit.map(Path::to_path_buf).or_else(|| non_empty(env("WARDEN_CONFIG")).map(PathBuf::from));
    match given {
        Some(path) => Ok(absolute(&path)),
        None => match default_location(env) {
            Some(path) if path.is_file() => Ok(absolute(&path)),
            looked_at => Err(looked_at),
        },
    }
}

/// Where Warden's config is when nobody says otherwise (`warden import`
/// creates it there): `$XDG_CONFIG_HOME/warden/warden.toml`, or
/// `$HOME/.config/warden/warden.toml`; `None` without either variable.
pub fn default_config_path() -> Option<PathBuf> {
    default_location(&|name| std::env::var(name).ok())
}

/// `$XDG_CONFIG_HOME/warden/warden.toml`, or `$HOME/.config/warden/warden.toml`.
pub(crate) fn default_location(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = non_empty(env("XDG_CONFIG_HOME"))
        .map(PathBuf::from)
        .or_else(|| non_empty(env("HOME")).map(|home| Path::new(&home).join(".config")))?;
    Some(base.join("warden").join("warden.toml"))
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|value| !value.is_empty())
}

/// Canonical when the file exists; a missing one keeps its given name (made
/// absolute), for the loader's message.
pub fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).or_else(|_| std::path::absolute(path)).unwrap_or_else(|_| path.to_path_buf())
}
