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

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::watch;
use warden_protocol::{Implementation, InitializeResult, Tool};

use crate::primitive_tools::{primitive_tools, PrimitiveTool};
use crate::server_actor::ServerMsg;

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Connecting, handshaking or discovering tools.
    Starting,
    /// Serving calls.
    Running,
    /// Crashed; a restart is scheduled. Its tools stay listed and calls to
    /// them wait for the restart (within their timeout).
    Restarting {
        /// Which consecutive restart this is (1 for the first).
        attempt: u32,
        /// How many consecutive restarts are allowed.
        max_attempts: u32,
        /// When the restart begins.
        at: tokio::time::Instant,
        /// Why the server went down.
        reason: String,
    },
    /// Stopped for good; its tools are withdrawn.
    Failed {
        /// What went wrong, for people.
        reason: String,
    },
}

impl ServerState {
    /// True once the server is running or has failed for good.
    pub fn is_settled(&self) -> bool {
        matches!(self, ServerState::Running | ServerState::Failed { .. })
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerState::Starting => write!(f, "starting"),
            ServerState::Running => write!(f, "running"),
            ServerState::Restarting { attempt, max_attempts, at, reason } => {
                let wait = at.saturating_duration_since(tokio::time::Instant::now());
                let next =
                    if wait.is_zero() { "now".to_string() } else { format!("next in {:.1} s", wait.as_secs_f64()) };
                write!(f, "restarting (attempt {attempt} of {max_attempts}, {next}) after: {reason}")
            }
            ServerState::Failed { reason } => write!(f, "failed: {reason}"),
        }
    }
}

/// One server as hosts see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// Its configured name.
    pub name: String,
    /// Its state.
    pub state: ServerState,
    /// How many of its tools are registered.
    pub tools: usize,
    /// The protocol version it agreed to.
    pub protocol_version: Option<String>,
    /// What it says it is.
    pub server_info: Option<Implementation>,
    /// Problems worth a person's attention (skipped duplicate tools, ...).
    pub warnings: Vec<String>,
    /// The most recent error of its connection that did not stop it (HTTP:
    /// a request that failed, with what the server or TLS said), however
    /// long ago; later successes do not clear it.
    pub last_error: Option<String>,
    /// Its process, while a stdio server is connected.
    pub pid: Option<u32>,
    /// When its current connection finished the handshake (uptime).
    pub connected_at: Option<std::time::SystemTime>,
    /// How many times it was restarted since Warden started it.
    pub restarts: u32,
}

/// A registered tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    /// The name hosts use: `server__tool`.
    pub name: String,
    /// The server that provides it.
    pub server: String,
    /// The tool as the server listed it (its own name, schema, annotations,
    /// and every member Warden does not model), or as Warden defines a
    /// wrapper tool.
    pub tool: Tool,
    /// Set for Warden's wrappers of the server's resources and prompts.
    pub primitive_tool: Option<PrimitiveTool>,
}

/// A server's row in the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct ServerEntry {
    pub(crate) status: ServerStatus,
    pub(crate) actor: Option<ActorRef<ServerMsg>>,
    /// It has been running at least once.
    pub(crate) ran: bool,
    /// What its `initialize` answer claimed besides tools.
    pub(crate) offers: Offers,
}

/// The primitives besides tools a server's `initialize` answer claims;
/// each gets primitive tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Offers {
    pub(crate) resources: bool,
    pub(crate) prompts: bool,
}

/// Everything the Registry knows, frozen at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub(crate) servers: BTreeMap<String, ServerEntry>,
    /// Tools of running (and restarting) servers, by namespaced name.
    pub(crate) tools: BTreeMap<String, ToolEntry>,
    /// Goes up by one whenever the tool table changes.
    pub(crate) tools_version: u64,
    /// Goes up by one whenever any server's status changes.
    pub(crate) status_version: u64,
    /// How tool names are built (separator, length limit); fixed at start.
    pub(crate) names: warden_policy::NameRules,
}

impl Snapshot {
    /// A snapshot in which every named server is starting.
    pub(crate) fn starting<'a>(
        names: impl IntoIterator<Item = &'a String>,
        name_rules: warden_policy::NameRules,
    ) -> Snapshot {
        let servers = names
            .into_iter()
            .map(|name| {
                let status = ServerStatus {
                    name: name.clone(),
                    state: ServerState::Starting,
                    tools: 0,
                    protocol_version: None,
                    server_info: None,
                    warnings: Vec::new(),
                    last_error: None,
                    pid: None,
                    connected_at: None,
                    restarts: 0,
                };
                (name.clone(), ServerEntry { status, actor: None, ran: false, offers: Offers::default() })
            })
            .collect();
        Snapshot { servers, tools: BTreeMap::new(), tools_version: 0, status_version: 0, names: name_rules }
    }

    /// True when no server is still on its way up: each is running,
    /// failed, or restarting after it ran (its tools are listed and calls
    /// wait for it). A server whose first start crashed is still on its way.
    pub fn is_settled(&self) -> bool {
        self.servers.values().all(|entry| entry.status.state.is_settled() || entry.ran)
    }

    /// Every server's status, by name.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.values().map(|entry| entry.status.clone()).collect()
    }

    /// Every registered tool, by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.tools.values().cloned().collect()
    }

    /// Goes up by one whenever the tool table changes: compare two
    /// snapshots' versions to know whether a host must re-read its tools.
    pub fn tools_version(&self) -> u64 {
        self.tools_version
    }

    /// One server's status.
    pub fn status(&self, server: &str) -> Option<&ServerStatus> {
        self.servers.get(server).map(|entry| &entry.status)
    }
}

