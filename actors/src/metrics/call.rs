//! One call's record: in flight while it runs, then counted with its
//! outcome and duration, and written to the audit sink — also when its
//! caller drops it midway (as `cancelled`).

use std::time::Instant;

use super::{CallLabels, Metrics, Outcome, ServerLabel};
use crate::audit::{AuditDraft, AuditSink};

/// Held by a call from its start to its end.
pub(crate) struct CallRecord<'a> {
    metrics: &'a Metrics,
    started: Instant,
    /// The server and tool, once the name resolved to one.
    resolved: Option<(String, String)>,
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
        self.metrics.in_flight.get_or_create(&ServerLabel { server: server.to_string() }).inc();
        let mut seen = self.metrics.seen.lock().expect("metrics lock");
        let tools = &mut seen.entry(server.to_string()).or_default().tools;
        if !tools.contains(tool) {
            tools.insert(tool.to_string());
        }
        self.resolved = Some((server.to_string(), tool.to_string()));
    }

    /// The call ended so (`error`: why, when it got no result).
    pub(crate) fn end(mut self, outcome: Outcome, error: Option<String>) {
        self.count(outcome, error);
    }

    fn count(&mut self, outcome: Outcome, error: Option<String>) {
        self.ended = true;
        let elapsed = self.started.elapsed();
        let (server, tool) = self.resolved.take().unwrap_or_default();
        if !server.is_empty() {
            let label = ServerLabel { server: server.clone() };
            self.metrics.in_flight.get_or_create(&label).dec();
            self.metrics.call_seconds.get_or_create(&label).observe(elapsed.as_secs_f64());
            self.metrics.server_calls.get_or_create(&label).inc();
        }
        if let Some((sink, draft)) = self.audit.take() {
            let server = (!server.is_empty()).then(|| server.clone());
            sink.record(&draft.finish(server, elapsed.as_secs_f64() * 1000.0, outcome.label(), error));
        }
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
