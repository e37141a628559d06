//! Calls in flight: queueing under the in-flight cap, framing requests,
//! matching answers, and deadlines.
//!
//! Every call has a deadline; one timer per actor, armed for the earliest
//! deadline pending, wakes the actor to time calls out (the caller gets a
//! timeout error, the server `notifications/cancelled`, a late answer is
//! ignored). One timer rather than one per call: spawning and aborting a
//! task per call cost a thread hand-off on every call's path.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;

use ractor::{ActorRef, RpcReplyPort};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use warden_protocol::ErrorObject;

use crate::client_features::During;
use crate::error::CallError;
use crate::progress::Progress;

use super::wire::{answer_error, call_line, cancellation, IdHasher};
use super::{adopt, spawn_timer, Pending, PendingCall, Phase, ServerActorState, ServerEvent, ServerMsg, ToolCall};

/// What waits for the server: requests for their answers, calls for a
/// slot, and the one timer for the earliest call deadline.
#[derive(Default)]
pub(super) struct Requests {
    /// By request id. Warden's own ids are numbers, so an answer with a
    /// string id answers nothing pending.
    pub(super) pending: HashMap<i64, Pending, BuildHasherDefault<IdHasher>>,
    /// Calls waiting for a slot, oldest first.
    pub(super) queued: VecDeque<i64>,
    /// Ticket → request id of the calls whose caller wants progress.
    pub(super) progress_routes: HashMap<u64, i64>,
    /// The timer for the earliest call deadline, and when it fires.
    deadline_timer: Option<(Instant, JoinHandle<()>)>,
}

impl Requests {
    /// Makes sure the deadline timer fires no later than `deadline`. A
    /// timer already set for earlier is kept: most calls finish long before
    /// their deadline, so a steady stream of calls arms it about once a
    /// timeout.
    pub(super) fn arm_deadline_timer(&mut self, myself: &ActorRef<ServerMsg>, deadline: Instant) {
        if let Some((at, _)) = &self.deadline_timer {
            if *at <= deadline {
                return;
            }
        }
        self.stop_deadline_timer();
        let timer = spawn_timer(myself, deadline, || ServerMsg::DeadlineReached);
        self.deadline_timer = Some((deadline, timer));
    }

    /// The timer fired, or the actor stops.
    pub(super) fn stop_deadline_timer(&mut self) {
        if let Some((_, timer)) = self.deadline_timer.take() {
            timer.abort();
        }
    }

    /// The calls whose deadline has passed at `now`, oldest request first.
    fn expired(&self, now: Instant) -> Vec<i64> {
        let mut expired: Vec<i64> = self
            .pending
            .iter()
            .filter_map(|(id, pending)| match pending {
                Pending::Call(call) if call.deadline <= now => Some(*id),
                _ => None,
            })
            .collect();
        expired.sort_unstable();
        expired
    }

    /// The earliest deadline of the calls left.
    fn next_deadline(&self) -> Option<Instant> {
        self.pending
            .values()
            .filter_map(|pending| match pending {
                Pending::Call(call) => Some(call.deadline),
                _ => None,
            })
            .min()
    }

    /// The request id of the call with `ticket`, if it is still pending.
    /// Rare, so the pending calls are searched rather than indexed by
    /// ticket on every call.
    fn with_ticket(&self, ticket: u64) -> Option<i64> {
        self.pending.iter().find_map(|(id, pending)| match pending {
            Pending::Call(call) if call.call.ticket == ticket => Some(*id),
            _ => None,
        })
    }
}

impl PendingCall {
    /// The call as a server's question about it names it.
    pub(super) fn during(&self) -> During {
        During { tool: self.call.name.clone(), ticket: self.call.ticket, context: self.call.asks.clone() }
    }
}

impl ServerActorState {
    /// A new key for a call the server has no request of now (it waits
    /// for its input, or for its task), its progress following it.
    pub(super) fn rekey(&mut self, call: &PendingCall) -> i64 {
        let id = self.fresh_id();
        if call.call.progress.is_some() {
            self.requests.progress_routes.insert(call.call.ticket, id);
        }
        id
    }

