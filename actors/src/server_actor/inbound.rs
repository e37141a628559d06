//! What arrives from the transport: answers matched to what is pending
//! (the handshake, a listing, a call, the probe, the subscription),
//! the server's own requests and notifications, and the transport's news.

use ractor::ActorRef;
use serde_json::value::RawValue;
use warden_protocol::{ErrorObject, Message, RawResponse, RequestId, TransportEvent};

use super::{Pending, ServerActorState, ServerEvent, ServerMsg};

impl ServerActorState {
    pub(super) fn transport_event(&mut self, myself: &ActorRef<ServerMsg>, event: TransportEvent) {
        match event {
            TransportEvent::Response(RawResponse { id, result }) => self.receive_response(myself, Some(id), Ok(result)),
            TransportEvent::Message(message) => self.receive(myself, message),
            TransportEvent::RequestDuring { request, during } => {
                self.answer_server_request(myself, request, Some(&during))
            }
            TransportEvent::NotificationDuring { notification, during } => {
                self.receive_notification(notification, Some(&during))
            }
            TransportEvent::Malformed { problem } => {
                tracing::warn!(server = %self.name, "MCP '{}': skipped output that is not an MCP message: {problem}", self.name);
            }
            TransportEvent::Fault { problem } => {
                tracing::warn!(server = %self.name, "MCP '{}': {problem}", self.name);
                self.report(ServerEvent::TransportFaulted { problem });
            }
            TransportEvent::Closed { reason } => self.connection_closed(myself, reason),
            TransportEvent::AuthRequired { failure } => self.auth_required(myself, failure),
            TransportEvent::Batch(events) => {
                for event in events {
                    self.transport_event(myself, event);
                }
            }
        }
    }

    fn receive(&mut self, myself: &ActorRef<ServerMsg>, message: Message) {
        match message {
            Message::Response(response) => {
                // Only from test peers and unusual lines: transports deliver
                // successful responses already raw.
                let outcome = response
                    .outcome
                    .map(|result| serde_json::value::to_raw_value(&result).expect("a JSON value always serialises"));
                self.receive_response(myself, response.id, outcome)
            }
            Message::Request(request) => self.answer_server_request(myself, request, None),
            Message::Notification(notification) => self.receive_notification(notification, None),
        }
    }

    fn receive_response(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        id: Option<RequestId>,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        let Some(id) = id else {
            tracing::warn!(server = %self.name, "MCP '{}': error without a request id: {:?}", self.name, outcome);
            return;
        };
        let RequestId::Number(number) = id else {
            tracing::debug!(server = %self.name, %id, "reply to no pending request; ignored");
            return;
        };
        if matches!(self.requests.pending.get(&number), Some(Pending::Call(call)) if !call.sent) {
            // Warden has not sent that call yet (it waits for a slot), so this
            // cannot be its answer; taking it would also free a slot twice.
            tracing::warn!(server = %self.name, %id, "MCP '{}': reply to a request Warden never sent; ignored", self.name);
            return;
        }
        let Some(pending) = self.requests.pending.remove(&number) else {
            // Most often the answer to a call that already timed out.
            tracing::debug!(server = %self.name, %id, "reply to no pending request; ignored");
            return;
        };
        if matches!(&outcome, Err(error) if error.code == warden_protocol::AUTH_REQUIRED)
            && !matches!(pending, Pending::Call(_))
        {
            // The handshake was refused for want of a login: the transport's
            // `AuthRequired`, right behind this answer, says what to do.
            return;
        }
        match pending {
            Pending::Initialize { forced } => self.initialized(myself, forced, outcome),
            Pending::Discover { version, probe } => self.discovered(myself, version, probe, outcome),
            Pending::Listen => self.listen_ended(myself, number, outcome),
            Pending::TaskStatus { call } => self.task_status(myself, call, outcome),
            Pending::Unheeded => {}
            Pending::ListTools { generation, tools, pages } => {
                self.tools_page(myself, generation, tools, pages, outcome)
            }
            Pending::Call(call) => self.finish_call(myself, call, outcome),
        }
    }
}
