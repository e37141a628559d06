//! `audit.jsonl`: the daemon's record of every call, one JSON object a line.
//!
//! Each record is what `warden_actors::AuditRecord` says of one call (who,
//! what, the policy and its sources, who decided, leaks by kind and place,
//! how it ended; arguments only as a digest unless `[audit] arguments =
//! "redacted"`). The file is `0600` like everything in the state
//! directory, and rotated past `[audit] max_mb` to `audit.jsonl.1`, `.2`, …
//! keeping `files`. `warden audit` reads it back.
//!
//! A call's task only serialises its record into a buffer in memory; a
//! flusher thread writes the buffer out every [`FLUSH_EVERY`], and at once
//! when the daemon stops ([`AuditLog::close`]). A write is a system call
//! that may block on the disk, so none is made on a tokio worker: a write
//! per call was the largest part of the record's cost, a writer thread
//! woken per call cost more still on two cores (`record_overhead` bench),
//! and an 8 KiB write buffer still made every ~16th call write it out.
//! Only when the flusher cannot keep up — [`MAX_PENDING`] waiting — does a
//! call write the buffer itself, so memory stays bounded. The price: a
//! crash loses at most the last [`FLUSH_EVERY`] of records, and a record
//! shows in the file that much after its call.

use std::fs::File;
use std::io::Write as _;
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

/// How many bytes of records may wait for the flusher before a call
/// writes them itself (some 2,000 records).
const MAX_PENDING: usize = 1 << 20;

/// The audit log of one daemon.
pub(crate) struct AuditLog {
    shared: Arc<Shared>,
    stopping: Arc<AtomicBool>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    with_arguments: bool,
    /// Where records also go once the daemon joined its cluster: the
    /// cluster's audit stream.
    also: std::sync::OnceLock<Arc<dyn AuditSink>>,
}

/// What the calls and the flusher share. Lock order: `file`, then
/// `pending`; batches are taken from `pending` only under `file`, so they
/// reach the file in the order they were recorded.
struct Shared {
    /// Whole lines recorded and not yet written.
    pending: Mutex<Vec<u8>>,
    file: Mutex<LogFile>,
}

/// The file and its rotation.
struct LogFile {
    path: PathBuf,
    file: Option<File>,
    written: u64,
    max_bytes: u64,
    keep: u32,
}

impl AuditLog {
    /// The log at `path`, appended to (created `0600` if absent).
    pub(crate) fn open(path: PathBuf, config: &AuditConfig) -> std::io::Result<AuditLog> {
        AuditLog::open_flushing_every(path, config, FLUSH_EVERY)
    }

    fn open_flushing_every(path: PathBuf, config: &AuditConfig, every: Duration) -> std::io::Result<AuditLog> {
        let file = open(&path)?;
        let written = file.metadata().map(|meta| meta.len()).unwrap_or(0);
        let file =
            LogFile { path, file: Some(file), written, max_bytes: config.max_bytes().max(1), keep: config.files };
        let shared = Arc::new(Shared { pending: Mutex::new(Vec::new()), file: Mutex::new(file) });
        let stopping = Arc::new(AtomicBool::new(false));
        let (flushed, stop) = (Arc::clone(&shared), Arc::clone(&stopping));
        let flusher = std::thread::Builder::new().name("audit-flush".into()).spawn(move || {
            // Swapped with `pending` at each flush: the calls get back a
            // buffer that already has its capacity.
            let mut batch = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                std::thread::park_timeout(every);
                flushed.flush(&mut batch);
            }
        })?;
        Ok(AuditLog {
            shared,
            stopping,
            flusher: Mutex::new(Some(flusher)),
            with_arguments: config.keeps_arguments(),
            also: std::sync::OnceLock::new(),
        })
    }

    /// Sends every record from now on to `sink` too (the cluster's stream).
    pub(crate) fn also_to(&self, sink: Arc<dyn AuditSink>) {
        let _ = self.also.set(sink);
    }

    /// Writes what is buffered and stops the flusher (the daemon stops).
    pub(crate) fn close(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        if let Some(flusher) = lock(&self.flusher).take() {
            flusher.thread().unpark();
            let _ = flusher.join();
        }
        self.shared.flush(&mut Vec::new());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn open(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)
}

impl Shared {
    /// Writes every line recorded so far, `batch` (empty) lent as the
    /// buffer the calls go on with.
    fn flush(&self, batch: &mut Vec<u8>) {
        let mut file = lock(&self.file);
        std::mem::swap(batch, &mut *lock(&self.pending));
        if !batch.is_empty() {
            file.write(batch);
            batch.clear();
        }
    }
}

impl LogFile {
    /// Writes `batch`, whole lines, rotating before a line that would take
    /// the file past its size (a file always takes at least one line).
    fn write(&mut self, mut batch: &[u8]) {
        if self.file.is_none() {
            // A rotation could not open it: try again, once a flush.
            self.file = open(&self.path).ok();
        }
        while !batch.is_empty() {
            let room = usize::try_from(self.max_bytes.saturating_sub(self.written)).unwrap_or(usize::MAX);
            let fitting = batch[..batch.len().min(room)].iter().rposition(|&byte| byte == b'\n').map(|at| at + 1);
            let cut = match fitting {
                Some(cut) => cut,
                None if self.written > 0 => {
                    self.rotate();
                    continue;
                }
                None => batch.iter().position(|&byte| byte == b'\n').map_or(batch.len(), |at| at + 1),
            };
            let Some(file) = self.file.as_mut() else { return };
            if let Err(error) = file.write_all(&batch[..cut]) {
                tracing::error!(%error, "cannot write the audit log");
                return;
            }
            self.written += cut as u64;
            batch = &batch[cut..];
        }
    }

    fn rotate(&mut self) {
        self.file = None;
        shift(&self.path, self.keep);
        self.written = 0;
        self.file = open(&self.path)
            .map_err(|error| tracing::error!(%error, "cannot open a new audit log; records are lost until it can"))
            .ok();
    }
}

impl AuditSink for AuditLog {
    fn record(&self, record: &AuditRecord) {
        let overflowing = {
            let mut pending = lock(&self.shared.pending);
            let before = pending.len();
            match serde_json::to_writer(&mut *pending, record) {
                Ok(()) => pending.push(b'\n'),
                Err(_) => pending.truncate(before),
            }
            pending.len() >= MAX_PENDING
        };
        if overflowing {
            self.shared.flush(&mut Vec::new());
        }
        if let Some(also) = self.also.get() {
            also.record(record);
        }
    }

    fn with_arguments(&self) -> bool {
        self.with_arguments
    }
}

#[cfg(test)]
mod tests;
