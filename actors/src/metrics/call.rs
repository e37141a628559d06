//! One call's part in the metrics: in flight while it runs, then counted
//! with its outcome and duration — also when its caller drops it midway.

use std::time::Instant;

use super::{CallLabels, Metrics, Outcome, ServerLabel};

/// Held by a call from its start to its end.
pub(crate) struct CallRecord<'a> {
    metrics: &'a Metrics,
    started: Instant,
    /// The server and tool, once the name resolved to one.
    resolved: Option<(String, String)>,
    ended: bool,
}

impl<'a> CallRecord<'a> {
    /// A call begins; nothing is counted until it ends.
    pub(crate) fn begin(metrics: &'a Metrics) -> CallRecord<'a> {
        CallRecord { metrics, started: Instant::now(), resolved: None, ended: false }
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

    /// The call ended so.
    pub(crate) fn end(mut self, outcome: Outcome) {
        self.count(outcome);
    }

    fn count(&mut self, outcome: Outcome) {
        self.ended = true;
        let (server, tool) = self.resolved.take().unwrap_or_default();
        if !server.is_empty() {
            let label = ServerLabel { server: server.clone() };
            self.metrics.in_flight.get_or_create(&label).dec();
            self.metrics.call_seconds.get_or_create(&label).observe(self.started.elapsed().as_secs_f64());
            self.metrics.server_calls.get_or_create(&label).inc();
        }
        self.metrics.calls.get_or_create(&CallLabels { server, tool, outcome: outcome.label() }).inc();
    }
}

impl Drop for CallRecord<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.count(Outcome::Cancelled);
        }
    }
}