/// Messages: facts reported by server actors and the Hub.
#[derive(Debug)]
pub enum RegistryMsg {
    /// A server's actor is up; calls for it go there.
    ServerSpawned {
        /// The server.
        server: String,
        /// Its actor.
        actor: ActorRef<ServerMsg>,
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
        /// Every tool it listed.
        tools: Vec<Tool>,
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
pub struct Registry;

/// The Registry's state: the current snapshot and where to publish it.
pub struct RegistryState {
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
        match message {
            RegistryMsg::ServerSpawned { server, actor } => state.record_actor(&server, actor),
            RegistryMsg::ServerInitialized { server, info, pid } => state.record_initialized(&server, *info, pid),
            RegistryMsg::ToolsDiscovered { server, tools } => state.register_tools(&server, tools),
            RegistryMsg::ServerRestarting { server, attempt, max_attempts, delay, reason } => {
                let at = tokio::time::Instant::now() + delay;
                state.record_restart(&server, ServerState::Restarting { attempt, max_attempts, at, reason });
            }
            RegistryMsg::ServerFailed { server, reason } => state.record_failure(&server, reason),
            RegistryMsg::ServerAdded { server } => state.add_server(server),
            RegistryMsg::ServerRemoved { server } => state.remove_server(&server),
            RegistryMsg::TransportFaulted { server, problem } => {
                if let Some(entry) = state.entry(&server) {
                    entry.status.last_error = Some(problem);
                }
            }
        }
        state.publish();
        Ok(())
    }
}

impl RegistryState {
    fn entry(&mut self, server: &str) -> Option<&mut ServerEntry> {
        let entry = self.snapshot.servers.get_mut(server);
        if entry.is_none() {
            tracing::error!(server, "registry heard from a server that is not configured");
        }
        entry
    }

    fn record_actor(&mut self, server: &str, actor: ActorRef<ServerMsg>) {
        if let Some(entry) = self.entry(server) {
            entry.actor = Some(actor);
        }
    }

    fn record_initialized(&mut self, server: &str, info: InitializeResult, pid: Option<u32>) {
        if let Some(entry) = self.entry(server) {
            entry.status.pid = pid;
            entry.status.connected_at = Some(std::time::SystemTime::now());
            entry.offers = Offers {
                resources: info.capabilities.resources.is_some(),
                prompts: info.capabilities.prompts.is_some(),
            };
            entry.status.protocol_version = Some(info.protocol_version);
            entry.status.server_info = Some(info.server_info);
        }
    }

    /// Replaces a server's tools, skipping names that are already taken.
    fn register_tools(&mut self, server: &str, tools: Vec<Tool>) {
        let Some(entry) = self.snapshot.servers.get(server) else {
            tracing::error!(server, "registry heard from a server that is not configured");
            return;
        };
        let was = entry.status.state.clone();
        let Offers { resources, prompts } = entry.offers;
        let before = self.tools_of(server);
        self.snapshot.tools.retain(|_, tool| tool.server != server);
        let mut warnings = Vec::new();
        let mut count = 0;
        // The server's own tools first, then the wrappers of its resources
        // and prompts: a server tool that happens to share a wrapper's name
        // keeps it.
        let listed = tools.into_iter().map(|tool| (None, tool));
        let wrappers = primitive_tools(resources, prompts).into_iter().map(|(wrapper, tool)| (Some(wrapper), tool));
        for (wrapper, tool) in listed.chain(wrappers) {
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
            self.snapshot
                .tools
                .insert(name.clone(), ToolEntry { name, server: server.to_string(), tool, primitive_tool: wrapper });
            count += 1;
        }
        if self.tools_of(server) != before {
            self.snapshot.tools_version += 1;
        }
        let entry = self.snapshot.servers.get_mut(server).expect("checked above");
        entry.ran = true;
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

    fn tools_of(&self, server: &str) -> Vec<ToolEntry> {
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

    fn record_failure(&mut self, server: &str, reason: String) {
        let before = self.snapshot.tools.len();
        self.snapshot.tools.retain(|_, tool| tool.server != server);
        if self.snapshot.tools.len() != before {
            self.snapshot.tools_version += 1;
        }
        if let Some(entry) = self.entry(server) {
            tracing::warn!(server, "MCP '{server}': failed: {reason}");
            entry.status.state = ServerState::Failed { reason };
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
