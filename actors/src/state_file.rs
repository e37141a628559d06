//! The small JSON files a Warden keeps between runs (the era memo, the
//! task journal): read with anything unusable taken as empty, written
//! whole to a partial file renamed into place, owner-only (`0600`).
//!
//! Neither decides whether Warden can work: a file that cannot be read
//! or written costs what it would have saved, and says so in the log.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// What `file` holds, or the default when it is missing or unusable
/// (`what` names it in the warning).
pub(crate) fn read<T: DeserializeOwned + Default>(file: &Path, what: &str) -> T {
    match std::fs::read(file) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|error| {
            tracing::warn!("ignoring {}, which is not {what}: {error}", file.display());
            T::default()
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => T::default(),
        Err(error) => {
            tracing::warn!("cannot read {}, {what}: {error}", file.display());
            T::default()
        }
    }
}

/// Replaces `file` with `value`; `lost` says in the warning what a failed
/// write costs.
pub(crate) fn write(file: &Path, value: &impl Serialize, lost: &str) {
    let text = serde_json::to_vec_pretty(value).expect("a state file serialises");
    let partial = file.with_extension(format!("{}.partial", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .and_then(|mut out| out.write_all(&text))
        .and_then(|()| std::fs::rename(&partial, file));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&partial);
        tracing::warn!("cannot write {}: {error}; {lost}", file.display());
    }
}

/// Now, in Unix seconds.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0)
}
