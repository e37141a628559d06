//! The `Warden` handle: what a host holds.
//!
//! [`Warden::start`] (or [`Warden::builder`]) spawns the actor system and
//! returns at once; servers start in the background, concurrently. The
//! handle is a cheap [`Clone`] (an `Arc` inside) meant to be shared: by a
//! host's tasks, the daemon's connections, the MCP front's sessions. From
//! any clone:
//!
//! - [`Warden::tools`] and [`Warden::snapshot`]: the tools of the servers
//!   running right now (a host reads them when a turn starts);
//! - [`Warden::host`] and [`Warden::agent`]: a [`Scope`], the host's own
//!   or one configured agent's (its allowlist and profile apply), with
//!   the one family of calls — `call`, `call_text`, `request` — and the
//!   tools as a model is shown them; [`Warden::call_tool`] is short for
//!   the host's plain call. Calls go through the call pipeline
//!   (`call.rs`); dropping the future cancels the call;
//! - [`Warden::status`], [`Warden::settled`]: servers' states;
//!   [`Warden::tool_changes`], [`Warden::status_changes`],
//!   [`Warden::summary_changes`]: subscriptions of one shape ([`Changes`]);
//! - [`Warden::reload`]: a new config, applied live (`warden/reload.rs`);
//! - [`Warden::shutdown`]: stops everything and waits for the processes;
//!   idempotent, and awaitable from every clone. The last clone dropped
//!   without it still stops every server (their processes are killed by
//!   the transports' drop guards).
//!
//! The handle reads the Registry's latest published snapshot instead of
//! asking an actor, then sends the call straight to the server's actor: one
//! mailbox hop on the way in, none shared between servers.

use std::collections::HashMap;
use std::sync::Arc;

use ractor::ActorRef;
use serde_json::Value;
use tokio::sync::watch;
use warden_policy::RenderedResult;
use warden_protocol::{CallToolResult, Connector};

use crate::call::{CallOptions, CallPath};
use crate::client_features::{self, ClientFeatures, Root};
use crate::error::CallError;
use crate::hub::HubMsg;
use crate::registry::{ServerState, ServerStatus, Snapshot, ToolEntry};
use crate::server_actor::{NoticeSender, ServerNotice};
use crate::server_settings::ServerSettings;
use crate::summarizer::{SummarizerMsg, SummaryView};

mod attached;
mod builder;
mod changes;
mod left_tasks;
mod plans;
mod policy_api;
mod reload;
mod resource_holds;
mod scope;

pub use attached::AttachError;
pub use builder::WardenBuilder;
pub use changes::{Changes, Reconnections, ToolChanges};
pub use policy_api::ToolPolicyRow;
pub use reload::{ReloadError, ReloadReport};
pub use scope::{ProfileChoice, Scope};

use plans::Identity;

/// A running Warden. Clones share it.
#[derive(Clone)]
pub struct Warden {
    core: Arc<Core>,
}

/// What every clone shares.
struct Core {
    /// What a call reads: snapshot, slots, rules, gate.
    path: CallPath,
    hub: ActorRef<HubMsg>,
    /// Taken by the first `shutdown`; later ones wait on the lock and find
    /// it gone.
    hub_task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// What each running server was started from, to tell a reload's
    /// changed servers from its unchanged ones. Also serialises reloads.
    identities: tokio::sync::Mutex<HashMap<String, Identity>>,
    /// The Summarizer, when `[summary]` is enabled.
    summarizer: Option<ActorRef<SummarizerMsg>>,
    /// What it last published (an empty view when it is not running).
    summary_view: watch::Receiver<Arc<SummaryView>>,
    /// Where servers publish the notifications a front relays.
    notices: NoticeSender,
    /// Who answers servers' own requests; holds the roots.
    client: Arc<ClientFeatures>,
    /// The tasks of calls in flight, and those an earlier process left.
    task_journal: Arc<crate::task_journal::TaskJournal>,
    /// Who holds each resource subscription, whatever face made it.
    resource_holds: resource_holds::ResourceHolds,
}

/// A server to run, for hosts and tests that bring their own transport.
pub struct ServerSpec {
    /// Its name (the prefix of its tools).
    pub name: String,
    /// How to reach it.
    pub connector: Arc<dyn Connector>,
    /// Its limits.
    pub settings: ServerSettings,
}

