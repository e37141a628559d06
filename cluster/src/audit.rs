//! The cluster's audit record: every node appends the record of each call
//! it saw enter (its `audit.jsonl` lines, with `node` added) to one
//! JetStream stream, `PREFIX_audit` (subjects `PREFIX.audit.NODE`), so the
//! whole cluster's calls are read in one place (`warden cluster audit`).
//! Each node keeps its own file as well: the stream is a copy, not the
//! only record.
//!
//! Unlike the buckets, the stream is on disk (NATS' JetStream store), and
//! bounded by [`KEEP_FOR`] and [`KEEP_BYTES`], oldest dropped first. A
//! call's task never waits for NATS, nor wakes anything: it only adds its
//! record to a batch. The first record of a batch wakes a publisher task,
//! which lets the batch gather for [`GATHER`] and then publishes it, the
//! acknowledgements awaited together. A record per call published at once
//! was a JetStream store write racing every call's reply through the same
//! NATS server (the cluster bench: some 25 µs of a call's time on the
//! host). The price: a record reaches the stream up to [`GATHER`] after
//! its call, and a node that stops loses the last batch from the stream
//! (never from its local file). When NATS is down or slow and
//! [`WAITING`] records wait, newer ones are left out of the stream and the
//! log says how many.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt as _;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::Notify;
use warden_actors::{AuditRecord, AuditSink};
use warden_config::ClusterConfig;

use crate::names::Names;
use crate::ClusterError;

/// How long the stream keeps a record.
const KEEP_FOR: Duration = Duration::from_secs(30 * 24 * 3600);

/// The most the stream holds, in bytes.
const KEEP_BYTES: i64 = 1 << 30;

/// How many records may wait for the publisher.
const WAITING: usize = 4096;

/// How long a batch of records gathers before it is published.
const GATHER: Duration = Duration::from_millis(100);

/// How long reading waits for the next record before it calls it the end.
const READ_WAIT: Duration = Duration::from_secs(5);

/// The stream's configuration.
fn config(names: &Names) -> stream::Config {
    stream::Config {
        name: names.audit_stream(),
        description: Some("Warden nodes: every call's audit record".into()),
        subjects: vec![names.audit_subject("*")],
        storage: stream::StorageType::File,
        max_age: KEEP_FOR,
        max_bytes: KEEP_BYTES,
        discard: stream::DiscardPolicy::Old,
        num_replicas: names.replicas,
        ..Default::default()
    }
}

/// Opens (or makes) the stream; the sink that appends this node's records.
pub(crate) async fn sink(names: Arc<Names>, client: async_nats::Client) -> Result<Arc<dyn AuditSink>, ClusterError> {
    let js = jetstream::new(client);
    js.get_or_create_stream(config(&names)).await.map_err(|error| ClusterError::Bucket {
        bucket: names.audit_stream(),
        problem: format!(
            "{error}; the cluster's audit needs JetStream with a store (nats-server -js) and room in it: the \
             stream reserves {} MiB (NATS' `max_file_store`, and the disk it is on)",
            KEEP_BYTES >> 20
        ),
    })?;
    let batch = Arc::new(Batch::default());
    let (subject, gathered) = (names.audit_subject(&names.node), batch.clone());
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            gathered.started.notified().await;
            tokio::time::sleep(GATHER).await;
            let records =
                std::mem::take(&mut *gathered.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
            let published = async {
                let mut acks = Vec::with_capacity(records.len());
                for record in records {
                    acks.push(js.publish(subject.clone(), record.into()).await?);
                }
                for ack in acks {
                    ack.await?;
                }
                Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
            };
            match published.await {
                Ok(()) if failing => {
                    failing = false;
                    tracing::info!("the cluster's audit stream takes records again");
                }
                Ok(()) => {}
                Err(error) => {
                    if !failing {
                        tracing::warn!("records of calls did not reach the cluster's audit stream ({error}); they are in this node's audit.jsonl");
                    }
                    failing = true;
                }
            }
            let lost = gathered.dropped.swap(0, Ordering::Relaxed);
            if lost > 0 {
                tracing::warn!(lost, "records left out of the cluster's audit stream while it was slow (they are in this node's audit.jsonl)");
            }
        }
    });
    Ok(Arc::new(StreamSink { node: names.node.clone(), batch }))
}

/// The records waiting for the publisher.
#[derive(Default)]
struct Batch {
    records: Mutex<Vec<Vec<u8>>>,
    /// Told when a record arrives at an empty batch.
    started: Notify,
    /// Records left out because [`WAITING`] were waiting.
    dropped: AtomicU64,
}

struct StreamSink {
    node: String,
    batch: Arc<Batch>,
}

/// A record as the stream keeps it: the node that saw the call beside it.
#[derive(Serialize)]
struct NodeRecord<'a> {
    #[serde(flatten)]
    record: &'a AuditRecord,
    node: &'a str,
}

impl AuditSink for StreamSink {
    fn record(&self, record: &AuditRecord) {
        let Ok(bytes) = serde_json::to_vec(&NodeRecord { record, node: &self.node }) else { return };
        let first = {
            let mut records = self.batch.records.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if records.len() >= WAITING {
                self.batch.dropped.fetch_add(1, Ordering::Relaxed);
                return;
            }
            records.push(bytes);
            records.len() == 1
        };
        if first {
            self.batch.started.notify_one();
        }
    }
}

/// Every record the cluster's stream holds that ended at or after `since`
/// (seconds since the epoch; all without), oldest first.
pub async fn read(config: &ClusterConfig, since: Option<f64>) -> Result<Vec<Value>, ClusterError> {
    let names = Names::new(&config.subject_prefix, config.node_name());
    let client = crate::connect::connect(config).await?;
    let js = jetstream::new(client);
    let unreadable = |error: String| ClusterError::Bucket { bucket: names.audit_stream(), problem: error };
    let stream = match js.get_stream(names.audit_stream()).await {
        Ok(stream) => stream,
        // No node has recorded anything yet.
        Err(error)
            if matches!(error.kind(), jetstream::context::GetStreamErrorKind::JetStream(ref failed)
                if failed.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND) =>
        {
            return Ok(Vec::new())
        }
        Err(error) => return Err(unreadable(error.to_string())),
    };
    let deliver_policy = match since {
        None => consumer::DeliverPolicy::All,
        Some(since) => {
            let nanos = (since.max(0.0) * 1e9) as i128;
            let start_time = time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .map_err(|error| unreadable(format!("--since is out of range: {error}")))?;
            consumer::DeliverPolicy::ByStartTime { start_time }
        }
    };
    let ordered = consumer::pull::OrderedConfig { deliver_policy, ..Default::default() };
    let mut consumer = stream.create_consumer(ordered).await.map_err(|error| unreadable(error.to_string()))?;
    let info = consumer.info().await.map_err(|error| unreadable(error.to_string()))?;
    let mut found = Vec::new();
    if info.num_pending == 0 {
        return Ok(found);
    }
    let mut messages = consumer.messages().await.map_err(|error| unreadable(error.to_string()))?;
    loop {
        let message = match tokio::time::timeout(READ_WAIT, messages.next()).await {
            Ok(Some(Ok(message))) => message,
            Ok(Some(Err(error))) => return Err(unreadable(error.to_string())),
            Ok(None) | Err(_) => break,
        };
        if let Ok(record) = serde_json::from_slice::<Value>(&message.payload) {
            found.push(record);
        }
        if message.info().map_or(true, |info| info.pending == 0) {
            break;
        }
    }
    Ok(found)
}
