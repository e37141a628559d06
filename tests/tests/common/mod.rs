//! The scripted-server harness shared by the `actor_*` suites.
//!
//! Each server Warden starts is reached through a [`MemoryConnector`]; the
//! test holds the [`MemoryPeer`] at the far end and plays the server: it
//! reads what Warden wrote and answers, hangs, lies or dies on cue. Every
//! start and restart connects again, so a test that watches restarts keeps
//! the server's [`Connections`] and takes one peer per (re)start from it.
//!
//! Every suite runs on paused time (`#[tokio::test(start_paused = true)]`).
//! Tokio moves a paused clock only when no task can run, which gives the
//! harness two exact tools besides plain awaiting:
//!
//! - [`quiescent`] returns once every actor has handled everything sent to
//!   it so far (the clock could only move because nothing was left to do);
//! - [`assert_silent`] checks that Warden, given all the time it wants, sends
//!   nothing more.
//!
//! Waits that should end on an event are bounded by [`PATIENCE`] of virtual
//! time, so a script that expects a message Warden never sends fails with a
//! message instead of hanging.

// Each `actor_*` suite is its own crate and uses a different subset.
#![allow(dead_code)]

pub(crate) mod approvals;
pub(crate) mod crashes;

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::timeout;
use warden_actors::{PolicyRules, ServerSettings, ServerSpec, ServerState, ServerStatus, Warden, WardenConfig};
use warden_protocol::{ErrorCode, ErrorObject, MemoryConnector, MemoryPeer, Message, Request, LATEST_PROTOCOL_VERSION};

/// The name of the server in single-server tests.
pub(crate) const SRV: &str = "srv";

/// How long (virtual time) a script waits for something before it fails.
pub(crate) const PATIENCE: Duration = Duration::from_secs(600);

/// Settings roomy enough that no timer fires unless a test wants it to.
pub(crate) fn settings() -> ServerSettings {
    ServerSettings {
        call_timeout: Duration::from_secs(30),
        startup_timeout: Duration::from_secs(60),
        max_in_flight: 64,
        ..ServerSettings::default()
    }
}

/// The connections Warden opens to one scripted server: a new peer for the
/// first start and for every restart.
pub(crate) struct Connections {
    server: String,
    peers: UnboundedReceiver<MemoryPeer>,
}

impl Connections {
    /// The far end of Warden's next connection to the server.
    pub(crate) async fn next(&mut self) -> MemoryPeer {
        let what = format!("Warden connects to '{}'", self.server);
        within(&what, self.peers.recv()).await.expect("the connector is alive")
    }

    /// Fails if Warden has connected again since the last [`Connections::next`].
    pub(crate) fn assert_none(&mut self) {
        if self.peers.try_recv().is_ok() {
            panic!("Warden should not have connected to '{}' again, but did", self.server);
        }
    }
}

/// A scripted server's connector, and where Warden's connections through
/// it arrive (for tests that hand the same connector to Warden twice).
pub(crate) fn scripted(server: &str) -> (Arc<MemoryConnector>, Connections) {
    let (connector, peers) = MemoryConnector::new();
    (Arc::new(connector), Connections { server: server.to_string(), peers })
}

/// Starts Warden with scripted servers and returns where each one's
/// connections arrive, in order.
pub(crate) async fn launch(servers: &[(&str, ServerSettings)]) -> (Warden, Vec<Connections>) {
    let mut specs = Vec::new();
    let mut connections = Vec::new();
    for (name, settings) in servers {
        let (connector, peers) = MemoryConnector::new();
        specs.push(ServerSpec { name: name.to_string(), connector: Arc::new(connector), settings: settings.clone() });
        connections.push(Connections { server: name.to_string(), peers });
    }
    let warden = start_unpoliced(specs).await;
    (warden, connections)
}

/// Starts Warden with auto-approval on: these suites test transports and
/// supervision, and the scripted tools carry no annotations, so Warden's
/// default policy would ask a person for every call. The policy suites
/// start Warden their own way.
pub(crate) async fn start_unpoliced(specs: Vec<ServerSpec>) -> Warden {
    Warden::builder()
        .servers(specs)
        .rules(PolicyRules::default().with_auto_approve(true))
        .start()
        .await
        .expect("Warden starts")
}

