//! The Summarizer actor: one-sentence tool summaries, in the background.
//!
//! Spawned by the `Warden` handle when `[summary] enabled = true`, and
//! stopped by its shutdown; nothing waits for it. A task it spawns watches
//! the Registry's snapshots and casts each new tool table in. For every tool
//! whose (server, tool, hash of description and schema) is not in
//! `summaries.jsonl` it queues a chat-completions request, and runs at most
//! `concurrency` at once, each in its own task that casts the outcome back:
//! `handle` never awaits the network. Summaries are appended to the cache
//! and published on a `watch` the handle reads in `presented_tools`.
//!
//! An unreachable endpoint (no connection, timeout, 429, 5xx) is logged
//! once, and the requests wait 1, 2, 4 … 60 s before trying again; the first
//! success resets both. A 4xx for one tool is logged and that version of the
//! tool is skipped. A tool without a description has nothing to summarise,
//! and Warden's own wrapper tools are left alone. If the actor fails, tools
//! are shown with their descriptions' first sentences, as when disabled.

mod cache;
mod client;
#[cfg(test)]
mod config_tests;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorProcessingErr, ActorRef};
use serde_json::Value;
use tokio::sync::watch;

use crate::chat::ChatClient;
use crate::registry::Snapshot;
use cache::{tool_hash, Cache};
use client::Outcome;
use warden_config::SummaryConfig;

/// Everything the Summarizer needs, resolved from `[summary]` or built by
/// a test.
#[derive(Debug, Clone)]
pub struct SummarySettings {
    /// The full chat-completions URL.
    pub url: String,
    /// The model asked.
    pub model: String,
    /// The API key, sent as a bearer token.
    pub api_key: Option<String>,
    /// Requests at once.
    pub concurrency: usize,
    /// The directory of `summaries.jsonl`.
    pub cache_dir: PathBuf,
    /// The first wait after the endpoint was unreachable, doubled each time.
    pub backoff_initial: Duration,
    /// The longest wait.
    pub backoff_max: Duration,
    /// How long one request may take.
    pub request_timeout: Duration,
}

impl SummarySettings {
    /// The settings of an enabled `[summary]` table, reading the key and the
    /// cache directory with `lookup`; `None` when disabled, or when there is
    /// no cache directory (logged).
    pub fn from_config(config: &SummaryConfig, lookup: &dyn Fn(&str) -> Option<String>) -> Option<SummarySettings> {
        if !config.enabled {
            return None;
        }
        let Some(cache_dir) = config.cache_dir(lookup) else {
            tracing::warn!(
                "tool summaries are off: no cache directory (set `summary.cache_dir`, XDG_CACHE_HOME or HOME)"
            );
            return None;
        };
        Some(SummarySettings {
            url: config.completions_url(),
            model: config.model.clone(),
            api_key: config.api_key_env.as_deref().and_then(lookup),
            concurrency: config.concurrency.max(1),
            cache_dir,
            ..SummarySettings::new(String::new(), String::new(), PathBuf::new())
        })
    }

