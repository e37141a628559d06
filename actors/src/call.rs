//! The call pipeline: every step of one tool call, in one place.
//!
//! A call runs in the caller's own task, not in an actor: the caller is the
//! one waiting, it knows its deadline, and it holds its call until it ends,
//! so nothing is lost when a server's actor dies with the call in its
//! mailbox, and a call costs at most one mailbox hop (to the server's
//! actor; none down the server's fast lane). Walk
//! one call, `Warden::call_tool("git__status", {})`, through
//! [`CallPath::call`]:
//!
//! 0. **Shape.** The arguments must be a JSON object (null means none).
//!    `describe_tool`, Warden's built-in, is answered here
//!    ([`describe`]).
//! 1. **Resolve** — one read of the Registry's latest snapshot (no actor
//!    asked): the server and the server's own tool name; the tool's
//!    policy, resolved field by field from the config's layers
//!    (`PolicyRules::resolve`, rules in `warden_policy::tool_policy`); the
//!    server's settings and its in-flight slot ([`slots`]), held until the
//!    call ends so a reload can wait for it. The snapshot is held too (an
//!    old one outlives a reload only as long as the calls that read it):
//!    the call borrows its names from it, and while it is still the latest
//!    the first attempt goes by the entry found here instead of looking the
//!    tool up again. A name that cannot be called
//!    says why: unknown, still starting, failed
//!    ([`attempt::unavailable`]).
//! 2. **Admit** ([`admit`]) — the agent's allowlist, leak detection on the
//!    arguments (a secret about to leave stops the call), then approval:
//!    decided here from the PolicyGate's published view when no person is
//!    needed; otherwise one request to the gate, which asks the approver
//!    (dropping the call while it waits withdraws the request).
//! 3. **Attempt** ([`attempt`]) — send to the server (down its fast lane,
//!    written by this task and answered by the transport's reader, when
//!    the call needs nothing of its actor; else to the actor) and wait,
//!    within the call's deadline: through restarts (the snapshot says
//!    `restarting`: wait for the next one), repeating a call that never
//!    reached a crashed process, and one that did only when the tool is
//!    safe to repeat (`retry_after_crash`). Dropping the call's future
//!    cancels it: the server gets `notifications/cancelled`, the in-flight
//!    slot is freed at once, a late answer is ignored. Progress
//!    notifications go to the caller's sink ([`crate::progress`]).
//! 4. **Police** ([`police`]) — leak detection on the result: secrets
//!    redacted in place, or the result withheld under `leaks = "block"`.
//!
//! Output shaping for a model (`Scope::call_text`: images summarised, cut at
//! `output_limit_bytes`) is the handle's, on top of a policed result.

use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument as _;

use ractor::ActorRef;
use serde_json::{Map, Value};
use tokio::sync::watch;
use warden_protocol::{json_kind, run_heavy, CallToolResult};

use crate::approver::Approver;
use crate::audit::{self, AuditDraft, AuditSink, LeakNote};
use crate::client_features::{AskContext, CallingClient, ClientFeatures, During};
use crate::elicitor::Elicitor;
use crate::error::CallError;
use crate::metrics::{CallRecord, Metrics, Outcome};
use crate::policy_gate::{GateMsg, GateView};
use crate::policy_rules::PolicyRules;
use crate::progress::{CallLogs, ProgressSink};
use crate::registry::Snapshot;
use crate::tickets::fresh_ticket;
use crate::tool_search;

pub(crate) mod admit;
mod attempt;
pub(crate) mod describe;
pub(crate) mod forward;
mod oauth_leaks;
mod police;
pub(crate) mod relist;
pub(crate) mod slots;

pub(crate) use attempt::unavailable;
use slots::{Slot, Slots};

