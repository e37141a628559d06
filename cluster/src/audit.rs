//! The cluster's audit record: every node appends the record of each call
//! it saw enter (its `audit.jsonl` lines, with `node` added) to one
//! JetStream stream, `PREFIX_audit` (subjects `PREFIX.audit.NODE`), so the
//! whole cluster's calls are read in one place (`warden cluster audit`).
//! Each node keeps its own file as well: the stream is a copy, not the
//! only record.
//!
//! Unlike the buckets, the stream is on disk (NATS' JetStream store), and
//! bounded by [`KEEP_FOR`] and [`KEEP_BYTES`], oldest dropped first. A
//! call's task never waits for NATS: the record is handed to a publisher
//! task through a bounded channel; when NATS is down or slow and the
//! channel is full, records are dropped from the stream (never from the
//! local file) and the log says how many.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt as _;
use serde_json::Value;
use tokio::sync::mpsc;
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
    let (records, mut waiting) = mpsc::channel::<Vec<u8>>(WAITING);
    let dropped = Arc::new(AtomicU64::new(0));
    let (subject, counted) = (names.audit_subject(&names.node), dropped.clone());
    tokio::spawn(async move {
        let mut failing = false;
        while let Some(record) = waiting.recv().await {
            let published = async { js.publish(subject.clone(), record.into()).await?.await };
            match published.await {
                Ok(_) if failing => {
                    failing = false;
                    tracing::info!("the cluster's audit stream takes records again");
                }
                Ok(_) => {}
                Err(error) => {
                    if !failing {
                        tracing::warn!("a call's record did not reach the cluster's audit stream ({error}); it is in this node's audit.jsonl");
                    }
                    failing = true;
                }
            }
            let lost = counted.swap(0, Ordering::Relaxed);
            if lost > 0 {
                tracing::warn!(lost, "records left out of the cluster's audit stream while it was slow (they are in this node's audit.jsonl)");
            }
        }
    });
    Ok(Arc::new(StreamSink { node: names.node.clone(), records, dropped }))
}

struct StreamSink {
    node: String,
    records: mpsc::Sender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
}

impl AuditSink for StreamSink {
    fn record(&self, record: &AuditRecord) {
        let Ok(mut value) = serde_json::to_value(record) else { return };
        value["node"] = Value::String(self.node.clone());
        if self.records.try_send(value.to_string().into_bytes()).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
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
