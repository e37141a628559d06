//! What servers ask of their client — elicitation, roots, sampling —
//! answered in one place, under policy.
//!
//! A ServerActor hands every request a server sends it (other than `ping`)
//! to the one [`ClientFeatures`] its Warden shares, with the tool call it
//! belongs to when the actor can tell ([`During`]). Nothing here waits
//! inside the actor: a question is handed to its elicitor in a task of its
//! own, and the answer reaches the server through the `reply` the actor
//! gave (a cast back to itself, so an answer for a connection that has
//! since died goes nowhere).
//!
//! - **Elicitation** (`elicitation/create`): the request is checked (the
//!   schema subset, an http(s) URL), its message and URL redacted of known
//!   secrets, then given to the call's own elicitor (a front client that
//!   can answer) or the host's. Unanswered within
//!   `security.approval_timeout_secs` → `cancel`. Logged when asked and
//!   when answered, with the server and the call.
//! - **Roots** (`roots/list`): during a front client's call that offers
//!   roots, that client's own (asked of it); otherwise the server's own
//!   `roots`, else the config's or host's ([`roots`]).
//! - **Sampling** (`sampling/createMessage`, servers listed in
//!   `[sampling]`): the calling client's model when it offers one, else the
//!   configured endpoint, approved through the PolicyGate ([`sampler`]).
//! - **URL elicitation required** (-32042 on a call): [`ClientFeatures::open_urls`]
//!   puts each URL to the person before the call is made again.
//!
//! A server that floods is bounded ([`throttle`]): one question of each
//! kind at a time per call, a few at a time outside calls, and a rate per
//! server; the refused request gets an error saying which limit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::task::AbortHandle;
use warden_protocol::{ElicitModes, ElicitReply, ElicitRequest, ErrorCode, ErrorObject, Message, Request};

use crate::elicitor::{ElicitationAnswer, ElicitationRequest, Elicitor};

pub(crate) mod roots;
pub(crate) mod sampler;
mod sampling;
mod sampling_tools;
mod throttle;

pub use roots::Root;
use roots::RootsTable;
use sampler::Sampler;
use throttle::{Kind, Throttle};

/// How a server's request is answered: the actor's own cast back to itself.
pub(crate) type Reply = Box<dyn FnOnce(Message) + Send>;

/// How long a calling client may take to list its roots.
const CLIENT_ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Numbers for what waits for a person — approval requests and questions
/// share them, so `warden answer 7` names one thing. One per Warden.
#[derive(Debug, Clone)]
pub(crate) struct WaitIds(pub(crate) Arc<AtomicU64>);

impl WaitIds {
    pub(crate) fn new() -> WaitIds {
        WaitIds(Arc::new(AtomicU64::new(1)))
    }

    pub(crate) fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed)
    }
}

/// What a calling client declared it answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientOffers {
    /// `roots`: its own roots are told to servers asking during its calls.
    pub roots: bool,
    /// `sampling`: servers' sampling requests during its calls go to it.
    pub sampling: bool,
}

/// The client a call is made for, when Warden can ask it things during
/// the call — a front client: its roots, its model. Its answers stand in
/// for the configured ones for requests tied to its own calls only.
pub trait CallingClient: Send + Sync + 'static {
    /// What it declared.
    fn offers(&self) -> ClientOffers;
    /// Sends it the request `method` with `params`: its result, or its
    /// error (or why it could not be asked, as an error).
    fn ask(
        &self,
        method: &'static str,
        params: Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, ErrorObject>> + Send>>;
}

/// What a call carries for the requests its server may make while it runs.
#[derive(Clone, Default)]
pub(crate) struct AskContext {
    /// The agent whose call it is.
    pub(crate) agent: Option<String>,
    /// Who answers its questions before the host does.
    pub(crate) elicitor: Option<Arc<dyn Elicitor>>,
    /// The client it is made for, asked for its roots and model.
    pub(crate) client: Option<Arc<dyn CallingClient>>,
}

impl std::fmt::Debug for AskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let elicitor = self.elicitor.as_ref().map(|elicitor| elicitor.modes());
        f.debug_struct("AskContext").field("agent", &self.agent).field("elicitor", &elicitor).finish()
    }
}

/// The call a server's request belongs to.
#[derive(Clone)]
pub(crate) struct During {
    /// The namespaced tool name.
    pub(crate) tool: String,
    /// The call's ticket: one question of each kind at a time per ticket.
    pub(crate) ticket: u64,
    pub(crate) context: Option<Arc<AskContext>>,
}

