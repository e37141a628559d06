//! The host side: calls other nodes send for this node's exported servers.
//!
//! Each call runs through this node's own call path as the host — its
//! server settings (timeouts, output limit, restart and crash retry), its
//! leak checks on the arguments, and its redaction of the result, so **a
//! secret of this node's servers never leaves the node** — except
//! approval, which the node the call entered at has given (policy applies
//! where a call enters): should this node's policy want a person, the
//! call's own approver answers for the entering node, and the audit record
//! says so (`via` and `decided_by` name it).
//!
//! Calls arrive on this node's own subject for each server, and on the
//! server's queue subject shared by its replicas. Each runs in a task of
//! its own, once per call id ([`Runs`]); a cancellation from the caller's
//! node aborts it. Whatever arrives is answered: a request that does not
//! decode, or for a server this node does not export, gets an error naming
//! what was wrong, and never disturbs another call.

use std::collections::HashMap;
use std::sync::Arc;

use async_nats::{Client, Message, Subscriber};
use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::Value;
use tokio::sync::watch;
use warden_actors::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, CallError, CallOptions, ServerRequest, Snapshot,
    Warden,
};

use crate::asks::RemoteElicitor;
use crate::metrics::ClusterMetrics;
use crate::names::Names;
use crate::runs::Runs;
use crate::wire::{CallReply, CallRequest, Cancel, Outcome, RELAYED};
use crate::{ClusterError, Exports};

/// What answering calls needs.
pub(crate) struct Host {
    /// Where the calls served are counted.
    pub(crate) metrics: Arc<ClusterMetrics>,
    pub(crate) client: Client,
    pub(crate) names: Arc<Names>,
    pub(crate) warden: Warden,
    pub(crate) exports: watch::Receiver<Exports>,
    pub(crate) runs: Arc<Runs>,
}

/// Answers calls and cancellations until the task is aborted.
pub(crate) async fn serve(host: Arc<Host>) -> Result<(), ClusterError> {
    let subscribe = |subject: String| {
        let client = host.client.clone();
        async move {
            client
                .subscribe(subject.clone())
                .await
                .map_err(|error| ClusterError::Subscribe { subject, problem: error.to_string() })
        }
    };
    let mut mine = subscribe(host.names.calls_to_me()).await?;
    let mut cancels = subscribe(host.names.cancel(&host.names.node)).await?;
    let (queued, mut queue) = tokio::sync::mpsc::unbounded_channel();
    let replicas = tokio::spawn(serve_replicas(host.clone(), queued));
    let _replicas = AbortOnDrop(replicas.abort_handle());
    loop {
        tokio::select! {
            Some(message) = mine.next() => spawn_answer(&host, message),
            Some(message) = queue.recv() => spawn_answer(&host, message),
            Some(message) = cancels.next() => cancel(&host, &message),
            else => return Ok(()),
        }
    }
}

/// Keeps a queue subscription for each exported server that this node
/// runs, and hands on what arrives.
async fn serve_replicas(host: Arc<Host>, queued: tokio::sync::mpsc::UnboundedSender<Message>) {
    let mut snapshots = host.warden.snapshot_changes();
    let mut exports = host.exports.clone();
    let mut subscribed: HashMap<String, tokio::task::AbortHandle> = HashMap::new();
    loop {
        let snapshot = snapshots.current();
        let wanted: Vec<String> = {
            let exports = exports.borrow();
            snapshot.server_names().filter(|server| exports.covers(server)).map(str::to_string).collect()
        };
        subscribed.retain(|server, task| {
            let keep = wanted.contains(server);
            if !keep {
                task.abort();
            }
            keep
        });
        for server in wanted {
            if subscribed.contains_key(&server) {
                continue;
            }
            let subject = host.names.call_any(&server);
            match host.client.queue_subscribe(subject.clone(), host.names.replicas(&server)).await {
                Ok(subscriber) => {
                    let task = tokio::spawn(forward(subscriber, queued.clone()));
                    subscribed.insert(server, task.abort_handle());
                }
                Err(error) => tracing::warn!(server = %server, "cannot subscribe to {subject}: {error}"),
            }
        }
        tokio::select! {
            changed = snapshots.changed() => if changed.is_none() { break },
            changed = exports.changed() => if changed.is_err() { break },
        }
    }
    for task in subscribed.into_values() {
        task.abort();
    }
}

async fn forward(mut subscriber: Subscriber, queued: tokio::sync::mpsc::UnboundedSender<Message>) {
    while let Some(message) = subscriber.next().await {
        if queued.send(message).is_err() {
            return;
        }
    }
}

fn spawn_answer(host: &Arc<Host>, message: Message) {
    let host = host.clone();
    tokio::spawn(async move {
        let Some(reply_to) = message.reply.clone() else {
            tracing::debug!(subject = %message.subject, "a call without a reply subject was ignored");
            return;
        };
        let answer = answer(&host, &message).await;
        if let Err(error) = host.client.publish(reply_to.clone(), answer.clone()).await {
            // Most likely over NATS' max_payload: say so instead.
            let message = format!(
                "node {} could not send the result ({} bytes) over NATS: {error}; a result this large needs a \
                 larger `max_payload` in the NATS server's config",
                host.names.node,
                answer.len()
            );
            let _ = host.client.publish(reply_to, reply(CallReply::Error { outcome: Outcome::Unknown, message })).await;
        }
    });
}

