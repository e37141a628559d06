//! The MCP front: Warden as one MCP server to any MCP client.
//!
//! One implementation of the server side, two transports:
//!
//! - `session`: one client's MCP session — `initialize`, `tools/*`,
//!   resources, prompts, completions, log levels, cancellations — over a
//!   [`view::View`] of one shared `Warden` handle. Every request runs in its
//!   own task; a `notifications/cancelled` (or the client going away)
//!   aborts it, and dropping the call's future cancels it upstream.
//!   `notifier` sends what changes on the session's own: list changes,
//!   log messages at the level it set, updates of resources it subscribed.
//! - [`lines`]: the session over newline-delimited JSON — `warden mcp`'s
//!   stdin/stdout with `--no-daemon`, and a bridge connection upgraded with
//!   the `mcp` op, which is how `warden mcp` reaches the daemon (it then
//!   only copies bytes).
//! - [`asking`]: a server's question relayed to the client whose call it
//!   is, when the client declared elicitation; the client's answer routed
//!   back by id.
//! - `client_approver`: a call that needs a person, asked of its own
//!   client (approve once, for the session, for N minutes, or deny).
//! - [`http`]: the Streamable HTTP face — the daemon's `[front]`, or a
//!   service a host mounts on its own listener: who is asking and the
//!   Host, Origin and version checks as replaceable parts, sessions with
//!   ids, SSE streams.
//! - MCP 2026-07-28 clients, on both faces: requests in the revision's
//!   `_meta` envelope, answered without a session (`session/modern.rs`,
//!   `session/listen.rs`, `http/stateless.rs`); their calls' questions as
//!   `input_required` answers, the call parked under a sealed
//!   `requestState` until the client comes back (`parked`,
//!   `session/mrtr.rs`).
//!
//! - [`observe`]: `/metrics`, `/healthz` and `/readyz`, on the front's
//!   listener and on `[metrics] listen`; `http_server`: the hyper
//!   listener both serve on (connection caps, header timeouts); [`secret`]:
//!   tokens compared in constant time and made from the kernel's random.
//!
//! The daemon (`warden serve`) and `warden mcp` in the `warden` binary are
//! its users today; a host that embeds Warden can serve MCP with it too.
//!
//! What is shared between sessions is here (`Upstream`): one server
//! connection serves every client, so the log level sent upstream is the
//! most verbose any session asked for, each session then filtering what it
//! gets. Resource subscriptions are counted by Warden itself
//! ([`Warden::hold_resource`]), across every face that subscribes: the
//! server is unsubscribed after the last holder, whoever it is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use warden_actors::{CallOptions, ServerRequest, Warden};
pub(crate) use warden_protocol::LogLevel;

pub mod asking;
mod client_approver;
pub mod http;
mod http_server;
mod json_text;
pub mod lines;
mod metrics;
mod notifier;
pub mod observe;
mod parked;
mod primitives;
pub mod replicas;
mod request_span;
pub mod secret;
mod session;
mod uris;
pub mod view;

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;

/// The most tools in one `tools/list` page; the rest follow by cursor.
pub(crate) const TOOLS_PAGE: usize = 500;

/// What every session of one front shares.
pub struct Front {
    pub(crate) warden: Warden,
    /// Requests and sessions, in the Warden's exposition.
    pub(crate) metrics: Arc<metrics::FrontMetrics>,
    upstream: Mutex<Upstream>,
    /// Calls of 2026-07-28 clients waiting for their input.
    parked: Arc<parked::Parked>,
    /// `warden mcp --no-daemon`: the one client, asked what no call's own
    /// client takes.
    lone_client: Option<Arc<asking::LoneClient>>,
    login_advice: Option<LoginAdvice>,
}

/// What a client is told logs in to a server that waits for one, by the
/// server's name (the daemon: "run `warden login NAME`").
pub type LoginAdvice = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// How a front is made beyond its Warden.
#[derive(Default)]
pub struct FrontOptions {
    /// The front of a process with one client (`warden mcp --no-daemon`):
    /// the client Warden's questions go to when no call's own client
    /// takes them.
    pub lone_client: Option<Arc<asking::LoneClient>>,
    /// Said to clients after "needs a login", in the front's messages and
    /// in the errors of calls to such a server. Without it they are told
    /// only that the server needs a login: the library names no command.
    pub login_advice: Option<LoginAdvice>,
}

