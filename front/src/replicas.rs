//! Front replicas: several HTTP fronts behind one load balancer, serving
//! the same clients without sticky sessions.
//!
//! A 2026-07-28 client needs nothing shared: each request stands alone.
//! A 2025-11-25 client has a session (`Mcp-Session-Id`), which lives in
//! the memory of the front that made it; its next request may reach
//! another. So each front **keeps a record** of every session it holds —
//! who made it, what its client declared at `initialize`, the level it
//! set, what it subscribed to, the tools it approved for the session — in
//! a store every replica reads ([`Replicas`]), and a front that is shown a
//! session id it does not hold looks for the record and **adopts** the
//! session: from then on it holds a copy of its own (its own notifier,
//! its own subscriptions upstream), kept in step through the record: each
//! replica watches the records and applies what another wrote (a level
//! set, a subscription made, a tool approved for the session) to its own
//! copy, last writer winning.
//!
//! What cannot be copied is what runs: a call running on one replica, and
//! the questions it asks its client. A client's answer to such a question,
//! or its cancellation of such a call, may reach another replica; that
//! one **forwards** it to the others, and the replica whose call it is
//! takes it. A session ended by its client (`DELETE`) ends on every
//! replica at once; one that goes unused expires with its record.
//!
//! The store is a trait so the front stays free of how replicas meet: the
//! cluster keeps it in a NATS key-value bucket (`warden-cluster`);
//! [`SharedMemory`] keeps it in one process (a host that mounts several
//! fronts, and the front's own tests). Keys are digests of session ids,
//! never the ids: whoever reads the store cannot take a session.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::BoxStream;
use futures_util::StreamExt as _;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot};

/// A boxed future of the store.
pub type Pending<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Where front replicas keep their sessions' records, and how they reach
/// each other's copies of a session.
pub trait Replicas: Send + Sync + 'static {
    /// This replica's name, unique among them (a cluster node's name).
    fn name(&self) -> &str;
    /// Keeps `record` under `key`, to lapse `ttl` after this write unless
    /// written again.
    fn keep(&self, key: String, record: Vec<u8>, ttl: Duration) -> Pending<Result<(), String>>;
    /// The record under `key`, if one is kept (`Err`: the store cannot be read).
    fn find(&self, key: String) -> Pending<Result<Option<Vec<u8>>, String>>;
    /// Removes `key`: every replica's [`Replicas::watch`] tells of it.
    fn end(&self, key: String) -> Pending<()>;
    /// What any replica keeps or ends from now on: (key, the record), or
    /// (key, `None`) when it was ended.
    fn watch(&self) -> BoxStream<'static, (String, Option<Vec<u8>>)>;
    /// Hands `message` (a client's response or cancellation that no call
    /// here was waiting for) to the other replicas' copies of session `key`.
    fn forward(&self, key: String, message: Value) -> Pending<()>;
    /// What other replicas forward, as (key, message).
    fn forwarded(&self) -> BoxStream<'static, (String, Value)>;
    /// Sends `request` to the front of replica `to` and waits, at most
    /// `limit`, for its answer (a 2026-07-28 call parked there, resumed).
    fn relay(&self, to: String, request: Vec<u8>, limit: Duration) -> Pending<Result<Vec<u8>, String>>;
    /// The requests other replicas relay to this one.
    fn relayed(&self) -> BoxStream<'static, Relayed>;
}

/// A request another replica relayed to this one, and where its answer goes.
pub struct Relayed {
    /// What the other replica sent.
    pub request: Vec<u8>,
    /// Takes the answer (dropped unanswered: the other replica is told
    /// this one did not answer).
    pub answer: oneshot::Sender<Vec<u8>>,
}

/// Replicas in one process: a table and two broadcasts. Each front gets
/// its own handle from [`SharedMemory::replica`].
#[derive(Clone, Default)]
pub struct SharedMemory {
    shared: Arc<Shared>,
}

