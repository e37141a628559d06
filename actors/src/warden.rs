//! The `Warden` handle: what a host holds.
//!
//! [`Warden::start`] spawns the actor system and returns at once; servers
//! start in the background, concurrently. From then on:
//!
//! - [`Warden::tools`] is a snapshot of the tools of the servers running
//!   right now (a host reads it when a turn starts);
//! - [`Warden::call_tool`] runs one tool by its namespaced name;
//! - [`Warden::status`] tells each server's state and error text;
//! - [`Warden::settled`] waits until no server is still starting (for
//!   one-shot runs that need every tool before their single turn);
//! - [`Warden::shutdown`] stops everything and waits for the processes.
//!
//! The handle reads the Registry's latest published snapshot instead of
//! asking an actor, then sends the call straight to the server's actor: one
//! mailbox hop on the way in, none shared between servers.

use std::sync::Arc;

use ractor::{Actor, ActorRef, RpcReplyPort};
use serde_json::{Map, Value};
use tokio::sync::watch;
use warden_protocol::{json_kind, CallToolResult, Connector, StdioConnector, StdioSpec};

use crate::config::{ServerConfig, WardenConfig};
use crate::error::CallError;
use crate::hub::{Hub, HubArgs, HubMsg, ServerPlan};
use crate::registry::{ServerState, ServerStatus, Snapshot, ToolEntry};
use crate::server_actor::{ServerMsg, ServerSettings, ToolCall};

/// A running Warden.
pub struct Warden {
    hub: ActorRef<HubMsg>,
    hub_task: Option<tokio::task::JoinHandle<()>>,
    snapshot: watch::Receiver<Arc<Snapshot>>,
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
    /// The actor system could not be spawned.
    #[error("Warden's actors could not start: {0}")]
    Spawn(String),
}

impl Warden {
    /// Starts Warden with the servers of a loaded config.
    pub async fn start(config: &WardenConfig) -> Result<Warden, StartError> {
        let plans = config
            .servers
            .iter()
            .map(|(name, server)| ServerPlan {
                name: name.clone(),
                connector: connector_for(name, server, config),
                settings: ServerSettings {
                    call_timeout: config.call_timeout(),
                    startup_timeout: server.startup_timeout(),
                    ..ServerSettings::default()
                },
            })
            .collect();
        Self::start_plans(plans).await
    }

    /// Starts Warden with servers reached through the given connectors.
    pub async fn start_with(servers: Vec<ServerSpec>) -> Result<Warden, StartError> {
        let mut plans = Vec::new();
        for spec in servers {
            warden_policy::validate_server_name(&spec.name)?;
            if plans.iter().any(|plan: &ServerPlan| plan.name == spec.name) {
                return Err(StartError::DuplicateServer(spec.name));
            }
            plans.push(ServerPlan { name: spec.name, connector: Ok(spec.connector), settings: spec.settings });
        }
        Self::start_plans(plans).await
    }

    async fn start_plans(servers: Vec<ServerPlan>) -> Result<Warden, StartError> {
        let initial = Snapshot::starting(servers.iter().map(|plan| &plan.name));
        let (publish, snapshot) = watch::channel(Arc::new(initial));
        let (hub, hub_task) = Actor::spawn(None, Hub, HubArgs { servers, publish })
            .await
            .map_err(|error| StartError::Spawn(error.to_string()))?;
        let hub_task = tokio::spawn(async move {
            let _ = hub_task.await;
        });
        Ok(Warden { hub, hub_task: Some(hub_task), snapshot })
    }

