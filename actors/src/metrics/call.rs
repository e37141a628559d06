//! One call's record: in flight while it runs, then counted with its
//! outcome and duration, and written to the audit sink — also when its
//! caller drops it midway (as `cancelled`).
//!
//! A call counts into series fetched once per tool ([`ToolSeries`]), not
//! looked up in their families on every call: each family lookup hashes
//! its labels under a lock, and a call touched four of them, with two
//! label strings copied to do it.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

use super::{CallLabels, Metrics, Outcome, ServerLabel};
use crate::audit::{AuditDraft, AuditSink};

/// A server's call series (each a handle on the one series its family
/// holds for the server, whichever of its tools fetched it).
pub(super) struct ServerSeries {
    in_flight: Gauge,
    durations: Histogram,
    calls: Counter,
}

impl ServerSeries {
    /// `server`'s series, made in their families if they are not there.
    pub(super) fn of(metrics: &Metrics, server: &str) -> ServerSeries {
        let label = ServerLabel { server: server.to_string() };
        ServerSeries {
            in_flight: metrics.in_flight.get_or_create_owned(&label),
            durations: metrics.call_seconds.get_or_create_owned(&label),
            calls: metrics.server_calls.get_or_create_owned(&label),
        }
    }
}

/// What a call to one tool counts into: its server's series and a call
/// counter per outcome, each made on its first use, so a series appears
/// only once it has something to count (as with a family lookup).
pub(crate) struct ToolSeries {
    server_name: String,
    tool: String,
    server: ServerSeries,
    outcomes: [OnceLock<Counter>; Outcome::ALL.len()],
}

impl ToolSeries {
    pub(super) fn new(server_name: &str, tool: &str, server: ServerSeries) -> ToolSeries {
        let (server_name, tool) = (server_name.to_string(), tool.to_string());
        ToolSeries { server_name, tool, server, outcomes: Default::default() }
    }

    /// The counter of calls to this tool that ended so.
    fn calls(&self, outcome: Outcome, family: &Family<CallLabels, Counter>) -> &Counter {
        let index = Outcome::ALL.iter().position(|known| *known == outcome).expect("every outcome is in ALL");
        self.outcomes[index].get_or_init(|| {
            let labels =
                CallLabels { server: self.server_name.clone(), tool: self.tool.clone(), outcome: outcome.label() };
            family.get_or_create_owned(&labels)
        })
    }
}

/// Held by a call from its start to its end.
pub(crate) struct CallRecord<'a> {
    metrics: &'a Metrics,
    started: Instant,
    /// The tool's series, once the name resolved to a server's tool.
    resolved: Option<Arc<ToolSeries>>,
    /// What the audit record will say, when there is a sink. Boxed: the
    /// record lives in every call's future, which is moved whole.
    audit: Option<(&'a dyn AuditSink, Box<AuditDraft>)>,
    ended: bool,
}

impl<'a> CallRecord<'a> {
    /// A call begins; nothing is counted until it ends.
    pub(crate) fn begin(metrics: &'a Metrics) -> CallRecord<'a> {
        CallRecord { metrics, started: Instant::now(), resolved: None, audit: None, ended: false }
    }

    /// The call is audited into `sink`, from `draft`.
    pub(crate) fn audited(mut self, sink: &'a dyn AuditSink, draft: AuditDraft) -> CallRecord<'a> {
        self.audit = Some((sink, Box::new(draft)));
        self
    }

    /// The audit draft, when the call is audited.
    pub(crate) fn draft(&mut self) -> Option<&mut AuditDraft> {
        self.audit.as_mut().map(|(_, draft)| &mut **draft)
    }

    /// The call's name resolved to `server`'s tool `tool` (Warden's name
    /// for it): from now on it is in flight there.
    pub(crate) fn resolved(&mut self, server: &str, tool: &str) {
        let series = self.metrics.tool_series(server, tool);
        series.server.in_flight.inc();
        self.resolved = Some(series);
    }

    /// The call ended so (`error`: why, when it got no result).
    pub(crate) fn end(mut self, outcome: Outcome, error: Option<String>) {
        self.count(outcome, error);
    }

    fn count(&mut self, outcome: Outcome, error: Option<String>) {
        self.ended = true;
        let elapsed = self.started.elapsed();
        let resolved = self.resolved.take();
        if let Some(series) = &resolved {
            series.server.in_flight.dec();
            series.server.durations.observe(elapsed.as_secs_f64());
            series.server.calls.inc();
        }
        if let Some((sink, draft)) = self.audit.take() {
            let server = resolved.as_ref().map(|series| series.server_name.clone());
            sink.record(&draft.finish(server, elapsed.as_secs_f64() * 1000.0, outcome.label(), error));
        }
        match resolved {
            Some(series) => series.calls(outcome, &self.metrics.calls).inc(),
            // A name no server has: counted with empty labels.
            None => {
                let labels = CallLabels { server: String::new(), tool: String::new(), outcome: outcome.label() };
                self.metrics.calls.get_or_create(&labels).inc()
            }
        };
    }
}

impl Drop for CallRecord<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.count(Outcome::Cancelled, Some("the caller stopped waiting".into()));
        }
    }
}
