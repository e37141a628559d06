//! A server another node exports, as this node's server actors see it: a
//! [`Connector`] whose connection speaks MCP to the server actor and NATS
//! to the nodes that serve it.
//!
//! The server actor is the same one a local server has — handshake, tool
//! list, calls, deadlines, cancellation, the Registry's table, policy —
//! so every face (embedded, bridge, CLI, front) serves a remote server as
//! it serves a local one. Its connection answers the handshake and
//! `tools/list` from the catalog (the nodes that serve the server, and
//! what they list), tells the actor `tools/list_changed` when the catalog
//! changes, and sends each `tools/call` to a node (`remote/call.rs`) —
//! and, for a server that offers them, the reads of its resources,
//! prompts and completions (`wire::RELAYED`), by the same road and the
//! same failure table (reads are repeated elsewhere when their outcome is
//! unknown). Subscriptions to its resources are held on every node that
//! serves it, and what those nodes publish of its updates and list
//! changes is told the actor (`remote/holds.rs`).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::Client;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};
use tokio::task::AbortHandle;
use warden_protocol::{
    ConnectFuture, Connection, Connector, ErrorCode, ErrorObject, EventSink, Message, Outbound, RequestId, StderrTail,
    TransportError, TransportEvent,
};

use crate::metrics::ClusterMetrics;
use crate::names::Names;
use crate::wire::{Cancel, Offers, RELAYED};

mod call;
mod holds;
mod routes;

pub(crate) use routes::AskRoutes;

/// Who serves a remote server now, and what it offers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Serving {
    /// The live nodes that export it, sorted.
    pub(crate) nodes: Vec<String>,
    /// Its tools, as the first of those nodes lists them.
    pub(crate) tools: Arc<Vec<Value>>,
    /// What it says it is.
    pub(crate) server_info: Option<Value>,
    /// What else it offers (relayed on request).
    pub(crate) offers: Offers,
}

impl PartialEq for Serving {
    /// The same tools are most often the very same `Arc`: compared by
    /// pointer first.
    fn eq(&self, other: &Serving) -> bool {
        self.nodes == other.nodes
            && self.server_info == other.server_info
            && self.offers == other.offers
            && (Arc::ptr_eq(&self.tools, &other.tools) || *self.tools == *other.tools)
    }
}

/// One remote server: its name, who serves it, how to reach them.
pub(crate) struct RemoteServer {
    pub(crate) name: String,
    pub(crate) names: Arc<Names>,
    pub(crate) client: Client,
    /// How long a call may run on the node (the server's call timeout here).
    pub(crate) call_timeout: Duration,
    serving: watch::Sender<Serving>,
    /// Round robin over the serving nodes.
    next: AtomicUsize,
    /// Where each attempt is counted.
    pub(crate) metrics: Arc<ClusterMetrics>,
    /// Where the questions of its calls' servers find the call (`asks.rs`).
    pub(crate) routes: Arc<AskRoutes>,
}

impl RemoteServer {
    pub(crate) fn new(
        name: &str,
        names: Arc<Names>,
        client: Client,
        call_timeout: Duration,
        metrics: Arc<ClusterMetrics>,
        routes: Arc<AskRoutes>,
    ) -> RemoteServer {
        RemoteServer {
            metrics,
            routes,
            name: name.to_string(),
            names,
            client,
            call_timeout,
            serving: watch::Sender::new(Serving::default()),
            next: AtomicUsize::new(0),
        }
    }

    /// Who serves it now.
    pub(crate) fn serving(&self) -> Serving {
        self.serving.borrow().clone()
    }

    /// Sets who serves it; connections see the change.
    pub(crate) fn set_serving(&self, serving: Serving) {
        self.serving.send_if_modified(|current| {
            let changed = *current != serving;
            *current = serving;
            changed
        });
    }

    /// The next node to send a call to, skipping `tried`.
    pub(crate) fn pick(&self, tried: &[String]) -> Option<String> {
        let nodes = self.serving.borrow().nodes.clone();
        let left: Vec<&String> = nodes.iter().filter(|node| !tried.contains(node)).collect();
        if left.is_empty() {
            return None;
        }
        Some(left[self.next.fetch_add(1, Ordering::Relaxed) % left.len()].clone())
    }

    /// Returns once `node` no longer serves it (its heartbeat lapsed, it
    /// left, or stopped exporting it).
    pub(crate) async fn lost(&self, node: &str) {
        let mut serving = self.serving.subscribe();
        let _ = serving.wait_for(|serving| !serving.nodes.iter().any(|serving| serving == node)).await;
    }

