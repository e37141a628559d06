//! The bridge's own series, in the daemon's one exposition: requests by
//! op and connections open now. Registered on the Warden's metrics
//! (`Metrics::extension`), which serve them with the rest.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// The bridge's series.
pub(crate) struct BridgeMetrics {
    requests: Family<KindLabel, Counter>,
    connections: Gauge,
}

impl BridgeMetrics {
    /// The series, registered on `registry`.
    pub(crate) fn register(registry: &mut Registry) -> BridgeMetrics {
        let requests = Family::default();
        registry.register("bridge_requests", "Requests on the daemon's bridge, by op", requests.clone());
        let connections = Gauge::default();
        registry.register("bridge_connections", "Bridge connections open now", connections.clone());
        BridgeMetrics { requests, connections }
    }

    /// A request with this op (an op the protocol does not have is
    /// counted as `unknown`: a label stays bounded).
    pub(crate) fn request(&self, op: &str) {
        let kind = warden_protocol::BridgeRequest::OPS.iter().find(|known| **known == op).copied().unwrap_or("unknown");
        self.requests.get_or_create(&KindLabel { kind }).inc();
    }

    /// A connection opened; it counts as open until the guard drops.
    pub(crate) fn connection(&self) -> impl Drop + Send {
        struct Open(Gauge);
        impl Drop for Open {
            fn drop(&mut self) {
                self.0.dec();
            }
        }
        self.connections.inc();
        Open(self.connections.clone())
    }
}