/// Starts Warden under `rules` (the policy suites) with `srv` running and listing `tools`.
pub(crate) async fn policed(rules: PolicyRules, settings: ServerSettings, tools: Value) -> (Warden, MemoryPeer) {
    let (connector, mut peers) = MemoryConnector::new();
    let spec = ServerSpec { name: SRV.into(), connector: Arc::new(connector), settings };
    let warden = Warden::builder().servers(vec![spec]).rules(rules).start().await.expect("Warden starts");
    let mut peer = within("Warden connects to 'srv'", peers.recv()).await.expect("the connector is alive");
    ready(&mut peer, tools).await;
    within("the server settles", warden.settled()).await;
    (warden, peer)
}

/// The rules of a config whose one server `srv` stands in for the scripted
/// one (its `command` is never run).
pub(crate) fn rules_from(toml: &str) -> PolicyRules {
    PolicyRules::from_config(&WardenConfig::from_toml(toml, "test.toml").expect("the config loads"))
}

/// A tool listing with annotations.
pub(crate) fn annotated(name: &str, annotations: Value) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}, "annotations": annotations})
}

/// Starts Warden with the one server `srv`; its connections.
pub(crate) async fn launch_one(settings: ServerSettings) -> (Warden, Connections) {
    let (warden, mut connections) = launch(&[(SRV, settings)]).await;
    (warden, connections.remove(0))
}

/// Starts Warden with scripted servers and returns the peers of their first
/// starts, in order (a restart's connection goes nowhere: use [`launch`] to
/// watch restarts).
pub(crate) async fn start(servers: &[(&str, ServerSettings)]) -> (Warden, Vec<MemoryPeer>) {
    let (warden, connections) = launch(servers).await;
    let mut peers = Vec::new();
    for mut connection in connections {
        peers.push(connection.next().await);
    }
    (warden, peers)
}

/// Starts Warden with the one server `srv`.
pub(crate) async fn start_one(settings: ServerSettings) -> (Warden, MemoryPeer) {
    let (warden, mut peers) = start(&[(SRV, settings)]).await;
    (warden, peers.remove(0))
}

/// Starts Warden with `srv` running and listing `tools`.
pub(crate) async fn running(settings: ServerSettings, tools: Value) -> (Warden, MemoryPeer) {
    let (warden, mut peer) = start_one(settings).await;
    ready(&mut peer, tools).await;
    within("the server settles", warden.settled()).await;
    (warden, peer)
}

/// Starts Warden with `srv` running and listing `tools`, keeping its
/// connections to watch it restart.
pub(crate) async fn running_restartable(settings: ServerSettings, tools: Value) -> (Warden, Connections, MemoryPeer) {
    let (warden, mut connections) = launch_one(settings).await;
    let mut peer = connections.next().await;
    ready(&mut peer, tools).await;
    within("the server settles", warden.settled()).await;
    (warden, connections, peer)
}

/// `future`'s output, or a panic naming `what` if it takes [`PATIENCE`].
pub(crate) async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match timeout(PATIENCE, future).await {
        Ok(output) => output,
        Err(_) => panic!("waited {PATIENCE:?} for this and it did not happen: {what}"),
    }
}

/// Returns once every actor has handled everything sent to it so far.
///
/// Paused time moves only when no task can run, so the moment this short
/// sleep ends, nothing was left to do anywhere.
pub(crate) async fn quiescent() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}

/// Fails if Warden sends anything before it runs out of work.
pub(crate) async fn assert_silent(peer: &mut MemoryPeer) {
    if let Ok(Some(message)) = timeout(Duration::from_millis(1), peer.recv()).await {
        panic!("Warden should have sent nothing, but sent {}", message.to_json());
    }
}

/// Calls `tool` with `arguments` in a task of its own, so the test can
/// play the server meanwhile; dropping (or aborting) it is the caller
/// giving up.
pub(crate) fn spawn_call(
    warden: &Warden,
    tool: &str,
    arguments: Value,
) -> tokio::task::JoinHandle<Result<warden_actors::CallToolResult, warden_actors::CallError>> {
    let (warden, tool) = (warden.clone(), tool.to_string());
    tokio::spawn(async move { warden.call_tool(&tool, arguments).await })
}

/// The next message Warden sends.
pub(crate) async fn next(peer: &mut MemoryPeer) -> Message {
    match within("Warden sends a message", peer.recv()).await {
        Some(message) => message,
        None => panic!("Warden dropped the connection instead of sending a message"),
    }
}

/// The next message, which must be a `method` request.
///
/// The scripted servers are of the `initialize` era: a `server/discover`
/// probe met on the way to an `initialize` is refused as such a server
/// refuses a method it does not know (-32601), which Warden must take for
/// "use `initialize`".
pub(crate) async fn next_request(peer: &mut MemoryPeer, method: &str) -> Request {
    let mut message = next(peer).await;
    if method == "initialize" {
        if let Message::Request(probe) = &message {
            if probe.method == "server/discover" {
                let refusal = ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found");
                peer.send(Message::error(probe.id.clone(), refusal));
                message = next(peer).await;
            }
        }
    }
    match message {
        Message::Request(request) if request.method == method => request,
        other => panic!("expected a `{method}` request, got {}", other.to_json()),
    }
}

