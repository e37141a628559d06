//! What each bridge operation does, given a running [`Warden`].
//!
//! The connection layer has already checked the token and decoded the
//! request; this file only answers it. Tools are resolved through the
//! Registry's snapshot (`Warden::tools`): `server` + `tool` means the entry
//! whose server and raw tool name match, so a tool whose name Warden had to
//! adjust is still found by the name its server gave it.
//!
//! A call that arrives while servers are still starting — the CLI's first
//! call right after it started the daemon — waits for them to settle,
//! within the call timeout, instead of failing with "still starting".

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use tokio::time::Instant;
use warden_actors::{ApprovalQueue, CallError, CallOptions, ProfileChoice, ToolEntry, Warden};
use warden_protocol::{
    json_len_hint, BridgeCallTool, BridgeError, BridgeErrorCode as Code, BridgeRequest as Request, CallToolResult,
    ResultFormat, ToolListing,
};

use super::idle::Activity;
use super::lockfile::Lockfile;
use super::names::Names;
use super::questions::Notices;
use super::shutdown::Shutdown;
use super::{approvals, questions};
use crate::render::{self, listing};

/// Everything an operation may need.
pub(crate) struct Ops {
    pub(crate) warden: Warden,
    /// The daemon's own published facts (token included: never log it).
    pub(crate) lockfile: Lockfile,
    pub(crate) started: Instant,
    pub(crate) activity: Arc<Activity>,
    pub(crate) shutdown: Shutdown,
    /// How long a call may wait for servers to finish starting.
    pub(crate) call_timeout: Duration,
    /// How long a connection with nothing in flight may go without a line.
    pub(crate) connection_idle: Duration,
    /// Bridge requests and connections, in the metrics.
    pub(crate) bridge_metrics: Arc<super::bridge_metrics::BridgeMetrics>,
    /// Open connections, for `status`.
    pub(crate) connections: Arc<std::sync::atomic::AtomicUsize>,
    /// (server, tool) → namespaced name, for `call_tool` by server and tool.
    pub(crate) names: Names,
    /// Calls waiting for a person.
    pub(crate) approvals: ApprovalQueue,
    /// The queue is the daemon's approver (the config names none of its own).
    pub(crate) queue_approves: bool,
    /// What this node knows of its cluster, when it is in one.
    pub(crate) cluster: Option<warden_cluster::ClusterLink>,
    /// The MCP front's shared state, for connections upgraded with `mcp`.
    pub(crate) front: Arc<warden_front::Front>,
    /// The HTTP front, when `[front] listen` is set: its address and state.
    pub(crate) http_front: Option<(std::net::SocketAddr, Arc<warden_front::http::HttpFront>)>,
    /// Where `[metrics] listen` bound, for `status`.
    pub(crate) metrics: Option<std::net::SocketAddr>,
    /// `[front] resource_tools`.
    pub(crate) resource_tools: bool,
    /// The longest MCP message a front session reads.
    pub(crate) max_message_bytes: usize,
}

/// An operation's answer: its result, and whether the daemon stops after
/// sending it.
pub(crate) struct Outcome {
    pub(crate) result: Result<Answered, BridgeError>,
    pub(crate) then_shutdown: bool,
}

/// What an operation answers, written straight into its answer line: not
/// first into JSON text of its own, which the line then copied again (a
/// large tool result was held three times over, four with the buffer it
/// grew in).
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Answered {
    /// A value the op built.
    Value(Value),
    /// A tool's result, policed.
    Tool(CallToolResult),
}

impl Answered {
    /// About how long it is as JSON text, to size its line up front.
    pub(crate) fn len_hint(&self) -> usize {
        match self {
            Answered::Value(value) => json_len_hint(value),
            Answered::Tool(result) => result.json_len_hint(),
        }
    }
}

