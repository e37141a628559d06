//! The `Warden` handle: what a host holds.
//!
//! [`Warden::start`] spawns the actor system and returns at once; servers
//! start in the background, concurrently. From then on:
//!
//! - [`Warden::tools`] is a snapshot of the tools of the servers running
//!   right now (a host reads it when a turn starts);
//! - [`Warden::call_tool`] runs one tool by its namespaced name;
//! - [`Warden::status`] tells each server's state and error text;
//! - [`Warden::settled`] waits until no server is still starting (for
//!   one-shot runs that need every tool before their single turn);
//! - [`Warden::reload`] applies a new config while running (see `warden/reload.rs`);
//! - [`Warden::summaries_settled`] waits until every tool that can have a
//!   model-written summary (`[summary]`) has one or was refused;
//! - [`Warden::shutdown`] stops everything and waits for the processes.
//!
//! The handle reads the Registry's latest published snapshot instead of
//! asking an actor, then sends the call straight to the server's actor: one
//! mailbox hop on the way in, none shared between servers.

use std::collections::HashMap;
use std::sync::Arc;

use ractor::{Actor, ActorRef};
use serde_json::{Map, Value};
use tokio::sync::watch;
use warden_policy::RenderedResult;
use warden_protocol::{
    json_kind, CallToolResult, Connector, HttpConnector, HttpSpec, HttpTransport, StdioConnector, StdioSpec,
};

use crate::config::{ServerConfig, WardenConfig};
use crate::error::CallError;
use crate::hub::{Hub, HubArgs, HubMsg, ServerPlan};
use crate::policed_call;
use crate::policy_gate::{GateArgs, GateMsg, GateView, PolicyGate};
use crate::policy_rules::PolicyRules;
use crate::registry::{ServerStatus, Snapshot, ToolEntry};
use crate::routing;
use crate::server_settings::ServerSettings;
use crate::summarizer::{Summarizer, SummarizerArgs, SummarizerMsg, SummarySettings, SummaryView};

mod policy_api;
mod reload;

pub use policy_api::{ToolPolicyRow, DESCRIBE_TOOL};
pub use reload::{ReloadError, ReloadReport};

use reload::{Identity, Slot, Slots};

/// A running Warden.
pub struct Warden {
    hub: ActorRef<HubMsg>,
    hub_task: Option<tokio::task::JoinHandle<()>>,
    snapshot: watch::Receiver<Arc<Snapshot>>,
    /// Each server's settings (timeouts, crash retry) and its calls in
    /// flight, for the call path; replaced whole by a reload.
    settings: watch::Sender<Arc<Slots>>,
    /// What each running server was started from, to tell a reload's
    /// changed servers from its unchanged ones. Also serialises reloads.
    identities: tokio::sync::Mutex<HashMap<String, Identity>>,
    /// The config's policy sections, compiled.
    rules: watch::Sender<Arc<PolicyRules>>,
    /// Grants, session auto-approval, approvals in waiting.
    gate: ActorRef<GateMsg>,
    /// What the gate last published.
    gate_view: watch::Receiver<Arc<GateView>>,
    /// The Summarizer, when `[summary]` is enabled.
    summarizer: Option<ActorRef<SummarizerMsg>>,
    /// What it last published (an empty view when it is not running).
    summary_view: watch::Receiver<Arc<SummaryView>>,
}

/// A server to run, for hosts and tests that bring their own transport.
pub struct ServerSpec {
    /// Its name (the prefix of its tools).
    pub name: String,
    /// How to reach it.
    pub connector: Arc<dyn Connector>,
    /// Its limits.
    pub settings: ServerSettings,
}

/// Why Warden could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// Two servers share a name.
    #[error("two servers are named '{0}'; server names must be unique")]
    DuplicateServer(String),
    /// A server name breaks the naming rules.
    #[error(transparent)]
    BadName(#[from] warden_policy::NameError),
    /// The actor system could not be spawned.
    #[error("Warden's actors could not start: {0}")]
    Spawn(String),
}

impl Warden {
    /// Starts Warden with the servers of a loaded config.
    pub async fn start(config: &WardenConfig) -> Result<Warden, StartError> {
        let summaries = SummarySettings::from_config(&config.summary, &|name| std::env::var(name).ok());
        Self::start_plans(plans_of(config), PolicyRules::from_config(config), summaries).await
    }