/// How one call is made, beyond its name and arguments.
///
/// ```
/// # use std::time::Duration;
/// # use warden_actors::CallOptions;
/// let (progress, _updates) = tokio::sync::mpsc::channel(16);
/// let options = CallOptions::default().timeout(Duration::from_secs(5)).progress(progress);
/// ```
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    timeout: Option<Duration>,
    /// The rest, boxed: most calls set none of it, and a call's future
    /// (moved whole on every call) carries the options.
    more: Option<Box<MoreOptions>>,
}

/// The options a host's plain call does not set.
#[derive(Debug, Clone, Default)]
struct MoreOptions {
    meta: Map<String, Value>,
    progress: Option<ProgressSink>,
    logs: Option<CallLogs>,
    elicitor: Option<CallElicitor>,
    approver: Option<CallApprover>,
    client: Option<CallClient>,
    via: Option<String>,
}

/// The calling client (a newtype for `Debug`).
#[derive(Clone)]
struct CallClient(Arc<dyn CallingClient>);

impl std::fmt::Debug for CallClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CallClient({:?})", self.0.offers())
    }
}

/// A call's own approver (a newtype for `Debug`).
#[derive(Clone)]
struct CallApprover(Arc<dyn Approver>);

impl std::fmt::Debug for CallApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallApprover")
    }
}

/// A call's own elicitor (a newtype for `Debug`).
#[derive(Clone)]
struct CallElicitor(Arc<dyn Elicitor>);

impl std::fmt::Debug for CallElicitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CallElicitor({:?})", self.0.modes())
    }
}

impl CallOptions {
    /// The timeout set with [`CallOptions::timeout`], if one was.
    pub(crate) fn chosen_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Ends the call after `timeout` instead of the tool's own timeout
    /// (`timeout_secs` in policy, else the server's `call_timeout_secs`).
    pub fn timeout(mut self, timeout: Duration) -> CallOptions {
        self.timeout = Some(timeout);
        self
    }

    /// Sends `meta` to the server as the request's `_meta` (a front passes
    /// its client's on). Warden's own `progressToken` wins over one here.
    pub fn meta(mut self, meta: Map<String, Value>) -> CallOptions {
        if !meta.is_empty() || self.more.is_some() {
            self.more_mut().meta = meta;
        }
        self
    }

    /// Asks the server for progress and sends each report to `sink`.
    pub fn progress(mut self, sink: ProgressSink) -> CallOptions {
        self.more_mut().progress = Some(sink);
        self
    }

    /// Asks the server for the call's own log messages at `logs.level` and
    /// above (2026-07-28, per request) and sends them to `logs.sink`.
    pub fn logs(mut self, logs: CallLogs) -> CallOptions {
        self.more_mut().logs = Some(logs);
        self
    }

    /// Asks `elicitor` the questions the server puts while this call runs
    /// (in the modes it supports), before the host's elicitor: how a front
    /// relays a server's question to the client whose call it is.
    pub fn elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> CallOptions {
        self.more_mut().elicitor = Some(CallElicitor(elicitor));
        self
    }

    /// Asks `approver`, instead of the host's, when this call needs a
    /// person: how a front asks its own client. The decision is the gate's
    /// as for any approval (timeout, log line); grants still apply first.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> CallOptions {
        self.more_mut().approver = Some(CallApprover(approver));
        self
    }

    /// The client the call is made for: a server asking for roots during
    /// the call is told the client's own (if it offers roots), and a
    /// server's sampling request goes to the client's model (if it offers
    /// sampling) — how a front passes on its client's roots and model.
    pub fn calling_client(mut self, client: Arc<dyn CallingClient>) -> CallOptions {
        self.more_mut().client = Some(CallClient(client));
        self
    }

    /// Says through what the call came (`bridge`, a front session...), for
    /// its audit record.
    pub fn via(mut self, via: impl Into<String>) -> CallOptions {
        self.more_mut().via = Some(via.into());
        self
    }

    /// What the call's server requests are answered with.
    fn ask_context(&self, caller: Caller<'_>) -> Option<Arc<AskContext>> {
        let more = self.more();
        let elicitor = more.elicitor.as_ref().map(|elicitor| elicitor.0.clone());
        let client = more.client.as_ref().map(|client| client.0.clone());
        if caller.is_none() && elicitor.is_none() && client.is_none() {
            return None;
        }
        Some(Arc::new(AskContext { agent: caller.map(str::to_string), elicitor, client }))
    }

    /// The options beyond the timeout (all unset when none was given).
    fn more(&self) -> &MoreOptions {
        static UNSET: std::sync::LazyLock<MoreOptions> = std::sync::LazyLock::new(MoreOptions::default);
        self.more.as_deref().unwrap_or(&UNSET)
    }

    /// The options beyond the timeout, to be set.
    fn more_mut(&mut self) -> &mut MoreOptions {
        self.more.get_or_insert_with(Box::default)
    }
}