async fn answer(host: &Arc<Host>, message: &Message) -> Bytes {
    let Some(server) = host.names.server_of(message.subject.as_str()).map(str::to_string) else {
        return refusal(format!("'{}' is not a call subject", message.subject));
    };
    if !host.exports.borrow().covers(&server) {
        return refusal(format!("node {} does not export a server named '{server}'", host.names.node));
    }
    let request: CallRequest = match serde_json::from_slice(&message.payload) {
        Ok(request) => request,
        Err(error) => return refusal(format!("node {} could not read the call: {error}", host.names.node)),
    };
    let runs = host.runs.clone();
    let id = request.id.clone();
    let warden = host.warden.clone();
    let node = host.names.node.clone();
    let (metrics, from) = (host.metrics.clone(), request.from.clone());
    // Its server's questions go to the caller, on the node the call entered at.
    let asking = Arc::new(RemoteElicitor {
        client: host.client.clone(),
        subject: host.names.ask(&request.from),
        call: request.id.clone(),
        from: request.from.clone(),
    });
    runs.answer(&id, move || async move {
        let (answer, outcome) = run(warden, node, server.clone(), request, asking).await;
        metrics.served(&server, &from, outcome);
        answer
    })
    .await
}

/// Runs one call on this node's server; its answer, and how it went
/// (`ok`, `error`, `refused`) for the metrics.
async fn run(
    warden: Warden,
    node: String,
    server: String,
    mut request: CallRequest,
    asking: Arc<RemoteElicitor>,
) -> (Bytes, &'static str) {
    if let Some((method, params)) = request.request.take() {
        return read(&warden, &node, &server, &method, params, &request).await;
    }
    let Some(name) = tool_name(&warden.snapshot(), &server, &request.tool) else {
        let refused = refusal(format!(
            "node {node}'s server '{server}' lists no tool '{}' (its tools changed, or it stopped)",
            request.tool
        ));
        return (refused, "refused");
    };
    let from = request.from.clone();
    let options = CallOptions::default()
        .timeout(std::time::Duration::from_millis(request.timeout_ms.max(1)))
        .meta(request.meta)
        .approver(Arc::new(AdmittedAt(from.clone())))
        .elicitor(asking)
        .via(format!("cluster node {from}"));
    match warden.host().call(&name, Value::Object(request.arguments), options).await {
        Ok(result) => (reply(CallReply::Result(serde_json::to_value(&result).expect("a result serialises"))), "ok"),
        Err(error) => (reply(CallReply::Error { outcome: outcome_of(&error), message: error.to_string() }), "error"),
    }
}

/// Relays a read of `server`'s resources, prompts or completions (one of
/// `wire::RELAYED`), under the server's own leak policing.
async fn read(
    warden: &Warden,
    node: &str,
    server: &str,
    method: &str,
    params: Value,
    request: &CallRequest,
) -> (Bytes, &'static str) {
    let relayed = RELAYED.contains(&method).then(|| ServerRequest::from_method(method)).flatten();
    let Some(asked) = relayed else {
        return (refusal(format!("node {node} relays no `{method}` for the cluster")), "refused");
    };
    let options = CallOptions::default()
        .timeout(std::time::Duration::from_millis(request.timeout_ms.max(1)))
        .via(format!("cluster node {}", request.from));
    match warden.host().request(server, asked, params, options).await {
        Ok(result) => (reply(CallReply::Result(result)), "ok"),
        Err(error) => (reply(CallReply::Error { outcome: outcome_of(&error), message: error.to_string() }), "error"),
    }
}

/// The namespaced name of `server`'s tool `tool` in this node's table.
fn tool_name(snapshot: &Snapshot, server: &str, tool: &str) -> Option<String> {
    let name = snapshot.name_for(server, tool);
    match snapshot.tool(&name) {
        Some(entry) if entry.server == server && entry.tool.name == tool => Some(name),
        _ => snapshot
            .tools()
            .into_iter()
            .find(|entry| entry.server == server && entry.tool.name == tool && entry.primitive_tool.is_none())
            .map(|entry| entry.name),
    }
}

/// Whether a failed call ran, as far as this node can tell.
fn outcome_of(error: &CallError) -> Outcome {
    match error {
        CallError::Server { .. } | CallError::BadResult { .. } | CallError::AnswerTooLarge { .. } => Outcome::Failed,
        // A server this node imports: its node said, in the message.
        CallError::Remote { .. } => Outcome::Unknown,
        CallError::Timeout { .. }
        | CallError::CrashedMidCall { .. }
        | CallError::StreamBroken { .. }
        | CallError::StreamBrokenRepeatedly { .. }
        | CallError::Withheld { .. } => Outcome::Unknown,
        CallError::ServerGone { delivered, .. } => {
            if *delivered {
                Outcome::Unknown
            } else {
                Outcome::NotRun
            }
        }
        _ => Outcome::NotRun,
    }
}

fn cancel(host: &Host, message: &Message) {
    match serde_json::from_slice::<Cancel>(&message.payload) {
        Ok(Cancel { id }) => {
            if host.runs.cancel(&id) {
                tracing::debug!(call = %id, "call cancelled by its caller's node");
            }
        }
        Err(error) => tracing::debug!("a cancellation that does not decode was ignored: {error}"),
    }
}

fn refusal(message: String) -> Bytes {
    reply(CallReply::Error { outcome: Outcome::NotRun, message })
}

fn reply(reply: CallReply) -> Bytes {
    Bytes::from(serde_json::to_vec(&reply).expect("a reply serialises"))
}

/// The approver of a call another node admitted: that node applied its
/// policy (and asked its person) before sending it here.
struct AdmittedAt(String);

impl Approver for AdmittedAt {
    fn request(&self, _request: ApprovalRequest, answer: ApprovalAnswer) {
        answer.send(ApprovalDecision::Approve, format!("node {} (the call entered the cluster there)", self.0));
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
