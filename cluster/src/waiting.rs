//! What waits for a person on one node, seen and answered from every node:
//! the machinery approvals (`approvals.rs`) and servers' questions
//! (`questions.rs`) share.
//!
//! The node whose queue holds an item publishes it in a bucket (`NODE.ID`
//! → the item as listed), checked every [`PUBLISH_EVERY`]; other nodes list
//! the entries of live nodes as `NODE:ID`, and send an answer to the
//! holding node on a subject of its own, where its queue — the one place
//! the decision is taken — takes it or says why not.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::kv;
use async_nats::Client;
use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

use crate::buckets::keys_of;
use crate::names::Names;

/// How often a node looks at its queue for what to publish.
const PUBLISH_EVERY: Duration = Duration::from_millis(250);

/// How long answering an item on another node may take.
const ANSWER_LIMIT: Duration = Duration::from_secs(5);

/// Keeps this node's entries in `store` equal to what `listed` returns
/// (each item's number and its listing), until the task is aborted.
pub(crate) async fn publish(store: kv::Store, node: String, listed: impl Fn() -> Vec<(u64, Vec<u8>)>) {
    let mine = format!("{node}.");
    let mut written: HashMap<String, Vec<u8>> = HashMap::new();
    // What an earlier run of this node left is gone with its calls.
    let keys = keys_of(&store).await;
    written.extend(keys.into_iter().filter(|key| key.starts_with(&mine)).map(|key| (key, Vec::new())));
    let mut tick = tokio::time::interval(PUBLISH_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let pending: HashMap<String, Vec<u8>> =
            listed().into_iter().map(|(id, value)| (format!("{mine}{id}"), value)).collect();
        for (key, value) in &pending {
            if written.get(key) != Some(value) && store.put(key, value.clone().into()).await.is_ok() {
                written.insert(key.clone(), value.clone());
            }
        }
        let gone: Vec<String> = written.keys().filter(|key| !pending.contains_key(*key)).cloned().collect();
        for key in gone {
            if store.delete(&key).await.is_ok() {
                written.remove(&key);
            }
        }
    }
}

/// The items waiting on the live nodes in `live` (this one's aside), each
/// with its id as `NODE:ID` and its `node`, oldest first by `by_time`.
pub(crate) async fn remote(store: &kv::Store, names: &Names, live: &[String], by_time: &str) -> Vec<Value> {
    let mut found = Vec::new();
    for key in keys_of(store).await {
        let Some((node, _)) = Names::split_catalog_key(&key) else { continue };
        if node == names.node || !live.iter().any(|live| live == node) {
            continue;
        }
        let Ok(Some(entry)) = store.entry(&key).await else { continue };
        if entry.operation != kv::Operation::Put {
            continue;
        }
        if let Ok(mut item) = serde_json::from_slice::<Value>(&entry.value) {
            item["id"] = json!(format!("{node}:{}", item["id"]));
            item["node"] = json!(node);
            found.push(item);
        }
    }
    found.sort_by(|a, b| a[by_time].as_f64().partial_cmp(&b[by_time].as_f64()).unwrap_or(std::cmp::Ordering::Equal));
    found
}

/// Answers requests on `subject` with `answer` (a JSON value; an `error`
/// key says why the answer was not taken), until the task is aborted.
pub(crate) async fn answer<T, F>(client: Client, subject: String, answer: impl Fn(T) -> F)
where
    T: DeserializeOwned,
    F: Future<Output = Value>,
{
    let mut requests = match client.subscribe(subject.clone()).await {
        Ok(requests) => requests,
        Err(error) => {
            tracing::error!("cannot subscribe to {subject}: {error}; other nodes cannot answer what waits here");
            return;
        }
    };
    while let Some(message) = requests.next().await {
        let answered = match serde_json::from_slice::<T>(&message.payload) {
            Err(error) => json!({ "error": format!("the answer could not be read: {error}") }),
            Ok(request) => answer(request).await,
        };
        if let Some(reply) = message.reply {
            let _ = client.publish(reply, answered.to_string().into()).await;
        }
    }
}

/// The node and number of `id` (`NODE:NUMBER`); `what` names the kind of
/// item in the error.
pub(crate) fn split_id<'a>(id: &'a str, what: &str) -> Result<(&'a str, u64), String> {
    let Some((node, number)) = id.split_once(':') else {
        return Err(format!("'{id}' is not {what} of another node (those read NODE:NUMBER)"));
    };
    let number = number.parse().map_err(|_| format!("'{id}': the part after ':' must be a number"))?;
    Ok((node, number))
}

/// Sends `request` to `node` on `subject`; its answer, or why none (the
/// answer's `error`, or why there was no answer).
pub(crate) async fn send(
    client: &Client,
    subject: String,
    node: &str,
    request: &impl Serialize,
) -> Result<Value, String> {
    let answer = send_raw(client, subject, node, request).await?;
    match answer.get("error").and_then(Value::as_str) {
        Some(error) => Err(error.to_string()),
        None => Ok(answer),
    }
}

/// Sends `request` to `node` on `subject`; its answer as it came (an
/// `error` in it included), or why there was none.
pub(crate) async fn send_raw(
    client: &Client,
    subject: String,
    node: &str,
    request: &impl Serialize,
) -> Result<Value, String> {
    let payload = serde_json::to_vec(request).expect("an answer serialises");
    let request = async_nats::Request::new().payload(payload.into()).timeout(Some(ANSWER_LIMIT));
    let reply = client
        .send_request(subject, request)
        .await
        .map_err(|error| format!("node {node} did not take the answer ({error}); is it still in the cluster?"))?;
    serde_json::from_slice(&reply.payload)
        .map_err(|error| format!("node {node} answered something unreadable: {error}"))
}
