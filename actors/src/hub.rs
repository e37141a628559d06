//! The Hub: root of Warden's supervision tree.
//!
//! It spawns the Registry and one ServerSupervisor per configured server
//! (which keeps that server's ServerActor alive), all linked to itself. A
//! supervisor reports its server's fate to the Registry; one that panics
//! cannot, so the Hub reports that for it. Nothing a server does can stop
//! the Hub: it overrides `handle_supervisor_evt`, whose default would stop
//! the parent when any child exits.
//!
//! Calls do not pass through the Hub (the `Warden` handle routes them from
//! the Registry's snapshot straight to the server's actor); the Hub owns
//! lifecycles. On [`HubMsg::Shutdown`] it stops every server at once and
//! waits until their transports are closed.
//!
//! A config reload changes the set of servers while Warden runs:
//! [`HubMsg::AddServer`] starts one, [`HubMsg::WithdrawServer`] takes one's
//! tools and row out of the Registry (no new call reaches it; calls in
//! flight go on), and [`HubMsg::StopServer`] stops it. Stopping waits for the
//! server's transport to close, which the Hub must not await in `handle`:
//! a task waits and answers instead.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::task::JoinSet;
use warden_protocol::Connector;

use crate::registry::{Registry, RegistryMsg};
use crate::server_settings::ServerSettings;
use crate::server_supervisor::{ServerSupervisor, SupervisorArgs, SupervisorMsg};

/// How long shutdown waits for one server to close before moving on.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

/// A server as the Hub starts it.
pub struct ServerPlan {
    /// Its configured name.
    pub name: String,
    /// How to reach it, or why it cannot be reached.
    pub connector: Result<Arc<dyn Connector>, String>,
    /// Its limits.
    pub settings: ServerSettings,
}

impl std::fmt::Debug for ServerPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerPlan")
            .field("name", &self.name)
            .field("connector", &self.connector.as_ref().map(|_| "..."))
            .field("settings", &self.settings)
            .finish()
    }
}

/// The Hub actor.
pub(crate) struct Hub;

/// What the Hub is started with.
pub(crate) struct HubArgs {
    /// The servers to run.
    pub servers: Vec<ServerPlan>,
    /// Where the Registry publishes snapshots.
    pub publish: tokio::sync::watch::Sender<Arc<crate::registry::Snapshot>>,
    /// Where servers publish their relayable notifications.
    pub notices: crate::server_actor::NoticeSender,
    /// Who answers servers' requests.
    pub(crate) client: Arc<crate::client_features::ClientFeatures>,
    /// Which servers earlier runs found to speak `initialize` only.
    pub(crate) era_memo: Arc<crate::era_memo::EraMemo>,
    /// The tasks of calls in flight.
    pub(crate) task_journal: Arc<crate::task_journal::TaskJournal>,
}

/// Messages the Hub handles.
#[derive(Debug)]
pub(crate) enum HubMsg {
    /// Stop every server, wait for them, then answer.
    Shutdown {
        /// Answered when every server has stopped.
        reply: RpcReplyPort<()>,
    },
    /// Start a server that was not running (a reload added it, or restarts
    /// it after [`HubMsg::StopServer`]).
    AddServer {
        /// The server.
        plan: ServerPlan,
        /// Answered once its supervisor is spawned (it starts in the background).
        reply: RpcReplyPort<()>,
    },
    /// Withdraw a server's tools and status row; it keeps running, so the
    /// calls it has in flight complete.
    WithdrawServer {
        /// The server.
        name: String,
    },
    /// Start a server again that is not running and not scheduled to
    /// (one waiting for a login): answered `false` when there is no such
    /// server.
    Reconnect {
        /// The server.
        name: String,
        /// Whether the server is known.
        reply: RpcReplyPort<bool>,
    },
    /// Apply new tool filters and renames to a running server.
    ReshapeTools {
        /// The server.
        name: String,
        /// Its new filters and renames.
        tools: crate::server_settings::ToolShaping,
    },
    /// Stop a server and wait (bounded) until its transport is closed.
    StopServer {
        /// The server.
        name: String,
        /// Answered once it has stopped.
        reply: RpcReplyPort<()>,
    },
}

/// The Hub's state.
pub(crate) struct HubState {
    registry: ActorRef<RegistryMsg>,
    notices: crate::server_actor::NoticeSender,
    client: Arc<crate::client_features::ClientFeatures>,
    era_memo: Arc<crate::era_memo::EraMemo>,
    task_journal: Arc<crate::task_journal::TaskJournal>,
    /// Server actors by actor id, for supervision events.
    servers: HashMap<ActorId, (String, ActorCell)>,
}

impl Actor for Hub {
    type Msg = HubMsg;
    type State = HubState;
    type Arguments = HubArgs;

