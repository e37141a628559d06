//! Front replicas over NATS: the store `warden_front::replicas` asks for,
//! kept in the cluster's bucket `PREFIX_sessions`, and its forwarding on
//! `PREFIX.front.forward`.
//!
//! - A record is put with a per-message TTL (the front's idle limit,
//!   whole seconds, at least one): a JetStream publish to
//!   `$KV.PREFIX_sessions.KEY` with `Nats-TTL`, as the heartbeat is. The
//!   bucket lives in memory, like the others: a NATS restart ends the
//!   records, and the next request of a session that moved is told to
//!   initialize again — what a client of one front gets when it restarts.
//! - Ending a session deletes its key; every replica's watcher sees the
//!   delete (and the marker a lapsed TTL leaves) and ends its copy.
//! - Forwarding is plain NATS publish/subscribe: every replica hears it,
//!   the one whose call it is takes it, the others' copies ignore it.
//!   Nothing is kept: a replica that is down misses it, and its call with it.
//! - Relaying a retry is NATS request/reply to `PREFIX.front.relay.NODE`:
//!   a node that is gone answers "no responders" at once.
//! - The watch and the subscription are made again when NATS comes back.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream::StorageType};
use async_nats::HeaderMap;
use futures_util::stream::BoxStream;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use warden_front::replicas::{Pending, Relayed, Replicas};

use crate::names::Names;
use crate::ClusterError;

/// How long a replica waits before watching or subscribing again after
/// NATS failed it.
const AGAIN_AFTER: Duration = Duration::from_millis(500);

/// One node's front as a replica among the cluster's fronts.
pub(crate) struct NatsReplicas {
    names: Arc<Names>,
    client: async_nats::Client,
    js: jetstream::Context,
    store: kv::Store,
    /// The heartbeats: a relayed retry stops waiting for a node whose
    /// heartbeat lapsed (killed just before NATS noticed, it got the
    /// request and will never answer).
    nodes: kv::Store,
}

/// A forwarded message, as it travels.
#[derive(Serialize, Deserialize)]
struct Forwarded {
    from: String,
    key: String,
    message: Value,
}

impl NatsReplicas {
    /// Opens (or makes) the sessions bucket.
    pub(crate) async fn open(
        names: Arc<Names>,
        client: async_nats::Client,
        nodes: kv::Store,
    ) -> Result<NatsReplicas, ClusterError> {
        let js = jetstream::new(client.clone());
        let config = kv::Config {
            bucket: names.sessions_bucket(),
            description: "Warden front replicas: each session's record".into(),
            history: 1,
            storage: StorageType::Memory,
            // Per-message TTLs need markers; watchers see a lapsed record go.
            limit_markers: Some(Duration::from_secs(1)),
            num_replicas: names.replicas,
            ..Default::default()
        };
        let bucket = config.bucket.clone();
        let store = js.create_or_update_key_value(config).await.map_err(|error| ClusterError::Bucket {
            bucket,
            problem: format!("{error}; front replicas need JetStream (nats-server -js) 2.11 or later"),
        })?;
        Ok(NatsReplicas { names, client, js, store, nodes })
    }
}

impl Replicas for NatsReplicas {
    fn name(&self) -> &str {
        &self.names.node
    }

    fn keep(&self, key: String, record: Vec<u8>, ttl: Duration) -> Pending<Result<(), String>> {
        let (js, subject) = (self.js.clone(), format!("$KV.{}.{key}", self.names.sessions_bucket()));
        Box::pin(async move {
            let mut headers = HeaderMap::new();
            let seconds = ttl.as_secs().max(1).to_string();
            headers.insert(async_nats::header::NATS_MESSAGE_TTL, seconds.as_str());
            let put = async {
                js.publish_with_headers(subject, headers, record.into()).await?.await?;
                Ok::<_, async_nats::Error>(())
            };
            put.await.map_err(|error| format!("cannot write to NATS: {error}"))
        })
    }

    fn find(&self, key: String) -> Pending<Result<Option<Vec<u8>>, String>> {
        let store = self.store.clone();
        Box::pin(async move {
            match store.entry(key).await {
                Ok(Some(entry)) if entry.operation == kv::Operation::Put => Ok(Some(entry.value.to_vec())),
                Ok(_) => Ok(None),
                Err(error) => Err(format!("cannot read NATS: {error}")),
            }
        })
    }

    fn end(&self, key: String) -> Pending<()> {
        let store = self.store.clone();
        Box::pin(async move {
            if let Err(error) = store.delete(&key).await {
                tracing::warn!(
                    "a front session's record could not be deleted from NATS ({error}); it lapses with its TTL"
                );
            }
        })
    }

