//! A client's `tools/call`, of either era: what the call runs with — its
//! progress and (2026-07-28) its own log messages relayed on the request's
//! stream, the client asked the questions its servers put and the
//! approvals it needs when it can answer them — and waiting, bounded, for
//! a server still on its first start.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::mpsc;
use warden_actors::{
    CallError, CallLogs, CallOptions, CallToolResult, ClientOffers, ElicitModes, ServerState, FIND_TOOLS,
};
use warden_protocol::{ErrorCode, ErrorObject};

use super::super::asking::{ClientElicitor, FrontClient};
use super::super::client_approver::ClientApprover;
use super::super::LogLevel;
use super::progress::{relay_logs, relay_progress};
use super::{Outbox, Session, STARTING_WAIT};

impl Session {
    /// `log_level`: the call asks for its own log messages at that level
    /// (2026-07-28's `io.modelcontextprotocol/logLevel`).
    /// `params` are taken whole: the arguments and `_meta` move into the
    /// call, not copied.
    pub(super) async fn call_tool(
        &self,
        params: Value,
        reply: &Outbox,
        asks_client: bool,
        log_level: Option<LogLevel>,
    ) -> Result<Value, ErrorObject> {
        let no_name = || {
            ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "tools/call needs `name`, the tool's name as a string".to_string(),
            )
        };
        let Value::Object(mut params) = params else { return Err(no_name()) };
        let Some(Value::String(name)) = params.remove("name") else { return Err(no_name()) };
        let name = name.as_str();
        let view = &self.inner.view;
        let Some(namespaced) = view.tool_name(name) else {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("unknown tool '{name}': tools/list shows the tools"),
            ));
        };
        let arguments = params.remove("arguments").unwrap_or(Value::Null);
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        let mut options = CallOptions::default().via(self.via());
        let relay = meta.remove("progressToken").map(|token| {
            let (sink, updates) = mpsc::channel(64);
            options = options.clone().progress(sink);
            tokio::spawn(relay_progress(token, updates, reply.clone()))
        });
        let logs = log_level.map(|level| {
            let (sink, messages) = mpsc::channel(64);
            options = options.clone().logs(CallLogs { level, sink });
            let warden = self.inner.front.warden.clone();
            tokio::spawn(relay_logs(warden, namespaced.clone(), messages, reply.clone()))
        });
        // Questions the call's servers ask go to this client if it can answer.
        let modes = if asks_client { self.state().elicitation } else { ElicitModes::default() };
        if modes != ElicitModes::default() {
            let elicitor = ClientElicitor { session: Arc::new(self.clone()), reply: reply.clone(), modes };
            options = options.elicitor(Arc::new(elicitor));
        }
        // Its own roots and model, for servers asking during its calls.
        let offers = if asks_client { self.state().offers } else { ClientOffers::default() };
        if offers != ClientOffers::default() {
            let client = FrontClient { session: Arc::new(self.clone()), reply: reply.clone(), offers };
            options = options.calling_client(Arc::new(client));
        }
        // So are approvals its calls need, when it can answer a form.
        if modes.form {
            options =
                options.approver(Arc::new(ClientApprover { session: Arc::new(self.clone()), reply: reply.clone() }));
        }
        // The options hold the progress and log sinks: they are gone once
        // the call is, which ends the relays.
        let outcome = self.call_waiting_for_start(name, &namespaced, arguments, options.meta(meta)).await;
        for relay in relay.into_iter().chain(logs) {
            // What was reported before the answer arrives before it.
            let _ = relay.await;
        }
        match outcome {
            Ok(result) => {
                if namespaced == FIND_TOOLS {
                    self.found(&result);
                }
                Ok(Value::from(result))
            }
            Err(CallError::UnknownTool { .. }) => Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("unknown tool '{name}': tools/list shows the tools"),
            )),
            Err(error @ CallError::InvalidArguments { .. }) => {
                Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, error.to_string()))
            }
            Err(error) => Ok(Value::from(CallToolResult::error(self.inner.front.call_error_text(&error)))),
        }
    }
}

impl Session {
    /// Runs the call; one that finds its server on its first start waits
    /// for it (bounded) and tries once more, as the daemon's calls do.
    /// A tool of a running server (nearly every call) is called at once:
    /// only a call that may have to be made twice keeps a copy of its
    /// arguments and options for the second time.
    async fn call_waiting_for_start(
        &self,
        name: &str,
        namespaced: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        let view = &self.inner.view;
        let running = {
            let snapshot = self.inner.front.warden.snapshot();
            let server = snapshot.tool(namespaced).and_then(|tool| snapshot.status(&tool.server));
            server.is_some_and(|status| matches!(status.state, ServerState::Running))
        };
        if running {
            return view.call(namespaced, arguments, options).await;
        }
        let outcome = view.call(namespaced, arguments.clone(), options.clone()).await;
        let Err(CallError::ServerStarting { server, .. }) = &outcome else { return outcome };
        self.wait_for_start(server, name).await;
        view.call(namespaced, arguments, options).await
    }

    /// Waits (bounded) until `server` is past its first start.
    pub(crate) async fn wait_for_start(&self, server: &str, what: &str) {
        tracing::info!(session = %self.who(), "'{what}' waits (up to {} s) for server '{server}' to start", STARTING_WAIT.as_secs());
        let started = self.inner.front.warden.wait_for(|snapshot| {
            snapshot.status(server).is_none_or(|status| !matches!(status.state, ServerState::Starting))
        });
        let _ = tokio::time::timeout(STARTING_WAIT, started).await;
    }
}