    /// Whether `tool` may be repeated on another node when its outcome is
    /// unknown: annotated read-only or idempotent (what `retry_after_crash`
    /// allows by default).
    pub(crate) fn repeatable(&self, tool: &str) -> bool {
        let serving = self.serving.borrow();
        let Some(definition) = serving.tools.iter().find(|definition| definition["name"] == tool) else {
            return false;
        };
        let hint = |name: &str| definition["annotations"][name].as_bool() == Some(true);
        hint("readOnlyHint") || hint("idempotentHint")
    }
}

/// The connector of a remote server.
pub(crate) struct RemoteConnector(pub(crate) Arc<RemoteServer>);

impl Connector for RemoteConnector {
    fn connect(&self, sink: EventSink) -> ConnectFuture {
        let link = Arc::new(Link {
            server: self.0.clone(),
            sink,
            calls: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            subscribed: Mutex::new(BTreeSet::new()),
        });
        let watcher = tokio::spawn(announce_changes(link.clone()));
        let notices = tokio::spawn(holds::hear_notices(link.clone()));
        let closing = link.clone();
        let closer = Box::pin(async move {
            watcher.abort();
            notices.abort();
            closing.cancel_all();
        });
        let connection = Connection::new(Box::new(LinkOutbound(link)), closer, StderrTail::default());
        Box::pin(async move { Ok(connection) })
    }

    /// It is answered here: there is no era to find out.
    fn probes_era(&self) -> bool {
        false
    }
}

/// One connection of a server actor to a remote server.
pub(crate) struct Link {
    pub(crate) server: Arc<RemoteServer>,
    sink: EventSink,
    /// Calls under way by the actor's request id: the task, the call's id,
    /// and the node it was last sent to.
    calls: Mutex<HashMap<RequestId, Running>>,
    /// Questions handed to the actor for the node that runs a call
    /// (`asks.rs`), by the id given them here: where the answer goes.
    asked: Mutex<HashMap<String, oneshot::Sender<Message>>>,
    /// The URIs of its resources the actor subscribed to.
    subscribed: Mutex<BTreeSet<String>>,
}

/// A call under way.
pub(crate) struct Running {
    task: AbortHandle,
    call_id: String,
    pub(crate) node: Arc<Mutex<Option<String>>>,
}

impl Link {
    fn subscribed(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.subscribed.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Answers the actor's request `id`.
    pub(crate) fn answer(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let running = self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&id);
        if let Some(running) = running {
            self.server.routes.forget(&running.call_id);
        }
        let message = match outcome {
            Ok(result) => Message::result(id, result),
            Err(error) => Message::error(id, error),
        };
        (self.sink)(TransportEvent::Message(message));
    }