    /// The tools of every running server, by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.snapshot.borrow().tools()
    }

    /// Every configured server's state.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.snapshot.borrow().statuses()
    }

    /// Waits until every server is running or failed.
    pub async fn settled(&self) {
        self.wait_for(Snapshot::is_settled).await;
    }

    /// Waits until `condition` holds for the latest snapshot (checked now
    /// and after every change), e.g. until a tool announced by
    /// `tools/list_changed` is registered. Hosts bound it with a timeout.
    pub async fn wait_for(&self, condition: impl FnMut(&Snapshot) -> bool) {
        let mut snapshot = self.snapshot.clone();
        let mut condition = condition;
        // An error means the Registry is gone: nothing will change any more.
        let _ = snapshot.wait_for(|snapshot| condition(snapshot)).await;
    }

    /// Runs the tool named `name` (`server__tool`) with `arguments`, which
    /// must be a JSON object (or null for none).
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(CallError::InvalidArguments { name: name.to_string(), found: json_kind(&other) });
            }
        };
        let (actor, call) = self.route(name, arguments)?;
        let actor_id = actor.get_id();
        let outcome = actor
            .call(|reply: RpcReplyPort<Result<CallToolResult, CallError>>| ServerMsg::CallTool { call, reply }, None)
            .await;
        match outcome {
            Ok(ractor::rpc::CallResult::Success(result)) => result,
            // The actor stopped before answering: its server failed (or Warden
            // is shutting down). The snapshot that routed here may predate the
            // Registry hearing why; wait until it has, so the caller reads the
            // failure rather than "unknown tool".
            _ => {
                self.wait_for(|snapshot| {
                    snapshot
                        .servers
                        .values()
                        .all(|entry| entry.actor.as_ref().map(|actor| actor.get_id()) != Some(actor_id))
                })
                .await;
                Err(self.unavailable(name))
            }
        }
    }

    /// Finds the actor and the server's own tool name for `name`.
    fn route(&self, name: &str, arguments: Map<String, Value>) -> Result<(ActorRef<ServerMsg>, ToolCall), CallError> {
        let snapshot = self.snapshot.borrow();
        let Some(entry) = snapshot.tools.get(name) else {
            return Err(unavailable(&snapshot, name));
        };
        let server = &snapshot.servers[&entry.server];
        let Some(actor) = server.actor.clone() else {
            return Err(unavailable(&snapshot, name));
        };
        let call = ToolCall { name: name.to_string(), tool: entry.tool.name.clone(), arguments };
        Ok((actor, call))
    }

    fn unavailable(&self, name: &str) -> CallError {
        unavailable(&self.snapshot.borrow(), name)
    }

    /// Stops every server, waits for their processes to end, then stops the
    /// actor system.
    pub async fn shutdown(mut self) {
        let _ = self.hub.call(|reply| HubMsg::Shutdown { reply }, None).await;
        self.hub.stop(None);
        if let Some(task) = self.hub_task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Warden {
    fn drop(&mut self) {
        // A host that forgot `shutdown` still gets its servers stopped.
        if self.hub_task.is_some() {
            self.hub.stop(None);
        }
    }
}

/// The most useful error for a name that cannot be called right now.
fn unavailable(snapshot: &Snapshot, name: &str) -> CallError {
    let Some((server, _)) = warden_policy::split_namespaced(name) else {
        return CallError::UnknownTool { name: name.to_string() };
    };
    match snapshot.servers.get(server).map(|entry| &entry.status.state) {
        Some(ServerState::Starting) => CallError::ServerStarting { server: server.to_string(), name: name.to_string() },
        Some(ServerState::Failed { reason }) => {
            CallError::ServerFailed { server: server.to_string(), name: name.to_string(), reason: reason.clone() }
        }
        Some(ServerState::Running) | None => CallError::UnknownTool { name: name.to_string() },
    }
}

/// The connector for a configured server, or why there is none yet.
fn connector_for(name: &str, server: &ServerConfig, config: &WardenConfig) -> Result<Arc<dyn Connector>, String> {
    match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut spec = StdioSpec::new(name, command.clone(), server.args.clone());
            spec.env = server.env.clone();
            spec.cwd = server.cwd.clone();
            spec.max_message_bytes = config.max_message_bytes;
            Ok(Arc::new(StdioConnector::new(spec)))
        }
        (None, Some(url)) => Err(format!(
            "it is an HTTP server ({url}), and the Streamable HTTP transport is not built yet; only `command` (stdio) servers run for now"
        )),
        (None, None) => Err("it has neither `command` nor `url`".into()),
    }
}
