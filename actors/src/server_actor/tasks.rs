//! Calls that run as server-side tasks, in both of MCP's designs.
//!
//! **2025-11-25 (experimental)**: a tool listed with
//! `execution.taskSupport: "required"`, on a server that offers tasks for
//! tools (`capabilities.tasks.requests.tools.call`), must be called as a
//! task — with `params.task` — and answers at once with the task it
//! created. The actor asks `tasks/get` at the task's `pollInterval` while
//! it is `working`; once it needs input or has ended, `tasks/result`,
//! whose answer is the tool's result (the server's questions come on the
//! way, as during any call). A tool with `taskSupport: "optional"` is
//! called plainly.
//!
//! **2026-07-28, the `io.modelcontextprotocol/tasks` extension**: when the
//! server offers it (in `server/discover`), Warden declares it takes it,
//! and the server may answer any request with a task (`resultType:
//! "task"`, flat: `taskId`, `status`, `pollIntervalMs`). The actor polls
//! `tasks/get`, which carries the outcome itself: `completed` with the
//! `result`, `failed` with the `error`, `cancelled`; `input_required` with
//! `inputRequests`, gathered as an interim answer's are
//! (`input_required.rs`) and sent with `tasks/update`.
//!
//! To the caller either is one ordinary call: the same deadline, slot and
//! cancel (`tasks/cancel`, when it gives up or its time runs out). Polls
//! come every 0.1 to 10 s (1 s when the server says nothing). A task of a
//! server that outlives Warden's process (HTTP) is in the journal while
//! its call runs (`task_journal.rs`): a daemon that dies loses the call,
//! and the next one can fetch the task's result.

use std::time::Duration;

use ractor::{ActorRef, DerivedActorRef};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use tokio::task::AbortHandle;
use tokio::time::Instant;
use warden_protocol::{ErrorCode, ErrorObject, Message, RequestId};

use super::{spawn_timer, Pending, PendingCall, ServerActorState, ServerEvent, ServerMsg};

/// How often a task is asked about when the server does not say.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// A call's server-side task.
#[derive(Default)]
pub(crate) struct TaskRun {
    /// The task's id, once the server created it.
    id: Option<String>,
    /// How long between two `tasks/get`.
    poll: Duration,
    /// `tasks/result` is out: the server has a request of the call again.
    fetching: bool,
    /// The poll timer, while one is set.
    timer: Option<AbortHandle>,
    /// A task of the 2026-07-28 extension (`tasks/get` carries its end).
    extension: bool,
    /// Gathering what it asked for (extension), while that runs.
    gathering: Option<AbortHandle>,
    /// Tells the journal the call ended, however it ends (dropped with it).
    journaled: Option<Journaled>,
}

/// How the server runs tools as tasks, as its handshake said.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct TaskSupport {
    /// 2025-11-25 `tasks.requests.tools.call`.
    pub(super) tools: bool,
    /// The 2026-07-28 tasks extension, which Warden declares it takes.
    pub(super) extension: bool,
}

impl Drop for TaskRun {
    fn drop(&mut self) {
        for task in [self.timer.take(), self.gathering.take()].into_iter().flatten() {
            task.abort();
        }
    }
}

/// A task in the journal: when its call is dropped, in whatever way it
/// ended, the entry goes. Only a process that dies leaves it.
struct Journaled {
    events: DerivedActorRef<ServerEvent>,
    ticket: u64,
}

impl Drop for Journaled {
    fn drop(&mut self) {
        let _ = self.events.send_message(ServerEvent::TaskEnded { ticket: self.ticket });
    }
}

impl TaskRun {
    /// The params of the call as a task: `task.ttl` the call's timeout.
    pub(super) fn request(&self, params: &str, timeout: Duration) -> Box<RawValue> {
        let mut params = match serde_json::from_str::<Value>(params) {
            Ok(Value::Object(params)) => params,
            _ => Map::new(),
        };
        let ttl = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        params.insert("task".into(), json!({ "ttl": ttl }));
        serde_json::value::to_raw_value(&params).expect("a JSON value always serialises")
    }

