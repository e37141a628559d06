//! Asking the front's client: a server's question relayed to the client
//! whose call it is.
//!
//! A client that declared `elicitation` at `initialize` (and in which
//! modes) gets the questions its own calls' servers ask: the call carries a
//! `ClientElicitor` ([`CallOptions::elicitor`](warden_actors::CallOptions::elicitor)),
//! which sends `elicitation/create` on that call's reply path — stdout for
//! `warden mcp`, the POST's own event stream on HTTP, so the question
//! travels with the request it belongs to — and waits for the client's
//! response, which `Session::receive` routes back here by its id.
//! Warden's ids for these requests are strings (`warden-ask-P-N`, `P`
//! random for the process), never mistaken for a client's own, nor for
//! another front replica's question in the same session.
//!
//! The client's answer is checked against the form like any other; one
//! that does not fit is not passed on (the server gets `cancel`, the log
//! says why). When the server stops waiting (its timeout, its cancel, the
//! call's end), the client is sent `notifications/cancelled` for the
//! question. A client that did not declare elicitation is never asked: its
//! calls' questions go to the host's elicitor (the daemon's queue).

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};
use warden_actors::{ElicitModes, ElicitRequest, ElicitationAnswer, ElicitationRequest, Elicitor};
use warden_protocol::{ErrorCode, ErrorObject};

/// Where a session's messages to its client go.
pub(super) type Outbox = mpsc::Sender<Value>;

/// What asking needs of a session (a trait, so that the session, which
/// makes the elicitors, is not imported back).
pub(super) trait AskClient: Send + Sync + 'static {
    /// A fresh id for a request to the client, and where its answer arrives.
    fn ask(&self) -> (Value, oneshot::Receiver<ClientAnswer>);
    /// Stops waiting for the answer to `id`.
    fn forget(&self, id: &Value);
    /// Who the session is, for logs.
    fn who(&self) -> &str;
    /// The elicitation modes its client declared.
    fn elicitation(&self) -> ElicitModes;
    /// Whether the client approved `tool` for this session (or for minutes
    /// that have not run out).
    fn approved(&self, tool: &str) -> bool;
    /// Remembers the client's approval of `tool` until `until` (`None`: for
    /// the session).
    fn approve(&self, tool: &str, until: Option<std::time::Instant>);
}

pub(super) type Session = Arc<dyn AskClient>;

/// What a client answered to one of Warden's requests: its `result`, or
/// its `error`.
pub(super) type ClientAnswer = Result<Value, Value>;

/// Asks one client, on one call's reply path.
pub(super) struct ClientElicitor {
    pub(super) session: Session,
    pub(super) reply: Outbox,
    pub(super) modes: ElicitModes,
}

impl Elicitor for ClientElicitor {
    fn modes(&self) -> ElicitModes {
        self.modes
    }

    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer) {
        let (session, reply) = (self.session.clone(), self.reply.clone());
        tokio::spawn(relay(session, reply, request, answer));
    }
}

/// Sends the question, waits for the client (or for the server to stop
/// waiting), and answers the server.
async fn relay(session: Session, reply: Outbox, request: ElicitationRequest, mut answer: ElicitationAnswer) {
    let params = request.request.to_params();
    tracing::info!(session = %session.who(), question = request.id, "a server's question relayed to the client");
    let Some(outcome) = ask_client(&session, &reply, "elicitation/create", params, answer.abandoned()).await else {
        return;
    };
    let by = format!("the client of front session {}", session.who());
    let reply = match outcome {
        Ok(result) => ElicitRequest::reply_of(&result),
        Err(error) => {
            let who = session.who();
            tracing::warn!(session = %who, question = request.id, %error, "the client refused the question; the server is told `cancel`");
            Ok(warden_actors::ElicitReply::Cancel)
        }
    };
    let refused = match reply {
        Ok(reply) => answer.send(reply, by).err().map(|refused| {
            let refused = *refused;
            (refused.answer, refused.error.to_string())
        }),
        Err(problem) => Some((answer, problem.to_string())),
    };
    if let Some((answer, problem)) = refused {
        tracing::warn!(session = %session.who(), question = request.id, %problem, "the client's answer does not fit the question; the server is told `cancel`");
        let _ = answer.send(warden_actors::ElicitReply::Cancel, "Warden (the client's answer did not fit)");
    }
}

