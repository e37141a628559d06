//! The ServerSupervisor: keeps one server alive across crashes.
//!
//! ractor has no restart strategies of its own (and `ractor-supervisor`
//! cannot reset its counter on success), so this actor is Warden's. It is a
//! child of the Hub and the parent of one [`ServerActor`] at a time.
//!
//! When the ServerActor reports its server down ([`SupervisorMsg::ServerDown`])
//! or panics, the supervisor stops it (its `post_stop` closes the transport)
//! and decides:
//!
//! - a *permanent* failure (the command does not exist, the protocol
//!   version is refused, the first start overran `startup_timeout_secs`) is
//!   final at once: restarting cannot fix it, and a clear error now beats
//!   the same error half a minute later;
//! - a crash schedules a restart with exponential backoff (1 s, 2 s, 4 s,
//!   8 s, 16 s by default) as a [`SupervisorMsg::Restart`] sent with
//!   `send_after`, so tests watch the schedule with paused time; after
//!   `max_restarts` consecutive restarts without a successful call in
//!   between, the server is failed and its tools withdrawn.
//!
//! A successful tool call on a restarted server resets the count
//! ([`ServerEvent::CallSucceeded`], sent once per restarted ServerActor).
//! The ServerActor does not know this actor: it reports [`ServerEvent`]s
//! through a `DerivedActorRef` made here, and this actor passes them on to
//! the Registry.
//! The Registry hears every transition, so `status()` shows
//! `restarting (attempt N of M, next in T s)`.
//!
//! Calls never pass through here: the `Warden` handle sends them to the
//! ServerActor the Registry names, waits while the server restarts, and
//! repeats a call that never reached the dead process.

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use warden_protocol::Connector;

use crate::client_features::ClientFeatures;
use crate::registry::RegistryMsg;
use crate::server_actor::{KnownEra, Lane, NoticeSender, ServerActor, ServerArgs, ServerEvent, ServerMsg, ServerRef};
use crate::server_settings::ServerSettings;

/// How long stopping waits for the ServerActor to close its transport.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// The ServerSupervisor actor.
pub(crate) struct ServerSupervisor;

/// What a ServerSupervisor is started with.
pub(crate) struct SupervisorArgs {
    /// The server's configured name.
    pub name: String,
    /// How to reach it (again and again).
    pub connector: Arc<dyn Connector>,
    /// Its limits and restart schedule.
    pub settings: ServerSettings,
    /// Where state changes are reported.
    pub registry: ActorRef<RegistryMsg>,
    /// Where its server's relayable notifications are published.
    pub notices: NoticeSender,
    /// Who answers its server's requests.
    pub(crate) client: Arc<ClientFeatures>,
    /// Which servers earlier runs found to speak `initialize` only.
    pub(crate) era_memo: Arc<crate::era_memo::EraMemo>,
    /// The tasks of calls in flight, for the next process should this die.
    pub(crate) task_journal: Arc<crate::task_journal::TaskJournal>,
}

/// Messages a ServerSupervisor handles.
#[derive(Debug)]
pub(crate) enum SupervisorMsg {
    /// The ServerActor reported something.
    Server(ServerEvent),
    /// Time to start the server again.
    Restart {
        /// Which consecutive restart this is.
        attempt: u32,
    },
    /// Start the server again now, with a fresh restart count, unless it
    /// is running: a login finished, or a person asked.
    Reconnect,
    /// A reload changed the server's tool filters or renames: the running
    /// actor applies them now, every later one from the start.
    Reshape(crate::server_settings::ToolShaping),
}

/// The ServerActor reports through `ActorRef<SupervisorMsg>::get_derived`.
impl From<ServerEvent> for SupervisorMsg {
    fn from(event: ServerEvent) -> SupervisorMsg {
        SupervisorMsg::Server(event)
    }
}

impl TryFrom<SupervisorMsg> for ServerEvent {
    type Error = SupervisorMsg;

    fn try_from(message: SupervisorMsg) -> Result<ServerEvent, SupervisorMsg> {
        match message {
            SupervisorMsg::Server(event) => Ok(event),
            other => Err(other),
        }
    }
}

/// A ServerSupervisor's state.
pub(crate) struct SupervisorState {
    args: SupervisorArgs,
    child: Option<ActorRef<ServerMsg>>,
    /// Consecutive restarts since the last successful call.
    restarts: u32,
    /// What the server was found to speak, for the next ServerActor.
    known_era: Option<KnownEra>,
}