    /// The task's id, once created.
    pub(super) fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Whether the server has no request of the call (it is polled).
    pub(super) fn polling(&self) -> bool {
        self.id.is_some() && !self.fetching
    }
}

/// A task just created: its id and how often to ask about it (ms).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    task_id: String,
    #[serde(default)]
    poll_interval: Option<u64>,
}

impl ServerActorState {
    /// Whether `result` created the call's task; if so the call is kept
    /// (under a new key, `call` taken) and its task polled.
    pub(super) fn task_created(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        call: &mut Option<PendingCall>,
        result: &RawValue,
    ) -> bool {
        let Some(waiting) = call.as_ref().filter(|call| call.task.id.is_none()) else { return false };
        let Some((task, extension)) = self.created_task(waiting.call.as_task, result) else { return false };
        let mut call = call.take().expect("checked above");
        call.task.extension = extension;
        let poll = task.poll_interval.map(Duration::from_millis).unwrap_or(DEFAULT_POLL);
        call.task.poll = poll.clamp(Duration::from_millis(100), Duration::from_secs(10));
        tracing::debug!(server = %self.name, tool = %call.call.name, task = %task.task_id, "the call runs as a task");
        if self.connector.survives_warden() {
            let ticket = call.call.ticket;
            let (tool, task_id) = (call.call.name.clone(), task.task_id.clone());
            self.report(ServerEvent::TaskStarted { ticket, tool, task_id, extension });
            call.task.journaled = Some(Journaled { events: self.events.clone(), ticket });
        }
        call.task.id = Some(task.task_id);
        let id = self.rekey(&call);
        self.requests.pending.insert(id, Pending::Call(call));
        self.schedule_poll(myself, id);
        true
    }