impl Ops {
    /// Runs one operation; `notices` is where a call that asked for them
    /// says what waits for a person before its answer.
    pub(crate) async fn run(&self, request: Request, notices: Notices) -> Outcome {
        let then_shutdown = matches!(request, Request::Shutdown {});
        let result = match request {
            // The hot path: the result goes straight to JSON text.
            Request::CallTool(BridgeCallTool { server, tool, name, args, format, agent, notices: wanted }) => {
                let mut options = CallOptions::default().via("bridge");
                if wanted {
                    // Its questions and approvals still wait in the queue,
                    // and are told of at once.
                    if self.queue_approves {
                        let noticing = approvals::Noticing { queue: self.approvals.clone(), notices: notices.clone() };
                        options = options.approver(Arc::new(noticing));
                    }
                    let noticing = questions::Noticing { queue: self.approvals.clone(), notices };
                    options = options.elicitor(Arc::new(noticing));
                }
                // Boxed, as is every other op: a call's future holds the
                // whole pipeline's (kilobytes), and a request's would be as
                // big and copied whole at each move on its way to a poll.
                Box::pin(self.call_request(name, server, tool, args, format, agent.as_deref(), options)).await
            }
            other => Box::pin(self.dispatch(other)).await.map(Answered::Value),
        };
        Outcome { result, then_shutdown }
    }

    async fn dispatch(&self, request: Request) -> Result<Value, BridgeError> {
        match request {
            Request::Ping {} => Ok(json!({"pong": true, "version": self.lockfile.version, "pid": self.lockfile.pid})),
            Request::Status { settle } => {
                if settle {
                    self.warden.settled().await;
                }
                Ok(self.status())
            }
            Request::ListTools { settle, agent, profile } => {
                if settle {
                    self.warden.settled().await;
                }
                // A client's own listing: what servers added unannounced too.
                self.warden.relist_unheard(None).await;
                if agent.is_none() && profile.is_none() {
                    let tools: Vec<ToolListing> = self.warden.tools().into_iter().map(listing).collect();
                    return Ok(json!({ "tools": tools }));
                }
                // What a model of that agent is handed, as `presented_tools` gives it.
                let scope = self.warden.scope(agent.as_deref()).map_err(call_error)?;
                let profile = match profile.as_deref() {
                    Some(name) => ProfileChoice::Named(name),
                    None => ProfileChoice::Own,
                };
                let presented = scope.presented_tools(profile);
                presented.map(|tools| json!({ "tools": tools, "presented": true })).map_err(call_error)
            }
            Request::ToolPolicies { settle } => {
                if settle {
                    self.warden.settled().await;
                }
                Ok(json!({ "policies": self.warden.tool_policies() }))
            }
            Request::GetSchema { server, tool } => {
                let entry = self.find(&server, &tool).await?;
                Ok(entry.tool.input_schema)
            }
            Request::FindTools { query, limit, agent } => {
                self.settle_within_call_timeout().await;
                let scope = self.warden.scope(agent.as_deref()).map_err(call_error)?;
                let found = scope.find_tools(&query, limit.unwrap_or(5)).map_err(call_error)?;
                Ok(json!({ "tools": found }))
            }
            Request::DescribeTool { name } => {
                self.settle_within_call_timeout().await;
                if self.warden.snapshot().tool(&name).is_none() {
                    self.warden.relist_unheard(Some(&name)).await;
                }
                let entry = self.warden.tools().into_iter().find(|entry| entry.name == name).ok_or_else(|| {
                    BridgeError::new(
                        Code::UNKNOWN_TOOL,
                        format!("unknown tool '{name}'; `warden tools` lists the tools available"),
                    )
                })?;
                Ok(serde_json::to_value(listing(entry)).expect("a tool serialises"))
            }
            Request::Approvals {} => Ok(approvals::list_with(&self.approvals, self.cluster.as_ref()).await),
            Request::Approve { approval, grant } => {
                match approvals::decide_remote(self.cluster.as_ref(), &approval, true, grant.clone(), None).await {
                    Some(outcome) => outcome,
                    None => approvals::approve(&self.approvals, &approval, grant),
                }
            }
            Request::Deny { approval, reason } => {
                match approvals::decide_remote(self.cluster.as_ref(), &approval, false, None, reason.clone()).await {
                    Some(outcome) => outcome,
                    None => approvals::deny(&self.approvals, &approval, reason),
                }
            }
            Request::Pending {} => Ok(questions::pending(&self.approvals, self.cluster.as_ref()).await),
            Request::Tasks {} => Ok(super::left_tasks::list(&self.warden).await),
            Request::FetchTask { key } => self.warden.fetch_left_task(&key).await.map_err(call_error),
            Request::Answer { question, action, content } => {
                match questions::answer_remote(self.cluster.as_ref(), &question, action, content.clone()).await {
                    Some(outcome) => outcome,
                    None => questions::answer(&self.approvals, &question, action, content),
                }
            }
            Request::Reload {} => {
                super::reload::reload(&self.warden, self.cluster.as_ref(), &self.lockfile.config).await
            }
            Request::Reconnect { server } => self.reconnect(&server).await,
            Request::Shutdown {} => Ok(json!({"stopping": true})),
            // `call_tool` is answered by `run`; ops added to the protocol
            // later are unknown to this daemon.
            _ => Err(BridgeError::new(Code::UNKNOWN_OP, "this daemon does not know that op")),
        }
    }

