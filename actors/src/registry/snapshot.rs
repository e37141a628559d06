//! What the Registry publishes: server states and the tool table, frozen
//! at one moment ([`Snapshot`]), and the rows it is made of.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use warden_protocol::{Implementation, ServerCapabilities, Tool};

use crate::primitive_tools::PrimitiveTool;
use crate::server_actor::ServerRef;

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
    /// Waits for a person to log in (OAuth): its tools are withdrawn until
    /// then, and no restart is tried. `warden login NAME` ends the wait.
    NeedsLogin {
        /// Why (no tokens; a refresh refused...).
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
        matches!(self, ServerState::Running | ServerState::Failed { .. } | ServerState::NeedsLogin { .. })
    }

    /// The state in one word: `starting`, `running`, `restarting`,
    /// `needs_login` or `failed` (what `status` and metrics label it).
    pub fn label(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Running => "running",
            ServerState::Restarting { .. } => "restarting",
            ServerState::NeedsLogin { .. } => "needs_login",
            ServerState::Failed { .. } => "failed",
        }
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
            ServerState::NeedsLogin { reason } => write!(f, "{reason}"),
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
    /// How many tool calls it has had, whatever their outcome.
    pub calls: u64,
    /// How long its current connection took from spawn to its first tool
    /// list (its start, or its last restart).
    pub startup: Option<std::time::Duration>,
    /// How many tool lists it sent Warden (the first, and each refetch
    /// after `list_changed` or a reshape).
    pub tool_lists: u64,
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
    /// The name the server itself knows the tool by: `tool.name` unless the
    /// config renames it. Only `tools/call` on the wire uses it.
    pub upstream_name: String,
    /// Set for Warden's wrappers of the server's resources and prompts.
    pub primitive_tool: Option<PrimitiveTool>,
    /// Where in the server's `tools/list` it came (wrappers after the
    /// server's own), for a front that shows one server in its own order.
    pub position: usize,
}

impl ToolEntry {
    /// Its full definition as its server listed it, under the namespaced
    /// name: what `describe_tool` and `find_tools` give a model.
    pub(crate) fn definition(&self) -> serde_json::Value {
        let mut definition = serde_json::to_value(&self.tool).expect("a tool serialises");
        definition["name"] = serde_json::Value::String(self.name.clone());
        definition
    }
}

/// A server's row in the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct ServerEntry {
    pub(crate) status: ServerStatus,
    pub(crate) actor: Option<ServerRef>,
    /// It has been running at least once.
    pub(crate) ran: bool,
    /// What its `initialize` answer claimed besides tools.
    pub(crate) offers: ServerOffers,
    /// When its current actor was spawned (its start or restart began).
    pub(crate) spawned_at: Option<std::time::Instant>,
}

impl ServerEntry {
    /// Past its way up: running, failed, or restarting after it ran.
    fn is_settled(&self) -> bool {
        self.status.state.is_settled() || self.ran
    }
}

/// What a server's `initialize` answer claims besides tools: its
/// resources and prompts get primitive tools, and the MCP front serves
/// them (and forwards subscriptions, log levels and completions) natively.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOffers {
    /// `resources`.
    pub resources: bool,
    /// `resources.subscribe`.
    pub subscribe: bool,
    /// `prompts`.
    pub prompts: bool,
    /// `logging`.
    pub logging: bool,
    /// `completions`.
    pub completions: bool,
}

impl ServerOffers {
    /// What `capabilities` claims.
    pub(crate) fn from_capabilities(capabilities: &ServerCapabilities) -> ServerOffers {
        let subscribe = capabilities
            .resources
            .as_ref()
            .and_then(|resources| resources.get("subscribe"))
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        ServerOffers {
            resources: capabilities.resources.is_some(),
            subscribe,
            prompts: capabilities.prompts.is_some(),
            logging: capabilities.logging.is_some(),
            completions: capabilities.extra.contains_key("completions"),
        }
    }
}

/// Everything the Registry knows, frozen at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Entries are shared between snapshots (copied on write by the
    /// Registry): every change publishes a whole snapshot, and copying
    /// each entry deeply made a thousand servers' start quadratic (a
    /// `tools/list` schema is a tree of JSON).
    pub(crate) servers: BTreeMap<String, Arc<ServerEntry>>,
    /// Tools of running (and restarting) servers, by namespaced name.
    pub(crate) tools: BTreeMap<String, Arc<ToolEntry>>,
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
                    calls: 0,
                    startup: None,
                    tool_lists: 0,
                };
                (
                    name.clone(),
                    Arc::new(ServerEntry {
                        status,
                        actor: None,
                        ran: false,
                        offers: ServerOffers::default(),
                        spawned_at: None,
                    }),
                )
            })
            .collect();
        Snapshot { servers, tools: BTreeMap::new(), tools_version: 0, status_version: 0, names: name_rules }
    }

    /// True when no server is still on its way up: each is running,
    /// failed, or restarting after it ran (its tools are listed and calls
    /// wait for it). A server whose first start crashed is still on its way.
    pub fn is_settled(&self) -> bool {
        self.servers.values().all(|entry| entry.is_settled())
    }

    /// [`Snapshot::is_settled`] for the one server `server` (true for a
    /// server there is none of: nothing is on its way).
    pub fn is_server_settled(&self, server: &str) -> bool {
        self.servers.get(server).is_none_or(|entry| entry.is_settled())
    }

    /// Every server's status, by name.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.values().map(|entry| entry.status.clone()).collect()
    }

    /// The registered tool named `name` (namespaced), without copying it.
    pub fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.get(name).map(|entry| &**entry)
    }

    /// Every registered tool, by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.tools.values().map(|entry| (**entry).clone()).collect()
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

    /// What a server offers besides tools, as its current connection's
    /// handshake said (nothing before its first handshake).
    pub fn offers(&self, server: &str) -> Option<ServerOffers> {
        self.servers.get(server).map(|entry| entry.offers)
    }

    /// The namespaced name of `server`'s primitive `own` (a tool, or a
    /// prompt a front lists the same way), by the config's `[naming]`.
    pub fn name_for(&self, server: &str, own: &str) -> String {
        self.names.tool_name(server, own)
    }

    /// The configured servers' names, in order.
    pub fn server_names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }
}