/// Who a call is made for: the host itself (every tool) or one agent
/// (its allowlist and auto-approval apply).
pub(crate) type Caller<'a> = Option<&'a str>;

/// What the call path reads. Owned by the `Warden` handle; every field is
/// a published value or an actor address, so calls never contend.
pub(crate) struct CallPath {
    /// The Registry's latest snapshot: names, servers, states.
    pub(crate) snapshot: watch::Receiver<Arc<Snapshot>>,
    /// Each server's settings and calls in flight; replaced by a reload.
    pub(crate) slots: watch::Sender<Arc<Slots>>,
    /// The config's policy sections, compiled; replaced by a reload.
    pub(crate) rules: watch::Sender<Arc<PolicyRules>>,
    /// Grants, session auto-approval, approvals in waiting.
    pub(crate) gate: ActorRef<GateMsg>,
    /// What the gate last published.
    pub(crate) gate_view: watch::Receiver<Arc<GateView>>,
    /// Who asks the person what servers need (a URL opened, for one).
    pub(crate) client: Arc<ClientFeatures>,
    /// Where every call is counted.
    pub(crate) metrics: Arc<Metrics>,
    /// Where every call is recorded, when the host keeps an audit log.
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    /// The index `find_tools` searches, shared by every caller.
    pub(crate) search: Arc<crate::tool_search::ToolSearch>,
}

impl CallPath {
    /// The tools of `snapshot` that best match `query` for `caller` (its
    /// allowlist applied first).
    pub(crate) fn find_tools(
        &self,
        snapshot: &Snapshot,
        rules: &PolicyRules,
        caller: Caller<'_>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<tool_search::FoundTool>, CallError> {
        let allowed = caller.map(|agent| admit::agent_rules(rules, agent)).transpose()?;
        let allowed = |name: &str| allowed.is_none_or(|rules| rules.allowed_tools.matches(name));
        Ok(self.search.find(snapshot, &allowed, query, limit))
    }

    /// Runs the tool `name` for `caller`, through steps 0–4 above,
    /// counted in the metrics (a call dropped midway as cancelled).
    pub(crate) async fn call(
        &self,
        caller: Caller<'_>,
        name: &str,
        arguments: Value,
        options: CallOptions,
    ) -> Result<CallToolResult, CallError> {
        // `call_tool` is the tool it names: counted, audited and policed
        // as that tool.
        if name == tool_search::CALL_TOOL {
            return match tool_search::called_by(&arguments) {
                Ok((name, arguments)) => Box::pin(self.call(caller, &name, arguments, options)).await,
                Err(mistake) => Ok(CallToolResult::error(mistake)),
            };
        }
        let mut record = CallRecord::begin(&self.metrics);
        if let Some(sink) = &self.audit {
            let scanner = sink.with_arguments().then(|| self.rules.borrow().scanner.clone());
            let mut draft = AuditDraft::new(name, &arguments, scanner.as_ref());
            draft.agent = caller.map(str::to_string);
            draft.via = options.more().via.clone();
            record = record.audited(sink.as_ref(), draft);
        }
        // The call's span: the parent of its approval wait and attempts,
        // and itself a child of the caller's trace when one came along.
        let span = tracing::info_span!(
            "tools/call",
            otel.name = %format_args!("tools/call {name}"),
            mcp.method.name = "tools/call",
            gen_ai.tool.name = %name,
            warden.agent = caller,
            warden.server = tracing::field::Empty,
            warden.outcome = tracing::field::Empty,
        );
        crate::trace_context::continue_trace(&span, &options.more().meta);
        // The options by reference: the steps' future is moved whole on
        // every call, and holding them by value made it larger twice over.
        let result = self.steps(&mut record, caller, name, arguments, &options).instrument(span.clone()).await;
        if let (Err(error), Some(draft)) = (&result, record.draft()) {
            draft.decision = draft.decision.take().or_else(|| audit::decision_of(error));
        }
        let outcome = Outcome::of(&result);
        span.record("warden.outcome", outcome.label());
        record.end(outcome, result.as_ref().err().map(ToString::to_string));
        result
    }

