//! Warden's numbers, in Prometheus' exposition format.
//!
//! One [`Metrics`] per `Warden` handle, shared by its clones: every series
//! of the actors (calls, servers, approvals, leaks, questions) is declared
//! here, in one registry. What belongs to a face is counted by it and
//! registered on the same registry as an extension
//! ([`Metrics::extension`]): the front's requests and sessions
//! (`front/src/metrics.rs`), the bridge's requests and connections
//! (`bins/src/daemon/bridge_metrics.rs`). One scrape shows them all. Counting costs the call path a few
//! atomic adds and one short lock (the tools seen per server, which hold
//! each tool's series, so a removed server's series can be dropped): far
//! below a call's cost.
//!
//! Labels are bounded. `server` and `tool` come from configured servers and
//! the tools they list; a call to a name no server has is counted with
//! empty ones, and nothing a caller sends (arguments, agent names, unknown
//! tool names) becomes a label.
//!
//! Server states and restarts are read from the Registry's snapshot when
//! the metrics are encoded, so they are exactly what `warden status` says;
//! a server removed by a reload stops reporting, one kept keeps its series.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::registry::ServerStatus;
use crate::server_settings::ServerSettings;

mod call;
mod outcome;

pub(crate) use call::CallRecord;
use call::{ServerSeries, ToolSeries};
pub use outcome::Outcome;