    fn receive(self: &Arc<Self>, message: Message) {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                let answer = match request.method.as_str() {
                    "initialize" => {
                        let asked = request.params.as_ref().and_then(|params| params["protocolVersion"].as_str());
                        let info = self
                            .server
                            .serving()
                            .server_info
                            .unwrap_or_else(|| json!({ "name": self.server.name, "version": "remote" }));
                        let offers = self.server.serving().offers;
                        let mut capabilities = json!({ "tools": { "listChanged": true } });
                        if offers.resources {
                            capabilities["resources"] = json!({ "subscribe": offers.subscribe, "listChanged": true });
                        }
                        if offers.prompts {
                            capabilities["prompts"] = json!({ "listChanged": true });
                        }
                        if offers.completions {
                            capabilities["completions"] = json!({});
                        }
                        Ok(json!({
                            "protocolVersion": asked.unwrap_or("2025-11-25"),
                            "capabilities": capabilities,
                            "serverInfo": info,
                        }))
                    }
                    "tools/list" => Ok(json!({ "tools": *self.server.serving().tools })),
                    "ping" => Ok(json!({})),
                    "tools/call" => return self.start_call(id, "tools/call", request.params.unwrap_or(Value::Null)),
                    "resources/subscribe" => return holds::start(self, id, true, request.params),
                    "resources/unsubscribe" => return holds::start(self, id, false, request.params),
                    read if RELAYED.contains(&read) => {
                        let read = RELAYED.iter().find(|relayed| **relayed == read).expect("listed");
                        return self.start_call(id, read, request.params.unwrap_or(Value::Null));
                    }
                    other => Err(ErrorObject::new(
                        ErrorCode::METHOD_NOT_FOUND,
                        format!(
                            "'{}' is a server of another node: its tools, resources (and their subscriptions), \
                             prompts and completions are relayed through the cluster, not `{other}`",
                            self.server.name
                        ),
                    )),
                };
                self.answer(id, answer);
            }
            Message::Notification(notification) if notification.method == "notifications/cancelled" => {
                let id = notification.params.as_ref().map(|params| params["requestId"].clone());
                if let Some(id) = id.and_then(|id| serde_json::from_value::<RequestId>(id).ok()) {
                    let running = self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&id);
                    if let Some(running) = running {
                        self.stop(running);
                    }
                }
            }
            // The actor's answer to a question put to it for a call's node.
            Message::Response(response) => {
                let id = response.id.as_ref().and_then(|id| match id {
                    RequestId::String(id) => Some(id.clone()),
                    RequestId::Number(_) => None,
                });
                let waiting =
                    id.and_then(|id| self.asked.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&id));
                if let Some(waiting) = waiting {
                    let _ = waiting.send(Message::Response(response));
                }
            }
            // `notifications/initialized`.
            _ => {}
        }
    }

    /// Sends `method` (a tool call, or a relayed read) to a node, in a task.
    fn start_call(self: &Arc<Self>, id: RequestId, method: &'static str, params: Value) {
        let call_id = call::fresh_call_id(&self.server.names.node);
        let node = Arc::new(Mutex::new(None));
        let mut calls = self.calls.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.server.routes.register(&call_id, self, id.clone());
        let task = tokio::spawn(call::run(self.clone(), id.clone(), method, params, call_id.clone(), node.clone()));
        calls.insert(id, Running { task: task.abort_handle(), call_id, node });
    }

    /// Puts `method` to the actor as the server's request during its call
    /// `during`; the actor's answer (`None`: the connection closed first).
    /// Dropped before the answer (the server gave up on it), the request
    /// is withdrawn from the actor, as a server withdraws its own.
    pub(crate) async fn ask(&self, during: RequestId, method: &str, params: Value) -> Option<Message> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = format!("cluster-ask-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let (sender, answered) = oneshot::channel();
        self.asked.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id.clone(), sender);
        // Answered, the entry is gone and dropping this does nothing.
        let _withdraw = WithdrawUnanswered { link: self, id: id.clone() };
        let request =
            warden_protocol::Request { id: RequestId::String(id), method: method.to_string(), params: Some(params) };
        (self.sink)(TransportEvent::RequestDuring { request, during });
        answered.await.ok()
    }

    /// Stops a call: its task, and its run on the node it was sent to.
    fn stop(&self, running: Running) {
        self.server.routes.forget(&running.call_id);
        running.task.abort();
        let node = running.node.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        if let Some(node) = node {
            let subject = self.server.names.cancel(&node);
            let payload = serde_json::to_vec(&Cancel { id: running.call_id }).expect("a cancel serialises");
            let client = self.server.client.clone();
            tokio::spawn(async move {
                let _ = client.publish(subject, payload.into()).await;
            });
        }
    }

    fn cancel_all(&self) {
        let calls: Vec<Running> = self
            .calls
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .drain()
            .map(|(_, running)| running)
            .collect();
        for running in calls {
            self.stop(running);
        }
    }
}

/// Withdraws a question put to the actor when it is dropped unanswered.
struct WithdrawUnanswered<'a> {
    link: &'a Link,
    id: String,
}

impl Drop for WithdrawUnanswered<'_> {
    fn drop(&mut self) {
        let waiting = self.link.asked.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&self.id);
        if waiting.is_some() {
            let params = json!({ "requestId": self.id, "reason": "the server gave up on its question" });
            (self.link.sink)(TransportEvent::Message(Message::notification("notifications/cancelled", Some(params))));
        }
    }
}

struct LinkOutbound(Arc<Link>);

impl Outbound for LinkOutbound {
    fn send(&self, message: Message) -> Result<(), TransportError> {
        self.0.receive(message);
        Ok(())
    }

    fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError> {
        let text = String::from_utf8(json).expect("serialised JSON is UTF-8");
        let message = Message::parse(&text).expect("a pre-serialised message is valid JSON-RPC");
        self.send(message)
    }
}

/// Tells the actor `tools/list_changed` whenever the tools change, and
/// asks nodes that start serving the server to hold this connection's
/// subscriptions.
async fn announce_changes(link: Arc<Link>) {
    let mut serving = link.server.serving.subscribe();
    let (mut tools, mut nodes) = {
        let now = serving.borrow_and_update();
        (now.tools.clone(), now.nodes.clone())
    };
    while serving.changed().await.is_ok() {
        let (now_tools, now_nodes) = {
            let now = serving.borrow_and_update();
            (now.tools.clone(), now.nodes.clone())
        };
        let added: Vec<String> = now_nodes.iter().filter(|node| !nodes.contains(node)).cloned().collect();
        holds::hold_on(&link, added);
        nodes = now_nodes;
        if now_tools != tools {
            tools = now_tools;
            (link.sink)(TransportEvent::Message(Message::notification("notifications/tools/list_changed", None)));
        }
    }
}
