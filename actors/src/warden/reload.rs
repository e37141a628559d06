//! Live config reload: [`Warden::reload`].
//!
//! A reload compares each server of the new config with what its running
//! namesake was started from (its [`Identity`]: everything that reaches the
//! process or the connection — command, args, env after `${VAR}` expansion,
//! cwd, url, headers, certificates, restart and startup settings — but not
//! `default_policy`, which only the call path reads):
//!
//! - *unchanged* servers are not touched: their process, their tools and
//!   their calls in flight go on; when only their tool filters or renames
//!   changed, they list their tools again and the new shaping applies
//!   (`reshaped`);
//! - *removed* servers are withdrawn from the Registry first (their tools
//!   vanish, so no new call reaches them: it is told the tool is unknown),
//!   then given the time their calls in flight need (at most their call
//!   timeout), then stopped;
//! - *changed* servers go the same way and start again with the new config;
//! - *added* servers start, in the background like at start.
//!
//! Policy, agents, profiles and approval mode apply to the next call: the
//! compiled rules are swapped whole. Call timeouts and output limits apply to
//! the next call too (the approval timeout, which the policy gate was
//! started with, is the one exception: it takes a restart). While a changed
//! server is between its old and new process its tools are not listed. The
//! naming rules cannot change: every registered name
//! and every name hosts have cached was built with them, so a reload that
//! changes `[naming]` is refused and the running config stays. Reloads run
//! one at a time.
//!
//! It all runs in the caller's task: the Hub is only asked to start, withdraw
//! and stop servers, and never waits for a server inside `handle`.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::task::JoinSet;

use super::plans::{approver_of, plans_of, Identity};
use super::Warden;
use crate::call::slots::{Slot, Slots};
use crate::client_features::roots::RootsTable;
use crate::hub::{HubMsg, ServerPlan};
use crate::policy_gate::GateMsg;
use crate::policy_rules::PolicyRules;
use crate::server_settings::ServerSettings;
use crate::ServerSpec;
use warden_config::WardenConfig;

/// The longest a reload waits for one removed server's calls in flight.
const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// What a reload did, by server name (each list sorted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReloadReport {
    /// Servers new in the config, now starting.
    pub added: Vec<String>,
    /// Servers gone from the config, now stopped.
    pub removed: Vec<String>,
    /// Servers whose process or connection settings changed, stopped and
    /// starting again.
    pub restarted: Vec<String>,
    /// Servers left running as they were.
    pub unchanged: Vec<String>,
    /// Of the unchanged servers, those whose tool filters or renames
    /// changed: they list their tools again, without a restart.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reshaped: Vec<String>,
}

/// Why a reload was refused; the running config stays in place.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReloadError {
    /// `[naming]` changed.
    #[error(
        "the new config changes `[naming]`, which cannot change while Warden runs (every tool name was built with \
         it); restart Warden to apply it, or put `[naming]` back"
    )]
    NamingChanged,
    /// Two servers share a name.
    #[error("two servers are named '{0}'; server names must be unique")]
    DuplicateServer(String),
    /// A server name breaks the naming rules.
    #[error(transparent)]
    BadName(#[from] warden_policy::NameError),
    /// Warden is shutting down.
    #[error("Warden is shutting down; the reload was not applied")]
    Stopped,
}

impl Warden {
    /// Applies a newly loaded config to the running Warden: added servers
    /// start, removed ones stop once their calls in flight are done
    /// (bounded), changed ones restart, unchanged ones are not touched;
    /// policy, agents and profiles apply to the next call. Hosts see the
    /// tool table change through [`Warden::tool_changes`].
    ///
    /// Returns once removed servers are stopped and added ones are starting
    /// (not started: [`Warden::settled`] waits for that). On an error
    /// nothing was changed.
    pub async fn reload(&self, config: &WardenConfig) -> Result<ReloadReport, ReloadError> {
        let roots = RootsTable::of_config(config);
        self.reload_plans(plans_of(config), PolicyRules::from_config(config), Some(roots)).await
    }

    /// [`Warden::reload`] for hosts that bring their own transports: a
    /// server whose connector is the very same `Arc` as before is
    /// unchanged (its new settings apply to the next call), any other
    /// connector restarts it.
    pub async fn reload_with(&self, servers: Vec<ServerSpec>, rules: PolicyRules) -> Result<ReloadReport, ReloadError> {
        let plans = servers
            .into_iter()
            .map(|spec| {
                let identity = Identity::Connector(spec.connector.clone());
                (ServerPlan { name: spec.name, connector: Ok(spec.connector), settings: spec.settings }, identity)
            })
            .collect();
        self.reload_plans(plans, rules, None).await
    }

