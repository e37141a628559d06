//! Connecting to NATS as the config says, and saying what went wrong.
//!
//! Once connected, the client reconnects by itself for as long as the node
//! runs (to any of the configured URLs, and to the servers of a NATS
//! cluster it learns of); each loss and return of the connection is a
//! warning and an info line in the log, so a person sees why remote tools
//! fail meanwhile. A first connection that fails is an error at once: a
//! node that cannot reach its cluster should not pretend to be in one.

use std::time::Duration;

use async_nats::{Client, ConnectOptions, Event, ServerAddr};
use warden_config::ClusterConfig;

use crate::ClusterError;

/// How long the first connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the client pings NATS: a silent connection is noticed (and
/// replaced) within two of these.
const PING_INTERVAL: Duration = Duration::from_secs(5);

/// Connects to the cluster's NATS.
pub(crate) async fn connect(config: &ClusterConfig) -> Result<Client, ClusterError> {
    let urls = config.nats.join(", ");
    let addrs = config
        .nats
        .iter()
        .map(|url| url.parse::<ServerAddr>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| ClusterError::Connect { urls: urls.clone(), problem: error.to_string() })?;
    let node = config.node_name().to_string();
    let mut options = ConnectOptions::new()
        .name(format!("warden {node}"))
        .connection_timeout(CONNECT_TIMEOUT)
        .ping_interval(PING_INTERVAL)
        // Calls carry their own deadlines.
        .request_timeout(None)
        .event_callback(move |event| {
            let node = node.clone();
            async move { log_event(&node, event) }
        });
    if let Some(token) = &config.token {
        options = options.token(token.clone());
    }
    if let Some(seed) = &config.nkey_seed {
        options = options.nkey(seed.clone());
    }
    if let Some(path) = &config.credentials {
        options = options.credentials_file(path).await.map_err(|error| ClusterError::Connect {
            urls: urls.clone(),
            problem: format!("cannot read the credentials file {}: {error}", path.display()),
        })?;
    }
    if let Some(path) = &config.ca_cert {
        options = options.add_root_certificates(path.clone());
    }
    if config.nats.iter().any(|url| url.starts_with("tls://")) {
        options = options.require_tls(true);
    }
    options.connect(addrs).await.map_err(|error| ClusterError::Connect {
        urls,
        problem: format!("{error}; is nats-server running there, and are the credentials right?"),
    })
}

fn log_event(node: &str, event: Event) {
    match event {
        Event::Connected => tracing::info!(node, "connected to NATS"),
        Event::Disconnected => {
            tracing::warn!(node, "lost the connection to NATS; reconnecting (remote tools fail meanwhile)")
        }
        Event::LameDuckMode => tracing::warn!(node, "the NATS server is shutting down (lame duck mode)"),
        other => tracing::warn!(node, "NATS: {other}"),
    }
}

/// How many servers the NATS `client` is connected to has in its cluster:
/// itself and the others it advertises (one outside a NATS cluster).
pub(crate) fn servers(client: &Client) -> usize {
    let info = client.server_info();
    if info.cluster.is_none() {
        return 1;
    }
    let mut urls: Vec<&String> = info.connect_urls.iter().collect();
    urls.sort();
    urls.dedup();
    let own = format!("{}:{}", info.host, info.port);
    urls.len() + usize::from(!urls.iter().any(|url| url.ends_with(&own)))
}
