//! The fast lane: a call its server's actor need not see.
//!
//! A plain call to a ready server — no progress wanted, no log messages,
//! not run as a task — needs nothing of the actor but an id, a slot and
//! somewhere to wait for its answer (on a 2026-07-28 connection, also the
//! envelope, and the actor again for an answer that is not final:
//! `lane/modern.rs`). Through the
//! actor's mailbox it cost two more task wake-ups a call than a bare client
//! pays (caller → actor, and reader → actor → caller) and two ractor
//! messages. So the caller takes an id and a slot here, writes its request
//! line itself, and waits on a oneshot that the transport's reader
//! completes by id, in the reader's own task: the path a bare client takes.
//!
//! The actor stays the owner of everything else. It opens the lane when
//! its server is ready and closes it when the server goes down, failing the
//! calls in the lane as it fails its own; its queue goes first (the lane is
//! shut to new calls while calls wait there, and a slot a lane call frees
//! pokes the actor to send them); the calls in flight, the actor's and the
//! lane's, share one count against `max_in_flight`. Lane calls time out as
//! the actor's do, by one timer for the earliest deadline (`deadlines.rs`),
//! and a caller that leaves withdraws its call; either way the server is
//! told (`notifications/cancelled`). A server's question during a lane call
//! finds the call here ([`Lane::during`]).
//!
//! What it trades: a notification the server writes just before an answer
//! goes through the actor, so a lane call's caller may have its answer
//! before the actor has passed the notification on (to the Registry, or
//! to a front's clients). A call that wants its own progress or log
//! messages goes through the actor, where they stay ahead of its answer.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use ractor::ActorRef;
use serde_json::value::RawValue;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use warden_config::CrashRetry;
use warden_protocol::{
    run_heavy, AnswerTaker, CallToolResult, Envelope, ErrorObject, Message, Outbound, RawResponse, RequestId, Response,
    TransportEvent,
};

use super::wire::{answer_error, cancellation, IdHasher};
use super::{Params, ServerMsg, ToolCall};
use crate::client_features::{AskContext, During};
use crate::error::CallError;

mod deadlines;
mod modern;
mod wait;

pub(super) use modern::Adopted;
pub(crate) use wait::{LaneWait, Sending};

/// Where a running server's calls go: its actor, or its fast lane.
#[derive(Clone)]
pub(crate) struct ServerRef {
    pub(crate) actor: ActorRef<ServerMsg>,
    pub(crate) lane: Arc<Lane>,
}

impl std::fmt::Debug for ServerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServerRef").field(&self.actor.get_id()).finish()
    }
}

/// What a call's caller waits for.
pub(super) type Reply = oneshot::Sender<Result<Answer, CallError>>;

/// A lane call's answer: a `tools/call` result the reader could decode
/// as it read it ([`Lane::take_answer`]), else the result's text.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The result as the server wrote it, still to be decoded.
    Raw(Box<RawValue>),
    /// A `tools/call` result, decoded.
    Tool(CallToolResult),
}

impl Answer {
    /// The result as JSON text, for a request that is not a tool call.
    pub(crate) fn into_raw(self) -> Box<RawValue> {
        match self {
            Answer::Raw(raw) => raw,
            Answer::Tool(result) => serde_json::value::to_raw_value(&result).expect("a result always serialises"),
        }
    }
}

/// One server connection's fast lane, shared by its actor, its reader and
/// its callers.
pub(crate) struct Lane {
    /// The server's name, for errors.
    server: String,
    crash_retry: CrashRetry,
    /// Request ids, the actor's and the lane's: one sequence per connection.
    next_id: AtomicI64,
    /// Poked when a lane call frees a slot a queued call waits for.
    actor: OnceLock<ActorRef<ServerMsg>>,
    /// Set when it opens on a 2026-07-28 connection: read by the reader
    /// on every answer, without the lock.
    modern: AtomicBool,
    /// The log said once that its tools ask the pre-2026 way.
    told_old_style: AtomicBool,
    state: Mutex<LaneState>,
}

