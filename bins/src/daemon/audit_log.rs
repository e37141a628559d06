//! `audit.jsonl`: the daemon's record of every call, one JSON object a line.
//!
//! Each record is what `warden_actors::AuditRecord` says of one call (who,
//! what, the policy and its sources, who decided, leaks by kind and place,
//! how it ended; arguments only as a digest unless `[audit] arguments =
//! "redacted"`). The file is `0600` like everything in the state
//! directory, appended to on the caller's task (a page-cache write), and
//! rotated past `[audit] max_mb` to `audit.jsonl.1`, `.2`, … keeping
//! `files`. `warden audit` reads it back.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;
use std::sync::Mutex;

use warden_actors::{AuditRecord, AuditSink};
use warden_config::AuditConfig;

use super::log_file::shift;

/// The audit log of one daemon.
pub(crate) struct AuditLog {
    inner: Mutex<Inner>,
    with_arguments: bool,
}

struct Inner {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    max_bytes: u64,
    keep: u32,
}

impl AuditLog {
    /// The log at `path`, appended to (created `0600` if absent).
    pub(crate) fn open(path: PathBuf, config: &AuditConfig) -> std::io::Result<AuditLog> {
        let file = open(&path)?;
        let written = file.metadata().map(|meta| meta.len()).unwrap_or(0);
        let inner = Inner { path, file: Some(file), written, max_bytes: config.max_bytes().max(1), keep: config.files };
        Ok(AuditLog { inner: Mutex::new(inner), with_arguments: config.keeps_arguments() })
    }
}

fn open(path: &PathBuf) -> std::io::Result<File> {
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

impl AuditSink for AuditLog {
    fn record(&self, record: &AuditRecord) {
        let Ok(mut line) = serde_json::to_string(record) else { return };
        line.push('\n');
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if inner.written > 0 && inner.written + line.len() as u64 > inner.max_bytes {
            inner.file = None;
            shift(&inner.path, inner.keep);
            inner.written = 0;
            inner.file = open(&inner.path)
                .map_err(|error| tracing::error!(%error, "cannot open a new audit log; records are lost until it can"))
                .ok();
        }
        let Some(file) = inner.file.as_mut() else { return };
        match file.write_all(line.as_bytes()) {
            Ok(()) => inner.written += line.len() as u64,
            Err(error) => tracing::error!(%error, "cannot write the audit log"),
        }
    }

    fn with_arguments(&self) -> bool {
        self.with_arguments
    }
}