    /// Starts `server` again and answers its state once it settled
    /// (within the call timeout).
    async fn reconnect(&self, server: &str) -> Result<Value, BridgeError> {
        if let Ok(reconnected) = tokio::time::timeout(self.call_timeout, self.warden.reconnect(server)).await {
            reconnected.map_err(call_error)?;
        }
        let status = self.warden.status().into_iter().find(|status| status.name == server);
        Ok(serde_json::to_value(status.map(|status| render::server_report(&status))).expect("a report serialises"))
    }

    async fn call_request(
        &self,
        name: Option<String>,
        server: Option<String>,
        tool: Option<String>,
        args: Option<Value>,
        format: ResultFormat,
        agent: Option<&str>,
        options: CallOptions,
    ) -> Result<Answered, BridgeError> {
        let name = match (name, server, tool) {
            (Some(name), _, _) => name,
            (None, Some(server), Some(tool)) => {
                self.settle_within_call_timeout().await;
                // When it is not registered, let the call say why (server
                // still starting, failed, or no such tool).
                self.names.resolve(&self.warden, &server, &tool).unwrap_or_else(|| format!("{server}__{tool}"))
            }
            _ => {
                let message = "op 'call_tool': name the tool either with `server` and `tool`, or with `name`";
                return Err(BridgeError::new(Code::INVALID_REQUEST, message));
            }
        };
        self.call(agent, &name, args.unwrap_or(Value::Null), format, options).await
    }

    async fn call(
        &self,
        agent: Option<&str>,
        name: &str,
        args: Value,
        format: ResultFormat,
        options: CallOptions,
    ) -> Result<Answered, BridgeError> {
        if self.shutdown.is_triggered() {
            return Err(BridgeError::new(
                Code::SHUTTING_DOWN,
                "the daemon is shutting down; retry and a new one starts",
            ));
        }
        let _call = self.activity.begin_call();
        self.settle_within_call_timeout().await;
        let scope = self.warden.scope(agent).map_err(call_error)?;
        match format {
            ResultFormat::Raw => Ok(Answered::Tool(scope.call(name, args, options).await.map_err(call_error)?)),
            ResultFormat::Text => {
                let rendered = scope.call_text(name, args, options).await.map_err(call_error)?;
                Ok(Answered::Value(json!({"text": rendered.text, "is_error": rendered.is_error})))
            }
        }
    }

    /// The tool `tool` of server `server`, waiting for servers still starting.
    async fn find(&self, server: &str, tool: &str) -> Result<ToolEntry, BridgeError> {
        self.settle_within_call_timeout().await;
        let found = |warden: &Warden| {
            warden.tools().into_iter().find(|entry| entry.server == server && entry.tool.name == tool)
        };
        if found(&self.warden).is_none() {
            // A tool its server added without a word is looked for again.
            self.warden.relist_unheard(Some(&format!("{server}__{tool}"))).await;
        }
        found(&self.warden).ok_or_else(|| {
            BridgeError::new(
                Code::UNKNOWN_TOOL,
                format!("server '{server}' has no tool '{tool}'; `warden tools` lists the tools available"),
            )
        })
    }

