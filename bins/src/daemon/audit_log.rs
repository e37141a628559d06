//! `audit.jsonl`: the daemon's record of every call, one JSON object a line.
//!
//! Each record is what `warden_actors::AuditRecord` says of one call (who,
//! what, the policy and its sources, who decided, leaks by kind and place,
//! how it ended; arguments only as a digest unless `[audit] arguments =
//! "redacted"`). The file is `0600` like everything in the state
//! directory, and rotated past `[audit] max_mb` to `audit.jsonl.1`, `.2`, …
//! keeping `files`. `warden audit` reads it back.
//!
//! Records are buffered and written at most [`FLUSH_EVERY`] later, by a
//! flusher thread, and at once when the daemon stops ([`AuditLog::close`]):
//! a write (a system call) per call, on the call's task, was the largest
//! part of the record's cost, and a writer thread woken per call cost
//! more still on two cores (`record_overhead` bench). The price: a crash
//! loses at most the last [`FLUSH_EVERY`] of records, and a record shows
//! in the file that much after its call.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use warden_actors::{AuditRecord, AuditSink};
use warden_config::AuditConfig;

use super::log_file::shift;

/// How long a record may wait in the buffer.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// The audit log of one daemon.
pub(crate) struct AuditLog {
    file: Arc<Mutex<Inner>>,
    stopping: Arc<AtomicBool>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    with_arguments: bool,
}

/// The file, its buffer and its rotation.
struct Inner {
    path: PathBuf,
    writer: Option<BufWriter<File>>,
    written: u64,
    max_bytes: u64,
    keep: u32,
    /// Something is buffered.
    dirty: bool,
}

impl AuditLog {
    /// The log at `path`, appended to (created `0600` if absent).
    pub(crate) fn open(path: PathBuf, config: &AuditConfig) -> std::io::Result<AuditLog> {
        let file = open(&path)?;
        let written = file.metadata().map(|meta| meta.len()).unwrap_or(0);
        let inner = Inner {
            path,
            writer: Some(BufWriter::new(file)),
            written,
            max_bytes: config.max_bytes().max(1),
            keep: config.files,
            dirty: false,
        };
        let file = Arc::new(Mutex::new(inner));
        let stopping = Arc::new(AtomicBool::new(false));
        let (shared, stop) = (Arc::clone(&file), Arc::clone(&stopping));
        let flusher = std::thread::Builder::new().name("audit-flush".into()).spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(FLUSH_EVERY);
                lock(&shared).flush();
            }
        })?;
        Ok(AuditLog { file, stopping, flusher: Mutex::new(Some(flusher)), with_arguments: config.keeps_arguments() })
    }

    /// Writes what is buffered and stops the flusher (the daemon stops).
    pub(crate) fn close(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(flusher) = self.flusher.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take() {
            flusher.thread().unpark();
            let _ = flusher.join();
        }
        lock(&self.file).flush();
    }
}

fn lock(file: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    file.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn open(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

impl Inner {
    fn append(&mut self, line: &str) {
        if self.written > 0 && self.written + line.len() as u64 > self.max_bytes {
            self.flush();
            self.writer = None;
            shift(&self.path, self.keep);
            self.written = 0;
            self.writer = open(&self.path)
                .map(BufWriter::new)
                .map_err(|error| tracing::error!(%error, "cannot open a new audit log; records are lost until it can"))
                .ok();
        }
        let Some(writer) = self.writer.as_mut() else { return };
        match writer.write_all(line.as_bytes()) {
            Ok(()) => {
                self.written += line.len() as u64;
                self.dirty = true;
            }
            Err(error) => tracing::error!(%error, "cannot write the audit log"),
        }
    }

    fn flush(&mut self) {
        if !std::mem::take(&mut self.dirty) {
            return;
        }
        if let Some(Err(error)) = self.writer.as_mut().map(BufWriter::flush) {
            tracing::error!(%error, "cannot write the audit log");
        }
    }
}

impl AuditSink for AuditLog {
    fn record(&self, record: &AuditRecord) {
        let Ok(mut line) = serde_json::to_string(record) else { return };
        line.push('\n');
        lock(&self.file).append(&line);
    }

    fn with_arguments(&self) -> bool {
        self.with_arguments
    }
}
