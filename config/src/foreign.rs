//! Another product's MCP servers, read into Warden's schema *without*
//! `${VAR}` expansion, for `warden import` and `warden install`: what they
//! copy into Warden's config keeps its references (a secret stays where
//! it was, in the environment), and a value the source held literally is
//! copied literally.
//!
//! The same shape readers as loading (`shapes::normalise`) do the mapping,
//! so a file imports exactly as it would load: what the other program's
//! entry sets that Warden does not honour is taken out and named (for the
//! import to say), and each entry is then checked against the strict
//! schema.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::{file_format, shapes, ConfigError, ServerConfig};

/// The servers of a config file's text (in any shape Warden reads; the
/// format by `path`'s extension, TOML otherwise), each as a table of
/// Warden's `[servers.NAME]` fields (in no particular order: the `config`
/// crate's maps keep none); and by server, the fields taken out because
/// Warden does not honour them.
pub fn foreign_servers<T: DeserializeOwned>(text: &str, path: &Path) -> Result<ForeignServers<T>, ConfigError> {
    let file = path.display().to_string();
    let unreadable =
        |error: config::ConfigError| ConfigError::Unreadable { file: file.clone(), problem: error.to_string() };
    let format = file_format(path).unwrap_or(config::FileFormat::Toml);
    let built = config::Config::builder().add_source(config::File::from_str(text, format)).build();
    let mut root = built.and_then(|built| config::Source::collect(&built)).map_err(unreadable)?;
    let ignored = shapes::normalise(&mut root, &file)?;
    let Some(servers) = root.remove("servers") else { return Ok((Vec::new(), ignored)) };
    let config::ValueKind::Table(servers) = servers.kind else { return Ok((Vec::new(), ignored)) };
    let mut read = Vec::new();
    for (name, entry) in servers {
        let server_error = |problem: String| ConfigError::Server { file: file.clone(), server: name.clone(), problem };
        let _: ServerConfig = entry.clone().try_deserialize().map_err(|error| server_error(error.to_string()))?;
        let table: T = entry.try_deserialize().map_err(|error| server_error(error.to_string()))?;
        read.push((name, table));
    }
    Ok((read, ignored))
}

/// What [`foreign_servers`] read: each server, and by server what of it
/// Warden does not honour.
pub type ForeignServers<T> = (Vec<(String, T)>, Vec<(String, Vec<String>)>);
