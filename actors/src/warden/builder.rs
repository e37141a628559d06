//! [`WardenBuilder`]: everything that must exist before the first call.
//!
//! The servers (from a config, or a host's own connectors), the policy
//! rules, the approver and the summary settings are all set before
//! [`WardenBuilder::start`], so the first call a host makes already meets
//! its approver — there is no window in which a call that needs a person
//! finds none. `start` spawns the actor system and returns at once; servers
//! start in the background, concurrently.

use std::sync::Arc;

use ractor::Actor;
use tokio::sync::watch;

use super::plans::{approver_of, plans_of, Identity};
use super::{Core, ServerSpec, StartError, Warden};
use crate::approver::Approver;
use crate::call::slots::Slot;
use crate::call::CallPath;
use crate::client_features::roots::RootsTable;
use crate::client_features::sampler::Sampler;
use crate::client_features::{ClientFeatures, Root, WaitIds};
use crate::elicitor::Elicitor;
use crate::era_memo::EraMemo;
use crate::hub::{Hub, HubArgs, ServerPlan};
use crate::policy_gate::{GateArgs, GateView, PolicyGate};
use crate::policy_rules::PolicyRules;
use crate::registry::Snapshot;
use crate::server_actor::NOTICE_BACKLOG;
use crate::summarizer::{Summarizer, SummarizerArgs, SummarySettings, SummaryView};
use crate::task_journal::TaskJournal;
use warden_config::WardenConfig;

/// Sets Warden up before it starts: [`Warden::builder`].
#[derive(Default)]
pub struct WardenBuilder {
    plans: Vec<(ServerPlan, Identity)>,
    specs: Vec<ServerSpec>,
    /// From `rules`: wins over the config's, in whichever order they came.
    rules: Option<PolicyRules>,
    config_rules: Option<PolicyRules>,
    approver: Option<Arc<dyn Approver>>,
    elicitor: Option<Arc<dyn Elicitor>>,
    /// From `roots`: wins over the config's.
    roots: Option<Vec<Root>>,
    config_roots: RootsTable,
    /// The config's `[sampling]` model, and the servers that may sample.
    sampler: Option<Sampler>,
    sampling_servers: Vec<String>,
    /// From `summaries`: wins over the config's likewise.
    summaries: Option<SummarySettings>,
    config_summaries: Option<SummarySettings>,
    audit: Option<Arc<dyn crate::AuditSink>>,
    /// Where a run leaves what the next one needs.
    era_memo: Option<std::path::PathBuf>,
    task_journal: Option<std::path::PathBuf>,
}

impl Warden {
    /// Starts Warden with the servers and policy of a loaded config (the
    /// same as `Warden::builder().config(config).start()`).
    pub async fn start(config: &WardenConfig) -> Result<Warden, StartError> {
        Warden::builder().config(config).start().await
    }

    /// A builder: servers, policy, approver and summaries, then `start`.
    pub fn builder() -> WardenBuilder {
        WardenBuilder::default()
    }
}

impl WardenBuilder {
    /// The config's servers, its policy sections (`[security]`, agents,
    /// profiles, naming) and its `[summary]` settings (API key read from
    /// the environment). [`WardenBuilder::rules`] and
    /// [`WardenBuilder::summaries`], when given, win over the config's,
    /// before or after this call.
    pub fn config(mut self, config: &WardenConfig) -> WardenBuilder {
        self.plans.extend(plans_of(config));
        self.config_rules = Some(PolicyRules::from_config(config));
        self.config_summaries = SummarySettings::from_config(&config.summary, &|name| std::env::var(name).ok());
        self.config_roots = RootsTable::of_config(config);
        self.sampling_servers = config.sampling.servers.clone();
        self.sampler = match Sampler::of_config(&config.sampling, &|name| std::env::var(name).ok()) {
            None => None,
            Some(Ok(sampler)) => Some(sampler),
            // Checked at load time; what is left is a URL hyper cannot use.
            Some(Err(error)) => {
                tracing::warn!(%error, "sampling is off: the [sampling] endpoint cannot be used");
                None
            }
        };
        self
    }

