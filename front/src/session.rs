//! One client's MCP session on the front, whatever carries it.
//!
//! [`Session::receive`] takes one message from the client. A request runs
//! in a task of its own, so a slow call never holds up the next request;
//! its answer, and any progress it reports, go to the `reply` outbox the
//! transport gave with it (stdout for `warden mcp`, the POST's own stream
//! on HTTP). The task is remembered under the request's id until it ends:
//! `notifications/cancelled` aborts it, and so does [`Session::close`]
//! (the client went away); aborting drops the call's future, which cancels
//! the call upstream (`notifications/cancelled` to the server, the slot
//! freed) and withdraws an approval it waits for. No answer is sent for a
//! cancelled request, as the spec says.
//!
//! What the session keeps for itself — its protocol version, its log
//! level, its resource subscriptions, the names of the prompts it was
//! shown — is its own: one session's level or cancel never touches another
//! session's traffic, though they share the servers.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;
use warden_actors::{ClientOffers, ElicitModes};
use warden_protocol::{ErrorCode, ErrorObject, LOG_LEVEL_KEY};

use super::asking::{AskClient, Asked, ClientAnswer};
use super::view::View;

use super::{Front, LogLevel, TOOLS_PAGE};

mod answers;
mod call;
mod found;
mod handshake;
mod listen;
mod modern;
mod mrtr;
mod progress;
mod record;
mod registered;

pub(crate) use answers::{error, error_answer, result};
pub(crate) use modern::unsupported_version;
use modern::{Envelope, Modern};
pub(crate) use record::Kept;
use registered::Registered;

/// Where a session's messages to the client go.
pub(crate) type Outbox = mpsc::Sender<Value>;

/// How long `tools/list` waits for servers still starting, so a client that
/// connects as the daemon starts sees their tools in its first list.
const FIRST_LIST_WAIT: Duration = Duration::from_secs(10);

/// How long a call waits for its server's first start before trying.
const STARTING_WAIT: Duration = Duration::from_secs(30);

/// One client's session; clones share it.
#[derive(Clone)]
pub(crate) struct Session {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) front: Arc<Front>,
    pub(super) view: View,
    pub(super) state: Mutex<State>,
    /// Who the client is to the front (a connection, or a token at a path),
    /// so that only it may resume its parked calls.
    pub(super) owner: String,
    /// The view it serves, for logs, and its calls' `via`: written once
    /// here, not on every request.
    who: String,
    via: String,
    /// The tools it found with `find_tools`.
    pub(super) found: found::Found,
}

/// What a session keeps of its own.
#[derive(Default)]
pub(super) struct State {
    /// The version agreed at `initialize`.
    pub(super) version: Option<String>,
    /// Set by `logging/setLevel`; no log messages until then.
    pub(super) level: Option<LogLevel>,
    /// (server, the server's URI) this session subscribed to.
    pub(super) subscriptions: HashSet<(String, String)>,
    /// Prompt names as shown → (server, the server's own name).
    pub(super) prompts: HashMap<String, (String, String)>,
    /// Requests running, by their id's JSON text: which registration, and
    /// how to abort it.
    running: HashMap<String, (u64, futures_util::future::AbortHandle)>,
    /// The next registration's number.
    registrations: u64,
    closed: bool,
    /// The elicitation modes the client declared at `initialize`.
    pub(super) elicitation: ElicitModes,
    /// What else the client declared: its roots, its model.
    pub(super) offers: ClientOffers,
    /// Warden's own requests to the client, waiting for its answers.
    asked: Asked,
    /// Tools the client approved for this session, until when (`None`: the
    /// session's end).
    approved: HashMap<String, Option<std::time::Instant>>,
    /// The capabilities the client declared at `initialize`, as it sent them.
    pub(super) declared: Value,
    /// Counts the changes of what a session's record keeps (its level,
    /// subscriptions, approvals), so a replicated front writes the record
    /// again only when it changed.
    pub(super) changes: u64,
}

/// A request being answered.
pub(crate) type Pending = std::pin::Pin<Box<dyn std::future::Future<Output = Option<Value>> + Send>>;

