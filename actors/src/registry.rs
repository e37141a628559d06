//! The Registry actor: the one owner of tool names and server states.
//!
//! Server actors tell it what they discovered; it builds the namespaced tool
//! table (`server__tool`), settles collisions (the name registered first
//! keeps it, the duplicate is skipped with a warning naming both sides), and
//! records each server's state. It is supervised by the Hub and holds no
//! resources, so it has nothing to clean up.
//!
//! Readers never send it a message. After every change it publishes an
//! immutable [`Snapshot`] on a `watch` channel; the `Warden` handle resolves
//! names and lists tools from the latest snapshot without a round trip, so a
//! thousand concurrent calls do not queue behind one mailbox.

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::watch;
use warden_protocol::InitializeResult;

use crate::primitive_tools::primitive_tools;
use crate::server_actor::ServerRef;
use crate::server_settings::ShapedTools;

mod snapshot;

pub(crate) use snapshot::ServerEntry;
pub use snapshot::{ServerOffers, ServerState, ServerStatus, Snapshot, ToolEntry};

/// Messages: facts reported by server actors and the Hub.
#[derive(Debug)]
pub(crate) enum RegistryMsg {
    /// A server's actor is up; calls for it go there.
    ServerSpawned {
        /// The server.
        server: String,
        /// Its actor and fast lane.
        at: ServerRef,
    },
    /// A server finished its handshake.
    ServerInitialized {
        /// The server.
        server: String,
        /// What it answered.
        info: Box<InitializeResult>,
        /// Its process (stdio servers).
        pid: Option<u32>,
    },
    /// A server's complete tool list (the first one, or a refresh).
    ToolsDiscovered {
        /// The server.
        server: String,
        /// Every tool it listed, filtered and renamed as configured.
        tools: ShapedTools,
        /// Callers waiting for the list: dropped once it is published.
        waiting: crate::server_actor::ListWaiters,
    },
    /// A server went down and will be restarted.
    ServerRestarting {
        /// The server.
        server: String,
        /// Which consecutive restart this is.
        attempt: u32,
        /// How many are allowed.
        max_attempts: u32,
        /// How long until it begins.
        delay: std::time::Duration,
        /// Why it went down.
        reason: String,
    },
    /// A server's connection reported an error it survived.
    TransportFaulted {
        /// The server.
        server: String,
        /// What failed.
        problem: String,
    },
    /// A server waits for a login.
    ServerNeedsLogin {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// A server stopped for good.
    ServerFailed {
        /// The server.
        server: String,
        /// Why.
        reason: String,
    },
    /// A server joined the config (a reload added or restarted it): it gets
    /// a fresh `starting` row, and any tools of an earlier one are withdrawn.
    ServerAdded {
        /// The server.
        server: String,
    },
    /// A server left the config (a reload removed it, or is about to
    /// restart it): its row and tools are withdrawn, so no new call is
    /// routed to it; what it reports afterwards is ignored.
    ServerRemoved {
        /// The server.
        server: String,
    },
}

/// The Registry actor.
pub(crate) struct Registry;

/// The Registry's state: the current snapshot and where to publish it.
pub(crate) struct RegistryState {
    snapshot: Snapshot,
    publish: watch::Sender<Arc<Snapshot>>,
}

impl Actor for Registry {
    type Msg = RegistryMsg;
    type State = RegistryState;
    type Arguments = watch::Sender<Arc<Snapshot>>;

    async fn pre_start(
        &self,
        _myself: ActorRef<Self::Msg>,
        publish: Self::Arguments,
    ) -> Result<Self::State, ActorProcessingErr> {
        let snapshot = (**publish.borrow()).clone();
        Ok(RegistryState { snapshot, publish })
    }