    fn watch(&self) -> BoxStream<'static, (String, Option<Vec<u8>>)> {
        let (sender, received) = mpsc::channel(1024);
        let store = self.store.clone();
        tokio::spawn(async move {
            while !sender.is_closed() {
                match store.watch(">").await {
                    Ok(mut changes) => {
                        while let Some(Ok(entry)) = changes.next().await {
                            let record = (entry.operation == kv::Operation::Put).then(|| entry.value.to_vec());
                            if sender.send((entry.key, record)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(error) => tracing::debug!("cannot watch the front sessions' records ({error}); again shortly"),
                }
                tokio::time::sleep(AGAIN_AFTER).await;
            }
        });
        received_stream(received)
    }

    fn forward(&self, key: String, message: Value) -> Pending<()> {
        let (client, subject) = (self.client.clone(), self.names.front_forward());
        let forwarded = Forwarded { from: self.names.node.clone(), key, message };
        Box::pin(async move {
            let payload = serde_json::to_vec(&forwarded).expect("a forwarded message serialises");
            if let Err(error) = client.publish(subject, payload.into()).await {
                tracing::warn!("a client's message for another front replica could not be sent ({error}); the call it answers goes on waiting");
            }
        })
    }

    fn forwarded(&self) -> BoxStream<'static, (String, Value)> {
        let (subject, me) = (self.names.front_forward(), self.names.node.clone());
        subscribed(self.client.clone(), subject.clone(), move |message| {
            let Ok(forwarded) = serde_json::from_slice::<Forwarded>(&message.payload) else {
                tracing::warn!("a message on {subject} is not a forwarded client message; ignored");
                return None;
            };
            (forwarded.from != me).then_some((forwarded.key, forwarded.message))
        })
    }

    fn relay(&self, to: String, request: Vec<u8>, limit: Duration) -> Pending<Result<Vec<u8>, String>> {
        let (client, subject) = (self.client.clone(), self.names.front_relay(&to));
        let nodes = self.nodes.clone();
        Box::pin(async move {
            let request = async_nats::Request::new().payload(request.into()).timeout(Some(limit));
            let answered = async {
                match client.send_request(subject, request).await {
                    Ok(reply) => Ok(reply.payload.to_vec()),
                    Err(error) if error.kind() == async_nats::RequestErrorKind::NoResponders => {
                        Err("that node is not in the cluster now".to_string())
                    }
                    Err(error) => Err(format!("NATS: {error}")),
                }
            };
            tokio::select! {
                answered = answered => answered,
                () = lapsed(&nodes, &to) => Err("that node left the cluster while the retry waited".to_string()),
            }
        })
    }

    fn relayed(&self) -> BoxStream<'static, Relayed> {
        let client = self.client.clone();
        subscribed(self.client.clone(), self.names.front_relay(&self.names.node), move |request| {
            let reply = request.reply?;
            let (answer, answered) = tokio::sync::oneshot::channel::<Vec<u8>>();
            let client = client.clone();
            tokio::spawn(async move {
                if let Ok(answer) = answered.await {
                    let _ = client.publish(reply, answer.into()).await;
                }
            });
            Some(Relayed { request: request.payload.to_vec(), answer })
        })
    }
}

/// What arrives on `subject`, through `taken` (`None`: skipped), as a
/// stream; subscribed again when NATS dropped the subscription, until the
/// stream is dropped.
fn subscribed<T: Send + 'static>(
    client: async_nats::Client,
    subject: String,
    mut taken: impl FnMut(async_nats::Message) -> Option<T> + Send + 'static,
) -> BoxStream<'static, T> {
    let (sender, received) = mpsc::channel(1024);
    tokio::spawn(async move {
        while !sender.is_closed() {
            match client.subscribe(subject.clone()).await {
                Ok(mut messages) => {
                    while let Some(message) = messages.next().await {
                        let Some(item) = taken(message) else { continue };
                        if sender.send(item).await.is_err() {
                            return;
                        }
                    }
                }
                Err(error) => tracing::debug!("cannot subscribe to {subject} ({error}); again shortly"),
            }
            tokio::time::sleep(AGAIN_AFTER).await;
        }
    });
    received_stream(received)
}

/// Returns once `node`'s heartbeat is gone (looked at every half second).
async fn lapsed(nodes: &kv::Store, node: &str) {
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let alive = matches!(nodes.entry(node).await, Ok(Some(entry)) if entry.operation == kv::Operation::Put);
        if !alive {
            return;
        }
    }
}

fn received_stream<T: Send + 'static>(received: mpsc::Receiver<T>) -> BoxStream<'static, T> {
    futures_util::stream::unfold(
        received,
        |mut received| async move { received.recv().await.map(|item| (item, received)) },
    )
    .boxed()
}