    async fn reload_plans(
        &self,
        plans: Vec<(ServerPlan, Identity)>,
        rules: PolicyRules,
        roots: Option<RootsTable>,
    ) -> Result<ReloadReport, ReloadError> {
        let mut identities = self.core.identities.lock().await;
        let old_rules = self.core.path.rules.borrow().clone();
        if rules.names != old_rules.names {
            return Err(ReloadError::NamingChanged);
        }
        let mut seen = std::collections::HashSet::new();
        for (plan, _) in &plans {
            rules.names.validate_server_name(&plan.name)?;
            if !seen.insert(plan.name.clone()) {
                return Err(ReloadError::DuplicateServer(plan.name.clone()));
            }
        }

        self.core.path.metrics.watch_oauth(plans.iter().map(|(plan, _)| (plan.name.as_str(), &plan.settings)));
        let mut report = ReloadReport::default();
        let mut settings: Vec<(String, ServerSettings)> = Vec::new();
        let mut to_start = Vec::new();
        // A configured server wins over an attached one of its name.
        let mut displaced = Vec::new();
        for (plan, identity) in plans {
            settings.push((plan.name.clone(), plan.settings.clone()));
            match identities.get(&plan.name) {
                Some(Identity::Attached) => {
                    tracing::info!(server = %plan.name, "the configured server replaces the attached one");
                    displaced.push(plan.name.clone());
                    report.added.push(plan.name.clone());
                    to_start.push(plan);
                }
                Some(old) if old.same_as(&identity) => report.unchanged.push(plan.name.clone()),
                Some(_) => {
                    report.restarted.push(plan.name.clone());
                    to_start.push(plan);
                }
                None => {
                    report.added.push(plan.name.clone());
                    to_start.push(plan);
                }
            }
            identities.insert(settings.last().expect("pushed above").0.clone(), identity);
        }
        let configured: std::collections::HashSet<&str> = settings.iter().map(|(name, _)| name.as_str()).collect();
        let attached = |identity: &Identity| matches!(identity, Identity::Attached);
        report.removed = identities
            .iter()
            .filter(|(name, identity)| !configured.contains(name.as_str()) && !attached(identity))
            .map(|(name, _)| name.clone())
            .collect();
        identities.retain(|name, identity| configured.contains(name.as_str()) || attached(identity));
        for list in [&mut report.added, &mut report.removed, &mut report.restarted, &mut report.unchanged] {
            list.sort();
        }

        // Policy first: the next call is judged by the new rules.
        if rules.approver != old_rules.approver {
            let _ = self.core.path.gate.cast(GateMsg::AttachApprover(approver_of(rules.approver)));
        }
        self.core.path.rules.send_replace(Arc::new(rules));
        if let Some(roots) = roots {
            self.set_config_roots(roots);
        }

        let leaving: Vec<String> = report.removed.iter().chain(&report.restarted).chain(&displaced).cloned().collect();
        self.retire(&leaving).await?;

        // Unchanged servers keep their counters of calls in flight; the
        // others get fresh ones.
        let old_slots = self.core.path.slots.borrow().clone();
        let mut reshaped = Vec::new();
        let still_attached: Vec<(String, Slot)> = identities
            .iter()
            .filter(|(_, identity)| attached(identity))
            .filter_map(|(name, _)| Some((name.clone(), old_slots.get(name)?.clone())))
            .collect();
        let slots: Slots = settings
            .into_iter()
            .map(|(name, settings)| {
                let slot = match old_slots.get(&name) {
                    Some(old) if report.unchanged.contains(&name) => {
                        if old.settings.tools != settings.tools {
                            reshaped.push((name.clone(), settings.tools.clone()));
                        }
                        old.with_settings(settings)
                    }
                    _ => Slot::new(settings),
                };
                (name, slot)
            })
            .chain(still_attached)
            .collect();
        self.core.path.slots.send_replace(Arc::new(slots));
        for (name, tools) in reshaped {
            report.reshaped.push(name.clone());
            self.core.hub.cast(HubMsg::ReshapeTools { name, tools }).map_err(|_| ReloadError::Stopped)?;
        }
        report.reshaped.sort();

        for plan in to_start {
            self.core
                .hub
                .call(|reply| HubMsg::AddServer { plan, reply }, None)
                .await
                .map_err(|_| ReloadError::Stopped)?;
        }
        tracing::info!(
            added = ?report.added,
            removed = ?report.removed,
            restarted = ?report.restarted,
            unchanged = report.unchanged.len(),
            reshaped = ?report.reshaped,
            "config reloaded"
        );
        Ok(report)
    }

    /// Withdraws `servers` (no new call reaches them), waits for their calls
    /// in flight (bounded), then stops them.
    pub(super) async fn retire(&self, servers: &[String]) -> Result<(), ReloadError> {
        if servers.is_empty() {
            return Ok(());
        }
        for name in servers {
            self.core.hub.cast(HubMsg::WithdrawServer { name: name.clone() }).map_err(|_| ReloadError::Stopped)?;
        }
        self.wait_for(|snapshot| servers.iter().all(|name| snapshot.status(name).is_none())).await;
        let slots = self.core.path.slots.borrow().clone();
        let mut draining = JoinSet::new();
        for name in servers {
            let Some(slot) = slots.get(name).cloned() else { continue };
            let name = name.clone();
            draining.spawn(async move {
                let limit = slot.settings.call_timeout.min(DRAIN_LIMIT);
                if tokio::time::timeout(limit, slot.drained()).await.is_err() {
                    tracing::warn!(server = %name, "calls still running after {limit:?}; stopping the server anyway");
                }
            });
        }
        while draining.join_next().await.is_some() {}
        let mut stopping = JoinSet::new();
        for name in servers {
            let hub = self.core.hub.clone();
            let name = name.clone();
            stopping.spawn(async move { hub.call(|reply| HubMsg::StopServer { name, reply }, None).await.is_ok() });
        }
        let mut stopped = true;
        while let Some(outcome) = stopping.join_next().await {
            stopped &= matches!(outcome, Ok(true));
        }
        if stopped {
            Ok(())
        } else {
            Err(ReloadError::Stopped)
        }
    }
}