    async fn steps(
        &self,
        record: &mut CallRecord<'_>,
        caller: Caller<'_>,
        name: &str,
        arguments: Value,
        options: &CallOptions,
    ) -> Result<CallToolResult, CallError> {
        // 0. Shape.
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => return Err(CallError::InvalidArguments { name: name.to_string(), found: json_kind(&other) }),
        };
        if self.shut_down() {
            return Err(CallError::ShutDown { name: name.to_string() });
        }
        let rules = self.rules.borrow().clone();
        if name == describe::DESCRIBE_TOOL {
            let asked = arguments.get("tool").and_then(Value::as_str);
            if let Some(asked) = asked.filter(|asked| !self.snapshot.borrow().tools.contains_key(*asked)) {
                Box::pin(relist::relist(&self.snapshot, Some(asked))).await;
            }
            let tools = self.snapshot.borrow().tools();
            return describe::answer(&tools, &rules, caller, &Value::Object(arguments));
        }
        if name == tool_search::FIND_TOOLS {
            let snapshot = self.snapshot.borrow().clone();
            let found = match tool_search::arguments_of(&arguments) {
                Ok((query, limit)) => Ok(self.find_tools(&snapshot, &rules, caller, &query, limit)?),
                Err(mistake) => Err(mistake),
            };
            return Ok(tool_search::answer(found));
        }
        // 1. Resolve, once: the snapshot is held for the whole call, so its
        // names are borrowed, not copied, and the first attempt goes by
        // this entry while the snapshot is still the latest. A name no
        // list has may be a tool its server added unannounced: its list is
        // read again first (boxed: rare, and off every known tool's path).
        admit::check_allowed(&rules, caller, name)?;
        let mut snapshot = self.snapshot.borrow().clone();
        if !snapshot.tools.contains_key(name) {
            Box::pin(relist::relist(&self.snapshot, Some(name))).await;
            snapshot = self.snapshot.borrow().clone();
        }
        let Some(entry) = snapshot.tools.get(name) else { return Err(unavailable(&snapshot, name)) };
        let server = entry.server.as_str();
        let slot = self.slots.borrow().get(server).cloned();
        let call_timeout = slot.as_ref().map_or(warden_config::DEFAULT_CALL_TIMEOUT, |slot| slot.settings.call_timeout);
        let policy = rules.resolve(entry, call_timeout);
        let _in_flight = slot.as_ref().map(Slot::begin_call);
        record.resolved(server, name);
        tracing::Span::current().record("warden.server", server);
        if let Some(draft) = record.draft() {
            draft.policy = Some(policy);
        }
        let settings = slot.map(|slot| slot.settings).unwrap_or_default();
        let timeout = options.timeout.unwrap_or(policy.timeout.value);

