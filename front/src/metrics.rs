//! The front's own series, in the exposition of the Warden it serves:
//! requests by MCP method and the HTTP face's open sessions. Registered on
//! the handle's metrics the first time a front of that Warden is made
//! (`Metrics::extension`), so every front of one Warden counts into the
//! same series.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The MCP methods a front is asked, as `warden_front_requests` labels
/// them; any other is `other` (clients choose method names, and a label
/// must stay bounded).
const METHODS: [&str; 19] = [
    "initialize",
    "server/discover",
    "subscriptions/listen",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/roots/list_changed",
    "notifications/progress",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// The front's series.
pub(crate) struct FrontMetrics {
    requests: Family<KindLabel, Counter>,
    sessions: Gauge,
}

impl FrontMetrics {
    /// The series, registered on `registry`.
    pub(crate) fn register(registry: &mut Registry) -> FrontMetrics {
        let requests = Family::default();
        registry.register("front_requests", "Requests to the MCP front, by MCP method", requests.clone());
        let sessions = Gauge::default();
        registry.register(
            "front_sessions",
            "Sessions open on the MCP front's HTTP face now (2026-07-28 clients need none)",
            sessions.clone(),
        );
        FrontMetrics { requests, sessions }
    }

    /// A request with this method.
    pub(crate) fn request(&self, method: &str) {
        let kind = METHODS.iter().find(|known| **known == method).copied().unwrap_or("other");
        self.requests.get_or_create(&KindLabel { kind }).inc();
    }

    /// How many sessions the HTTP face holds now.
    pub(crate) fn set_sessions(&self, open: usize) {
        self.sessions.set(i64::try_from(open).unwrap_or(i64::MAX));
    }
}
