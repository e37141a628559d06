//! Who answers a server's questions — the [`Elicitor`] a host attaches.
//!
//! A server asks the person something with `elicitation/create`: a form
//! to fill in, or a URL to open. Warden checks the request (the form's
//! schema must be within the subset MCP allows), redacts secrets from its
//! message, and hands an [`ElicitationRequest`] with an
//! [`ElicitationAnswer`] to an elicitor, as it hands approvals to an
//! [`Approver`](crate::Approver). The elicitor answers now, from another
//! task, or from another process (the daemon's queue); an answer that
//! does not fit the form is refused to the answerer (the slot comes back
//! with the reason, to try again), never passed to the server. An answer
//! dropped without a word, or not given within
//! `security.approval_timeout_secs`, is a `cancel`.
//!
//! Who is asked: a call's own elicitor first (a front session whose
//! client can answer elicitations sets one through
//! [`CallOptions::elicitor`](crate::CallOptions::elicitor)), else the
//! host's ([`WardenBuilder::elicitor`](crate::WardenBuilder::elicitor)).
//! Servers are told Warden supports elicitation only when a host's
//! elicitor is attached, in the modes it declares.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use warden_protocol::{url_host, ElicitAnswerError, ElicitModes, ElicitReply, ElicitRequest, FieldKind};

/// A question a server asks, as a person should see it.
#[derive(Debug, Clone)]
pub struct ElicitationRequest {
    /// Its number, for answering from elsewhere (`warden answer 7`); shared
    /// with approval requests, so one number names one thing waiting.
    pub id: u64,
    /// The server asking.
    pub server: String,
    /// The tool call it belongs to (namespaced), when Warden can tell: on
    /// HTTP the request arrives on the call's stream; on stdio, it is the
    /// only call of that server in flight.
    pub tool: Option<String>,
    /// The agent whose call it is, if the host named one.
    pub agent: Option<String>,
    /// What is asked, its message with secrets redacted.
    pub request: ElicitRequest,
    /// When it was asked.
    pub requested_at: SystemTime,
}

impl ElicitationRequest {
    /// What waits, as JSON: the listing `warden pending` prints. Each field
    /// with its title, what it must be, its default and its choices; a URL
    /// with its host (what a person must check before opening it).
    pub fn to_json(&self) -> Value {
        let mut listing = json!({
            "kind": "elicitation",
            "id": self.id,
            "server": self.server,
            "tool": self.tool,
            "agent": self.agent,
            "mode": self.request.mode(),
            "message": self.request.message(),
            "requested_at": self.requested_at.duration_since(SystemTime::UNIX_EPOCH).map_or(0.0, |at| at.as_secs_f64()),
        });
        match &self.request {
            ElicitRequest::Form { schema, .. } => {
                let fields: Vec<Value> = schema
                    .fields
                    .iter()
                    .map(|field| {
                        let choices: Option<Vec<Value>> = match &field.kind {
                            FieldKind::Choice(choices) | FieldKind::MultiChoice { choices, .. } => Some(
                                choices
                                    .iter()
                                    .map(|choice| json!({"value": choice.value, "title": choice.title}))
                                    .collect(),
                            ),
                            _ => None,
                        };
                        json!({
                            "name": field.name,
                            "title": field.title,
                            "description": field.description,
                            "required": field.required,
                            "expects": field.kind.describe(),
                            "default": field.default,
                            "choices": choices,
                        })
                    })
                    .collect();
                listing["fields"] = Value::Array(fields);
            }
            ElicitRequest::Url { url, elicitation_id, .. } => {
                listing["url"] = json!(url);
                listing["host"] = json!(url_host(url));
                listing["elicitation_id"] = json!(elicitation_id);
            }
        }
        listing
    }
}

impl Serialize for ElicitationRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// The reply slot for one question. Dropping it unanswered cancels it.
#[derive(Debug)]
pub struct ElicitationAnswer {
    sender: oneshot::Sender<(ElicitReply, String)>,
    request: Arc<ElicitRequest>,
}

/// An answer that does not fit the question; the slot comes back to try again.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct Refused {
    /// The unanswered slot.
    pub answer: ElicitationAnswer,
    /// What is wrong with the answer.
    pub error: ElicitAnswerError,
}

impl ElicitationAnswer {
    pub(crate) fn new(request: Arc<ElicitRequest>) -> (ElicitationAnswer, oneshot::Receiver<(ElicitReply, String)>) {
        let (sender, receiver) = oneshot::channel();
        (ElicitationAnswer { sender, request }, receiver)
    }

    /// Answers; `answered_by` names who, for the log. An `Accept` of a
    /// form is checked against its schema (empty fields take their
    /// defaults); a URL is accepted with no content.
    pub fn send(self, reply: ElicitReply, answered_by: impl Into<String>) -> Result<(), Box<Refused>> {
        match self.request.check(reply) {
            Ok(reply) => {
                // The server may have given up already; then the answer is moot.
                let _ = self.sender.send((reply, answered_by.into()));
                Ok(())
            }
            Err(error) => Err(Box::new(Refused { answer: self, error })),
        }
    }

    /// Accepts a form with every field's default.
    pub fn accept_defaults(self, answered_by: impl Into<String>) -> Result<(), Box<Refused>> {
        self.send(ElicitReply::Accept(Some(Map::new())), answered_by)
    }

    /// The question this slot answers.
    pub fn request(&self) -> &ElicitRequest {
        &self.request
    }

    /// Whether the server stopped waiting (the time ran out, the server
    /// cancelled, or its connection closed).
    pub fn is_abandoned(&self) -> bool {
        self.sender.is_closed()
    }

    /// Resolves when the server stops waiting: a relay stops asking.
    pub async fn abandoned(&mut self) {
        self.sender.closed().await
    }
}

/// Something that answers servers' questions.
pub trait Elicitor: Send + Sync + 'static {
    /// The modes it can answer; servers are told these.
    fn modes(&self) -> ElicitModes {
        ElicitModes::BOTH
    }

    /// Hands over one question; answer through `answer`, now or later.
    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer);
}

impl<F> Elicitor for F
where
    F: Fn(ElicitationRequest, ElicitationAnswer) + Send + Sync + 'static,
{
    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer) {
        self(request, answer)
    }
}

/// A host's own actor as the elicitor: each question is cast to it as a
/// message made from the request and its answer slot.
pub struct ActorElicitor<M: ractor::Message> {
    actor: ractor::ActorRef<M>,
    modes: ElicitModes,
}

impl<M: ractor::Message> ActorElicitor<M> {
    /// Sends questions of `modes` to `actor`.
    pub fn new(actor: ractor::ActorRef<M>, modes: ElicitModes) -> Self {
        ActorElicitor { actor, modes }
    }
}

impl<M> Elicitor for ActorElicitor<M>
where
    M: ractor::Message + From<(ElicitationRequest, ElicitationAnswer)>,
{
    fn modes(&self) -> ElicitModes {
        self.modes
    }

    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer) {
        // An actor that is gone drops the answer slot: a cancel.
        let _ = self.actor.cast(M::from((request, answer)));
    }
}