    pub(super) fn start_call(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        call: ToolCall,
        reply: RpcReplyPort<Result<Box<RawValue>, CallError>>,
    ) {
        match self.phase {
            Phase::Initializing => {
                let _ = reply.send(Err(CallError::ServerStarting { server: self.name.clone(), name: call.name }));
                return;
            }
            Phase::Down => {
                // Never sent: the caller may safely repeat it on the next actor.
                let error = CallError::ServerGone {
                    server: self.name.clone(),
                    name: call.name,
                    reason: "the server is down".into(),
                    delivered: false,
                };
                let _ = reply.send(Err(error));
                return;
            }
            Phase::Discovering | Phase::Ready => {}
        }
        if let Some(answer) = self.answered_for_modern(&call).or_else(|| self.cached_answer(&call)) {
            let _ = reply.send(Ok(answer));
            return;
        }
        let cache_ticket = self.cache_ticket(&call);
        let id = self.fresh_id();
        let deadline = call.deadline;
        if call.progress.is_some() {
            self.requests.progress_routes.insert(call.ticket, id);
        }
        self.requests.arm_deadline_timer(myself, deadline);
        let (input, task) = Default::default();
        let reply = adopt::CallReply::Actor(reply);
        let call = PendingCall { call, reply, deadline, sent: false, input, task, cache_ticket };
        self.requests.pending.insert(id, Pending::Call(call));
        self.requests.queued.push_back(id);
        self.send_queued_calls();
    }

    /// Sends waiting calls while there is room, then tells the lane how
    /// many still wait (new lane calls go after them).
    pub(super) fn send_queued_calls(&mut self) {
        while let Some(&id) = self.requests.queued.front() {
            let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else {
                self.requests.queued.pop_front();
                continue;
            };
            if call.deadline <= Instant::now() {
                // Its time ran out in the queue (the deadline timer is about
                // to say so): the server must not start work nobody awaits.
                self.requests.queued.pop_front();
                continue;
            }
            let Some(in_flight) = self.lane.take_slot() else {
                break;
            };
            self.requests.queued.pop_front();
            call.sent = true;
            // As a task, its params say so (rare: copied only then).
            let as_task = (call.call.as_task && self.task_support.tools)
                .then(|| call.task.request(call.call.params.get(), call.call.timeout));
            let params = as_task.as_deref().map_or(call.call.params.get(), RawValue::get);
            if let Some(connection) = &self.connection {
                // A failed send shows up as `Closed` from the transport.
                let line = call_line(&self.era.spoken, id, call.call.method, params);
                let _ = if in_flight > 1 { connection.send_json_in_company(line) } else { connection.send_json(line) };
            }
        }
        self.lane.set_queued(self.requests.queued.len());
    }

    pub(super) fn finish_call(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        call: PendingCall,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        let mut call = Some(call);
        if let Ok(result) = &outcome {
            if self.task_created(myself, &mut call, result) || self.interim_answer(myself, &mut call, result) {
                return;
            }
        }
        let call = call.expect("still here when the answer is final");
        self.note_old_style_question(&outcome);
        if outcome.is_ok() && self.startup.attempt > 0 {
            // The server works again: the supervisor's crash streak is over.
            self.report(ServerEvent::CallSucceeded);
            self.startup.attempt = 0;
            self.open_lane();
        }
        if let (Ok(result), Some(ticket)) = (&outcome, call.cache_ticket) {
            self.keep_answer(ticket, &call.call, result);
        }
        let (server, retry) = (&self.name, self.settings.crash_retry);
        let result = outcome.map_err(|error| answer_error(server, call.call.name.clone(), error, retry));
        self.end_call(call, result);
    }

    /// A sent call is over: its slot is freed, its caller answered.
    pub(super) fn end_call(&mut self, call: PendingCall, result: Result<Box<RawValue>, CallError>) {
        self.lane.free_slot();
        if call.call.progress.is_some() {
            self.requests.progress_routes.remove(&call.call.ticket);
        }
        call.reply.send(result);
        self.send_queued_calls();
    }

    /// Times out every call whose deadline has passed, oldest request first,
    /// then re-arms the timer for the earliest one left.
    pub(super) fn deadline_reached(&mut self, myself: &ActorRef<ServerMsg>) {
        self.requests.stop_deadline_timer();
        for id in self.requests.expired(Instant::now()) {
            self.time_out(id);
        }
        if let Some(next) = self.requests.next_deadline() {
            self.requests.arm_deadline_timer(myself, next);
        }
    }

    pub(super) fn stop_timers(&mut self) {
        self.startup.stop();
        self.era.stop_probe_timer();
        self.requests.stop_deadline_timer();
        self.freshness.stop();
    }

