//! The ServerActor: one MCP server, one transport, many calls in flight.
//!
//! It connects through its [`Connector`], runs the handshake (`initialize`,
//! wait for the answer, `notifications/initialized`), pages through
//! `tools/list`, and reports to the Registry. Then it forwards tool calls.
//!
//! It never waits for the server inside `handle`: a call is written to the
//! connection's queue and parked in `pending` under its request id; the
//! transport casts each reply back as [`ServerMsg::Transport`], which
//! completes the matching call. Every call has a deadline; one timer per
//! actor, armed for the earliest deadline pending, wakes the actor to time
//! calls out (the caller gets a timeout error, the server gets
//! `notifications/cancelled`, a late reply is ignored). One timer rather
//! than one per call: spawning and aborting a task per call cost a thread
//! hand-off on every call (measured in `benches/call_latency.rs`).
//!
//! At most `max_in_flight` calls are sent at once (ractor mailboxes are
//! unbounded, so the limit lives here); the rest wait in order.
//!
//! `tools/list_changed` bumps the list's generation. A listing under way
//! notices at its next page and starts over; otherwise a new one starts. So
//! a list that changed while it was being read is never registered half-old,
//! and a burst of notifications costs one more listing, not one each.
//!
//! Failure: when the transport closes, the startup timer runs out or the
//! handshake is refused, the actor fails every pending call (saying whether
//! each request may have reached the server, so the caller knows whether a
//! repeat is safe), answers later calls "not delivered", and reports it —
//! with the server's last stderr lines when it never got ready, and whether
//! a restart can help.
//!
//! It knows neither its supervisor nor the Registry: it reports
//! [`ServerEvent`]s through the `DerivedActorRef` it was started with, and
//! the supervisor translates them (so imports run one way: supervisor →
//! server actor, never back).
//! The supervisor stops it; `post_stop` closes the transport, and the
//! transport's own drop guard kills the process should `post_stop` never run.
//!
//! This file holds the actor, its messages and its state;
//! `server_actor/inbound.rs` what arrives from the transport;
//! `server_actor/era.rs` which MCP revision it speaks (the probe, the
//! 2026-07-28 envelope, its subscription); `server_actor/input_required.rs`
//! a 2026-07-28 server's interim "input required" answers;
//! `server_actor/discovery.rs` the handshake's answer and tool listing;
//! `server_actor/calls.rs` calls in flight and their deadlines;
//! `server_actor/lane.rs` the calls that go past the actor, and
//! `server_actor/adopt.rs` one it takes on after all;
//! `server_actor/cache.rs` a modern server's answers kept by their `ttlMs`;
//! `server_actor/down.rs` going down (crash, hang, a login needed).

use std::sync::Arc;

use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use warden_protocol::{AnswerTaker, Backlog, Connection, Connector, Message, Queued, RequestId, Tool, TransportEvent};

use ractor::DerivedActorRef;

use crate::client_features::ClientFeatures;
use crate::error::CallError;
use crate::server_settings::ServerSettings;

mod adopt;
mod asks;
mod cache;
mod calls;
mod discovery;
mod down;
mod era;
mod events;
mod freshness;
mod inbound;
mod input_required;
mod lane;
mod notices;
mod params;
mod subscription;
mod tasks;
mod tool_call;
mod wire;

pub(crate) use era::KnownEra;
pub(crate) use lane::{Answer, Sending};
pub(crate) use lane::{Lane, ServerRef};
pub(crate) use params::Params;
pub(crate) use tool_call::ToolCall;

pub(crate) use events::ServerEvent;
pub(crate) use freshness::ListWaiters;
pub(crate) use notices::NoticeSender;
pub use notices::ServerNotice;
pub(crate) use notices::NOTICE_BACKLOG;

/// The ServerActor.
pub(crate) struct ServerActor;