    async fn handle(
        &self,
        _myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        // Dropped after the snapshot is published: they wait to see it.
        let mut waiting = Vec::new();
        match message {
            RegistryMsg::ServerSpawned { server, at } => state.record_actor(&server, at),
            RegistryMsg::ServerInitialized { server, info, pid } => state.record_initialized(&server, *info, pid),
            RegistryMsg::ToolsDiscovered { server, tools, waiting: waiters } => {
                state.register_tools(&server, tools);
                waiting = waiters;
            }
            RegistryMsg::ServerRestarting { server, attempt, max_attempts, delay, reason } => {
                let at = tokio::time::Instant::now() + delay;
                state.record_restart(&server, ServerState::Restarting { attempt, max_attempts, at, reason });
            }
            RegistryMsg::ServerFailed { server, reason } => state.record_down(&server, ServerState::Failed { reason }),
            RegistryMsg::ServerNeedsLogin { server, reason } => {
                state.record_down(&server, ServerState::NeedsLogin { reason })
            }
            RegistryMsg::ServerAdded { server } => state.add_server(server),
            RegistryMsg::ServerRemoved { server } => state.remove_server(&server),
            RegistryMsg::TransportFaulted { server, problem } => {
                if let Some(entry) = state.entry(&server) {
                    entry.status.last_error = Some(problem);
                }
            }
        }
        state.publish();
        drop(waiting);
        Ok(())
    }
}

impl RegistryState {
    fn entry(&mut self, server: &str) -> Option<&mut ServerEntry> {
        let entry = self.snapshot.servers.get_mut(server).map(Arc::make_mut);
        if entry.is_none() {
            tracing::error!(server, "registry heard from a server that is not configured");
        }
        entry
    }

    fn record_actor(&mut self, server: &str, actor: ServerRef) {
        if let Some(entry) = self.entry(server) {
            entry.actor = Some(actor);
            entry.spawned_at = Some(std::time::Instant::now());
        }
    }

    fn record_initialized(&mut self, server: &str, info: InitializeResult, pid: Option<u32>) {
        if let Some(entry) = self.entry(server) {
            entry.status.pid = pid;
            entry.status.connected_at = Some(std::time::SystemTime::now());
            entry.offers = ServerOffers::from_capabilities(&info.capabilities);
            // 2026-07-28 asks for log messages per request (the envelope's
            // `logLevel`, which the ServerActor sets when asked for a
            // level): any server of it may be asked, declared or not.
            entry.offers.logging |= warden_protocol::is_modern(&info.protocol_version);
            entry.status.protocol_version = Some(info.protocol_version);
            entry.status.server_info = Some(info.server_info);
        }
    }