    /// Settings with the default concurrency (3), backoff (1 s to 60 s) and
    /// request timeout (60 s), and no key.
    pub fn new(url: impl Into<String>, model: impl Into<String>, cache_dir: impl Into<PathBuf>) -> SummarySettings {
        SummarySettings {
            url: url.into(),
            model: model.into(),
            api_key: None,
            concurrency: 3,
            cache_dir: cache_dir.into(),
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// What the Summarizer last published.
#[derive(Debug, Clone, Default)]
pub struct SummaryView {
    /// Summaries of the current tools, by (server, the server's tool name).
    pub summaries: Arc<HashMap<(String, String), String>>,
    /// The Registry's `tools_version` these summaries are for; `None`
    /// until the Summarizer has seen a tool table.
    pub tools_version: Option<u64>,
    /// Requests queued, running or waiting for the endpoint to come back.
    pub outstanding: usize,
    /// Why the endpoint is unreachable, until a request succeeds again.
    pub endpoint_error: Option<String>,
    /// How many requests found the endpoint unreachable, in all.
    pub unreachable_count: u64,
}

/// The Summarizer actor.
pub(crate) struct Summarizer;

/// What it starts with.
pub(crate) struct SummarizerArgs {
    /// Endpoint, model, cache, limits.
    pub(crate) settings: SummarySettings,
    /// The Registry's snapshots.
    pub(crate) snapshots: watch::Receiver<Arc<Snapshot>>,
    /// Where it publishes.
    pub(crate) publish: watch::Sender<Arc<SummaryView>>,
}

/// Its messages.
pub(crate) enum SummarizerMsg {
    /// The tool table changed.
    ToolsChanged(Arc<Snapshot>),
    /// A request ended.
    Finished {
        /// (server, tool).
        key: (String, String),
        /// The version of the tool it was for.
        hash: String,
        /// How it went.
        outcome: Outcome,
    },
    /// The backoff after an unreachable endpoint is over.
    Retry,
}

/// A tool to summarise.
struct Job {
    hash: String,
    description: String,
    input_schema: Value,
}

/// Its state.
pub(crate) struct SummarizerState {
    settings: SummarySettings,
    client: Arc<ChatClient>,
    cache: Cache,
    publish: watch::Sender<Arc<SummaryView>>,
    watcher: tokio::task::JoinHandle<()>,
    /// The current tools worth summarising.
    jobs: HashMap<(String, String), Job>,
    queue: VecDeque<(String, String)>,
    in_flight: HashSet<(String, String)>,
    /// Versions of tools the endpoint refused.
    rejected: HashSet<(String, String, String)>,
    tools_version: u64,
    /// Requests wait for a `Retry`.
    waiting: bool,
    /// The next backoff.
    backoff: Duration,
    /// Why the endpoint is unreachable; logged when first set.
    endpoint_error: Option<String>,
    unreachable_count: u64,
}

impl Actor for Summarizer {
    type Msg = SummarizerMsg;
    type State = SummarizerState;
    type Arguments = SummarizerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SummarizerMsg>,
        args: SummarizerArgs,
    ) -> Result<SummarizerState, ActorProcessingErr> {
        let settings = args.settings;
        let client = ChatClient::new(&settings.url, settings.api_key.as_deref(), settings.request_timeout)?;
        let cache = Cache::load(&settings.cache_dir);
        let watcher = tokio::spawn(watch_tools(args.snapshots, myself));
        Ok(SummarizerState {
            backoff: settings.backoff_initial,
            settings,
            client: Arc::new(client),
            cache,
            publish: args.publish,
            watcher,
            jobs: HashMap::new(),
            queue: VecDeque::new(),
            in_flight: HashSet::new(),
            rejected: HashSet::new(),
            tools_version: 0,
            waiting: false,
            endpoint_error: None,
            unreachable_count: 0,
        })
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<SummarizerMsg>,
        _: ractor::SupervisionEvent,
        _: &mut SummarizerState,
    ) -> Result<(), ActorProcessingErr> {
        // It links no children; the default would stop it for any event.
        Ok(())
    }

    async fn post_stop(
        &self,
        _: ActorRef<SummarizerMsg>,
        state: &mut SummarizerState,
    ) -> Result<(), ActorProcessingErr> {
        state.watcher.abort();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SummarizerMsg>,
        message: SummarizerMsg,
        state: &mut SummarizerState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SummarizerMsg::ToolsChanged(snapshot) => state.tools_changed(&snapshot),
            SummarizerMsg::Finished { key, hash, outcome } => state.finished(&myself, key, hash, outcome),
            SummarizerMsg::Retry => state.waiting = false,
        }
        state.pump(&myself);
        state.publish();
        Ok(())
    }
}

impl SummarizerState {
    fn tools_changed(&mut self, snapshot: &Snapshot) {
        self.tools_version = snapshot.tools_version;
        self.jobs = snapshot
            .tools
            .values()
            .filter(|entry| entry.primitive_tool.is_none())
            .filter_map(|entry| {
                let description = entry.tool.description.as_deref().map(str::trim).filter(|text| !text.is_empty())?;
                let hash = tool_hash(description, &entry.tool.input_schema);
                let job =
                    Job { hash, description: description.to_string(), input_schema: entry.tool.input_schema.clone() };
                Some(((entry.server.clone(), entry.tool.name.clone()), job))
            })
            .collect();
        let mut queue: Vec<_> = self.jobs.keys().filter(|key| self.needs_request(key)).cloned().collect();
        queue.sort();
        self.queue = queue.into();
    }