        // 2. Admit, in a block of its own: what only admission needs ends
        // with it, not held in the call's future while the server works.
        let mut leaks = Vec::new();
        let (decision, arguments) = {
            let view = self.gate_view.borrow().clone();
            let approver = options.more().approver.as_ref().map(|approver| approver.0.clone());
            let called = admit::Called { name, server, agent: caller, approver };
            let arguments = Value::Object(arguments);
            let tokens = oauth_leaks::scanner_for(oauth_leaks::all(&self.slots.borrow()), &arguments);
            let admitted =
                admit::admit(&rules, tokens.as_ref(), &view, &self.gate, &called, &arguments, &policy, &mut leaks);
            let admitted = admitted.await;
            let Value::Object(arguments) = arguments else { unreachable!("made an object above") };
            (admitted, arguments)
        };
        self.noted(record, &mut leaks);
        let decision = decision?;
        if let Some(draft) = record.draft() {
            draft.decision = Some(decision);
        }

        // 3. Attempt; a server that needs a URL opened first (-32042) has
        // the person asked, and the call made again once.
        let asks = options.ask_context(caller);
        let resolved = attempt::Resolved { snapshot: &snapshot, entry };
        let attempt = attempt::Attempt { name, resolved, settings: &settings, timeout, options, asks };
        let result = match attempt::run(&self.snapshot, &attempt, &arguments).await {
            // Boxed: rare, and its futures would otherwise make every
            // call's future larger (it is moved on every call).
            Err(error @ CallError::UrlElicitationRequired { .. }) => {
                Box::pin(self.after_urls_opened(error, &attempt, &arguments)).await?
            }
            other => other?,
        };

        // 4. Police (a large result's scan off the worker: `run_heavy`).
        let result = run_heavy(result.json_len_hint(), || {
            police::police_result(&rules.scanner, &policy, name, result, &mut leaks)
        });
        let own = settings.oauth.as_ref().map(|authorizer| oauth_leaks::of(server, authorizer)).unwrap_or_default();
        let result = match oauth_leaks::scanner_for(own, &result) {
            Some(tokens) => police::police_result(&tokens, &policy, name, result, &mut leaks),
            None => result,
        };
        self.noted(record, &mut leaks);
        Ok(result)
    }

    /// A server that needs URLs opened first (-32042): the person is asked
    /// to open them, then the call is made again, once.
    async fn after_urls_opened(
        &self,
        error: CallError,
        attempt: &attempt::Attempt<'_>,
        arguments: &Map<String, Value>,
    ) -> Result<CallToolResult, CallError> {
        let CallError::UrlElicitationRequired { server, name, message, elicitations } = error else {
            return Err(error);
        };
        tracing::info!(server = %server, tool = %name, "the server needs a URL opened first: {message}");
        let during = During { tool: name.clone(), ticket: fresh_ticket(), context: attempt.asks.clone() };
        if let Err(outcome) = self.client.open_urls(&server, during, &elicitations).await {
            return Err(CallError::UrlElicitationNotDone { server, name, outcome });
        }
        attempt::run(&self.snapshot, attempt, arguments).await
    }

    /// Counts what leak policing did, and adds it to the audit record.
    fn noted(&self, record: &mut CallRecord<'_>, leaks: &mut Vec<LeakNote>) {
        for leak in leaks.iter() {
            self.metrics.leak(&leak.kind, leak.action);
        }
        match record.draft() {
            Some(draft) => draft.leaks.append(leaks),
            None => leaks.clear(),
        }
    }

    /// True once the Registry is gone: Warden has shut down (the
    /// Registry's snapshot channel closes with it).
    pub(crate) fn shut_down(&self) -> bool {
        self.snapshot.has_changed().is_err()
    }

    /// The output limit of the server behind `name` (the default for an
    /// unknown name).
    pub(crate) fn output_limit(&self, name: &str) -> usize {
        self.snapshot
            .borrow()
            .tools
            .get(name)
            .and_then(|entry| self.slots.borrow().get(&entry.server).map(|slot| slot.settings.output_limit))
            .unwrap_or(warden_policy::DEFAULT_OUTPUT_LIMIT)
    }
}