    /// Servers the host reaches through its own connectors, beside any
    /// from the config.
    pub fn servers(mut self, servers: Vec<ServerSpec>) -> WardenBuilder {
        self.specs.extend(servers);
        self
    }

    /// The policy rules (instead of the config's; Warden's defaults when
    /// neither is given: no overrides, no agents, and calls that need
    /// approval denied unless an approver is set).
    pub fn rules(mut self, rules: PolicyRules) -> WardenBuilder {
        self.rules = Some(rules);
        self
    }

    /// The approver that answers approval requests, instead of the
    /// config's `approver` setting.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> WardenBuilder {
        self.approver = Some(approver);
        self
    }

    /// Where every call's audit record goes (the daemon: `audit.jsonl`).
    pub fn audit(mut self, sink: Arc<dyn crate::AuditSink>) -> WardenBuilder {
        self.audit = Some(sink);
        self
    }

    /// The elicitor that answers servers' questions (`elicitation/create`);
    /// servers are told Warden supports elicitation, in the modes it
    /// declares, only when one is attached.
    pub fn elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> WardenBuilder {
        self.elicitor = Some(elicitor);
        self
    }

    /// The roots servers without roots of their own are told of
    /// (`roots/list`), instead of the config's top-level `roots`. Even an
    /// empty list declares the `roots` capability: the host manages roots
    /// and may set them later ([`Warden::set_roots`]).
    pub fn roots(mut self, roots: Vec<Root>) -> WardenBuilder {
        self.roots = Some(roots);
        self
    }

    /// Writes tool summaries in the background with `settings`.
    pub fn summaries(mut self, settings: SummarySettings) -> WardenBuilder {
        self.summaries = Some(settings);
        self
    }

    /// Remembers in `file` which servers speak only the `initialize`
    /// revisions, so that the next Warden does not wait out their silence
    /// to a `server/discover` probe again (`eras.json` in the daemon's
    /// state directory). Without it, that is remembered in memory only.
    pub fn era_memo(mut self, file: std::path::PathBuf) -> WardenBuilder {
        self.era_memo = Some(file);
        self
    }

    /// Keeps in `file` the server-side tasks of calls in flight to servers
    /// that outlive this process, so that a process that dies leaves them
    /// to the next, which fetches them ([`Warden::left_tasks`]). One
    /// process at a time may use a file (the daemon's `tasks.json`).
    pub fn task_journal(mut self, file: std::path::PathBuf) -> WardenBuilder {
        self.task_journal = Some(file);
        self
    }

    /// Spawns the actor system and returns at once; servers start in the
    /// background.
    pub async fn start(self) -> Result<Warden, StartError> {
        let WardenBuilder {
            mut plans,
            specs,
            rules,
            config_rules,
            approver,
            elicitor,
            roots,
            mut config_roots,
            sampler,
            sampling_servers,
            summaries,
            config_summaries,
            audit,
            era_memo,
            task_journal,
        } = self;
        if let Some(roots) = roots {
            config_roots.default = roots;
            config_roots.host_managed = true;
        }
        let rules = rules.or(config_rules).unwrap_or_default();
        let summaries = summaries.or(config_summaries);
        for spec in specs {
            let identity = Identity::Connector(spec.connector.clone());
            plans.push((
                ServerPlan { name: spec.name, connector: Ok(spec.connector), settings: spec.settings },
                identity,
            ));
        }
        for (index, (plan, _)) in plans.iter().enumerate() {
            rules.names.validate_server_name(&plan.name)?;
            if plans[..index].iter().any(|(earlier, _)| earlier.name == plan.name) {
                return Err(StartError::DuplicateServer(plan.name.clone()));
            }
        }
        spawn(
            plans,
            rules,
            Answerers { approver, elicitor, roots: config_roots, sampling: (sampler, sampling_servers), audit },
            summaries,
            Carried {
                era_memo: Arc::new(era_memo.map(EraMemo::in_file).unwrap_or_default()),
                task_journal: Arc::new(task_journal.map(TaskJournal::in_file).unwrap_or_default()),
            },
        )
        .await
    }
}