    /// Starts Warden with servers reached through the given connectors and
    /// Warden's default policy (no overrides or agents; calls that need
    /// approval are denied until an approver is attached).
    pub async fn start_with(servers: Vec<ServerSpec>) -> Result<Warden, StartError> {
        Self::start_with_rules(servers, PolicyRules::default()).await
    }

    /// Starts Warden with servers reached through the given connectors,
    /// policed by `rules`.
    pub async fn start_with_rules(servers: Vec<ServerSpec>, rules: PolicyRules) -> Result<Warden, StartError> {
        Self::start_with_summaries(servers, rules, None).await
    }

    /// [`Warden::start_with_rules`], writing tool summaries in the
    /// background with `summaries` (none when `None`).
    pub async fn start_with_summaries(
        servers: Vec<ServerSpec>,
        rules: PolicyRules,
        summaries: Option<SummarySettings>,
    ) -> Result<Warden, StartError> {
        let mut plans = Vec::new();
        for spec in servers {
            rules.names.validate_server_name(&spec.name)?;
            if plans.iter().any(|(plan, _): &(ServerPlan, Identity)| plan.name == spec.name) {
                return Err(StartError::DuplicateServer(spec.name));
            }
            let identity = Identity::Connector(spec.connector.clone());
            let plan = ServerPlan { name: spec.name, connector: Ok(spec.connector), settings: spec.settings };
            plans.push((plan, identity));
        }
        Self::start_plans(plans, rules, summaries).await
    }

    async fn start_plans(
        plans: Vec<(ServerPlan, Identity)>,
        rules: PolicyRules,
        summaries: Option<SummarySettings>,
    ) -> Result<Warden, StartError> {
        let identities = plans.iter().map(|(plan, identity)| (plan.name.clone(), identity.clone())).collect();
        let servers: Vec<ServerPlan> = plans.into_iter().map(|(plan, _)| plan).collect();
        let initial = Snapshot::starting(servers.iter().map(|plan| &plan.name), rules.names.clone());
        let settings = servers.iter().map(|plan| (plan.name.clone(), Slot::new(plan.settings.clone()))).collect();
        let settings = watch::Sender::new(Arc::new(settings));
        let identities = tokio::sync::Mutex::new(identities);
        let (publish, snapshot) = watch::channel(Arc::new(initial));
        let (hub, hub_task) = Actor::spawn(None, Hub, HubArgs { servers, publish })
            .await
            .map_err(|error| StartError::Spawn(error.to_string()))?;
        let hub_task = tokio::spawn(async move {
            let _ = hub_task.await;
        });
        let approver = reload::approver_of(rules.approver);
        let (publish_view, gate_view) = watch::channel(Arc::new(GateView::default()));
        let gate_args = GateArgs { approver, approval_timeout: rules.approval_timeout, publish: publish_view };
        let (gate, _) = match Actor::spawn(None, PolicyGate, gate_args).await {
            Ok(spawned) => spawned,
            Err(error) => {
                hub.stop(None);
                return Err(StartError::Spawn(error.to_string()));
            }
        };
        let (publish_summaries, summary_view) = watch::channel(Arc::new(SummaryView::default()));
        let summarizer = match summaries {
            None => None,
            Some(settings) => {
                let args = SummarizerArgs { settings, snapshots: snapshot.clone(), publish: publish_summaries };
                match Actor::spawn(None, Summarizer, args).await {
                    Ok((summarizer, _)) => Some(summarizer),
                    // Summaries are an extra: without them tools show their own first sentences.
                    Err(error) => {
                        tracing::warn!(%error, "tool summaries are off: the summarizer could not start");
                        None
                    }
                }
            }
        };
        let (rules, _) = watch::channel(Arc::new(rules));
        Ok(Warden {
            hub,
            hub_task: Some(hub_task),
            snapshot,
            settings,
            identities,
            rules,
            gate,
            gate_view,
            summarizer,
            summary_view,
        })
    }