/// What answering reads of the policy, now: secrets to redact, how long a
/// person may take. (The rules implement it: this module does not know
/// them, so the rules — which know the Registry, which knows the server
/// actors, which know this module — import nothing back.)
pub(crate) trait AskPolicy: Send + Sync + 'static {
    /// `text` with known secrets and credential shapes redacted, if it had any.
    fn redact(&self, text: &str) -> Option<String>;
    /// `security.approval_timeout_secs`.
    fn answer_within(&self) -> std::time::Duration;
    /// `security.auto_approve`.
    fn auto_approve(&self) -> bool;
}

/// The shared answerer. Built with the Warden; read by every ServerActor.
pub(crate) struct ClientFeatures {
    elicitor: Option<Arc<dyn Elicitor>>,
    roots: watch::Sender<Arc<RootsTable>>,
    rules: Box<dyn AskPolicy>,
    ids: WaitIds,
    throttle: Throttle,
    /// The `[sampling]` model, when configured.
    sampler: Option<Sampler>,
    /// The servers that may sample (`[sampling] servers`): through the
    /// calling client when it can, else the model.
    sampling_servers: Vec<String>,
    /// Counts questions and sampling requests by how they ended.
    metrics: Arc<crate::Metrics>,
}

impl ClientFeatures {
    pub(crate) fn new(
        elicitor: Option<Arc<dyn Elicitor>>,
        roots: RootsTable,
        rules: Box<dyn AskPolicy>,
        ids: WaitIds,
        sampling: (Option<Sampler>, Vec<String>),
        metrics: Arc<crate::Metrics>,
    ) -> ClientFeatures {
        let roots = watch::Sender::new(Arc::new(roots));
        let (sampler, sampling_servers) = sampling;
        let throttle = Throttle::default();
        ClientFeatures { elicitor, roots, rules, ids, throttle, sampler, sampling_servers, metrics }
    }