/// Spawns the Hub (and under it the Registry and every server), the
/// PolicyGate and, when summaries are on, the Summarizer.
/// What one run leaves for the next.
struct Carried {
    era_memo: Arc<EraMemo>,
    task_journal: Arc<TaskJournal>,
}

/// Who answers what a call or a server asks.
struct Answerers {
    approver: Option<Arc<dyn Approver>>,
    elicitor: Option<Arc<dyn Elicitor>>,
    roots: RootsTable,
    sampling: (Option<Sampler>, Vec<String>),
    /// And who keeps the record of each call.
    audit: Option<Arc<dyn crate::AuditSink>>,
}

async fn spawn(
    plans: Vec<(ServerPlan, Identity)>,
    rules: PolicyRules,
    answerers: Answerers,
    summaries: Option<SummarySettings>,
    carried: Carried,
) -> Result<Warden, StartError> {
    let Answerers { approver, elicitor, roots, sampling, audit } = answerers;
    let rules = watch::Sender::new(Arc::new(rules));
    let ids = WaitIds::new();
    let metrics = Arc::new(crate::Metrics::default());
    let client = Arc::new(ClientFeatures::new(
        elicitor,
        roots,
        Box::new(rules.subscribe()),
        ids.clone(),
        sampling,
        metrics.clone(),
    ));
    metrics.watch_oauth(plans.iter().map(|(plan, _)| (plan.name.as_str(), &plan.settings)));
    let identities = plans.iter().map(|(plan, identity)| (plan.name.clone(), identity.clone())).collect();
    let servers: Vec<ServerPlan> = plans.into_iter().map(|(plan, _)| plan).collect();
    let initial = Snapshot::starting(servers.iter().map(|plan| &plan.name), rules.borrow().names.clone());
    let slots = servers.iter().map(|plan| (plan.name.clone(), Slot::new(plan.settings.clone()))).collect();
    let (publish, snapshot) = watch::channel(Arc::new(initial));
    let (notices, _) = tokio::sync::broadcast::channel(NOTICE_BACKLOG);
    let Carried { era_memo, task_journal } = carried;
    let hub_args = HubArgs {
        servers,
        publish,
        notices: notices.clone(),
        client: client.clone(),
        era_memo,
        task_journal: task_journal.clone(),
    };
    let (hub, hub_task) =
        Actor::spawn(None, Hub, hub_args).await.map_err(|error| StartError::Spawn(Box::new(error)))?;
    let hub_task = tokio::spawn(async move {
        let _ = hub_task.await;
    });
    let (configured_approver, approval_timeout) = {
        let rules = rules.borrow();
        (rules.approver, rules.approval_timeout)
    };
    let approver = approver.or_else(|| approver_of(configured_approver));
    let (publish_view, gate_view) = watch::channel(Arc::new(GateView::default()));
    let gate_args =
        GateArgs { approver, approval_timeout, publish: publish_view, ids: ids.0, metrics: metrics.clone() };
    let gate = match Actor::spawn(None, PolicyGate, gate_args).await {
        Ok((gate, _)) => gate,
        Err(error) => {
            hub.stop(None);
            return Err(StartError::Spawn(Box::new(error)));
        }
    };
    client.attach_gate(gate.clone());
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
    let slots = watch::Sender::new(Arc::new(slots));
    let search = Arc::default();
    let path = CallPath { snapshot, slots, rules, gate, gate_view, client: client.clone(), metrics, audit, search };
    let core = Core {
        path,
        hub,
        hub_task: tokio::sync::Mutex::new(Some(hub_task)),
        identities: tokio::sync::Mutex::new(identities),
        summarizer,
        summary_view,
        notices,
        client,
        task_journal,
        resource_holds: Default::default(),
    };
    let core = Arc::new(core);
    super::resource_holds::start(&core);
    Ok(Warden { core })
}