/// The states a server can be in, as `warden_server_state` labels them.
const STATES: [&str; 5] = ["starting", "running", "restarting", "failed", "needs_login"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabel {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    server: String,
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    server: String,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeakLabels {
    kind: String,
    action: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerOutcome {
    server: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// What other crates registered: one of each type per `Metrics`.
type Extensions = HashMap<TypeId, Arc<dyn Any + Send + Sync>, foldhash::fast::RandomState>;

/// Every series Warden exports, and the registry that encodes them.
pub struct Metrics {
    /// Locked to register (once per extension) and to encode (per scrape);
    /// counting never touches it.
    registry: Mutex<Registry>,
    extensions: Mutex<Extensions>,
    calls: Family<CallLabels, Counter>,
    call_seconds: Family<ServerLabel, Histogram, fn() -> Histogram>,
    in_flight: Family<ServerLabel, Gauge>,
    states: Family<StateLabels, Gauge>,
    restarts: Family<ServerLabel, Counter>,
    startup_seconds: Family<ServerLabel, Gauge<f64, AtomicU64>>,
    tool_lists: Family<ServerLabel, Counter>,
    approvals: Family<KindLabel, Counter>,
    approvals_waiting: Gauge,
    elicitations: Family<ServerOutcome, Counter>,
    sampling: Family<ServerOutcome, Counter>,
    oauth_refreshes: Family<ServerOutcome, Counter>,
    leaks: Family<LeakLabels, Counter>,
    /// Calls by server, every outcome: what `warden status` shows (not
    /// exported; the histogram's `_count` says the same to Prometheus).
    server_calls: Family<ServerLabel, Counter>,
    /// Per server: the tools it was called under, with their series, and
    /// the restarts counted.
    seen: Mutex<HashMap<String, Seen, foldhash::fast::RandomState>>,
}

#[derive(Default)]
struct Seen {
    tools: HashMap<String, Arc<ToolSeries>, foldhash::fast::RandomState>,
    restarts: u32,
    tool_lists: u64,
}

/// Call durations from 100 µs to about 52 s, each bucket twice the last.
fn call_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::with_prefix("warden");
        let calls = Family::default();
        registry.register("tool_calls", "Tool calls, by server, tool and outcome", calls.clone());
        let call_seconds = Family::new_with_constructor(call_histogram as fn() -> Histogram);
        registry.register("tool_call_duration_seconds", "How long tool calls took, by server", call_seconds.clone());
        let in_flight = Family::default();
        registry.register("tool_calls_in_flight", "Tool calls running now, by server", in_flight.clone());
        let states = Family::default();
        registry.register("server_state", "1 for the state each server is in, 0 for the others", states.clone());
        let restarts = Family::default();
        registry.register("server_restarts", "Restarts of each server since Warden started it", restarts.clone());
        let startup_seconds = Family::default();
        registry.register(
            "server_startup_seconds",
            "How long each server's current connection took from spawn to its first tool list",
            startup_seconds.clone(),
        );
        let tool_lists = Family::default();
        registry.register(
            "server_tool_lists",
            "Tool lists each server sent (the first, and each refetch after list_changed)",
            tool_lists.clone(),
        );
        let approvals = Family::default();
        registry.register(
            "approvals",
            "Approvals asked of a person (requested), and how they ended (approved, denied, timed_out, withdrawn)",
            approvals.clone(),
        );
        let approvals_waiting = Gauge::default();
        registry.register("approvals_waiting", "Approvals waiting for a person now", approvals_waiting.clone());
        let elicitations = Family::default();
        registry.register(
            "elicitations",
            "Servers' questions to a person, by server and how they ended (accept, decline, cancel, refused)",
            elicitations.clone(),
        );
        let sampling = Family::default();
        registry.register(
            "sampling_requests",
            "Servers' sampling requests, by server and how they ended (ok, failed, refused)",
            sampling.clone(),
        );
        let oauth_refreshes = Family::default();
        registry.register(
            "oauth_refreshes",
            "OAuth token refreshes of HTTP servers, by server and outcome (ok, failed)",
            oauth_refreshes.clone(),
        );
        let leaks = Family::default();
        registry.register(
            "leaks",
            "Secrets leak policing acted on, by kind and action (blocked, redacted, withheld)",
            leaks.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            extensions: Mutex::default(),
            calls,
            call_seconds,
            in_flight,
            states,
            restarts,
            startup_seconds,
            tool_lists,
            approvals,
            approvals_waiting,
            elicitations,
            sampling,
            oauth_refreshes,
            leaks,
            server_calls: Family::default(),
            seen: Mutex::default(),
        }
    }
}

impl Metrics {
    /// The series of type `T`, registered by `register` on this Warden's
    /// registry the first time they are asked for (names get the
    /// `warden_` prefix), the same ones after: how the front and the
    /// daemon count what is theirs (requests, sessions, connections) in
    /// the one exposition Warden serves.
    pub fn extension<T: Send + Sync + 'static>(&self, register: impl FnOnce(&mut Registry) -> T) -> Arc<T> {
        let mut extensions = self.extensions.lock().expect("metrics lock");
        if let Some(found) = extensions.get(&TypeId::of::<T>()).and_then(|found| Arc::clone(found).downcast::<T>().ok())
        {
            return found;
        }
        let made = Arc::new(register(&mut self.registry.lock().expect("metrics lock")));
        extensions.insert(TypeId::of::<T>(), Arc::clone(&made) as Arc<dyn Any + Send + Sync>);
        made
    }

    /// A server's question to a person ended so (`accept`, `decline`,
    /// `cancel`, `refused`).
    pub(crate) fn elicitation(&self, server: &str, outcome: &'static str) {
        self.elicitations.get_or_create(&ServerOutcome { server: server.to_string(), outcome }).inc();
    }

    /// A server's sampling request ended so (`ok`, `failed`, `refused`).
    pub(crate) fn sampling(&self, server: &str, outcome: &'static str) {
        self.sampling.get_or_create(&ServerOutcome { server: server.to_string(), outcome }).inc();
    }

    /// An OAuth token refresh of `server` got a token, or failed.
    pub(crate) fn oauth_refresh(&self, server: &str, refreshed: bool) {
        let outcome = if refreshed { "ok" } else { "failed" };
        self.oauth_refreshes.get_or_create(&ServerOutcome { server: server.to_string(), outcome }).inc();
    }

    /// Counts `plans`' OAuth refreshes (new authorizers: at start and at
    /// each reload).
    pub(crate) fn watch_oauth<'a>(self: &Arc<Self>, plans: impl IntoIterator<Item = (&'a str, &'a ServerSettings)>) {
        for (name, settings) in plans {
            if let Some(authorizer) = &settings.oauth {
                let (metrics, name) = (Arc::clone(self), name.to_string());
                authorizer.on_refresh(move |refreshed| metrics.oauth_refresh(&name, refreshed));
            }
        }
    }

    /// How many calls `server` has had (every outcome), for `warden status`.
    pub fn calls_of(&self, server: &str) -> u64 {
        self.server_calls.get(&ServerLabel { server: server.to_string() }).map_or(0, |calls| calls.get())
    }

    /// Leak policing acted on a secret of this kind (a known secret's
    /// label or a shape: both come from the config and Warden, not callers).
    pub(crate) fn leak(&self, kind: &str, action: &'static str) {
        self.leaks.get_or_create(&LeakLabels { kind: kind.to_string(), action }).inc();
    }

    /// A call waits for a person's approval.
    pub(crate) fn approval_asked(&self) {
        self.approvals.get_or_create(&KindLabel { kind: "requested" }).inc();
        self.approvals_waiting.inc();
    }

    /// An approval ended: `approved`, `denied`, `timed_out`, or
    /// `withdrawn` (its caller stopped waiting).
    pub(crate) fn approval_ended(&self, kind: &'static str) {
        self.approvals.get_or_create(&KindLabel { kind }).inc();
        self.approvals_waiting.dec();
    }

    /// The series a call to `server`'s `tool` counts into; made on the
    /// tool's first call.
    fn tool_series(&self, server: &str, tool: &str) -> Arc<ToolSeries> {
        let mut seen = self.seen.lock().expect("metrics lock");
        if let Some(series) = seen.get(server).and_then(|known| known.tools.get(tool)) {
            return Arc::clone(series);
        }
        let series = Arc::new(ToolSeries::new(server, tool, ServerSeries::of(self, server)));
        seen.entry(server.to_string()).or_default().tools.insert(tool.to_string(), Arc::clone(&series));
        series
    }

    /// The exposition text (OpenMetrics, which Prometheus scrapes), with
    /// server states and restarts as `servers` says they are now.
    pub fn encode(&self, servers: &[ServerStatus]) -> String {
        self.sync_servers(servers);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry.lock().expect("metrics lock"))
            .expect("writing to a String cannot fail");
        text
    }

    /// States and restarts from `servers`; the series of servers no longer
    /// there are dropped.
    fn sync_servers(&self, servers: &[ServerStatus]) {
        let mut seen = self.seen.lock().expect("metrics lock");
        for server in servers {
            let current = server.state.label();
            for state in STATES {
                let labels = StateLabels { server: server.name.clone(), state };
                self.states.get_or_create(&labels).set(i64::from(state == current));
            }
            let counted = seen.entry(server.name.clone()).or_default();
            let label = ServerLabel { server: server.name.clone() };
            // A server restarted by a reload starts counting again.
            let restarts = server.restarts.saturating_sub(counted.restarts);
            self.restarts.get_or_create(&label).inc_by(u64::from(restarts));
            counted.restarts = server.restarts;
            let lists = server.tool_lists.saturating_sub(counted.tool_lists);
            self.tool_lists.get_or_create(&label).inc_by(lists);
            counted.tool_lists = server.tool_lists;
            if let Some(startup) = server.startup {
                self.startup_seconds.get_or_create(&label).set(startup.as_secs_f64());
            }
        }
        let gone: Vec<String> =
            seen.keys().filter(|name| !servers.iter().any(|server| &server.name == *name)).cloned().collect();
        for name in gone {
            let tools = seen.remove(&name).map(|seen| seen.tools).unwrap_or_default();
            self.forget(&name, tools.into_keys());
        }
    }

    /// Drops every series of a server that is gone.
    fn forget(&self, server: &str, tools: impl Iterator<Item = String>) {
        let label = ServerLabel { server: server.to_string() };
        self.call_seconds.remove(&label);
        self.server_calls.remove(&label);
        self.in_flight.remove(&label);
        self.restarts.remove(&label);
        self.startup_seconds.remove(&label);
        self.tool_lists.remove(&label);
        for state in STATES {
            self.states.remove(&StateLabels { server: server.to_string(), state });
        }
        for tool in tools {
            for outcome in Outcome::ALL {
                let labels = CallLabels { server: server.to_string(), tool: tool.clone(), outcome: outcome.label() };
                self.calls.remove(&labels);
            }
        }
    }
}

#[cfg(test)]
mod tests;
