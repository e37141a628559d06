//! Going down: the connection closed, the startup timer ran out, or the
//! server wants a login (OAuth). Every pending call is failed, and the
//! supervisor is told whether a restart can help — a server that needs a
//! login is not restarted: it waits in `needs_login` for `warden login`.

use ractor::ActorRef;
use warden_protocol::{AuthFailure, Connection};

use super::{Phase, ServerActorState, ServerEvent, ServerMsg};
use crate::error::CallError;

impl ServerActorState {
    /// The transport says the server refused Warden's authorization.
    pub(super) fn auth_required(&mut self, myself: &ActorRef<ServerMsg>, failure: AuthFailure) {
        match failure {
            // Before it is ready, more scope means a login like any other.
            AuthFailure::MoreScope(why) if self.phase != Phase::Ready => {
                self.auth_required(myself, AuthFailure::NeedsLogin(why))
            }
            // Only the call that needed more scope fails; the others go on.
            AuthFailure::MoreScope(why) => {
                tracing::warn!(server = %self.name, "MCP '{}': {why}; a new login must grant it", self.name)
            }
            AuthFailure::NeedsLogin(reason) => {
                if self.phase == Phase::Down {
                    return;
                }
                let reason = format!("needs a login: {reason}");
                self.fail_pending_needs_login(&reason);
                self.phase = Phase::Down;
                self.stop_timers();
                self.asks.stop();
                self.report(ServerEvent::NeedsLogin { actor: myself.get_id(), reason });
            }
            AuthFailure::Failed(reason) => self.fail(myself, format!("OAuth failed: {reason}"), true),
        }
    }

    pub(super) fn startup_timed_out(&mut self, myself: &ActorRef<ServerMsg>) {
        if self.phase != Phase::Ready {
            let secs = self.settings.startup_timeout.as_secs_f64();
            let reason = format!("it did not finish its handshake and tool discovery within {secs} s (raise `startup_timeout_secs` if it is just slow)");
            let reason = self.with_stderr_tail(reason);
            // A first start that hangs would hang again; a restart that
            // hangs is one more failed attempt.
            let permanent = self.startup.attempt == 0;
            self.fail(myself, reason, permanent);
        }
    }

    pub(super) fn connection_closed(&mut self, myself: &ActorRef<ServerMsg>, reason: String) {
        if self.phase == Phase::Down {
            return; // Already reported.
        }
        self.closed_while_probing();
        let reason = if self.phase == Phase::Ready {
            format!("the connection closed: {reason}")
        } else {
            self.with_stderr_tail(format!("it stopped before it was ready: {reason}"))
        };
        self.fail(myself, reason, false);
    }

    /// The server is down: fail every pending call, then tell the supervisor
    /// (which stops this actor and decides about a restart). `permanent`
    /// says a restart cannot help.
    pub(super) fn fail(&mut self, myself: &ActorRef<ServerMsg>, reason: String, permanent: bool) {
        if self.phase == Phase::Down {
            return;
        }
        self.fail_pending(&reason);
        self.phase = Phase::Down;
        self.stop_timers();
        self.asks.stop();
        self.report(ServerEvent::Down { actor: myself.get_id(), reason, permanent });
    }

    /// Tells the supervisor; a supervisor that is gone is stopping this
    /// actor too, so there is nobody left to tell.
    pub(super) fn report(&self, event: ServerEvent) {
        let _ = self.events.send_message(event);
    }

    /// A server that died or hung before it was ready usually said why on
    /// stderr: add its last lines to the reason.
    pub(super) fn with_stderr_tail(&self, reason: String) -> String {
        let tail = self.connection.as_ref().map(Connection::stderr_tail).unwrap_or_default();
        if self.phase == Phase::Ready || tail.is_empty() {
            return reason;
        }
        format!("{reason}; its last stderr lines:\n  {}", tail.join("\n  "))
    }
}

impl Drop for ServerActorState {
    /// An actor that ends without `post_stop` (a panic) leaves no lane call
    /// waiting for an answer that would never come.
    fn drop(&mut self) {
        let server = self.name.clone();
        self.lane.close(|name| CallError::ServerGone {
            server: server.clone(),
            name,
            reason: "its actor stopped".into(),
            delivered: true,
        });
    }
}