/// What a ServerActor is started with.
pub(crate) struct ServerArgs {
    /// The server's configured name.
    pub name: String,
    /// How to reach it.
    pub connector: Arc<dyn Connector>,
    /// Its limits.
    pub settings: ServerSettings,
    /// Where the actor reports what happens to its server: its
    /// supervisor, which translates for the Registry.
    pub events: DerivedActorRef<ServerEvent>,
    /// 0 for the first start, N for the Nth restart in a row.
    pub restart_attempt: u32,
    /// What an earlier connection found the server speaks.
    pub(crate) known_era: Option<KnownEra>,
    /// Where its relayable notifications are published.
    pub notices: NoticeSender,
    /// Who answers its server's requests (elicitation, roots, ...).
    pub(crate) client: Arc<ClientFeatures>,
    /// Its fast lane, which callers reach through the Registry's snapshot.
    pub(crate) lane: Arc<Lane>,
}

/// Messages a ServerActor handles.
#[derive(Debug)]
pub(crate) enum ServerMsg {
    /// Run a tool and answer on `reply`.
    CallTool {
        /// The call.
        call: ToolCall,
        /// Where the outcome goes: the server's `result` as the server wrote
        /// it, which the caller decodes in its own task.
        reply: RpcReplyPort<Result<Box<RawValue>, CallError>>,
    },
    /// The caller gave up on the call with this ticket (it dropped the
    /// call's future): the server is told, the slot freed at once, a late
    /// answer ignored.
    CancelCall {
        /// The call's [`ToolCall::ticket`].
        ticket: u64,
    },
    /// Something arrived on (or happened to) the transport.
    Transport(TransportEvent, Queued),
    /// A lane call ended while calls wait in the queue: a slot is free.
    SlotFreed,
    /// A 2026-07-28 lane call whose answer is not final, for the actor
    /// to take on (`adopt.rs`).
    Adopt(Box<lane::Adopted>),
    /// The earliest pending call's deadline has come.
    DeadlineReached,
    /// The startup timer ran out.
    StartupTimedOut,
    /// The answer to one of the server's own requests (from
    /// [`ClientFeatures`], which answers them outside the actor).
    AnswerServer(Message),
    /// The roots table changed; the server is told if its roots did.
    RootsChanged,
    /// Time to open a modern server's subscription again.
    Relisten,
    /// Time to ask how the task of call `id` is doing.
    PollTask {
        /// The call's key.
        id: i64,
    },
    /// What the task of call `id` asked for (tasks extension) is gathered.
    TaskInputsGathered {
        /// The call's key.
        id: i64,
        /// The answers by the server's keys, or why there are none.
        answers: Result<Map<String, Value>, String>,
    },
    /// The `server/discover` probe numbered `id` went unanswered.
    ProbeUnanswered {
        /// Its request id.
        id: i64,
    },
    /// What the server asked for to answer call `id` (an interim
    /// `input_required` answer) has been gathered, or could not be.
    InputsGathered {
        /// The call's request id for its retry.
        id: i64,
        /// The answers by the server's keys, or why there are none.
        answers: Result<Map<String, Value>, String>,
    },
    /// The tool list's `ttlMs` ran out: it is read again.
    ToolsStale,
    /// A caller found no tool by its name: the list is read again when
    /// its changes may go unheard; the sender is dropped once it is in the
    /// Registry's table, or at once (`freshness.rs`).
    ListToolsForCaller(tokio::sync::oneshot::Sender<()>),
    /// A reload changed which tools are shown and under what names: the
    /// tools are listed again and shaped anew.
    Reshape(crate::server_settings::ToolShaping),
}

/// Where the handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// `initialize` sent, no answer yet: only pings may be sent.
    Initializing,
    /// Initialized; the first tool list is being read.
    Discovering,
    /// Tools registered; serving calls.
    Ready,
    /// The server is down; the supervisor is replacing this actor.
    Down,
}

/// A request waiting for its answer.
enum Pending {
    Initialize {
        forced: Option<&'static str>,
    },
    Discover {
        version: &'static str,
        probe: era::Probe,
    },
    /// The connection's `subscriptions/listen`, open for as long as it is.
    Listen,
    /// A `tasks/get` for the call keyed `call`.
    TaskStatus {
        call: i64,
    },
    /// A request whose answer nobody needs (`tasks/cancel`, `tasks/update`).
    Unheeded,
    ListTools {
        generation: u64,
        tools: Vec<Tool>,
        pages: usize,
    },
    Call(PendingCall),
}