/// Sends the request `method` with `params` to the client and waits for
/// its answer (`Err`: its error; a session that closed first is an error
/// too). `None` when `abandoned` came first (the client is sent
/// `notifications/cancelled`) or the client's stream is gone.
pub(super) async fn ask_client(
    session: &Session,
    reply: &Outbox,
    method: &str,
    params: Value,
    abandoned: impl std::future::Future<Output = ()>,
) -> Option<ClientAnswer> {
    let (id, response) = session.ask();
    let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    if reply.send(message).await.is_err() {
        session.forget(&id);
        return None;
    }
    tokio::select! {
        outcome = response => Some(outcome.unwrap_or_else(|_| Err(json!({"message": "the session closed"})))),
        () = abandoned => {
            session.forget(&id);
            let reason = "the request was withdrawn: Warden stopped waiting for the answer";
            let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": reason}});
            let _ = reply.send(cancelled).await;
            None
        }
    }
}

/// Random for this process: a replica's questions never share an id with
/// another's.
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| crate::secret::random_hex(4).unwrap_or_else(|_| format!("{:x}", std::process::id())))
}

/// Where a session's own requests to its client wait for their answers.
#[derive(Default)]
pub(super) struct Asked {
    next: u64,
    waiting: std::collections::HashMap<String, oneshot::Sender<ClientAnswer>>,
}

impl Asked {
    /// A fresh id, and where its answer will arrive.
    pub(super) fn ask(&mut self) -> (Value, oneshot::Receiver<ClientAnswer>) {
        self.next += 1;
        let id = format!("warden-ask-{}-{}", process_tag(), self.next);
        let (sender, receiver) = oneshot::channel();
        self.waiting.insert(id.clone(), sender);
        (Value::String(id), receiver)
    }

    /// Routes a client's response; false when it answers nothing Warden asked.
    pub(super) fn answered(&mut self, id: &Value, answer: ClientAnswer) -> bool {
        let Some(sender) = id.as_str().and_then(|id| self.waiting.remove(id)) else { return false };
        let _ = sender.send(answer);
        true
    }

    pub(super) fn forget(&mut self, id: &Value) {
        if let Some(id) = id.as_str() {
            self.waiting.remove(id);
        }
    }
}

/// `warden mcp --no-daemon`'s host elicitor: its servers start before its
/// one client connects, so they are told Warden can ask (both modes), and
/// a question no call's own client takes — the client declared no
/// elicitation, or on stdio the question could not be tied to one call —
/// goes to that one client if it declared the mode, else is cancelled with
/// the reason logged. There is no other person to ask in that process.
#[derive(Default)]
pub struct LoneClient {
    bound: std::sync::Mutex<Option<(Session, Outbox)>>,
}

impl LoneClient {
    /// The session (and its outbox) questions go to.
    pub(super) fn bind(&self, session: Arc<dyn AskClient>, outbox: Outbox) {
        *self.bound.lock().expect("lone client lock") = Some((session, outbox));
    }

    /// Forgets the session: it ended, and its outbox must close so that
    /// its writer (and `warden mcp`) can finish.
    pub(super) fn unbind(&self) {
        *self.bound.lock().expect("lone client lock") = None;
    }
}

impl Elicitor for LoneClient {
    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer) {
        let bound = self.bound.lock().expect("lone client lock").clone();
        let Some((session, reply)) = bound.filter(|(session, _)| session.elicitation().allows(&request.request)) else {
            tracing::warn!(question = request.id, server = %request.server, "a server's question was cancelled: the client did not declare elicitation in this mode, and this front has no one else to ask");
            let _ = answer.send(warden_actors::ElicitReply::Cancel, "nobody (the client cannot answer questions)");
            return;
        };
        tokio::spawn(relay(session, reply, request, answer));
    }
}

/// A front client, asked during its own calls for what it declared: its
/// roots (`roots/list`) and its model (`sampling/createMessage`), on the
/// call's reply path.
pub(super) struct FrontClient {
    pub(super) session: Session,
    pub(super) reply: Outbox,
    pub(super) offers: warden_actors::ClientOffers,
}

impl warden_actors::CallingClient for FrontClient {
    fn offers(&self) -> warden_actors::ClientOffers {
        self.offers
    }

    fn ask(
        &self,
        method: &'static str,
        params: Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, ErrorObject>> + Send>> {
        let (session, reply) = (self.session.clone(), self.reply.clone());
        Box::pin(async move {
            match ask_client(&session, &reply, method, params, std::future::pending()).await {
                Some(Ok(result)) => Ok(result),
                Some(Err(error)) => {
                    let code = error.get("code").and_then(Value::as_i64).unwrap_or(-32603) as i32;
                    let message = error.get("message").and_then(Value::as_str).unwrap_or("the client refused");
                    Err(ErrorObject::new(ErrorCode(code), format!("the calling client answered: {message}")))
                }
                None => Err(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "the calling client's stream is gone")),
            }
        })
    }
}