/// Why Warden could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Two servers share a name.
    #[error("two servers are named '{0}'; server names must be unique")]
    DuplicateServer(String),
    /// A server name breaks the naming rules.
    #[error(transparent)]
    BadName(#[from] warden_policy::NameError),
    /// The actor system could not be spawned (the actor runtime's own
    /// error is the source).
    #[error("Warden's actors could not start: {0}")]
    Spawn(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl Warden {
    /// The tools of every running server, by name (each definition cloned:
    /// [`Warden::snapshot`] reads them without copying).
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.core.path.snapshot.borrow().tools()
    }

    /// The Registry's latest snapshot as it is: tools, servers, states. A
    /// pointer copy, so a host can read it every turn.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.core.path.snapshot.borrow().clone()
    }

    /// Every configured server's state.
    pub fn status(&self) -> Vec<ServerStatus> {
        let mut statuses = self.core.path.snapshot.borrow().statuses();
        for status in &mut statuses {
            status.calls = self.core.path.metrics.calls_of(&status.name);
        }
        statuses
    }

    /// Warden's metrics, to count what a host adds (a bridge request, a
    /// front request) beside what Warden counts itself.
    pub fn metrics(&self) -> &crate::Metrics {
        &self.core.path.metrics
    }

    /// Every metric in Prometheus' exposition format (OpenMetrics text),
    /// with server states as they are now: what `GET /metrics` answers.
    pub fn metrics_text(&self) -> String {
        self.core.path.metrics.encode(&self.status())
    }

    /// Reads again, now, the tool lists whose changes Warden may not have
    /// heard — a server that announces none, a modern one whose
    /// subscription is not open or whose list's `ttlMs` ran out — of the
    /// servers `name` could belong to (all for `None`), at most once a
    /// second per server; returns once they are in [`Warden::tools`] (at
    /// most 5 s). A call or `describe_tool` of a name no list has does
    /// this by itself; a front does it for its client's own `tools/list`.
    pub async fn relist_unheard(&self, name: Option<&str>) {
        crate::call::relist::relist(&self.core.path.snapshot, name).await;
    }

    /// Waits until every server is running or failed.
    pub async fn settled(&self) {
        self.wait_for(Snapshot::is_settled).await;
    }

    /// Waits until the Summarizer has caught up with the current tools:
    /// each has a summary, was refused, or has nothing to summarise. Returns
    /// at once when summaries are off. While the endpoint is unreachable it
    /// does not return; hosts bound it with a timeout.
    pub async fn summaries_settled(&self) {
        if self.core.summarizer.is_none() {
            return;
        }
        loop {
            let version = self.core.path.snapshot.borrow().tools_version;
            let mut view = self.core.summary_view.clone();
            // An error means the Summarizer is gone: nothing will change any more.
            if view.wait_for(|view| view.tools_version == Some(version) && view.outstanding == 0).await.is_err() {
                return;
            }
            if self.core.path.snapshot.borrow().tools_version == version {
                return;
            }
        }
    }

    /// The Summarizer's view — its summaries, what is outstanding, whether
    /// the endpoint is reachable — now (`current()`) and at every change.
    /// Never changes when summaries are off.
    pub fn summary_changes(&self) -> Changes<Arc<SummaryView>> {
        changes::summaries(self.core.summary_view.clone())
    }

    /// Every server's status, now (`current()`) and whenever one changes:
    /// started, restarting, failed, reconnected.
    pub fn status_changes(&self) -> Changes<Vec<ServerStatus>> {
        changes::statuses(self.core.path.snapshot.clone())
    }

    /// The servers that connect again from now on (a restart, a
    /// reconnection): what a host asked of a server's old connection
    /// (a log level, say) it asks of the new one.
    pub fn reconnections(&self) -> Reconnections {
        Reconnections::new(self.status_changes())
    }

    /// The model-written summary of a tool (by its server and its own
    /// name), if there is one yet.
    pub(crate) fn summary_of(&self, server: &str, tool: &str) -> Option<String> {
        self.core.summary_view.borrow().summaries.get(&(server.to_string(), tool.to_string())).cloned()
    }

    /// Every snapshot the Registry publishes, now and at each change of
    /// anything in it (tools, states, what servers offer): for a front that
    /// derives several views from one subscription.
    pub fn snapshot_changes(&self) -> Changes<Arc<Snapshot>> {
        changes::snapshots(self.core.path.snapshot.clone())
    }

    /// The notifications servers send that a front relays to its clients
    /// (log messages, resource updates, resource and prompt list changes),
    /// from now on. A receiver that falls more than a thousand behind
    /// loses the oldest (`RecvError::Lagged`); servers never wait for it.
    pub fn notices(&self) -> tokio::sync::broadcast::Receiver<ServerNotice> {
        self.core.notices.subscribe()
    }

    /// Sets the roots told to servers without roots of their own; each
    /// server whose roots change is sent `notifications/roots/list_changed`
    /// (servers that were told Warden has roots: see
    /// [`WardenBuilder::roots`]).
    pub fn set_roots(&self, roots: Vec<Root>) {
        self.core.client.set_roots(|table| {
            table.default = roots;
            table.host_managed = true;
        });
    }

    /// The roots `server` is told of now.
    pub fn roots_of(&self, server: &str) -> Vec<Root> {
        self.core.client.roots().borrow().for_server(server)
    }

    /// A reload's roots: the config's, except a host's own default list.
    fn set_config_roots(&self, config: client_features::roots::RootsTable) {
        self.core.client.set_roots(|table| {
            if !table.host_managed {
                table.default = config.default;
            }
            table.servers = config.servers;
        });
    }

    /// The tool table, now (`current()`) and whenever it changes: a host
    /// that advertises tools to a model re-reads it when it fires.
    pub fn tool_changes(&self) -> ToolChanges {
        changes::tools(self.core.path.snapshot.clone())
    }

    /// Waits until `condition` holds for the latest snapshot (checked now
    /// and after every change), e.g. until a tool announced by
    /// `tools/list_changed` is registered. Hosts bound it with a timeout.
    pub async fn wait_for(&self, condition: impl FnMut(&Snapshot) -> bool) {
        let mut snapshot = self.core.path.snapshot.clone();
        let mut condition = condition;
        // An error means the Registry is gone: nothing will change any more.
        let _ = snapshot.wait_for(|snapshot| condition(snapshot)).await;
    }

    /// The host's call of the tool named `name` (`server__tool`) with
    /// `arguments`, with no options: short for
    /// `warden.host().call(name, arguments, CallOptions::default())`. Every
    /// other call, an agent's, one with a timeout or a progress sink, is a
    /// [`Scope`]'s ([`Warden::host`], [`Warden::agent`]).
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        self.core.path.call(None, name, arguments, CallOptions::default()).await
    }

    /// A result as the text a model reads, cut at the server's output limit.
    pub(crate) fn render(&self, name: &str, result: &CallToolResult) -> RenderedResult {
        let value = serde_json::to_value(result).expect("a tool result always serialises");
        let mut rendered = warden_policy::render_call_result(&value);
        rendered.text = warden_policy::truncate(rendered.text, self.core.path.output_limit(name));
        rendered
    }

    /// Starts server `name` again if it is not running and no restart is
    /// scheduled — a server waiting in `needs_login` after a login saved
    /// its tokens, or one that failed — and returns once it has settled
    /// again (running, failed, or waiting for a login still). A running
    /// server is left alone. `Err` when there is no server of that name.
    pub async fn reconnect(&self, name: &str) -> Result<(), CallError> {
        let before = self.snapshot();
        let down =
            before.status(name).is_some_and(|status| status.state.is_settled() && status.state != ServerState::Running);
        let known = self
            .core
            .hub
            .call(|reply| HubMsg::Reconnect { name: name.to_string(), reply }, None)
            .await
            .map_err(|_| CallError::ShutDown { name: name.to_string() })?;
        match known {
            ractor::rpc::CallResult::Success(true) if down => {
                // It starts anew: wait for its status to change, then settle.
                let version = before.status_version;
                self.wait_for(|now| {
                    now.status_version > version && now.status(name).is_some_and(|status| status.state.is_settled())
                })
                .await;
                Ok(())
            }
            ractor::rpc::CallResult::Success(true) => Ok(()),
            ractor::rpc::CallResult::Success(false) => Err(CallError::UnknownServer {
                server: name.to_string(),
                known: self.status().into_iter().map(|status| status.name).collect(),
            }),
            _ => Err(CallError::ShutDown { name: name.to_string() }),
        }
    }

    /// Stops every server, waits for their processes to end, then stops the
    /// actor system. Idempotent: a second call (from any clone, at the same
    /// time or later) waits for the first to finish. Calls made afterwards
    /// fail with [`CallError::ShutDown`].
    pub async fn shutdown(&self) {
        let mut hub_task = self.core.hub_task.lock().await;
        let Some(task) = hub_task.take() else { return };
        let _ = self.core.hub.call(|reply| HubMsg::Shutdown { reply }, None).await;
        self.core.stop_actors();
        let _ = task.await;
    }
}

impl Core {
    fn stop_actors(&self) {
        self.hub.stop(None);
        self.path.gate.stop(None);
        if let Some(summarizer) = &self.summarizer {
            summarizer.stop(None);
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        // The last clone is gone without `shutdown`: its servers still stop.
        if self.hub_task.get_mut().is_some() {
            self.stop_actors();
        }
    }
}
