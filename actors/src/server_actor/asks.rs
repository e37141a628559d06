//! The server's own requests to Warden, and the roots it is told of.
//!
//! `ping` is answered here at once. Everything else — `elicitation/create`,
//! `roots/list`, `sampling/createMessage`, methods nobody knows — goes to
//! the Warden's [`ClientFeatures`], with the call it belongs to when the
//! actor can tell: the call whose HTTP stream carried it, or on stdio the
//! only call of this server in flight (with several in flight, none: a
//! guess could show one caller's question to another). The answer comes
//! back as [`ServerMsg::AnswerServer`] and is written if the connection
//! still stands; a server that cancels its request (`notifications/cancelled`)
//! withdraws the question, and so does the end of the connection.

use std::collections::HashMap;

use ractor::ActorRef;
use serde_json::{json, Value};
use tokio::task::{AbortHandle, JoinHandle};
use warden_protocol::{Message, Request, RequestId, Response};

use crate::client_features::During;

use super::{Pending, Phase, ServerActorState, ServerMsg};

/// The server's own requests being answered, and what it knows of roots.
#[derive(Default)]
pub(super) struct Asks {
    /// The server's requests being answered, by their id, for the server's
    /// `notifications/cancelled` and for the actor's end.
    pub(super) running: HashMap<RequestId, AbortHandle>,
    /// Watches the roots table while connected.
    roots_watch: Option<JoinHandle<()>>,
    /// Whether the server was told Warden has roots.
    pub(super) roots_declared: bool,
}

impl Asks {
    /// Stops answering (the connection is gone): every request being
    /// answered is dropped, the roots are no longer watched.
    pub(super) fn stop(&mut self) {
        for (_, task) in self.running.drain() {
            task.abort();
        }
        if let Some(watch) = self.roots_watch.take() {
            watch.abort();
        }
    }
}

impl ServerActorState {
    pub(super) fn answer_server_request(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        request: Request,
        related: Option<&RequestId>,
    ) {
        if request.method == "ping" {
            return self.send(Message::result(request.id, json!({})));
        }
        let during = self.call_for(related);
        let actor = myself.clone();
        let reply = Box::new(move |answer: Message| {
            // An actor that is gone took its connection with it.
            let _ = actor.cast(ServerMsg::AnswerServer(answer));
        });
        let id = request.id.clone();
        if let Some(task) = self.client.answer(&self.name, request, during, reply) {
            self.asks.running.retain(|_, task| !task.is_finished());
            self.asks.running.insert(id, task);
        }
    }

    /// The call a request belongs to: the one it names, or the only one.
    fn call_for(&self, related: Option<&RequestId>) -> Option<During> {
        if let Some(RequestId::Number(id)) = related {
            return match self.requests.pending.get(id) {
                Some(Pending::Call(call)) if call.sent => Some(call.during()),
                _ => self.lane.during(*id),
            };
        }
        if self.lane.in_flight() != 1 {
            return None;
        }
        let mine = self.requests.pending.values().find_map(|pending| match pending {
            Pending::Call(call) if call.sent => Some(call.during()),
            _ => None,
        });
        mine.or_else(|| self.lane.only_call())
    }

    pub(super) fn answer_server(&mut self, answer: Message) {
        if let Message::Response(Response { id: Some(id), .. }) = &answer {
            self.asks.running.remove(id);
        }
        self.send(answer);
    }

    /// The server gave up on one of its requests.
    pub(super) fn server_cancelled(&mut self, params: Option<&Value>) {
        let id = params.and_then(|params| params.get("requestId")).cloned();
        let Some(id) = id.and_then(|id| serde_json::from_value::<RequestId>(id).ok()) else { return };
        if let Some(task) = self.asks.running.remove(&id) {
            tracing::info!(server = %self.name, %id, "the server withdrew its request");
            task.abort();
        }
    }

    /// Follows the roots table while connected; casts `RootsChanged` when
    /// this server's roots differ from what it was last told of.
    pub(super) fn watch_roots(&mut self, myself: &ActorRef<ServerMsg>) {
        let mut table = self.client.roots();
        let name = self.name.clone();
        let (mut current, declared) = {
            let table = table.borrow_and_update();
            (table.for_server(&name), table.declared_for(&name))
        };
        self.asks.roots_declared = declared;
        let actor = myself.clone();
        self.asks.roots_watch = Some(tokio::spawn(async move {
            while table.changed().await.is_ok() {
                let roots = table.borrow_and_update().for_server(&name);
                if roots != current {
                    current = roots;
                    if actor.cast(ServerMsg::RootsChanged).is_err() {
                        return;
                    }
                }
            }
        }));
    }

    /// Tells the server its roots changed, if it was told Warden has roots
    /// and the handshake is done (before it, a server may hear only pings;
    /// it asks for roots after `initialized` anyway).
    /// A modern server is not told: it asks for the roots when it needs
    /// them, in an interim answer, and hears the new ones then.
    pub(super) fn roots_changed(&mut self) {
        if self.asks.roots_declared && !self.is_modern() && matches!(self.phase, Phase::Discovering | Phase::Ready) {
            tracing::info!(server = %self.name, "roots changed; telling the server");
            self.send(Message::notification("notifications/roots/list_changed", None));
        }
    }
}