    /// The tools of every running server, by name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.snapshot.borrow().tools()
    }

    /// Every configured server's state.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.snapshot.borrow().statuses()
    }

    /// Waits until every server is running or failed.
    pub async fn settled(&self) {
        self.wait_for(Snapshot::is_settled).await;
    }

    /// Waits until the Summarizer has caught up with the current tools:
    /// each has a summary, was refused, or has nothing to summarise. Returns
    /// at once when summaries are off. While the endpoint is unreachable it
    /// does not return; hosts bound it with a timeout.
    pub async fn summaries_settled(&self) {
        if self.summarizer.is_none() {
            return;
        }
        loop {
            let version = self.snapshot.borrow().tools_version;
            let mut view = self.summary_view.clone();
            // An error means the Summarizer is gone: nothing will change any more.
            if view.wait_for(|view| view.tools_version == Some(version) && view.outstanding == 0).await.is_err() {
                return;
            }
            if self.snapshot.borrow().tools_version == version {
                return;
            }
        }
    }

    /// What the Summarizer last published, and every later version: its
    /// summaries, what is outstanding, whether the endpoint is reachable.
    /// Never changes when summaries are off.
    pub fn summary_changes(&self) -> watch::Receiver<Arc<SummaryView>> {
        self.summary_view.clone()
    }

    /// The model-written summary of a tool (by its server and its own
    /// name), if there is one yet.
    pub(crate) fn summary_of(&self, server: &str, tool: &str) -> Option<String> {
        self.summary_view.borrow().summaries.get(&(server.to_string(), tool.to_string())).cloned()
    }

    /// A subscription to changes of the tool table: a host that advertises
    /// tools to a model re-reads [`Warden::tools`] when it fires.
    pub fn tool_changes(&self) -> ToolChanges {
        let mut snapshots = self.snapshot.clone();
        let seen = snapshots.borrow_and_update().tools_version;
        ToolChanges { snapshots, seen }
    }

    /// Waits until `condition` holds for the latest snapshot (checked now
    /// and after every change), e.g. until a tool announced by
    /// `tools/list_changed` is registered. Hosts bound it with a timeout.
    pub async fn wait_for(&self, condition: impl FnMut(&Snapshot) -> bool) {
        let mut snapshot = self.snapshot.clone();
        let mut condition = condition;
        // An error means the Registry is gone: nothing will change any more.
        let _ = snapshot.wait_for(|snapshot| condition(snapshot)).await;
    }

    /// Runs the tool named `name` (`server__tool`) with `arguments`, which
    /// must be a JSON object (or null for none), on the host's own behalf
    /// (no agent allowlist applies; policy, approval and leak detection do).
    /// Waits while the server restarts, repeats a call that never reached a
    /// crashed server, and ends within the tool's timeout whatever happens.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, CallError> {
        self.call_tool_as(None, name, arguments).await
    }

    /// Runs a tool for `agent`: refused unless the agent's `allowed_tools`
    /// covers it, then as [`Warden::call_tool`]. The built-in
    /// [`DESCRIBE_TOOL`] is answered by Warden itself.
    pub async fn call_tool_as(
        &self,
        agent: Option<&str>,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, CallError> {
        let arguments = match arguments {
            Value::Object(map) => Value::Object(map),
            Value::Null => Value::Object(Map::new()),
            other => {
                return Err(CallError::InvalidArguments { name: name.to_string(), found: json_kind(&other) });
            }
        };
        let rules = self.rules.borrow().clone();
        if name == DESCRIBE_TOOL {
            return self.describe_tool_call(&rules, agent, &arguments);
        }
        policed_call::check_allowed(&rules, agent, name)?;
        // Resolved under the borrow: cloning the entry would copy the tool's
        // whole definition on every call.
        let (server, slot, policy) = {
            let snapshot = self.snapshot.borrow();
            let Some(entry) = snapshot.tools.get(name) else { return Err(routing::unavailable(&snapshot, name)) };
            let slot = self.settings.borrow().get(&entry.server).cloned();
            let timeout = slot.as_ref().map_or(crate::config::DEFAULT_CALL_TIMEOUT, |slot| slot.settings.call_timeout);
            (entry.server.clone(), slot, rules.resolve(entry, timeout))
        };
        // Held until the call ends: a reload that removes or restarts the
        // server waits for it (bounded) before stopping the server.
        let _in_flight = slot.as_ref().map(Slot::begin_call);
        let mut settings = slot.map(|slot| slot.settings).unwrap_or_default();
        let view = self.gate_view.borrow().clone();
        let called = policed_call::Called { name, server: &server, agent };
        policed_call::admit(&rules, &view, &self.gate, &called, &arguments, &policy).await?;
        settings.call_timeout = policy.timeout.value;
        let Value::Object(arguments) = arguments else { unreachable!("made an object above") };
        let result = routing::call_tool(&self.snapshot, |_| settings.clone(), name, arguments).await?;
        Ok(policed_call::police_result(&rules, &policy, name, result))
    }

    /// Runs a tool like [`Warden::call_tool`] and renders the result as the
    /// text a model should read: images and audio summarised, embedded
    /// resources as their text, `isError` marked, and at most the server's
    /// output limit (`output_limit_bytes`), cut with a note saying how much.
    pub async fn call_tool_text(&self, name: &str, arguments: Value) -> Result<RenderedResult, CallError> {
        self.call_tool_text_as(None, name, arguments).await
    }

    /// [`Warden::call_tool_text`] for `agent`.
    pub async fn call_tool_text_as(
        &self,
        agent: Option<&str>,
        name: &str,
        arguments: Value,
    ) -> Result<RenderedResult, CallError> {
        let result = self.call_tool_as(agent, name, arguments).await?;
        let value = serde_json::to_value(&result).expect("a tool result always serialises");
        let mut rendered = warden_policy::render_call_result(&value);
        let limit = self
            .snapshot
            .borrow()
            .tools
            .get(name)
            .and_then(|entry| self.settings.borrow().get(&entry.server).map(|slot| slot.settings.output_limit))
            .unwrap_or(warden_policy::DEFAULT_OUTPUT_LIMIT);
        rendered.text = warden_policy::truncate(rendered.text, limit);
        Ok(rendered)
    }

    /// Stops every server, waits for their processes to end, then stops the
    /// actor system.
    pub async fn shutdown(mut self) {
        let _ = self.hub.call(|reply| HubMsg::Shutdown { reply }, None).await;
        self.hub.stop(None);
        self.gate.stop(None);
        if let Some(summarizer) = self.summarizer.take() {
            summarizer.stop(None);
        }
        if let Some(task) = self.hub_task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Warden {
    fn drop(&mut self) {
        // A host that forgot `shutdown` still gets its servers stopped.
        if self.hub_task.is_some() {
            self.hub.stop(None);
            self.gate.stop(None);
            if let Some(summarizer) = &self.summarizer {
                summarizer.stop(None);
            }
        }
    }
}

/// The servers of a config, as the Hub starts them, with what each was
/// started from.
fn plans_of(config: &WardenConfig) -> Vec<(ServerPlan, Identity)> {
    config
        .servers
        .iter()
        .map(|(name, server)| {
            let plan = ServerPlan {
                name: name.clone(),
                connector: connector_for(name, server, config),
                settings: server.settings(config),
            };
            (plan, Identity::of_config(server, config))
        })
        .collect()
}

/// The connector for a configured server, or why there is none yet.
fn connector_for(name: &str, server: &ServerConfig, config: &WardenConfig) -> Result<Arc<dyn Connector>, String> {
    match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut spec = StdioSpec::new(name, command.clone(), server.args.clone());
            spec.env = server.env.clone();
            spec.cwd = server.cwd.clone();
            spec.inherit_env = server.inherit_env;
            spec.pass_env = server.pass_env.clone();
            spec.max_message_bytes = config.max_message_bytes;
            Ok(Arc::new(StdioConnector::new(spec)))
        }
        (None, Some(url)) => {
            let mut spec = HttpSpec::new(name, url.clone());
            spec.headers = server.headers.clone();
            spec.ca_cert = server.ca_cert.clone();
            // Checked at load time.
            spec.transport = server.transport.as_deref().and_then(HttpTransport::parse).unwrap_or_default();
            spec.max_message_bytes = config.max_message_bytes;
            Ok(Arc::new(HttpConnector::new(spec)))
        }
        (None, None) => Err("it has neither `command` nor `url`".into()),
    }
}

/// Fires when the tool table changes: a server came up, restarted with a
/// different list, announced `tools/list_changed`, or failed.
pub struct ToolChanges {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    seen: u64,
}

impl ToolChanges {
    /// Waits for the next change and returns the new tools; `None` once
    /// Warden has shut down. Changes that land together are reported once.
    pub async fn changed(&mut self) -> Option<Vec<ToolEntry>> {
        let seen = self.seen;
        let snapshot = self.snapshots.wait_for(|snapshot| snapshot.tools_version != seen).await.ok()?;
        self.seen = snapshot.tools_version;
        Some(snapshot.tools())
    }
}