    pub(super) fn time_out(&mut self, id: i64) {
        let Some(Pending::Call(call)) = self.requests.pending.get(&id) else {
            return;
        };
        let reason = format!("timed out after {}", crate::error::secs(call.call.timeout));
        if let Some(PendingCall { call, reply, sent, .. }) = self.withdraw(id, &reason) {
            reply.send(Err(CallError::Timeout { name: call.name, timeout: call.timeout, sent }));
        }
    }

    /// The caller dropped the call with `ticket`: it is withdrawn as a
    /// timed-out call is, and nobody is answered.
    pub(super) fn cancel_call(&mut self, ticket: u64) {
        // Not found: it already ended (answered, timed out, failed).
        if let Some(id) = self.requests.with_ticket(ticket) {
            tracing::debug!(server = %self.name, id, "the caller cancelled a call");
            self.withdraw(id, "the caller cancelled the call");
        }
    }

    /// Takes call `id` out of the pending calls; a sent one frees its slot
    /// and the server is told to stop (`notifications/cancelled`), a queued
    /// one is never sent. The next queued calls go out.
    fn withdraw(&mut self, id: i64, reason: &str) -> Option<PendingCall> {
        let Some(Pending::Call(call)) = self.requests.pending.remove(&id) else {
            return None;
        };
        if call.call.progress.is_some() {
            self.requests.progress_routes.remove(&call.call.ticket);
        }
        if let Some(task) = call.task.id() {
            // A task is cancelled as a task (and its `tasks/result`, if one is out, below).
            let params = json!({"taskId": task});
            self.request("tasks/cancel", Some(params), Pending::Unheeded);
        }
        if call.sent && (call.input.gathering() || call.task.polling()) {
            // The server has no request of it now: nothing to cancel there.
            self.lane.free_slot();
        } else if call.sent {
            self.lane.free_slot();
            self.send(cancellation(id, reason));
        } else {
            self.requests.queued.retain(|queued| *queued != id);
        }
        self.send_queued_calls();
        Some(call)
    }

    /// Forwards a `notifications/progress` to the call whose ticket is its
    /// `progressToken`; a full sink drops it (progress is lossy; the call
    /// must not wait for a slow reader).
    pub(super) fn forward_progress(&self, params: Option<Value>) {
        let Some(params) = params else { return };
        let Some(ticket) = params.get("progressToken").and_then(Value::as_u64) else {
            tracing::debug!(server = %self.name, "progress without a numeric progressToken; ignored");
            return;
        };
        let sink = self.requests.progress_routes.get(&ticket).and_then(|id| match self.requests.pending.get(id) {
            Some(Pending::Call(call)) => call.call.progress.as_ref(),
            _ => None,
        });
        match (sink, Progress::from_params(&params)) {
            (Some(sink), Some(progress)) => {
                let _ = sink.try_send(progress);
            }
            (None, _) => tracing::debug!(server = %self.name, ticket, "progress for no call in flight; ignored"),
            (Some(_), None) => tracing::debug!(server = %self.name, "progress without a numeric `progress`; ignored"),
        }
    }

    /// Fails every pending call because Warden stopped this server on
    /// purpose: nothing is repeated on a next actor (there is none).
    pub(super) fn fail_pending_stopped(&mut self) {
        let server = self.name.clone();
        self.drain_pending(|name, _| CallError::ServerStopped { server: server.clone(), name });
    }

    /// Fails every pending call because the server went down.
    pub(super) fn fail_pending(&mut self, reason: &str) {
        let server = self.name.clone();
        // `sent` means queued for the transport: it may or may not have
        // reached the process, so it counts as delivered.
        self.drain_pending(|name, sent| CallError::ServerGone {
            server: server.clone(),
            name,
            reason: reason.to_string(),
            delivered: sent,
        });
    }

    /// Fails every pending call because the server wants a login: a
    /// request refused with 401 never ran, so each is told to log in and
    /// call again.
    pub(super) fn fail_pending_needs_login(&mut self, reason: &str) {
        let server = self.name.clone();
        self.drain_pending(|name, _| CallError::NeedsLogin {
            server: server.clone(),
            name,
            reason: reason.to_string(),
        });
    }

    /// Empties the pending calls and shuts the lane, answering each call
    /// with `error(its name, sent)` (a lane call was always sent).
    fn drain_pending(&mut self, error: impl Fn(String, bool) -> CallError) {
        self.requests.queued.clear();
        self.requests.progress_routes.clear();
        self.lane.close(|name| error(name, true));
        for (_, pending) in self.requests.pending.drain() {
            if let Pending::Call(PendingCall { call, reply, sent, .. }) = pending {
                reply.send(Err(error(call.name, sent)));
            }
        }
    }
}
