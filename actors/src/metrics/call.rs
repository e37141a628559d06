//! One call's record: in flight while it runs, then counted with its
//! outcome and duration, and written to the audit sink — also when its
//! caller drops it midway (as `cancelled`).

use std::time::Instant;

use prometheus_client::metrics::gauge::Gauge;

use super::{CallLabels, Metrics, Outcome, ServerLabel};
use crate::audit::{AuditDraft, AuditSink};

/// Where a resolved call runs: its server's label, its tool, and the
/// server's in-flight gauge (held, so the end needs no second lookup).
struct Resolved {
    server: ServerLabel,
    tool: String,
    in_flight: Gauge,
}

/// Held by a call from its start to its end.
pub(crate) struct CallRecord<'a> {
    metrics: &'a Metrics,
    started: Instant,
    /// The server and tool, once the name resolved to one.
    resolved: Option<Resolved>,
    /// What the audit record will say, when there is a sink.
    audit: Option<(&'a dyn AuditSink, AuditDraft)>,
    ended: bool,
}

impl<'a> CallRecord<'a> {
    /// A call begins; nothing is counted until it ends.
    pub(crate) fn begin(metrics: &'a Metrics) -> CallRecord<'a> {
        CallRecord { metrics, started: Instant::now(), resolved: None, audit: None, ended: false }
    }

    /// The call is audited into `sink`, from `draft`.
    pub(crate) fn audited(mut self, sink: &'a dyn AuditSink, draft: AuditDraft) -> CallRecord<'a> {
        self.audit = Some((sink, draft));
        self
    }

    /// The audit draft, when the call is audited.
    pub(crate) fn draft(&mut self) -> Option<&mut AuditDraft> {
        self.audit.as_mut().map(|(_, draft)| draft)
    }

    /// The call's name resolved to `server`'s tool `tool` (Warden's name
    /// for it): from now on it is in flight there.
    pub(crate) fn resolved(&mut self, server: &str, tool: &str) {
        let label = ServerLabel { server: server.to_string() };
        let in_flight = self.metrics.in_flight.get_or_create_owned(&label);
        in_flight.inc();
        // A tool already seen (every call after its first) costs a lookup.
        let mut seen = self.metrics.seen.lock().expect("metrics lock");
        if !seen.get(server).is_some_and(|known| known.tools.contains(tool)) {
            seen.entry(server.to_string()).or_default().tools.insert(tool.to_string());
        }
        drop(seen);
        self.resolved = Some(Resolved { server: label, tool: tool.to_string(), in_flight });
    }

    /// The call ended so (`error`: why, when it got no result).
    pub(crate) fn end(mut self, outcome: Outcome, error: Option<String>) {
        self.count(outcome, error);
    }

    fn count(&mut self, outcome: Outcome, error: Option<String>) {
        self.ended = true;
        let elapsed = self.started.elapsed();
        let resolved = self.resolved.take();
        if let Some(Resolved { server, in_flight, .. }) = &resolved {
            in_flight.dec();
            self.metrics.call_seconds.get_or_create(server).observe(elapsed.as_secs_f64());
            self.metrics.server_calls.get_or_create(server).inc();
        }
        if let Some((sink, draft)) = self.audit.take() {
            let server = resolved.as_ref().map(|resolved| resolved.server.server.clone());
            sink.record(&draft.finish(server, elapsed.as_secs_f64() * 1000.0, outcome.label(), error));
        }
        let (server, tool) = resolved.map(|resolved| (resolved.server.server, resolved.tool)).unwrap_or_default();
        self.metrics.calls.get_or_create(&CallLabels { server, tool, outcome: outcome.label() }).inc();
    }
}

impl Drop for CallRecord<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.count(Outcome::Cancelled, Some("the caller stopped waiting".into()));
        }
    }
}