/// Aborts a task when dropped: a POST's request task when its stream is
/// dropped (the client left), a parked call when nobody will resume it.
/// The task's future goes with it, which cancels the call upstream; a
/// task that already ended is not touched.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What Warden has asked of each upstream server on the sessions' behalf.
#[derive(Default)]
struct Upstream {
    /// The log level last sent to each server.
    levels: HashMap<String, LogLevel>,
}

impl Front {
    /// The front of `warden`, with its upkeep task (see `Front::upkeep`).
    pub fn new(warden: Warden) -> Arc<Front> {
        Front::with(warden, FrontOptions::default())
    }

    /// The front of `warden` as `options` say.
    pub fn with(warden: Warden, options: FrontOptions) -> Arc<Front> {
        let parked = Arc::new(parked::Parked::new());
        let metrics = warden.metrics().extension(metrics::FrontMetrics::register);
        let FrontOptions { lone_client, login_advice } = options;
        let upstream = Mutex::new(Upstream::default());
        let front = Arc::new(Front { warden, metrics, upstream, parked, lone_client, login_advice });
        tokio::spawn(Front::upkeep(Arc::downgrade(&front)));
        front
    }

    /// "needs a login", and what logs in to `server` when the front was
    /// told.
    pub(crate) fn needs_login(&self, server: &str) -> String {
        match &self.login_advice {
            Some(advice) => format!("needs a login: {}", advice(server)),
            None => "needs a login".to_string(),
        }
    }

    /// What a client reads of a failed call: the error, and what logs in
    /// to its server when a login is what it waits for.
    pub(crate) fn call_error_text(&self, error: &warden_actors::CallError) -> String {
        match (error.needs_login_to(), &self.login_advice) {
            (Some(server), Some(advice)) => format!("{error}; {}", advice(server)),
            _ => error.to_string(),
        }
    }

    /// A restarted server has a new connection that knows nothing of what
    /// Warden asked of the old one: when a server connects again, its log
    /// level is sent again (its subscriptions, by Warden: see
    /// [`Warden::hold_resource`]). Ends with the front or with Warden.
    async fn upkeep(front: std::sync::Weak<Front>) {
        let Some(mut reconnections) = front.upgrade().map(|front| front.warden.reconnections()) else { return };
        while let Some(server) = reconnections.next().await {
            let Some(front) = front.upgrade() else { return };
            front.reapply(&server).await;
        }
    }

    /// Sends `server` again the level the sessions want.
    async fn reapply(&self, server: &str) {
        let level = self.upstream.lock().expect("front lock").levels.get(server).copied();
        let Some(level) = level else { return };
        tracing::info!(server, "server reconnected: sending its log level again");
        let params = json!({ "level": level.name() });
        if let Err(error) =
            self.warden.host().request(server, ServerRequest::SetLogLevel, params, CallOptions::default()).await
        {
            tracing::debug!(server, %error, "setting the log level again failed");
        }
    }

    /// Counts one more session subscribed to `uri` of `server` (the session
    /// has subscribed upstream itself).
    fn count_subscriber(&self, server: &str, uri: &str) {
        self.warden.hold_resource(server, uri);
    }

    /// Counts one subscriber less, unsubscribing upstream after the last
    /// holder (of any face).
    async fn unsubscribe(&self, server: &str, uri: &str) {
        self.warden.release_resource(server, uri).await;
    }

    /// Makes `server` send log messages at `level` or more verbose.
    async fn want_level(&self, server: &str, level: LogLevel) {
        {
            let mut upstream = self.upstream.lock().expect("front lock");
            match upstream.levels.get(server) {
                Some(sent) if *sent <= level => return,
                _ => upstream.levels.insert(server.to_string(), level),
            };
        }
        let params = json!({ "level": level.name() });
        if let Err(error) =
            self.warden.host().request(server, ServerRequest::SetLogLevel, params, CallOptions::default()).await
        {
            tracing::debug!(server, %error, "setting the log level upstream failed");
            self.upstream.lock().expect("front lock").levels.remove(server);
        }
    }
}