    /// Replaces a server's tools, skipping names that are already taken.
    fn register_tools(&mut self, server: &str, shaped: ShapedTools) {
        let ShapedTools { tools, mut upstream_names, mut warnings } = shaped;
        let Some(entry) = self.snapshot.servers.get(server) else {
            tracing::error!(server, "registry heard from a server that is not configured");
            return;
        };
        let was = entry.status.state.clone();
        let ServerOffers { resources, prompts, .. } = entry.offers;
        let before = self.tools_of(server);
        self.snapshot.tools.retain(|_, tool| tool.server != server);
        let mut count = 0;
        // The server's own tools first, then the wrappers of its resources
        // and prompts: a server tool that happens to share a wrapper's name
        // keeps it.
        let listed = tools.into_iter().map(|tool| (None, tool));
        let wrappers = primitive_tools(resources, prompts).into_iter().map(|(wrapper, tool)| (Some(wrapper), tool));
        for (position, (wrapper, tool)) in listed.chain(wrappers).enumerate() {
            if tool.name.is_empty() {
                let warning = format!("server '{server}' listed a tool with an empty name; skipped it");
                tracing::warn!(server, "{warning}");
                warnings.push(warning);
                continue;
            }
            let name = self.snapshot.names.tool_name(server, &tool.name);
            if let Some(holder) = self.snapshot.tools.get(&name) {
                let warning = format!(
                    "tool '{}' of server '{server}' would be named '{name}', which tool '{}' of server '{}' already has; skipped it",
                    tool.name, holder.tool.name, holder.server
                );
                tracing::warn!(server, "{warning}");
                warnings.push(warning);
                continue;
            }
            let upstream_name = match wrapper {
                None => upstream_names.remove(&tool.name).unwrap_or_else(|| tool.name.clone()),
                Some(_) => tool.name.clone(),
            };
            self.snapshot.tools.insert(
                name.clone(),
                Arc::new(ToolEntry {
                    name,
                    server: server.to_string(),
                    tool,
                    upstream_name,
                    primitive_tool: wrapper,
                    position,
                }),
            );
            count += 1;
        }
        if self.tools_of(server) != before {
            self.snapshot.tools_version += 1;
        }
        let entry = Arc::make_mut(self.snapshot.servers.get_mut(server).expect("checked above"));
        entry.ran = true;
        if entry.status.state != ServerState::Running {
            entry.status.startup = entry.spawned_at.map(|at| at.elapsed());
        }
        entry.status.tool_lists += 1;
        entry.status.state = ServerState::Running;
        entry.status.tools = count;
        entry.status.warnings = warnings;
        let version = entry.status.protocol_version.as_deref().unwrap_or("unknown");
        if was == ServerState::Starting {
            tracing::info!(server, "MCP '{server}': initialized (protocol {version}), {count} tools");
        } else if let ServerState::Restarting { attempt, .. } = was {
            tracing::info!(server, "MCP '{server}': restarted (attempt {attempt}, protocol {version}), {count} tools");
        } else {
            tracing::info!(server, "MCP '{server}': tool list changed, {count} tools");
        }
    }

    fn tools_of(&self, server: &str) -> Vec<Arc<ToolEntry>> {
        self.snapshot.tools.values().filter(|tool| tool.server == server).cloned().collect()
    }

    fn record_restart(&mut self, server: &str, state: ServerState) {
        if let Some(entry) = self.entry(server) {
            tracing::warn!(server, "MCP '{server}': {state}");
            entry.status.state = state;
            entry.status.restarts += 1;
            entry.status.pid = None;
            entry.status.connected_at = None;
            // The dead actor must not be routed to; the next one registers itself.
            entry.actor = None;
        }
    }

    /// The server is not running and will not be restarted on its own:
    /// its tools are withdrawn.
    fn record_down(&mut self, server: &str, down: ServerState) {
        let before = self.snapshot.tools.len();
        self.snapshot.tools.retain(|_, tool| tool.server != server);
        if self.snapshot.tools.len() != before {
            self.snapshot.tools_version += 1;
        }
        if let Some(entry) = self.entry(server) {
            tracing::warn!(server, "MCP '{server}': {down}");
            entry.status.state = down;
            entry.status.tools = 0;
            entry.status.pid = None;
            entry.status.connected_at = None;
            entry.actor = None;
        }
    }

    fn add_server(&mut self, server: String) {
        self.remove_server(&server);
        let fresh = Snapshot::starting([&server], self.snapshot.names.clone());
        self.snapshot.servers.extend(fresh.servers);
    }

    fn remove_server(&mut self, server: &str) {
        let before = self.snapshot.tools.len();
        self.snapshot.tools.retain(|_, tool| tool.server != server);
        if self.snapshot.tools.len() != before {
            self.snapshot.tools_version += 1;
        }
        self.snapshot.servers.remove(server);
    }

    /// Publishes the snapshot, counting a status change when any server's
    /// status differs from the last one published.
    fn publish(&mut self) {
        let changed = {
            let published = self.publish.borrow();
            published.servers.len() != self.snapshot.servers.len()
                || published
                    .servers
                    .iter()
                    .zip(&self.snapshot.servers)
                    .any(|((a_name, a), (b_name, b))| a_name != b_name || a.status != b.status)
        };
        if changed {
            self.snapshot.status_version += 1;
        }
        self.publish.send_replace(Arc::new(self.snapshot.clone()));
    }
}