/// What became of one message.
pub(crate) enum Received {
    /// A request: this future makes its answer (`None` when it was
    /// cancelled). Its progress goes to the reply outbox. The transport
    /// runs it where it likes — a task per request on stdio, the POST's
    /// own task on HTTP — and dropping it cancels the request.
    Request(Pending),
    /// A notification or a response: nothing will be answered.
    Accepted,
    /// A response to nothing Warden asked here, or a cancellation of
    /// nothing running here: nothing will be answered, and a replicated
    /// front hands it to its other replicas (`crate::replicas`).
    NotHere,
    /// Answered at once with this (a malformed message).
    Answered(Value),
}

impl Session {
    /// A session of its own stdio connection.
    pub(crate) fn new(front: Arc<Front>, view: View) -> Session {
        Session::numbered(front, view, "stdio connection")
    }

    /// A session whose owner is `what` and a number no other session in
    /// this process has (`stdio connection 3`, `token 'ci' at /mcp, session 4`).
    pub(crate) fn numbered(front: Arc<Front>, view: View, what: &str) -> Session {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let owner = format!("{what} {serial}");
        Session::owned(front, view, owner.clone(), &owner)
    }

    /// A session of `owner`, named `label` in its calls' `via` (the HTTP
    /// face: an identity at a path, the same for each of a 2026-07-28
    /// client's requests).
    pub(crate) fn owned(front: Arc<Front>, view: View, owner: String, label: &str) -> Session {
        let who = view.who();
        let via = format!("front: {label}, {who}");
        let found = found::Found::default();
        Session { inner: Arc::new(Inner { front, view, state: Mutex::new(State::default()), owner, who, via, found }) }
    }

    /// A new session of the same client: owner, view and `via`, nothing
    /// of this one's state.
    pub(crate) fn alike(&self) -> Session {
        let inner = &self.inner;
        Session {
            inner: Arc::new(Inner {
                front: Arc::clone(&inner.front),
                view: inner.view.clone(),
                state: Mutex::new(State::default()),
                owner: inner.owner.clone(),
                who: inner.who.clone(),
                via: inner.via.clone(),
                found: found::Found::default(),
            }),
        }
    }

    /// The elicitation modes its client declared.
    pub(crate) fn elicitation(&self) -> ElicitModes {
        self.state().elicitation
    }

    /// Whether Warden may ask its client something during a call (it
    /// declared elicitation or roots).
    pub(crate) fn may_be_asked(&self) -> bool {
        let state = self.state();
        state.elicitation != ElicitModes::default() || state.offers != ClientOffers::default()
    }

    /// The view this session serves, for logs.
    pub(crate) fn who(&self) -> &str {
        &self.inner.who
    }

    /// Who its client is (a token at an endpoint, a connection) and what
    /// it sees: a call's `via` in the audit record.
    pub(crate) fn via(&self) -> String {
        self.inner.via.clone()
    }

    /// Whether a request of its own is running now.
    pub(crate) fn busy(&self) -> bool {
        !self.state().running.is_empty()
    }

    /// The protocol version agreed at `initialize`, once it was.
    pub(crate) fn version(&self) -> Option<String> {
        self.state().version.clone()
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().expect("session lock")
    }

    /// Takes one message from the client.
    pub(crate) fn receive(&self, message: Value, reply: Outbox) -> Received {
        let Value::Object(mut message) = message else {
            let problem = if message.is_array() {
                "batches are not supported (MCP removed them in 2025-06-18); send one message at a time"
            } else {
                "a JSON-RPC message must be a JSON object"
            };
            return Received::Answered(error(&Value::Null, ErrorCode::INVALID_REQUEST, problem));
        };
        let method = message.get("method").and_then(Value::as_str).map(str::to_string);
        let id = message.remove("id");
        let params = message.remove("params");
        match (method, id) {
            (Some(method), Some(id)) => {
                if !(id.is_string() || id.is_i64() || id.is_u64()) {
                    let problem = "a request's id must be a string or an integer";
                    return Received::Answered(error(&Value::Null, ErrorCode::INVALID_REQUEST, problem));
                }
                // A 2026-07-28 request carries what `initialize` told of
                // old, and is answered on its own, whatever the session.
                let modern = match modern::envelope(params.as_ref()) {
                    Envelope::Legacy => None,
                    Envelope::Modern(modern) => Some(modern),
                    Envelope::Refused(problem) => return Received::Answered(error_answer(&id, problem)),
                };
                // Answered here, not in a task: a request right behind
                // `initialize` must find the session initialized.
                if method == "initialize" && modern.is_none() {
                    let result = self.initialize(params.as_ref().unwrap_or(&Value::Null));
                    return Received::Answered(self::result(id, result));
                }
                Received::Request(self.start(id, method, params, reply, modern))
            }
            (Some(method), None) => {
                if self.notification(&method, params) {
                    Received::Accepted
                } else {
                    Received::NotHere
                }
            }
            // The client's answer to one of Warden's questions.
            (None, Some(id)) => {
                let answer = match message.remove("error") {
                    Some(error) => Err(error),
                    None => Ok(message.remove("result").unwrap_or(Value::Null)),
                };
                if self.state().asked.answered(&id, answer) {
                    Received::Accepted
                } else {
                    tracing::debug!(session = %self.who(), %id, "a response to nothing Warden asked here");
                    Received::NotHere
                }
            }
            (None, None) => {
                Received::Answered(error(&Value::Null, ErrorCode::INVALID_REQUEST, "no `method` and no `id`"))
            }
        }
    }