    async fn settle_within_call_timeout(&self) {
        // Checked first without a timer: every call passes here.
        if !settled_now(&self.warden) {
            let _ = tokio::time::timeout(self.call_timeout, self.warden.settled()).await;
        }
    }

    fn status(&self) -> Value {
        let statuses = self.warden.status();
        let cluster = self.cluster.as_ref().map(warden_cluster::ClusterLink::view);
        let servers: Vec<_> = statuses
            .iter()
            .map(|status| {
                let mut report = render::server_report(status);
                if let Some(nodes) = cluster.as_ref().and_then(|cluster| cluster.nodes_of(&status.name)) {
                    report.nodes = nodes.to_vec();
                }
                report
            })
            .collect();
        json!({
            "daemon": {
                "pid": self.lockfile.pid,
                "address": self.lockfile.address,
                "socket": self.lockfile.socket,
                "version": self.lockfile.version,
                "config": self.lockfile.config,
                "started_at": self.lockfile.started_at,
                "uptime_secs": self.started.elapsed().as_secs_f64(),
                "idle_timeout_secs": self.activity.timeout().map(|timeout| timeout.as_secs_f64()),
                "idle_secs": self.activity.idle_for().as_secs_f64(),
                "exits_in_secs": self.activity.exits_in().map(|left| left.as_secs_f64()),
                "calls_in_flight": self.activity.calls_in_flight(),
                "connections": self.connections.load(std::sync::atomic::Ordering::Relaxed),
                "front": self.http_front.as_ref().map(|(address, http)| json!({
                    "url": format!("http://{address}/mcp"),
                    "sessions": http.session_count(),
                })),
                "metrics": self.metrics.map(|address| json!({"url": format!("http://{address}/metrics")})),
            },
            "settled": settled_now(&self.warden),
            "readiness": warden_front::observe::readiness(&statuses),
            "servers": servers,
            "cluster": cluster,
        })
    }
}

/// True when no server is still starting, without waiting.
fn settled_now(warden: &Warden) -> bool {
    use std::future::Future as _;
    // `settled` checks the latest snapshot before it waits for a change, so
    // one poll with a waker that does nothing answers "is it settled now?".
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::pin!(warden.settled()).poll(&mut context).is_ready()
}

/// A call's failure, with the code a client matches on.
fn call_error(error: CallError) -> BridgeError {
    let code = match &error {
        CallError::UnknownTool { .. } => Code::UNKNOWN_TOOL,
        CallError::ServerStarting { .. } => Code::SERVER_STARTING,
        CallError::ServerFailed { .. } => Code::SERVER_FAILED,
        CallError::NeedsLogin { .. } => Code::NEEDS_LOGIN,
        CallError::Server { code, .. } if *code == warden_protocol::AUTH_REQUIRED.0 => Code::NEEDS_LOGIN,
        CallError::InvalidArguments { .. } => Code::INVALID_ARGUMENTS,
        CallError::Timeout { .. } | CallError::RestartTimeout { .. } => Code::TIMEOUT,
        CallError::Server { .. } | CallError::InputNotGiven { .. } => Code::SERVER_ERROR,
        CallError::BadResult { .. } => Code::BAD_RESULT,
        CallError::ServerGone { .. }
        | CallError::CrashedMidCall { .. }
        | CallError::StreamBroken { .. }
        | CallError::StreamBrokenRepeatedly { .. }
        | CallError::ServerStopped { .. }
        | CallError::Remote { .. } => Code::SERVER_GONE,
        CallError::UnknownAgent { .. } => Code::UNKNOWN_AGENT,
        CallError::NotAllowed { .. } => Code::NOT_ALLOWED,
        CallError::NoApprover { .. } => Code::NEEDS_APPROVAL,
        CallError::ApprovalDenied { .. } => Code::APPROVAL_DENIED,
        CallError::ApprovalTimedOut { .. } => Code::APPROVAL_TIMED_OUT,
        CallError::SecretInArguments { .. } => Code::SECRET_IN_ARGUMENTS,
        _ => Code::CALL_FAILED,
    };
    BridgeError::new(code, crate::advice::call_error(&error))
}
