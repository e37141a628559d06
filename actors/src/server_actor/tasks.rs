//! Tools that run as tasks (MCP 2025-11-25, experimental): a tool listed
//! with `execution.taskSupport: "required"`, on a server that offers
//! tasks for tools (`capabilities.tasks.requests.tools.call`), must be
//! called as a task — with `params.task` — and answers at once with the
//! task it created, not the tool's result.
//!
//! To the caller it stays one ordinary call: the same deadline, slot and
//! cancel. The actor asks `tasks/get` at the task's `pollInterval` (0.1 to
//! 10 s) while it is `working`; once it needs input or has ended, it asks
//! `tasks/result`, whose answer is the tool's result (the server sends
//! its questions on the way, as during any call) and ends the call like
//! any other answer. A caller that gives up, or a deadline that passes,
//! sends `tasks/cancel`. A tool with `taskSupport: "optional"` is called
//! plainly.

use super::*;

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
}

impl Drop for TaskRun {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.abort();
        }
    }
}

impl TaskRun {
    /// The params of the call as a task: `task.ttl` the call's timeout.
    pub(super) fn request(&self, params: &RawValue, timeout: Duration) -> Box<RawValue> {
        let mut params = match serde_json::from_str::<Value>(params.get()) {
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

impl ServerActorState {
    /// Whether `result` created the call's task; if so the call is kept
    /// (under a new key, `call` taken) and its task polled.
    pub(super) fn task_created(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        call: &mut Option<PendingCall>,
        result: &RawValue,
    ) -> bool {
        let waiting = call.as_ref().is_some_and(|call| call.call.as_task && call.task.id.is_none());
        if !waiting || !self.tool_tasks {
            return false;
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Created {
            task: Task,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Task {
            task_id: String,
            #[serde(default)]
            poll_interval: Option<u64>,
        }
        let Ok(Created { task }) = serde_json::from_str::<Created>(result.get()) else { return false };
        let mut call = call.take().expect("checked above");
        let poll = task.poll_interval.map(Duration::from_millis).unwrap_or(DEFAULT_POLL);
        call.task.poll = poll.clamp(Duration::from_millis(100), Duration::from_secs(10));
        tracing::debug!(server = %self.name, tool = %call.call.name, task = %task.task_id, "the call runs as a task");
        call.task.id = Some(task.task_id);
        let id = self.fresh_id();
        if call.call.progress.is_some() {
            self.progress_routes.insert(call.call.ticket, id);
        }
        self.pending.insert(id, Pending::Call(call));
        self.schedule_poll(myself, id);
        true
    }

    fn schedule_poll(&mut self, myself: &ActorRef<ServerMsg>, id: i64) {
        let Some(Pending::Call(call)) = self.pending.get_mut(&id) else { return };
        let timer = spawn_timer(myself, Instant::now() + call.task.poll, move || ServerMsg::PollTask { id });
        call.task.timer = Some(timer.abort_handle());
    }

    /// Asks how the task of call `id` is doing.
    pub(super) fn poll_task(&mut self, id: i64) {
        let Some(Pending::Call(call)) = self.pending.get_mut(&id) else { return };
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
        let status = outcome.ok().and_then(|result| {
            serde_json::from_str::<Value>(result.get()).ok()?.get("status")?.as_str().map(str::to_string)
        });
        if status.as_deref() == Some("working") {
            return self.schedule_poll(myself, id);
        }
        let Some(Pending::Call(call)) = self.pending.get_mut(&id) else { return };
        let Some(task) = call.task.id.clone() else { return };
        call.task.fetching = true;
        let params = json!({ "taskId": task });
        let params = self.stamped(Some(params));
        // Under the call's own key: its answer ends the call.
        self.send(Message::request(RequestId::Number(id), "tasks/result", params));
    }
}