    async fn pre_start(&self, myself: ActorRef<HubMsg>, args: HubArgs) -> Result<HubState, ActorProcessingErr> {
        let (registry, _) = Actor::spawn_linked(None, Registry, args.publish, myself.get_cell()).await?;
        let mut state = HubState {
            registry,
            notices: args.notices,
            client: args.client,
            era_memo: args.era_memo,
            task_journal: args.task_journal,
            servers: HashMap::new(),
        };
        for plan in args.servers {
            state.spawn_server(&myself, plan).await;
        }
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<HubMsg>,
        message: HubMsg,
        state: &mut HubState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            HubMsg::Shutdown { reply } => {
                state.stop_servers().await;
                let _ = reply.send(());
            }
            HubMsg::AddServer { plan, reply } => {
                let _ = state.registry.cast(RegistryMsg::ServerAdded { server: plan.name.clone() });
                state.spawn_server(&myself, plan).await;
                let _ = reply.send(());
            }
            HubMsg::WithdrawServer { name } => {
                let _ = state.registry.cast(RegistryMsg::ServerRemoved { server: name });
            }
            HubMsg::StopServer { name, reply } => state.stop_server(&name, reply),
            HubMsg::ReshapeTools { name, tools } => {
                if let Some((_, cell)) = state.servers.values().find(|(server, _)| *server == name) {
                    let _ = cell.send_message(SupervisorMsg::Reshape(tools));
                }
            }
            HubMsg::Reconnect { name, reply } => {
                let supervisor = state.servers.values().find(|(server, _)| *server == name).map(|(_, cell)| cell);
                let known = supervisor.is_some_and(|cell| cell.send_message(SupervisorMsg::Reconnect).is_ok());
                let _ = reply.send(known);
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<HubMsg>,
        event: SupervisionEvent,
        state: &mut HubState,
    ) -> Result<(), ActorProcessingErr> {
        match event {
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                if let Some((name, _)) = state.servers.remove(&cell.get_id()) {
                    tracing::debug!(server = %name, reason = ?reason, "server supervisor stopped");
                }
            }
            SupervisionEvent::ActorFailed(cell, error) => {
                if let Some((name, _)) = state.servers.remove(&cell.get_id()) {
                    let reason = format!("internal error in its supervisor: {error}");
                    let _ = state.registry.cast(RegistryMsg::ServerFailed { server: name, reason });
                } else if cell.get_id() == state.registry.get_id() {
                    // Without a registry no name resolves; say so loudly.
                    tracing::error!(%error, "the registry failed; Warden cannot route calls until restarted");
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn post_stop(&self, _myself: ActorRef<HubMsg>, state: &mut HubState) -> Result<(), ActorProcessingErr> {
        state.stop_servers().await;
        state.registry.stop(None);
        Ok(())
    }
}

impl HubState {
    /// Spawns a server's supervisor (which starts it in the background), or
    /// tells the Registry why it cannot run.
    async fn spawn_server(&mut self, myself: &ActorRef<HubMsg>, plan: ServerPlan) {
        let connector = match plan.connector {
            Ok(connector) => connector,
            Err(reason) => {
                let _ = self.registry.cast(RegistryMsg::ServerFailed { server: plan.name, reason });
                return;
            }
        };
        let args = SupervisorArgs {
            name: plan.name.clone(),
            connector,
            settings: plan.settings,
            registry: self.registry.clone(),
            notices: self.notices.clone(),
            client: self.client.clone(),
            era_memo: self.era_memo.clone(),
            task_journal: self.task_journal.clone(),
        };
        // Unnamed: ractor's global names would collide between Wardens
        // (and between parallel tests).
        match Actor::spawn_linked(None, ServerSupervisor, args, myself.get_cell()).await {
            Ok((supervisor, _)) => {
                self.servers.insert(supervisor.get_id(), (plan.name, supervisor.get_cell()));
            }
            Err(error) => {
                let reason = format!("internal error starting its actor: {error}");
                let _ = self.registry.cast(RegistryMsg::ServerFailed { server: plan.name, reason });
            }
        }
    }

    /// Stops one server; a task waits for it and answers, so the Hub keeps
    /// handling messages meanwhile. Its supervisor leaves `servers` first:
    /// its end is no failure to report.
    fn stop_server(&mut self, name: &str, reply: RpcReplyPort<()>) {
        let id = self.servers.iter().find(|(_, (server, _))| server == name).map(|(id, _)| *id);
        let Some((name, cell)) = id.and_then(|id| self.servers.remove(&id)) else {
            let _ = reply.send(());
            return;
        };
        tokio::spawn(async move {
            if cell.stop_and_wait(Some("removed from the config".into()), Some(SHUTDOWN_WAIT)).await.is_err() {
                tracing::warn!(server = %name, "server did not stop within {SHUTDOWN_WAIT:?}");
            }
            let _ = reply.send(());
        });
    }

    /// Stops every server concurrently and waits for each (bounded).
    async fn stop_servers(&mut self) {
        let mut stopping = JoinSet::new();
        for (_, (name, cell)) in self.servers.drain() {
            stopping.spawn(async move {
                if cell.stop_and_wait(Some("Warden is shutting down".into()), Some(SHUTDOWN_WAIT)).await.is_err() {
                    tracing::warn!(server = %name, "server did not stop within {SHUTDOWN_WAIT:?}");
                }
            });
        }
        while stopping.join_next().await.is_some() {}
    }
}