    /// The request's answer as a future, registered under its id so that
    /// `notifications/cancelled` (or the session closing) can abort it.
    fn start(
        &self,
        id: Value,
        method: String,
        params: Option<Value>,
        reply: Outbox,
        modern: Option<Modern>,
    ) -> Pending {
        let key = id.to_string();
        let session = self.clone();
        let span = super::request_span::request_span(&method, params.as_ref(), self.who());
        let answering = async move {
            match modern {
                Some(modern) => session.answer_modern(&id, &method, params, &reply, &modern).await,
                None => session.answer(&id, &method, params, &reply).await,
            }
        };
        let (answer, abort) = futures_util::future::abortable(tracing::Instrument::instrument(answering, span));
        let serial = {
            let mut state = self.state();
            if state.closed {
                return Box::pin(std::future::ready(None));
            }
            // A client reusing an id in flight: both run, the newer is the
            // one cancellable, and the older's end does not unregister it.
            state.registrations += 1;
            let serial = state.registrations;
            state.running.insert(key.clone(), (serial, abort));
            serial
        };
        let registered = Registered { session: self.clone(), key, serial };
        Box::pin(async move {
            let answer = answer.await.ok();
            drop(registered);
            answer
        })
    }

    /// Takes a client's notification; false for a cancellation of nothing
    /// running here.
    fn notification(&self, method: &str, params: Option<Value>) -> bool {
        match method {
            "notifications/cancelled" => {
                let Some(id) = params.as_ref().and_then(|params| params.get("requestId")) else { return true };
                tracing::debug!(session = %self.who(), %id, "client cancelled a request");
                self.cancel(id)
            }
            "notifications/initialized" | "notifications/roots/list_changed" => true,
            other => {
                tracing::debug!(method = other, "client notification ignored");
                true
            }
        }
    }

    /// Aborts the request `id` if it is still running (cancelled upstream;
    /// no answer is sent); false when it is not running here.
    fn cancel(&self, id: &Value) -> bool {
        let Some((_, task)) = self.state().running.remove(&id.to_string()) else { return false };
        task.abort();
        true
    }

    /// Ends the session: requests running are aborted (cancelled upstream),
    /// its subscriptions withdrawn.
    pub(crate) async fn close(&self) {
        let (running, subscriptions) = {
            let mut state = self.state();
            state.closed = true;
            // Questions still open are cancelled to their servers.
            state.asked = Asked::default();
            (std::mem::take(&mut state.running), std::mem::take(&mut state.subscriptions))
        };
        for (_, task) in running.into_values() {
            task.abort();
        }
        for (server, uri) in subscriptions {
            self.inner.front.unsubscribe(&server, &uri).await;
        }
    }

    /// The answer to one request.
    async fn answer(&self, id: &Value, method: &str, params: Option<Value>, reply: &Outbox) -> Value {
        self.inner.front.metrics.request(method);
        let params = params.unwrap_or_else(|| json!({}));
        if method != "ping" && self.version().is_none() {
            return error(id, ErrorCode::INVALID_REQUEST, "the session is not initialized: send `initialize` first");
        }
        let outcome = match method {
            "ping" => Ok(json!({})),
            method => self.serve(method, params, reply, true).await,
        };
        match outcome {
            Ok(result) => self::result(id.clone(), result),
            Err(problem) => error_answer(id, problem),
        }
    }