impl Actor for ServerSupervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let identity = args.connector.identity();
        let known_era = identity.and_then(|identity| args.era_memo.recall(&args.name, &identity));
        let mut state = SupervisorState { args, child: None, restarts: 0, known_era };
        state.spawn_child(&myself).await;
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        message: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Server(event) => state.server_event(&myself, event),
            SupervisorMsg::Restart { attempt } => state.restart(&myself, attempt).await,
            SupervisorMsg::Reconnect => state.reconnect(&myself).await,
            SupervisorMsg::Reshape(tools) => {
                state.args.settings.tools = tools.clone();
                if let Some(child) = &state.child {
                    let _ = child.cast(ServerMsg::Reshape(tools));
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        // A ServerActor that stopped after reporting is already handled; one
        // that panicked could not report, so its panic is the reason.
        if let SupervisionEvent::ActorFailed(cell, error) = event {
            let reason = format!("internal error in Warden's server actor: {error}");
            state.server_down(&myself, cell.get_id(), reason, false);
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        if let Some(child) = state.child.take() {
            let _ = child.stop_and_wait(Some("Warden is shutting down".into()), Some(STOP_WAIT)).await;
        }
        Ok(())
    }
}

impl SupervisorState {
    fn name(&self) -> &str {
        &self.args.name
    }

    /// Starts a ServerActor for the current attempt and tells the Registry
    /// where calls go once it is running.
    async fn spawn_child(&mut self, myself: &ActorRef<SupervisorMsg>) {
        let server_args = ServerArgs {
            name: self.args.name.clone(),
            connector: self.args.connector.clone(),
            settings: self.args.settings.clone(),
            events: myself.get_derived(),
            restart_attempt: self.restarts,
            known_era: self.known_era,
            notices: self.args.notices.clone(),
            client: self.args.client.clone(),
            lane: Lane::new(&self.args.name, self.args.settings.crash_retry, self.args.settings.max_in_flight),
        };
        let lane = Arc::clone(&server_args.lane);
        // Unnamed: ractor's global names would collide between Wardens.
        match Actor::spawn_linked(None, ServerActor, server_args, myself.get_cell()).await {
            Ok((child, _)) => {
                let server = ServerRef { actor: child.clone(), lane };
                let _ =
                    self.args.registry.cast(RegistryMsg::ServerSpawned { server: self.args.name.clone(), at: server });
                self.child = Some(child);
            }
            Err(error) => {
                let reason = format!("internal error starting its actor: {error}");
                let _ = self.args.registry.cast(RegistryMsg::ServerFailed { server: self.args.name.clone(), reason });
            }
        }
    }

    /// Passes the ServerActor's news on to the Registry; a server down is
    /// this actor's own business.
    fn server_event(&mut self, myself: &ActorRef<SupervisorMsg>, event: ServerEvent) {
        let server = self.args.name.clone();
        let message = match event {
            ServerEvent::Initialized { info, pid } => RegistryMsg::ServerInitialized { server, info, pid },
            ServerEvent::ToolsDiscovered { tools, waiting } => RegistryMsg::ToolsDiscovered { server, tools, waiting },
            ServerEvent::TransportFaulted { problem } => RegistryMsg::TransportFaulted { server, problem },
            ServerEvent::EraLearned(era) => {
                self.known_era = Some(era);
                if let Some(identity) = self.args.connector.identity() {
                    self.args.era_memo.learn(&self.args.name, &identity, era);
                }
                return;
            }
            ServerEvent::TaskStarted { ticket, tool, task_id, extension } => {
                let started = crate::state_file::now();
                let task = crate::LeftTask { server, tool, task_id, extension, started };
                return self.args.task_journal.started(ticket, task);
            }
            ServerEvent::TaskEnded { ticket } => return self.args.task_journal.ended(ticket),
            ServerEvent::CallSucceeded => {
                self.restarts = 0;
                return;
            }
            ServerEvent::Down { actor, reason, permanent } => {
                return self.server_down(myself, actor, reason, permanent)
            }
            ServerEvent::NeedsLogin { actor, reason } => {
                if self.child.as_ref().is_none_or(|child| child.get_id() != actor) {
                    return;
                }
                if let Some(child) = self.child.take() {
                    child.stop(Some(reason.clone()));
                }
                RegistryMsg::ServerNeedsLogin { server, reason }
            }
        };
        let _ = self.args.registry.cast(message);
    }

    fn server_down(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        actor: ractor::ActorId,
        reason: String,
        permanent: bool,
    ) {
        let is_current = self.child.as_ref().is_some_and(|child| child.get_id() == actor);
        if !is_current {
            return; // A late word from an actor already replaced.
        }
        if let Some(child) = self.child.take() {
            // Its post_stop closes the transport and kills what is left.
            child.stop(Some(reason.clone()));
        }
        let max = self.args.settings.max_restarts;
        if permanent || self.restarts >= max {
            let reason = if permanent || max == 0 {
                reason
            } else {
                format!("{reason} (gave up after {max} restart{} in a row)", if max == 1 { "" } else { "s" })
            };
            let _ = self.args.registry.cast(RegistryMsg::ServerFailed { server: self.name().to_string(), reason });
            return;
        }
        self.restarts += 1;
        let attempt = self.restarts;
        let delay = self.args.settings.backoff(attempt);
        tracing::warn!(server = %self.name(), attempt, ?delay, "MCP '{}': down ({reason}); restart {attempt} of {max} in {delay:?}", self.name());
        let registry_msg = RegistryMsg::ServerRestarting {
            server: self.name().to_string(),
            attempt,
            max_attempts: max,
            delay,
            reason,
        };
        let _ = self.args.registry.cast(registry_msg);
        myself.send_after(delay, move || SupervisorMsg::Restart { attempt });
    }

    async fn reconnect(&mut self, myself: &ActorRef<SupervisorMsg>) {
        if self.child.is_some() {
            return; // Running, starting, or about to report: nothing to do.
        }
        tracing::info!(server = %self.name(), "MCP '{}': connecting again", self.name());
        self.restarts = 0;
        let _ = self.args.registry.cast(RegistryMsg::ServerAdded { server: self.name().to_string() });
        self.spawn_child(myself).await;
    }

    async fn restart(&mut self, myself: &ActorRef<SupervisorMsg>, attempt: u32) {
        if attempt != self.restarts || self.child.is_some() {
            return; // Superseded.
        }
        tracing::info!(server = %self.name(), attempt, "MCP '{}': restarting (attempt {attempt})", self.name());
        self.spawn_child(myself).await;
    }
}