    /// The task `result` created, if it is a task's handle: a 2025-11-25
    /// `{task: {…}}` (for a call made as one), or a 2026-07-28 extension's
    /// flat `resultType: "task"`; and whether it is the latter.
    fn created_task(&self, as_task: bool, result: &RawValue) -> Option<(Created, bool)> {
        #[derive(serde::Deserialize)]
        struct Wrapped {
            task: Created,
        }
        if as_task && self.task_support.tools {
            return serde_json::from_str::<Wrapped>(result.get()).ok().map(|wrapped| (wrapped.task, false));
        }
        if !self.task_support.extension || !result.get().contains("\"task\"") {
            return None;
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Flat {
            result_type: String,
            task_id: String,
            #[serde(default)]
            poll_interval_ms: Option<u64>,
        }
        let flat = serde_json::from_str::<Flat>(result.get()).ok().filter(|flat| flat.result_type == "task")?;
        Some((Created { task_id: flat.task_id, poll_interval: flat.poll_interval_ms }, true))
    }

    fn schedule_poll(&mut self, myself: &ActorRef<ServerMsg>, id: i64) {
        let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else { return };
        let timer = spawn_timer(myself, Instant::now() + call.task.poll, move || ServerMsg::PollTask { id });
        call.task.timer = Some(timer.abort_handle());
    }

    /// Asks how the task of call `id` is doing.
    pub(super) fn poll_task(&mut self, id: i64) {
        let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else { return };
        call.task.timer = None;
        let Some(task) = call.task.id.clone() else { return };
        self.request("tasks/get", Some(json!({ "taskId": task })), Pending::TaskStatus { call: id });
    }

    /// What `tasks/get` said of call `id`'s task: working → ask again
    /// later; anything else (input needed, ended, or no answer to make
    /// sense of) → fetch the result.
    pub(super) fn task_status(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: i64,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        let extension = matches!(self.requests.pending.get(&id), Some(Pending::Call(call)) if call.task.extension);
        if extension {
            return self.extension_status(myself, id, outcome);
        }
        let status = outcome.ok().and_then(|result| {
            serde_json::from_str::<Value>(result.get()).ok()?.get("status")?.as_str().map(str::to_string)
        });
        if status.as_deref() == Some("working") {
            return self.schedule_poll(myself, id);
        }
        let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else { return };
        let Some(task) = call.task.id.clone() else { return };
        call.task.fetching = true;
        let params = json!({ "taskId": task });
        let params = self.stamped(Some(params));
        // Under the call's own key: its answer ends the call.
        self.send(Message::request(RequestId::Number(id), "tasks/result", params));
    }
}

/// The 2026-07-28 extension's side: a `tasks/get` that carries the end.
impl ServerActorState {
    fn extension_status(&mut self, myself: &ActorRef<ServerMsg>, id: i64, outcome: Result<Box<RawValue>, ErrorObject>) {
        let state = match outcome {
            Ok(result) => serde_json::from_str::<Map<String, Value>>(result.get()).unwrap_or_default(),
            // Asked again later: one failed poll is not the task's end.
            Err(error) => {
                tracing::debug!(server = %self.name, "tasks/get failed ({}); asking again", error.message);
                return self.schedule_poll(myself, id);
            }
        };
        match state.get("status").and_then(Value::as_str) {
            Some("completed") => {
                let result = state.get("result").cloned().unwrap_or_else(|| json!({}));
                let raw = serde_json::value::to_raw_value(&result).expect("a JSON value always serialises");
                if let Some(Pending::Call(call)) = self.requests.pending.remove(&id) {
                    self.finish_call(myself, call, Ok(raw));
                }
            }
            Some("failed") => {
                let error = state
                    .get("error")
                    .and_then(|error| serde_json::from_value::<ErrorObject>(error.clone()).ok())
                    .unwrap_or_else(|| ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the task failed"));
                if let Some(Pending::Call(call)) = self.requests.pending.remove(&id) {
                    self.finish_call(myself, call, Err(error));
                }
            }
            Some("cancelled") => {
                let message =
                    state.get("statusMessage").and_then(Value::as_str).unwrap_or("the server cancelled the task");
                let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, message.to_string());
                if let Some(Pending::Call(call)) = self.requests.pending.remove(&id) {
                    self.finish_call(myself, call, Err(error));
                }
            }
            Some("input_required") => {
                let requests = state.get("inputRequests").and_then(Value::as_object).cloned().unwrap_or_default();
                self.gather_for_task(myself, id, requests);
            }
            _ => self.schedule_poll(myself, id),
        }
    }

    /// Gathers what the task of call `id` asked for, as an interim
    /// answer's requests are gathered.
    fn gather_for_task(&mut self, myself: &ActorRef<ServerMsg>, id: i64, requests: Map<String, Value>) {
        let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else { return };
        let during = call.during();
        let gather =
            super::input_required::gather(self.client.clone(), self.name.clone(), requests, during, DEFAULT_POLL);
        let actor = myself.clone();
        let task = tokio::spawn(async move {
            let answers = gather.await;
            let _ = actor.cast(ServerMsg::TaskInputsGathered { id, answers });
        });
        call.task.gathering = Some(task.abort_handle());
    }

    /// The input the task of call `id` asked for: sent with `tasks/update`
    /// (then it is asked about again), or the call ends with why not.
    pub(super) fn task_inputs_gathered(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: i64,
        answers: Result<Map<String, Value>, String>,
    ) {
        let Some(Pending::Call(call)) = self.requests.pending.get_mut(&id) else { return };
        call.task.gathering = None;
        let Some(task) = call.task.id.clone() else { return };
        match answers {
            Ok(answers) => {
                let params = json!({"taskId": task, "inputResponses": answers});
                self.request("tasks/update", Some(params), Pending::Unheeded);
                self.schedule_poll(myself, id);
            }
            Err(problem) => {
                self.request("tasks/cancel", Some(json!({ "taskId": task })), Pending::Unheeded);
                if let Some(Pending::Call(call)) = self.requests.pending.remove(&id) {
                    self.input_not_given(call, problem);
                }
            }
        }
    }
}