    /// What a request of either era asks (`ping`, `initialize` and the
    /// 2026-07-28 methods aside). `asks_client`: the client may be asked
    /// things during its calls (a session that declared it could answer).
    pub(super) async fn serve(
        &self,
        method: &str,
        params: Value,
        reply: &Outbox,
        asks_client: bool,
    ) -> Result<Value, ErrorObject> {
        let log_level = asked_log_level(&params)?;
        // The client's protocol fields are its own with the front; Warden
        // speaks for itself to each server (a legacy one refuses them).
        let mut params = params;
        if let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) {
            meta.retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
        }
        if matches!(method, "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list") {
            self.first_list_wait().await;
        }
        // The call and the primitives are boxed: their futures are kilobytes
        // (a call's holds the whole pipeline's), and every request's future
        // would otherwise be as big, and copied whole each time it is moved
        // on its way to being polled.
        match method {
            "tools/list" => self.list_tools(&params).await,
            "tools/call" => Box::pin(self.call_tool(params, reply, asks_client, log_level)).await,
            "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "prompts/list"
            | "prompts/get"
            | "completion/complete"
            | "logging/setLevel" => Box::pin(self.primitive(method, params)).await,
            _ => {
                Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Warden's front does not serve `{method}`")))
            }
        }
    }

    /// A listing waits (bounded) for servers still starting, so a client
    /// that connects as the daemon starts sees them in its first list.
    pub(super) async fn first_list_wait(&self) {
        let warden = &self.inner.front.warden;
        if !warden.snapshot().is_settled() {
            tracing::info!(session = %self.who(), "a listing waits (up to {} s) for servers still starting", FIRST_LIST_WAIT.as_secs());
            let _ = tokio::time::timeout(FIRST_LIST_WAIT, warden.settled()).await;
        }
    }

    async fn list_tools(&self, params: &Value) -> Result<Value, ErrorObject> {
        let cursor = params.get("cursor").and_then(Value::as_str);
        if cursor.is_none() {
            // A server may have added tools without a word (`relist_unheard`).
            self.inner.front.warden.relist_unheard(None).await;
        }
        let tools =
            self.listed_tools().map_err(|error| ErrorObject::new(ErrorCode::INTERNAL_ERROR, error.to_string()))?;
        let start = match cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().ok().filter(|start| *start <= tools.len()).ok_or_else(|| {
                ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("`cursor` \"{cursor}\" is not one this front gave; list from the start"),
                )
            })?,
        };
        let end = (start + TOOLS_PAGE).min(tools.len());
        let mut result = json!({ "tools": tools[start..end] });
        if end < tools.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        Ok(result)
    }
}

impl AskClient for Session {
    fn ask(&self) -> (Value, tokio::sync::oneshot::Receiver<ClientAnswer>) {
        self.state().asked.ask()
    }

    fn forget(&self, id: &Value) {
        self.state().asked.forget(id);
    }

    fn who(&self) -> &str {
        Session::who(self)
    }

    fn elicitation(&self) -> ElicitModes {
        Session::elicitation(self)
    }

    fn approved(&self, tool: &str) -> bool {
        let now = std::time::Instant::now();
        let mut state = self.state();
        state.approved.retain(|_, until| until.is_none_or(|until| until > now));
        state.approved.contains_key(tool)
    }

    fn approve(&self, tool: &str, until: Option<std::time::Instant>) {
        let mut state = self.state();
        state.approved.insert(tool.to_string(), until);
        state.changes += 1;
    }
}

/// The log level a request asks for its own messages at
/// (`io.modelcontextprotocol/logLevel` in `_meta`), refused when it is not
/// one.
fn asked_log_level(params: &Value) -> Result<Option<LogLevel>, ErrorObject> {
    let Some(asked) = params.get("_meta").and_then(|meta| meta.get(LOG_LEVEL_KEY)) else { return Ok(None) };
    asked.as_str().and_then(LogLevel::parse).map(Some).ok_or_else(|| {
        let message = format!(
            "`_meta` `{LOG_LEVEL_KEY}` is {asked}, which is not a log level: say debug, info, notice, warning, \
             error, critical, alert or emergency"
        );
        ErrorObject::new(ErrorCode::INVALID_PARAMS, message)
    })
}