struct PendingCall {
    call: ToolCall,
    reply: adopt::CallReply,
    /// When the caller stops waiting; a call still queued then is never sent.
    deadline: Instant,
    /// False while the call waits for a free slot.
    sent: bool,
    /// How many interim answers it has had, and the task gathering what the
    /// last one asked for (the server then has no request of it).
    input: input_required::InputRounds,
    /// The server-side task it runs as, once created.
    task: tasks::TaskRun,
    /// Set when its answer may be cached: the cache's state when it was sent.
    cache_ticket: Option<u64>,
}

/// A ServerActor's state: who it is and its connection here, each
/// concern's own fields in a struct of its own, with its methods, in that
/// concern's file.
pub(crate) struct ServerActorState {
    name: String,
    connector: Arc<dyn Connector>,
    settings: ServerSettings,
    events: DerivedActorRef<ServerEvent>,
    notices: NoticeSender,
    client: Arc<ClientFeatures>,
    /// Calls that need nothing of the actor go past it (`lane.rs`); it
    /// also holds the count of calls in flight and the request ids.
    lane: Arc<Lane>,
    connection: Option<Connection>,
    phase: Phase,
    /// Requests waiting for their answers, calls for a slot (`calls.rs`).
    requests: calls::Requests,
    /// The server's own requests being answered, and its roots (`asks.rs`).
    asks: asks::Asks,
    /// Which revision the connection speaks, and the probe (`era.rs`).
    era: era::Era,
    /// A modern connection's `subscriptions/listen`.
    subscription: subscription::Subscription,
    /// Whether and how the server runs tools as tasks (`tasks.rs`).
    task_support: tasks::TaskSupport,
    /// The tool list being read (`discovery.rs`).
    listing: discovery::Listing,
    /// A modern server's cacheable answers.
    cache: cache::ResultCache,
    /// The tool list's `ttlMs`, and the callers waiting for it to be read.
    freshness: freshness::ToolFreshness,
    /// This start: its attempt, its timer and its trace span (`discovery.rs`).
    startup: discovery::Startup,
}

impl Actor for ServerActor {
    type Msg = ServerMsg;
    type State = ServerActorState;
    type Arguments = ServerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ServerMsg>,
        args: ServerArgs,
    ) -> Result<ServerActorState, ActorProcessingErr> {
        args.lane.attach(myself);
        Ok(ServerActorState {
            name: args.name,
            connector: args.connector,
            settings: args.settings,
            events: args.events,
            notices: args.notices,
            client: args.client,
            lane: args.lane,
            connection: None,
            phase: Phase::Initializing,
            requests: calls::Requests::default(),
            asks: asks::Asks::default(),
            era: era::Era::of(args.known_era),
            subscription: Default::default(),
            task_support: tasks::TaskSupport::default(),
            listing: discovery::Listing::default(),
            cache: Default::default(),
            freshness: Default::default(),
            startup: discovery::Startup::of(args.restart_attempt),
        })
    }

    /// Connecting happens here, after `spawn` has returned, so starting many
    /// servers never waits on one of them.
    async fn post_start(
        &self,
        myself: ActorRef<ServerMsg>,
        state: &mut ServerActorState,
    ) -> Result<(), ActorProcessingErr> {
        state.connect(&myself).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ServerMsg>,
        message: ServerMsg,
        state: &mut ServerActorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ServerMsg::CallTool { call, reply } => state.start_call(&myself, call, reply),
            ServerMsg::Adopt(adopted) => state.adopt(&myself, *adopted),
            ServerMsg::CancelCall { ticket } => state.cancel_call(ticket),
            ServerMsg::Transport(event, _handled) => state.transport_event(&myself, event),
            ServerMsg::SlotFreed => state.send_queued_calls(),
            ServerMsg::DeadlineReached => state.deadline_reached(&myself),
            ServerMsg::StartupTimedOut => state.startup_timed_out(&myself),
            ServerMsg::AnswerServer(answer) => state.answer_server(answer),
            ServerMsg::RootsChanged => state.roots_changed(),
            ServerMsg::ProbeUnanswered { id } => state.probe_unanswered(id),
            ServerMsg::Relisten => state.relisten(),
            ServerMsg::PollTask { id } => state.poll_task(id),
            ServerMsg::TaskInputsGathered { id, answers } => state.task_inputs_gathered(&myself, id, answers),
            ServerMsg::InputsGathered { id, answers } => state.inputs_gathered(id, answers),
            ServerMsg::ToolsStale => state.refresh_tools(),
            ServerMsg::ListToolsForCaller(waiter) => state.list_tools_for_caller(&myself, waiter),
            ServerMsg::Reshape(tools) => {
                state.settings.tools = tools;
                state.refresh_tools();
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ServerMsg>,
        state: &mut ServerActorState,
    ) -> Result<(), ActorProcessingErr> {
        if state.phase != Phase::Down {
            state.fail_pending_stopped();
        }
        state.stop_timers();
        state.asks.stop();
        if let Some(connection) = state.connection.take() {
            connection.close().await;
        }
        Ok(())
    }
}

