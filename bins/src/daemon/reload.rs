//! Live config reload in the daemon: the `reload` op and SIGHUP.
//!
//! Both re-read the config file the daemon was started with (the one its
//! lockfile names) and hand it to [`Warden::reload`](warden_actors::Warden::reload):
//! added servers start, removed ones stop once their calls in flight are
//! done, changed ones restart, unchanged ones are not touched; policy,
//! profiles and agents apply to the next call. A file that fails to load,
//! or a change Warden cannot make live (`[naming]`), leaves the running
//! config in place: the op answers `config_invalid` or `reload_refused` with
//! the reason, SIGHUP logs it.
//!
//! `[daemon]` (listen address, idle timeout) and the daemon's own wait for
//! starting servers are read once, at start: changing them takes a restart;
//! so does joining or leaving a cluster, but a cluster node's `export` list
//! applies at once.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tokio::signal::unix::{signal, Signal, SignalKind};
use warden_actors::Warden;
use warden_cluster::ClusterLink;
use warden_config::WardenConfig;
use warden_protocol::{BridgeError, BridgeErrorCode as Code};

/// Re-reads the config at `path` and applies it; the report, or why
/// nothing changed.
pub(crate) async fn reload(warden: &Warden, cluster: Option<&ClusterLink>, path: &Path) -> Result<Value, BridgeError> {
    let config = WardenConfig::load(path).map_err(|error| {
        BridgeError::new(
            Code::CONFIG_INVALID,
            format!("the config was not reloaded; the running one stays in place: {error}"),
        )
    })?;
    let report = warden.reload(&config).await.map_err(|error| {
        BridgeError::new(
            Code::RELOAD_REFUSED,
            format!(
                "the config was not reloaded; the running one stays in place: {}",
                crate::advice::reload_error(&error)
            ),
        )
    })?;
    if let Some(cluster) = cluster {
        cluster.apply(&config);
    }
    let mut answer = serde_json::to_value(&report).expect("a report serialises");
    answer["config"] = json!(path);
    Ok(answer)
}

/// The SIGHUP stream, taken before the lockfile is published: until it
/// exists, SIGHUP's default action would end the daemon.
pub(crate) fn hangups() -> Option<Signal> {
    match signal(SignalKind::hangup()) {
        Ok(hangups) => Some(hangups),
        Err(error) => {
            tracing::warn!("cannot listen for SIGHUP ({error}); `warden reload` still works");
            None
        }
    }
}

/// Reloads the config at `path` on every SIGHUP and logs what happened.
pub(crate) fn on_hangup(
    hangups: Option<Signal>,
    warden: Warden,
    cluster: Option<ClusterLink>,
    path: PathBuf,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Some(mut hangups) = hangups else { return };
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP received: reloading {}", path.display());
            // Warden logs what a reload did; only a refusal is said here.
            if let Err(error) = reload(&warden, cluster.as_ref(), &path).await {
                tracing::warn!("{}", error.message);
            }
        }
    })
}