    /// One sampling request of a listed server: to the calling client's
    /// model when it offers one (its own person in the loop; texts
    /// redacted), else to the `[sampling]` endpoint.
    async fn sample(&self, server: &str, params: Option<Value>, during: Option<&During>) -> Result<Value, ErrorObject> {
        if let Some(client) = calling_client(during).filter(|client| client.offers().sampling) {
            let tool = during.map(|call| call.tool.as_str());
            tracing::info!(server, tool, "a server's sampling request relayed to the calling client");
            let params =
                sampling::redacted_params(params.unwrap_or_else(|| json!({})), &|text| self.rules.redact(text));
            return client.ask("sampling/createMessage", params).await;
        }
        match &self.sampler {
            Some(sampler) => sampler
                .sample(&*self.rules, server, params.as_ref(), during)
                .await
                .map_err(|(code, message)| ErrorObject::new(code, message)),
            None => Err(ErrorObject::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Warden has no model for this request: no [sampling] endpoint is configured and the calling client offers none",
            )),
        }
    }

    /// The PolicyGate, which sampling approvals go through (it starts
    /// after the servers' tree, so it is attached afterwards).
    pub(crate) fn attach_gate(&self, gate: ractor::ActorRef<crate::policy_gate::GateMsg>) {
        if let Some(sampler) = &self.sampler {
            sampler.attach_gate(gate);
        }
    }

    /// The `capabilities` of Warden's `initialize` to `server`: only what
    /// it can answer.
    pub(crate) fn capabilities(&self, server: &str) -> Value {
        let mut capabilities = serde_json::Map::new();
        if let Some(elicitation) = self.elicitor.as_ref().and_then(|elicitor| elicitor.modes().capability()) {
            capabilities.insert("elicitation".into(), elicitation);
        }
        if self.sampling_servers.iter().any(|name| name == server) {
            // `tools` only when the endpoint can call them ([sampling] tools).
            let tools = self.sampler.as_ref().is_some_and(|sampler| sampler.tools());
            capabilities.insert("sampling".into(), if tools { json!({"tools": {}}) } else { json!({}) });
        }
        if self.roots.borrow().declared_for(server) {
            capabilities.insert("roots".into(), json!({"listChanged": true}));
        }
        Value::Object(capabilities)
    }

    /// The roots table; a ServerActor watches it to send
    /// `notifications/roots/list_changed` when its server's roots change.
    pub(crate) fn roots(&self) -> watch::Receiver<Arc<RootsTable>> {
        self.roots.subscribe()
    }

    /// Replaces the roots (a host's `set_roots`, a reload); servers whose
    /// roots changed are told by their actors.
    pub(crate) fn set_roots(&self, change: impl FnOnce(&mut RootsTable)) {
        self.roots.send_modify(|table| change(Arc::make_mut(table)));
    }

    /// Answers one request `server` sent, now or from a task; the handle
    /// aborts that task (the server cancelled, or its connection is gone).
    pub(crate) fn answer(
        self: &Arc<Self>,
        server: &str,
        request: Request,
        during: Option<During>,
        reply: Reply,
    ) -> Option<AbortHandle> {
        let id = request.id.clone();
        let (code, message) = match request.method.as_str() {
            "roots/list" if self.roots.borrow().declared_for(server) => {
                let configured = self.roots.borrow().for_server(server);
                let tool = during.as_ref().map(|call| call.tool.clone());
                let own = calling_client(during.as_ref()).filter(|client| client.offers().roots);
                let Some(own) = own else {
                    tracing::info!(server, tool, count = configured.len(), "roots listed (the configured ones)");
                    reply(Message::result(id, json!({ "roots": configured })));
                    return None;
                };
                // The calling client's own roots, asked of it now; never
                // another client's, and the configured ones if it fails.
                let server = server.to_string();
                let task = tokio::spawn(async move {
                    let asked = own.ask("roots/list", json!({}));
                    let listed = match tokio::time::timeout(CLIENT_ROOTS_WAIT, asked).await {
                        Err(_) => Err(format!("it did not list them within {} s", CLIENT_ROOTS_WAIT.as_secs())),
                        Ok(Err(error)) => Err(format!("it answered {}", error.message)),
                        Ok(Ok(result)) => result
                            .get("roots")
                            .filter(|roots| roots.is_array())
                            .cloned()
                            .ok_or_else(|| "its answer has no `roots` list".to_string()),
                    };
                    let roots = match listed {
                        Ok(roots) => {
                            let count = roots.as_array().map_or(0, Vec::len);
                            tracing::info!(server, tool, count, "roots listed (the calling client's)");
                            roots
                        }
                        Err(problem) => {
                            tracing::warn!(server, tool, "the calling client's roots could not be had ({problem}); the configured ones were told");
                            json!(configured)
                        }
                    };
                    reply(Message::result(id, json!({ "roots": roots })));
                });
                return Some(task.abort_handle());
            }
            "elicitation/create" => match self.admit_question(server, request.params.as_ref(), during.as_ref()) {
                Ok((question, elicitor, permit)) => {
                    let this = self.clone();
                    let server = server.to_string();
                    let task = tokio::spawn(async move {
                        let outcome = this.elicit(elicitor, &server, question, during).await;
                        this.metrics.elicitation(&server, outcome.action());
                        // The place is free before the server hears the
                        // answer: its next question may come at once.
                        drop(permit);
                        reply(Message::result(id, outcome.to_result()));
                    });
                    return Some(task.abort_handle());
                }
                Err(refusal) => refusal,
            },
            "sampling/createMessage" if self.sampling_servers.iter().any(|name| name == server) => {
                let ticket = during.as_ref().map(|call| call.ticket);
                match self.throttle.admit(server, ticket, Kind::Sampling) {
                    Ok(permit) => {
                        let this = self.clone();
                        let server = server.to_string();
                        let task = tokio::spawn(async move {
                            let outcome = this.sample(&server, request.params, during.as_ref()).await;
                            this.metrics.sampling(&server, if outcome.is_ok() { "ok" } else { "failed" });
                            drop(permit);
                            reply(match outcome {
                                Ok(result) => Message::result(id, result),
                                Err(error) => {
                                    tracing::warn!(server, "a sampling request failed: {}", error.message);
                                    Message::error(id, error)
                                }
                            });
                        });
                        return Some(task.abort_handle());
                    }
                    Err(limit) => (ErrorCode::INVALID_REQUEST, limit),
                }
            }
            "sampling/createMessage" => (
                ErrorCode::METHOD_NOT_FOUND,
                format!("server '{server}' may not sample: add it to `[sampling] servers` to let it"),
            ),
            "roots/list" => {
                (ErrorCode::METHOD_NOT_FOUND, "Warden has no roots for this server (set `roots` in the config)".into())
            }
            method => (ErrorCode::METHOD_NOT_FOUND, format!("Warden does not support `{method}`")),
        };
        tracing::warn!(server, method = %request.method, "refused a server's request: {message}");
        match request.method.as_str() {
            "elicitation/create" => self.metrics.elicitation(server, "refused"),
            "sampling/createMessage" => self.metrics.sampling(server, "refused"),
            _ => {}
        }
        reply(Message::error(id, ErrorObject::new(code, message)));
        None
    }

    /// A question that may be asked: well formed, someone to ask in its
    /// mode, within the limits. `Err` is the error the server gets.
    fn admit_question(
        &self,
        server: &str,
        params: Option<&Value>,
        during: Option<&During>,
    ) -> Result<(ElicitRequest, Arc<dyn Elicitor>, throttle::Permit), (ErrorCode, String)> {
        let modes = self.elicitor.as_ref().map(|elicitor| elicitor.modes()).unwrap_or_default();
        if modes == ElicitModes::default() {
            // Not declared: as for any method Warden does not offer.
            let message = "Warden does not offer elicitation: no elicitation handler is attached".to_string();
            return Err((ErrorCode::METHOD_NOT_FOUND, message));
        }
        let question =
            ElicitRequest::parse(params).map_err(|problem| (ErrorCode::INVALID_PARAMS, problem.to_string()))?;
        let Some(elicitor) = self.elicitor_for(&question, during) else {
            let message = format!("Warden cannot answer a {} elicitation (it declared {modes:?})", question.mode());
            return Err((ErrorCode::INVALID_PARAMS, message));
        };
        let permit = self
            .throttle
            .admit(server, during.map(|call| call.ticket), Kind::Elicitation)
            .map_err(|limit| (ErrorCode::INVALID_REQUEST, limit))?;
        Ok((question, elicitor, permit))
    }

    /// A server answered a call "URL elicitation required" (-32042): each
    /// URL it named is put to the person like a URL question. `Ok` once
    /// every one was accepted (the caller then calls again); `Err` says
    /// which was not, and why.
    pub(crate) async fn open_urls(&self, server: &str, during: During, elicitations: &[Value]) -> Result<(), String> {
        if elicitations.is_empty() {
            return Err("the server named no URL to open".into());
        }
        for elicitation in elicitations {
            let mut params = elicitation.clone();
            params["mode"] = json!("url");
            let (question, elicitor, _permit) = self
                .admit_question(server, Some(&params), Some(&during))
                .map_err(|(_, problem)| format!("Warden could not ask the person: {problem}"))?;
            let url = match &question {
                ElicitRequest::Url { url, .. } => url.clone(),
                ElicitRequest::Form { .. } => unreachable!("asked as mode url"),
            };
            match self.elicit(elicitor, server, question, Some(during.clone())).await {
                ElicitReply::Accept(_) => {}
                ElicitReply::Decline => return Err(format!("the person declined to open {url}")),
                ElicitReply::Cancel => {
                    return Err(format!("the person did not open {url} (cancelled or not answered)"))
                }
            }
        }
        Ok(())
    }

    /// The call's own elicitor if it can answer this mode, else the host's.
    fn elicitor_for(&self, question: &ElicitRequest, during: Option<&During>) -> Option<Arc<dyn Elicitor>> {
        let own = during.and_then(|call| call.context.as_ref()).and_then(|context| context.elicitor.clone());
        own.into_iter().chain(self.elicitor.clone()).find(|elicitor| elicitor.modes().allows(question))
    }

    /// Asks `elicitor` and waits for the answer within the approval
    /// timeout; anything but an answer is a `cancel`.
    async fn elicit(
        &self,
        elicitor: Arc<dyn Elicitor>,
        server: &str,
        question: ElicitRequest,
        during: Option<During>,
    ) -> ElicitReply {
        let question = redacted(&*self.rules, question);
        let request = ElicitationRequest {
            id: self.ids.next(),
            server: server.to_string(),
            tool: during.as_ref().map(|call| call.tool.clone()),
            agent: during.as_ref().and_then(|call| call.context.as_ref()).and_then(|context| context.agent.clone()),
            request: question.clone(),
            requested_at: SystemTime::now(),
        };
        let (id, tool) = (request.id, request.tool.clone());
        tracing::info!(
            id,
            server,
            tool,
            mode = question.mode(),
            message = question.message(),
            "a server asks a person"
        );
        let (answer, receiver) = ElicitationAnswer::new(Arc::new(question));
        elicitor.elicit(request, answer);
        let within = self.rules.answer_within();
        let (reply, by) = match tokio::time::timeout(within, receiver).await {
            Ok(Ok(answered)) => answered,
            Ok(Err(_)) => (ElicitReply::Cancel, "nobody (the elicitor dropped the question)".into()),
            Err(_) => {
                let secs = within.as_secs_f64();
                (ElicitReply::Cancel, format!("nobody within {secs} s (security.approval_timeout_secs)"))
            }
        };
        tracing::info!(id, server, tool, action = reply.action(), answered_by = %by, "a server's question answered");
        reply
    }
}

/// The question with known secrets and credential shapes redacted from
/// its message and URL, before a person (or a client) sees it.
fn redacted(rules: &dyn AskPolicy, mut question: ElicitRequest) -> ElicitRequest {
    let scrub = |text: &mut String| {
        if let Some(clean) = rules.redact(text) {
            *text = clean;
        }
    };
    match &mut question {
        ElicitRequest::Form { message, .. } => scrub(message),
        ElicitRequest::Url { message, url, .. } => {
            scrub(message);
            scrub(url);
        }
    }
    question
}

/// The client the call `during` is made for, if Warden can ask it.
fn calling_client(during: Option<&During>) -> Option<Arc<dyn CallingClient>> {
    during.and_then(|call| call.context.as_ref()).and_then(|context| context.client.clone())
}