struct LaneState {
    /// Where requests go; `Some` while the lane is open.
    outbound: Option<Arc<dyn Outbound>>,
    /// The envelope of a 2026-07-28 connection's requests.
    envelope: Option<Arc<Envelope>>,
    /// Calls sent and not yet over, the actor's and the lane's.
    in_flight: usize,
    max_in_flight: usize,
    /// Calls waiting in the actor's queue, which go before new lane calls.
    queued: usize,
    calls: HashMap<i64, LaneCall, BuildHasherDefault<IdHasher>>,
    /// The timer for the earliest deadline, and when it fires.
    timer: Option<(Instant, JoinHandle<()>)>,
}

/// A call in the lane: what its answer, or a question about it, needs.
struct LaneCall {
    name: String,
    /// A `tools/call`, whose answer the reader may decode.
    tool: bool,
    ticket: u64,
    asks: Option<Arc<AskContext>>,
    deadline: Instant,
    timeout: Duration,
    reply: Reply,
    /// A modern call's params, for the actor to send again should the
    /// server ask for input first (`lane/modern.rs`).
    kept: Option<Params>,
}

impl Lane {
    pub(crate) fn new(server: &str, crash_retry: CrashRetry, max_in_flight: usize) -> Arc<Lane> {
        Arc::new(Lane {
            server: server.to_string(),
            crash_retry,
            next_id: AtomicI64::new(0),
            actor: OnceLock::new(),
            modern: AtomicBool::new(false),
            told_old_style: AtomicBool::new(false),
            state: Mutex::new(LaneState {
                outbound: None,
                envelope: None,
                in_flight: 0,
                max_in_flight,
                queued: 0,
                calls: HashMap::default(),
                timer: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The actor to poke; set once, when it starts.
    pub(super) fn attach(&self, actor: ActorRef<ServerMsg>) {
        let _ = self.actor.set(actor);
    }

    pub(super) fn fresh_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Lets calls in, writing to `outbound`, in `envelope` when the
    /// connection speaks 2026-07-28.
    pub(super) fn open(&self, outbound: Arc<dyn Outbound>, envelope: Option<Envelope>) {
        let mut state = self.lock();
        state.outbound = Some(outbound);
        self.modern.store(envelope.is_some(), Ordering::Relaxed);
        state.envelope = envelope.map(Arc::new);
    }

    /// The envelope changed (a log level set): later calls carry this one.
    pub(super) fn set_envelope(&self, envelope: Envelope) {
        self.lock().envelope = Some(Arc::new(envelope));
    }

    /// Shuts the lane: every call in it is answered `error(its name)`, and
    /// no call is in flight any more (the actor fails its own alongside).
    pub(super) fn close(&self, error: impl Fn(String) -> CallError) {
        let calls = {
            let mut state = self.lock();
            state.outbound = None;
            state.in_flight = 0;
            state.queued = 0;
            if let Some((_, timer)) = state.timer.take() {
                timer.abort();
            }
            std::mem::take(&mut state.calls)
        };
        for (_, call) in calls {
            let _ = call.reply.send(Err(error(call.name)));
        }
    }

    /// A slot for one of the actor's calls, if one is free, and how many
    /// calls are in flight with it.
    pub(super) fn take_slot(&self) -> Option<usize> {
        let mut state = self.lock();
        if state.in_flight >= state.max_in_flight {
            return None;
        }
        state.in_flight += 1;
        Some(state.in_flight)
    }

    /// One of the actor's calls is over.
    pub(super) fn free_slot(&self) {
        let mut state = self.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
    }

    pub(super) fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// How many calls wait in the actor's queue.
    pub(super) fn set_queued(&self, queued: usize) {
        self.lock().queued = queued;
    }

    /// Lane call `id`, as a server's question during it names it.
    pub(super) fn during(&self, id: i64) -> Option<During> {
        self.lock().calls.get(&id).map(LaneCall::during)
    }

    /// The lane's one call, if it has exactly one.
    pub(super) fn only_call(&self) -> Option<During> {
        let state = self.lock();
        match state.calls.len() {
            1 => state.calls.values().next().map(LaneCall::during),
            _ => None,
        }
    }

    /// Sends `call` down the lane, or hands it back when the lane cannot
    /// take it (shut, full, calls queued before it, or a call the actor
    /// must follow).
    pub(crate) fn try_send(self: &Arc<Self>, call: ToolCall) -> Sending {
        if call.progress.is_some() || call.logs.is_some() || call.as_task {
            return Sending::Refused(Box::new(call));
        }
        let (reply, answer) = oneshot::channel();
        let ticket = call.ticket;
        let (id, outbound, in_company, line) = {
            let mut state = self.lock();
            let Some(outbound) = state.outbound.clone() else { return Sending::Refused(Box::new(call)) };
            let modern = state.envelope.is_some();
            if state.queued > 0 || state.in_flight >= state.max_in_flight || (modern && call.method != "tools/call") {
                return Sending::Refused(Box::new(call));
            }
            state.in_flight += 1;
            // Taken only now: a refused call leaves the ids the actor's next.
            let id = self.fresh_id();
            let (deadline, timeout) = (call.deadline, call.timeout);
            let tool = call.method == "tools/call";
            // A modern call's line is written here, its params kept; an
            // older one's is its params' own buffer, after the lock.
            let params = call.params;
            let (line, kept) = match &state.envelope {
                Some(envelope) => (Ok(modern::enveloped_line(envelope, &params, id)), Some(params)),
                None => (Err(params), None),
            };
            let (name, asks) = (call.name, call.asks);
            let lane_call = LaneCall { name, tool, ticket, asks, deadline, timeout, reply, kept };
            state.calls.insert(id, lane_call);
            self.arm(&mut state, deadline);
            (id, outbound, state.in_flight > 1, line)
        };
        let line = line.unwrap_or_else(|params| params.into_line(id));
        // With others under way it may wait a moment to go out with them
        // (see `Outbound::send_json_in_company`), as the actor's calls do.
        let written = if in_company { outbound.send_json_in_company(line) } else { outbound.send_json(line) };
        if written.is_err() {
            // The connection is gone. Still here, the call never left: it
            // may go to the next connection. (Gone, the actor failed it.)
            if let Some(call) = self.remove(id) {
                let reason = "the connection closed".to_string();
                return Sending::Unsent(Box::new(CallError::ServerGone {
                    server: self.server.clone(),
                    name: call.name,
                    reason,
                    delivered: false,
                }));
            }
        }
        Sending::Sent(LaneWait { lane: Arc::clone(self), id, ticket, answer })
    }

    /// Takes call `id` out of the lane, freeing its slot.
    fn remove(&self, id: i64) -> Option<LaneCall> {
        let (call, poke) = {
            let mut state = self.lock();
            let call = state.calls.remove(&id);
            if call.is_some() {
                state.in_flight -= 1;
            }
            let poke = call.is_some() && state.queued > 0;
            (call, poke)
        };
        if poke {
            self.poke();
        }
        call
    }

    /// Tells the actor a slot is free for its queue.
    fn poke(&self) {
        if let Some(actor) = self.actor.get() {
            let _ = actor.cast(ServerMsg::SlotFreed);
        }
    }

    /// Answers the lane calls `event` answers; what is left is the actor's.
    /// Called by the transport's reader, in its own task.
    pub(super) fn answer(&self, event: TransportEvent) -> Option<TransportEvent> {
        match event {
            TransportEvent::Batch(events) => {
                let rest: Vec<TransportEvent> = events.into_iter().filter_map(|event| self.answer(event)).collect();
                match rest.len() {
                    0 => None,
                    1 => rest.into_iter().next(),
                    _ => Some(TransportEvent::Batch(rest)),
                }
            }
            TransportEvent::Response(RawResponse { id: RequestId::Number(id), result }) => {
                // An answer that is not final goes to the actor, with its call.
                let result = match self.hand_over(id, result) {
                    Ok(()) => return None,
                    Err(result) => result,
                };
                match self.remove(id) {
                    Some(call) => {
                        if call.kept.is_some() {
                            self.note_old_style_question(result.get());
                        }
                        let _ = call.reply.send(Ok(Answer::Raw(result)));
                        None
                    }
                    None => Some(TransportEvent::Response(RawResponse { id: RequestId::Number(id), result })),
                }
            }
            // Only from test peers: transports deliver results raw.
            TransportEvent::Message(Message::Response(Response {
                id: Some(RequestId::Number(id)),
                outcome: Ok(result),
            })) if self.lock().calls.contains_key(&id) => {
                let result = serde_json::value::to_raw_value(&result).expect("a JSON value always serialises");
                self.answer(TransportEvent::Response(RawResponse { id: RequestId::Number(id), result }))
            }
            TransportEvent::Message(Message::Response(response)) => {
                let call = match &response.id {
                    Some(RequestId::Number(id)) => self.remove(*id),
                    _ => None,
                };
                let Some(call) = call else { return Some(TransportEvent::Message(Message::Response(response))) };
                let outcome = match response.outcome {
                    // Not reached for a lane call's result (the arm above).
                    Ok(result) => Ok(Answer::Raw(
                        serde_json::value::to_raw_value(&result).expect("a JSON value always serialises"),
                    )),
                    Err(error) => {
                        if call.kept.is_some() {
                            self.note_old_style_question(&error.message);
                        }
                        Err(self.error(call.name.clone(), error))
                    }
                };
                let _ = call.reply.send(outcome);
                None
            }
            other => Some(other),
        }
    }

    fn error(&self, name: String, error: ErrorObject) -> CallError {
        answer_error(&self.server, name, error, self.crash_retry)
    }
}

/// The readers (stdio, Streamable HTTP) offer every plain successful answer here first. A
/// lane `tools/call` has its result decoded now, in the reader's task, from
/// the line itself: the answer is read once, where the envelope parse used
/// to check and copy it and the caller then decoded the copy. Anything
/// else — an id that is not a lane tool call, a result that does not
/// decode as one (the usual path then words the error as before), a
/// 2026-07-28 answer that is not final — is left to become an event.
impl AnswerTaker for Lane {
    fn take_answer(&self, id: i64, text: &str) -> bool {
        let Some(modern) = self.lock().calls.get(&id).filter(|call| call.tool).map(|call| call.kept.is_some()) else {
            return false;
        };
        // Off the worker when large: the reader's task is one of many.
        let Ok(result) = run_heavy(text.len(), || serde_json::from_str::<CallToolResult>(text)) else { return false };
        if modern {
            if result.extra.get("resultType").is_some_and(|kind| *kind != "complete") {
                return false; // Not final: it goes to the actor (`lane/modern.rs`).
            }
            self.note_old_style_question(text);
        }
        // Gone meanwhile (timed out, withdrawn): the line goes on as a late
        // answer, as it did before.
        let Some(call) = self.remove(id) else { return false };
        let _ = call.reply.send(Ok(Answer::Tool(result)));
        true
    }
}

/// Tells the server at `outbound` that Warden no longer waits for its
/// request `id`.
fn cancel_on(outbound: Option<&dyn Outbound>, id: i64, reason: &str) {
    if let Some(outbound) = outbound {
        let _ = outbound.send(cancellation(id, reason));
    }
}

impl LaneCall {
    fn during(&self) -> During {
        During { tool: self.name.clone(), ticket: self.ticket, context: self.asks.clone() }
    }
}