/// The next message, which must be a `method` notification; its params.
pub(crate) async fn next_notification(peer: &mut MemoryPeer, method: &str) -> Option<Value> {
    match next(peer).await {
        Message::Notification(notification) if notification.method == method => notification.params,
        other => panic!("expected a `{method}` notification, got {}", other.to_json()),
    }
}

/// Answers `request` with `result`.
pub(crate) fn reply(peer: &MemoryPeer, request: &Request, result: Value) {
    peer.send(Message::result(request.id.clone(), result));
}

/// What a server answers to `initialize`.
pub(crate) fn init_result(version: &str, capabilities: Value) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": "scripted-server", "version": "1.2.3"},
    })
}

/// Plays a server's side of the handshake: answers `initialize` with
/// `version` and `capabilities`, expects `notifications/initialized`, then
/// (when `capabilities` has `tools`) answers `tools/list` with `tools`.
pub(crate) async fn handshake(peer: &mut MemoryPeer, version: &str, capabilities: Value, tools: Value) {
    let has_tools = capabilities.get("tools").is_some();
    initialize(peer, version, capabilities).await;
    if has_tools {
        answer_tools_list(peer, tools).await;
    }
}

/// Answers `initialize` and expects `notifications/initialized`.
pub(crate) async fn initialize(peer: &mut MemoryPeer, version: &str, capabilities: Value) {
    let initialize = next_request(peer, "initialize").await;
    reply(peer, &initialize, init_result(version, capabilities));
    next_notification(peer, "notifications/initialized").await;
}

/// The handshake of an up-to-date server with tools, which announces
/// changes to them (a quiet one: `handshake` with `{"tools": {}}`).
pub(crate) async fn ready(peer: &mut MemoryPeer, tools: Value) {
    handshake(peer, LATEST_PROTOCOL_VERSION, json!({"tools": {"listChanged": true}}), tools).await;
}

/// Expects a `tools/list` request and answers it with one page of `tools`.
pub(crate) async fn answer_tools_list(peer: &mut MemoryPeer, tools: Value) -> Request {
    let list = next_request(peer, "tools/list").await;
    reply(peer, &list, json!({ "tools": tools }));
    list
}

/// A minimal tool listing.
pub(crate) fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

/// Minimal listings of tools with these names.
pub(crate) fn tools(names: &[&str]) -> Value {
    names.iter().map(|name| tool(name)).collect()
}

/// A `tools/call` result with one text block.
pub(crate) fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

/// The `arguments` of a `tools/call` request.
pub(crate) fn arguments(request: &Request) -> &Value {
    &request.params.as_ref().expect("tools/call has params")["arguments"]
}

/// The registered tool names, in the order `tools()` gives them.
pub(crate) fn names(warden: &Warden) -> Vec<String> {
    warden.tools().into_iter().map(|entry| entry.name).collect()
}

/// One server's status.
pub(crate) fn status(warden: &Warden, server: &str) -> ServerStatus {
    warden
        .status()
        .into_iter()
        .find(|status| status.name == server)
        .unwrap_or_else(|| panic!("no status for server '{server}'"))
}

/// Waits until `server`'s state satisfies `condition`; `what` names the
/// state for the failure message.
pub(crate) async fn until_state(
    warden: &Warden,
    server: &str,
    what: &str,
    mut condition: impl FnMut(&ServerState) -> bool,
) {
    let what = format!("server '{server}' is {what}");
    let reached = warden.wait_for(|snapshot| snapshot.status(server).is_some_and(|status| condition(&status.state)));
    within(&what, reached).await;
}

/// The current version of Warden's tool table.
pub(crate) async fn tools_version(warden: &Warden) -> u64 {
    let mut version = 0;
    warden
        .wait_for(|snapshot| {
            version = snapshot.tools_version();
            true
        })
        .await;
    version
}

/// Runs `futures` concurrently, polling them in order, and returns their
/// outputs in order (the workspace has no `futures` crate).
pub(crate) async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut done = true;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    outputs.into_iter().map(Option::unwrap).collect()
}

/// The `initialize` parameters Warden sends, on every (re)start.
pub(crate) fn warden_initialize_params() -> Value {
    json!({
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "warden", "version": env!("CARGO_PKG_VERSION")},
    })
}
