//! `mcp_server_dir`: a directory of one-server-per-file drop-ins.
//!
//! Package managers and dotfile setups add a server by dropping a file,
//! not by editing a shared one. Each file holds one server: its fields at
//! the top level, in any format Warden reads (`.toml`, `.yaml`/`.yml`,
//! `.json`). The server's name is the file's `name` field when it has one,
//! and the file's stem otherwise (`servers.d/git.toml` is `git`), so the
//! common case needs no repetition and a file copied from an `mcp_servers:`
//! list still works. A `type` field is checked like in `mcpServers`.
//!
//! A file may also be a *fragment* copied from a main config: a
//! `[servers.NAME]` table, an `mcpServers` map or an `mcp_servers` list
//! (or codex tables), holding one server or several, and nothing else.
//!
//! The directory is read in sorted order, and anything that is not a config
//! file (other extensions, hidden files such as editor swap files,
//! subdirectories) is skipped, so a README beside the drop-ins is harmless.
//! A relative directory is relative to the config file's directory: the
//! config and its drop-ins move together. Each server remembers its file,
//! so an error names the drop-in, not the config that points at it.

use std::path::{Path, PathBuf};

use config::ValueKind;

use super::raw::{kind_name, server_error};
use super::shapes::{typed, SECTIONS};
use super::{file_format, ConfigError, ServerConfig};

/// One drop-in: its server's name, the server, and the file.
pub(super) struct DropIn {
    pub(super) name: String,
    pub(super) server: ServerConfig,
    pub(super) file: PathBuf,
}

/// Reads every drop-in of `dir` (relative to `config_file`'s directory).
pub(super) fn read_dir(dir: &Path, config_file: &str) -> Result<Vec<DropIn>, ConfigError> {
    let base = Path::new(config_file).parent().unwrap_or(Path::new(""));
    let dir = base.join(dir);
    let not_a_dir = |reason: String| ConfigError::Setting {
        file: config_file.into(),
        field: "mcp_server_dir",
        problem: format!("is '{}', which {reason}", dir.display()),
    };
    let listing =
        std::fs::read_dir(&dir).map_err(|error| not_a_dir(format!("cannot be read as a directory: {error}")))?;
    let mut files: Vec<PathBuf> =
        listing.filter_map(|entry| entry.ok().map(|entry| entry.path())).filter(|path| is_drop_in(path)).collect();
    files.sort();
    let mut drop_ins = Vec::new();
    for file in &files {
        drop_ins.extend(read_one(file)?);
    }
    Ok(drop_ins)
}

/// A visible file with an extension Warden reads.
fn is_drop_in(path: &Path) -> bool {
    let hidden = path.file_name().and_then(|name| name.to_str()).is_none_or(|name| name.starts_with('.'));
    !hidden && path.is_file() && file_format(path).is_some()
}

/// The server (or, for a fragment, servers) of one file.
fn read_one(path: &Path) -> Result<Vec<DropIn>, ConfigError> {
    let file = path.display().to_string();
    let format = file_format(path).expect("only config files are listed");
    let stem = path.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default().to_string();
    let unreadable = |error: config::ConfigError| ConfigError::Unreadable {
        file: file.clone(),
        problem: super::with_expected_values(error.to_string()),
    };
    let built = config::Config::builder().add_source(config::File::from(path).format(format)).build();
    let mut table = built.and_then(|built| config::Source::collect(&built)).map_err(unreadable)?;
    if SECTIONS.iter().any(|section| table.contains_key(*section)) {
        return fragment(table, path);
    }
    let name = match table.remove("name").map(|name| name.kind) {
        Some(ValueKind::String(name)) => name,
        Some(other) => {
            return Err(server_error(&file, &stem, format!("`name` must be a string, not {}", kind_name(&other))))
        }
        None => stem,
    };
    let table = typed(table, &file, &name)?;
    Ok(vec![server_of(table, name, path)?])
}

/// A block copied from a main config — `[servers.NAME]`, `mcpServers`,
/// `mcp_servers` — holding one server or more, and nothing else.
fn fragment(mut table: config::Map<String, config::Value>, path: &Path) -> Result<Vec<DropIn>, ConfigError> {
    let file = path.display().to_string();
    let mut ignored = super::shapes::normalise(&mut table, &file)?;
    if let Some(other) = table.keys().find(|key| *key != "servers") {
        return Err(ConfigError::Unreadable {
            file,
            problem: format!(
                "a drop-in of `mcp_server_dir` holds servers only, and this one also has `{other}`: move it to the main config"
            ),
        });
    }
    let servers = match table.remove("servers").map(|servers| servers.kind) {
        Some(ValueKind::Table(servers)) => servers,
        _ => return Ok(Vec::new()),
    };
    let mut drop_ins = Vec::new();
    for (name, entry) in servers {
        let entry = super::shapes::server_table(entry, &name, &file)?;
        let mut drop_in = server_of(typed(entry, &file, &name)?, name, path)?;
        if let Some(at) = ignored.iter().position(|(server, _)| *server == drop_in.name) {
            drop_in.server.ignored = ignored.swap_remove(at).1;
        }
        drop_ins.push(drop_in);
    }
    Ok(drop_ins)
}

/// One server's table, checked and read.
fn server_of(table: config::Map<String, config::Value>, name: String, path: &Path) -> Result<DropIn, ConfigError> {
    let file = path.display().to_string();
    crate::kinds::check_server(&table, &file, &name)?;
    let server: ServerConfig = config::Value::new(None, table)
        .try_deserialize()
        .map_err(|error| server_error(&file, &name, super::with_expected_values(error.to_string())))?;
    Ok(DropIn { name, server, file: path.to_path_buf() })
}