struct Shared {
    records: Mutex<HashMap<String, (Vec<u8>, tokio::time::Instant)>>,
    changed: broadcast::Sender<(String, Option<Vec<u8>>)>,
    forwarded: broadcast::Sender<(String, String, Value)>,
    /// Each replica's relayed requests, by its name.
    relays: Mutex<HashMap<String, mpsc::Sender<Relayed>>>,
}

impl Default for Shared {
    fn default() -> Shared {
        Shared {
            records: Mutex::default(),
            changed: broadcast::channel(1024).0,
            forwarded: broadcast::channel(1024).0,
            relays: Mutex::default(),
        }
    }
}

impl SharedMemory {
    /// The handle of the replica named `name`.
    pub fn replica(&self, name: &str) -> Arc<dyn Replicas> {
        Arc::new(MemoryReplica { name: name.to_string(), shared: Arc::clone(&self.shared) })
    }
}

struct MemoryReplica {
    name: String,
    shared: Arc<Shared>,
}

impl Replicas for MemoryReplica {
    fn name(&self) -> &str {
        &self.name
    }

    fn keep(&self, key: String, record: Vec<u8>, ttl: Duration) -> Pending<Result<(), String>> {
        let until = tokio::time::Instant::now() + ttl;
        self.shared.records.lock().expect("records lock").insert(key.clone(), (record.clone(), until));
        let _ = self.shared.changed.send((key, Some(record)));
        Box::pin(std::future::ready(Ok(())))
    }

    fn find(&self, key: String) -> Pending<Result<Option<Vec<u8>>, String>> {
        let mut records = self.shared.records.lock().expect("records lock");
        let now = tokio::time::Instant::now();
        records.retain(|_, (_, until)| *until > now);
        let found = records.get(&key).map(|(record, _)| record.clone());
        Box::pin(std::future::ready(Ok(found)))
    }

    fn end(&self, key: String) -> Pending<()> {
        self.shared.records.lock().expect("records lock").remove(&key);
        let _ = self.shared.changed.send((key, None));
        Box::pin(std::future::ready(()))
    }

    fn watch(&self) -> BoxStream<'static, (String, Option<Vec<u8>>)> {
        received(self.shared.changed.subscribe()).boxed()
    }

    fn forward(&self, key: String, message: Value) -> Pending<()> {
        let _ = self.shared.forwarded.send((self.name.clone(), key, message));
        Box::pin(std::future::ready(()))
    }

    fn forwarded(&self) -> BoxStream<'static, (String, Value)> {
        let me = self.name.clone();
        received(self.shared.forwarded.subscribe())
            .filter_map(move |(from, key, message)| std::future::ready((from != me).then_some((key, message))))
            .boxed()
    }

    fn relay(&self, to: String, request: Vec<u8>, limit: Duration) -> Pending<Result<Vec<u8>, String>> {
        let there = self.shared.relays.lock().expect("relays lock").get(&to).cloned();
        Box::pin(async move {
            let there = there.ok_or_else(|| format!("replica '{to}' is not there"))?;
            let (answer, answered) = oneshot::channel();
            there.send(Relayed { request, answer }).await.map_err(|_| format!("replica '{to}' is gone"))?;
            match tokio::time::timeout(limit, answered).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(_)) => Err(format!("replica '{to}' did not answer")),
                Err(_) => Err(format!("replica '{to}' did not answer within {limit:?}")),
            }
        })
    }

    fn relayed(&self) -> BoxStream<'static, Relayed> {
        let (sender, received) = mpsc::channel(64);
        self.shared.relays.lock().expect("relays lock").insert(self.name.clone(), sender);
        futures_util::stream::unfold(received, |mut received| async move {
            received.recv().await.map(|item| (item, received))
        })
        .boxed()
    }
}

/// What a broadcast receiver gets, as a stream (what a slow reader missed
/// is skipped: a record still tells the rest).
fn received<T: Clone + Send + 'static>(receiver: broadcast::Receiver<T>) -> impl futures_util::Stream<Item = T> {
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(item) => return Some((item, receiver)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}