    /// The tool's current version has no summary, no refusal and no request
    /// running.
    fn needs_request(&self, key: &(String, String)) -> bool {
        let Some(job) = self.jobs.get(key) else { return false };
        !self.in_flight.contains(key)
            && self.cache.get(&key.0, &key.1, &job.hash).is_none()
            && !self.rejected.contains(&(key.0.clone(), key.1.clone(), job.hash.clone()))
    }

    fn finished(&mut self, myself: &ActorRef<SummarizerMsg>, key: (String, String), hash: String, outcome: Outcome) {
        self.in_flight.remove(&key);
        let (server, tool) = (&key.0, &key.1);
        match outcome {
            Outcome::Summary(summary) => {
                if self.endpoint_error.take().is_some() {
                    tracing::info!(url = %self.settings.url, "the tool summary endpoint answers again");
                }
                self.backoff = self.settings.backoff_initial;
                self.cache.insert(server, tool, &hash, &summary, &self.settings.model);
            }
            Outcome::Rejected(reason) => {
                tracing::warn!(server, tool, %reason, "the summary endpoint refused this tool; it keeps its own description");
                self.rejected.insert((key.0.clone(), key.1.clone(), hash));
            }
            Outcome::Unreachable(reason) => {
                self.unreachable_count += 1;
                if self.endpoint_error.is_none() {
                    tracing::warn!(url = %self.settings.url, %reason, "the tool summary endpoint is unreachable; retrying with backoff");
                }
                self.endpoint_error = Some(reason);
                if !self.waiting {
                    self.waiting = true;
                    myself.send_after(self.backoff, || SummarizerMsg::Retry);
                    self.backoff = (self.backoff * 2).min(self.settings.backoff_max);
                }
            }
        }
        // Whatever happened, a tool that still needs a summary goes back in line.
        if self.needs_request(&key) && !self.queue.contains(&key) {
            self.queue.push_front(key);
        }
    }

    /// Starts requests while there is room and the endpoint is not in backoff.
    fn pump(&mut self, myself: &ActorRef<SummarizerMsg>) {
        while !self.waiting && self.in_flight.len() < self.settings.concurrency {
            let Some(key) = self.queue.pop_front() else { break };
            if !self.needs_request(&key) {
                continue;
            }
            let job = &self.jobs[&key];
            let (client, hash, description, schema) =
                (self.client.clone(), job.hash.clone(), job.description.clone(), job.input_schema.clone());
            let model = self.settings.model.clone();
            self.in_flight.insert(key.clone());
            let myself = myself.clone();
            tokio::spawn(async move {
                let outcome = client::summarise(&client, &model, &key.1, &description, &schema).await;
                let _ = myself.cast(SummarizerMsg::Finished { key, hash, outcome });
            });
        }
    }

    fn publish(&self) {
        let summaries = self
            .jobs
            .iter()
            .filter_map(|(key, job)| Some((key.clone(), self.cache.get(&key.0, &key.1, &job.hash)?.to_string())))
            .collect();
        let view = SummaryView {
            summaries: Arc::new(summaries),
            tools_version: Some(self.tools_version),
            outstanding: self.queue.len() + self.in_flight.len(),
            endpoint_error: self.endpoint_error.clone(),
            unreachable_count: self.unreachable_count,
        };
        self.publish.send_replace(Arc::new(view));
    }
}

/// Casts every new tool table to the Summarizer, starting with the current one.
async fn watch_tools(mut snapshots: watch::Receiver<Arc<Snapshot>>, summarizer: ActorRef<SummarizerMsg>) {
    let mut seen = None;
    loop {
        let snapshot = snapshots.borrow_and_update().clone();
        if seen != Some(snapshot.tools_version) {
            seen = Some(snapshot.tools_version);
            if summarizer.cast(SummarizerMsg::ToolsChanged(snapshot)).is_err() {
                return;
            }
        }
        if snapshots.changed().await.is_err() {
            return;
        }
    }
}