impl ServerActorState {
    async fn connect(&mut self, myself: &ActorRef<ServerMsg>) {
        self.startup.span = Some(tracing::info_span!(
            "server start",
            otel.name = %format_args!("server start {}", self.name),
            warden.server = %self.name,
            warden.restart_attempt = self.startup.attempt,
            warden.tools = tracing::field::Empty,
        ));
        let actor = myself.clone();
        let backlog = Backlog::new();
        let queue = Arc::clone(&backlog);
        let lane = Arc::clone(&self.lane);
        let sink = Arc::new(move |event| {
            // Answers to lane calls go to their callers from here.
            let Some(event) = lane.answer(event) else { return };
            // A closed mailbox means this actor is gone; so is the interest
            // (the mark drops with the refused message, making room).
            let _ = actor.cast(ServerMsg::Transport(event, queue.enter()));
        });
        // The reader hands lane calls' answers straight to the lane.
        let taker: Arc<dyn AnswerTaker> = Arc::clone(&self.lane) as Arc<dyn AnswerTaker>;
        match self.connector.connect_paced(sink, backlog, Some(taker)).await {
            Ok(connection) => self.connection = Some(connection),
            // Starting it again would fail the same way.
            Err(error) => return self.fail(myself, error.to_string(), true),
        }
        let timeout = self.settings.startup_timeout;
        self.startup.timer = Some(spawn_timer(myself, Instant::now() + timeout, || ServerMsg::StartupTimedOut));
        self.watch_roots(myself);
        self.open(myself);
    }

    /// Sends a request (in the envelope, when the connection is modern)
    /// and parks it under a fresh id.
    fn request(&mut self, method: &str, params: Option<Value>, pending: Pending) {
        let id = self.fresh_id();
        self.requests.pending.insert(id, pending);
        let params = self.stamped(params);
        self.send(Message::request(RequestId::Number(id), method, params));
    }

    fn fresh_id(&mut self) -> i64 {
        self.lane.fresh_id()
    }

    /// Opens the fast lane when calls need nothing of the actor: the server
    /// is ready and has no crash streak to end with a success. A modern
    /// connection's lane writes its envelope.
    fn open_lane(&self) {
        if let (Phase::Ready, 0, Some(connection)) = (self.phase, self.startup.attempt, &self.connection) {
            self.lane.open(connection.outbound(), self.spoken_envelope().cloned());
        }
    }

    /// Queues a message; a failed send shows up as `Closed` from the transport.
    fn send(&self, message: Message) {
        if let Some(connection) = &self.connection {
            if connection.send(message).is_err() {
                tracing::debug!(server = %self.name, "send on a closed connection");
            }
        }
    }
}

/// Decodes a handshake or listing answer through a [`Value`] tree, as before
/// results stayed raw, so a malformed answer is reported in the same words
/// (these come once per connection; tool results are decoded by the caller).
fn decode<T: serde::de::DeserializeOwned>(result: &RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str::<Value>(result.get()).and_then(serde_json::from_value)
}

/// Casts `message()` to the actor at `at`; abort the handle to cancel. The
/// one timer of both the startup timeout and the call deadlines.
fn spawn_timer(
    actor: &ActorRef<ServerMsg>,
    at: Instant,
    message: impl FnOnce() -> ServerMsg + Send + 'static,
) -> JoinHandle<()> {
    let actor = actor.clone();
    tokio::spawn(async move {
        tokio::time::sleep_until(at).await;
        let _ = actor.cast(message());
    })
}
