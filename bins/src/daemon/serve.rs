//! `warden serve`: the daemon's life from lock to exit.
//!
//! 1. Take the single-instance lock; if another daemon holds it, exit
//!    quietly (status 0): a racing CLI will find that one.
//! 2. Load the config, bind the listener (loopback unless the config
//!    allows otherwise), start Warden — which returns at once; servers start
//!    in the background — and only then publish the lockfile, so a client
//!    that reads it can connect.
//! 3. Serve connections until SIGTERM, SIGINT, the `shutdown` op or the
//!    idle timer pulls the [`Shutdown`] switch; SIGHUP reloads the config.
//! 4. Stop accepting and remove the lockfile (new clients start a fresh
//!    daemon instead of talking to this one), let calls in flight finish
//!    (bounded), close the connections, shut every server down, and release
//!    the lock last.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use tokio::net::{TcpListener, UnixListener, UnixStream};
use tokio::task::JoinSet;
use tokio::time::Instant;
use warden_actors::{ApprovalQueue, Warden};
use warden_config::WardenConfig;

use super::admission::Admission;
use super::idle::Activity;
use super::lockfile::Lockfile;
use super::log_file::RotatingLog;
use super::names::Names;
use super::ops::Ops;
use super::pid_lock;
use super::shutdown::Shutdown;
use super::state_dir::StateDir;
use super::{connection, token};
use crate::unix_stream;

/// The longest calls in flight are waited for at shutdown.
const DRAIN_LIMIT: Duration = Duration::from_secs(30);

/// How long a starting daemon retries the single-instance lock: a client
/// checking for a stale lockfile holds it for a moment.
const LOCK_PATIENCE: Duration = Duration::from_millis(500);

/// Runs the daemon for the config at `config_path` (absolute).
pub(crate) async fn run(config_path: &Path, log: Option<RotatingLog>, no_idle_exit: bool) -> anyhow::Result<()> {
    let state = StateDir::from_env()?;
    state.create()?;
    let Some(mut lock) = take_lock(&state).await? else {
        tracing::info!("another warden daemon is running for {}; leaving it be", state.path().display());
        return Ok(());
    };
    lock.record_pid();
    let config = WardenConfig::load(config_path)?;
    if let Some(log) = &log {
        log.set_limits(config.daemon.log_max_bytes(), config.daemon.log_files);
    }
    let address = config.daemon.listen_addr().map_err(|(field, problem)| warden_config::ConfigError::Setting {
        file: config_path.display().to_string(),
        field,
        problem,
    })?;
    let listener = TcpListener::bind(address).await.map_err(|source| CannotListen { address, what: "", source })?;
    let address: SocketAddr = listener.local_addr()?;
    let unix_listener = super::unix_socket::bind(&state.socket());
    // The MCP front's and the metrics' listeners, bound before anything
    // starts so a taken port fails the start with a clear error.
    let front_listener = bind(config.front.listen_addr(), config_path, " for the MCP front ([front] listen)").await?;
    let metrics_listener = bind(config.metrics.listen_addr(), config_path, " for metrics ([metrics] listen)").await?;
    // Where it bound (the system's choice for port 0): logged, and in `status`.
    let metrics_address = metrics_listener.as_ref().map(TcpListener::local_addr).transpose()?;
    // Calls that need a person wait here for `warden approve`, unless the
    // config names its own approver.
    let approvals = ApprovalQueue::new();
    let mut builder = Warden::builder().config(&config).era_memo(state.eras()).task_journal(state.tasks());
    if config.security.approver == "none" {
        builder = builder.approver(Arc::new(approvals.clone()));
    }
    // Servers' questions wait in the same queue for `warden answer`.
    builder = builder.elicitor(Arc::new(approvals.clone()));
    let audit = if config.audit.enabled {
        let path = state.audit_log();
        let log = super::audit_log::AuditLog::open(path.clone(), &config.audit).with_context(|| {
            format!("cannot open the audit log {} ([audit] enabled = false turns it off)", path.display())
        })?;
        let log = Arc::new(log);
        builder = builder.audit(log.clone());
        Some(log)
    } else {
        None
    };
    let warden = builder.start().await.context("starting Warden")?;
    // Before the lockfile: a node that cannot join its cluster does not start.
    let mut cluster = warden_cluster::Cluster::join(&warden, &config)
        .await
        .with_context(|| format!("joining the cluster ([cluster] in {})", config_path.display()))?;
    // Calls waiting in this daemon's queue are listed, and answerable, on
    // every node.
    if let (Some(cluster), "none") = (&mut cluster, config.security.approver.as_str()) {
        cluster.share_approvals(approvals.clone());
    }
    // Its audit records go to the cluster's stream too (`warden cluster audit`).
    if let (Some(cluster), Some(audit)) = (&cluster, &audit) {
        match cluster.audit_sink().await {
            Ok(sink) => audit.also_to(sink),
            Err(error) => tracing::warn!("this node's audit records stay in its own file only: {error}"),
        }
    }
    let lockfile = Lockfile {
        pid: std::process::id(),
        address,
        socket: unix_listener.as_ref().map(|_| state.socket()),
        started_at: SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0),
        version: env!("CARGO_PKG_VERSION").to_string(),
        token: token::generate().context("cannot read /dev/urandom for the daemon's token")?,
        config: config_path.to_path_buf(),
    };
    // A service (`--no-idle-exit`) runs until it is stopped.
    // A cluster node serves other nodes, whose calls the idle timer does
    // not see: it runs until it is stopped, like a service.
    let in_cluster = config.cluster.is_some();
    let idle_timeout = if no_idle_exit || in_cluster { None } else { config.daemon.idle_timeout() };
    // Before the lockfile: once a client can find the daemon, SIGHUP reloads.
    let hangups = super::reload::hangups();
    lockfile.write(&state.lockfile()).context("cannot write the daemon's lockfile")?;
    tracing::info!(
        "warden daemon (pid {}) listening on {address}{} for {}; idle timeout {}; {}",
        lockfile.pid,
        match &lockfile.socket {
            Some(path) => format!(" and {}", path.display()),
            None => String::new(),
        },
        config_path.display(),
        match idle_timeout {
            Some(timeout) => format!("{:.0} s", timeout.as_secs_f64()),
            None if no_idle_exit => "none (--no-idle-exit)".into(),
            None if in_cluster => "none (a cluster node serves other nodes)".into(),
            None => "none (idle_timeout_minutes = 0)".into(),
        },
        super::workers::described(),
    );

    let options =
        warden_front::FrontOptions { lone_client: None, login_advice: Some(Arc::new(crate::advice::login_advice)) };
    let front = warden_front::Front::with(warden.clone(), options);
    let activity = Activity::new(idle_timeout);
    let http_front = match front_listener {
        None => None,
        Some(listener) => {
            let local = listener.local_addr()?;
            let keep = Arc::clone(&activity);
            let mut http = warden_front::http::HttpFront::from_config(Arc::clone(&front), &config.front, local)
                .max_body(config.max_message_bytes)
                .keep_alive(move || Box::new(keep.begin_session()))
                .observe(warden_front::observe::Observe::new(
                    warden.clone(),
                    &config.metrics,
                    local.ip().is_loopback(),
                ));
            // In a cluster, every node's front is a replica of the others:
            // a session goes on on whichever a load balancer picks.
            if let Some(cluster) = &cluster {
                let replicas =
                    cluster.front_replicas().await.context("sharing the front's sessions with the cluster")?;
                http = http.replicas(replicas);
            }
            let http = http.build();
            if config.front.open() {
                tracing::warn!("the MCP front on {local} takes requests without a token ([front] auth = \"none\")");
            }
            tracing::info!("MCP front listening on http://{local}/mcp");
            Some((local, http, listener))
        }
    };
    let bridge_metrics = warden.metrics().extension(super::bridge_metrics::BridgeMetrics::register);
    let ops = Arc::new(Ops {
        warden,
        bridge_metrics,
        lockfile,
        started: Instant::now(),
        activity,
        shutdown: Shutdown::new(),
        call_timeout: config.call_timeout(),
        connection_idle: config.daemon.connection_idle(),
        connections: Arc::new(AtomicUsize::new(0)),
        names: Names::default(),
        approvals,
        queue_approves: config.security.approver == "none",
        cluster: cluster.as_ref().map(warden_cluster::Cluster::link),
        front,
        http_front: http_front.as_ref().map(|(address, http, _)| (*address, Arc::clone(http))),
        metrics: metrics_address,
        resource_tools: config.front.resource_tools,
        max_message_bytes: config.max_message_bytes,
    });
    let reloads =
        super::reload::on_hangup(hangups, ops.warden.clone(), ops.cluster.clone(), ops.lockfile.config.clone());
    let http_front = http_front.map(|(_, http, listener)| {
        let shutdown = ops.shutdown.clone();
        tokio::spawn(http.serve(listener, async move {
            shutdown.triggered().await;
        }))
    });
    if let (Some(listener), Some(local)) = (metrics_listener, metrics_address) {
        let observe =
            warden_front::observe::Observe::new(ops.warden.clone(), &config.metrics, local.ip().is_loopback());
        let shutdown = ops.shutdown.clone();
        tracing::info!("metrics on http://{local}/metrics (and /healthz, /readyz)");
        tokio::spawn(warden_front::observe::listener::serve(listener, Arc::new(observe), async move {
            shutdown.triggered().await;
        }));
    }
    let connections = accept_until_shutdown(listener, unix_listener, &ops).await;
    if let Some(http_front) = http_front {
        // Its sessions end (their calls cancelled) before the drain below.
        let _ = http_front.await;
    }
    reloads.abort();
    let _ = reloads.await;

    // Stopping: no new work, no lockfile for new clients to find.
    Lockfile::remove_if_ours(&state.lockfile(), ops.lockfile.pid);
    if let Some(socket) = &ops.lockfile.socket {
        super::unix_socket::remove(socket);
    }
    if !ops.activity.drained(DRAIN_LIMIT.min(ops.call_timeout)).await {
        tracing::warn!("{} calls still running after the drain limit; stopping anyway", ops.activity.calls_in_flight());
    }
    close_connections(connections).await;
    if let Some(cluster) = cluster {
        cluster.leave().await;
    }
    ops.warden.shutdown().await;
    if let Some(audit) = audit {
        // The last records are written before the process ends.
        let _ = tokio::task::spawn_blocking(move || audit.close()).await;
    }
    tracing::info!("warden daemon stopped");
    // Traces still buffered are sent; that waits on the exporter's task,
    // so not on one of the runtime's workers.
    let _ = tokio::task::spawn_blocking(crate::telemetry::flush).await;
    drop(lock);
    Ok(())
}

/// Binds a listener the config may ask for (`what` names it in the error).
async fn bind(
    address: Result<Option<SocketAddr>, (&'static str, String)>,
    config_path: &std::path::Path,
    what: &'static str,
) -> anyhow::Result<Option<TcpListener>> {
    let address = address.map_err(|(field, problem)| warden_config::ConfigError::Setting {
        file: config_path.display().to_string(),
        field,
        problem,
    })?;
    let Some(address) = address else { return Ok(None) };
    Ok(Some(TcpListener::bind(address).await.map_err(|source| CannotListen { address, what, source })?))
}

/// Takes the single-instance lock, retrying for a moment.
async fn take_lock(state: &StateDir) -> anyhow::Result<Option<pid_lock::PidLock>> {
    let deadline = Instant::now() + LOCK_PATIENCE;
    loop {
        let path = state.pid_lock();
        if let Some(lock) = pid_lock::try_lock(&path).with_context(|| format!("cannot open {}", path.display()))? {
            return Ok(Some(lock));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Accepts connections (on the TCP port and the Unix socket, when there
/// is one) until the shutdown switch flips; returns the connections still
/// open.
async fn accept_until_shutdown(listener: TcpListener, unix: Option<UnixListener>, ops: &Arc<Ops>) -> JoinSet<()> {
    let mut connections = JoinSet::new();
    let admission = Admission::new();
    let signals = signals(ops.shutdown.clone());
    let idle = {
        let ops = Arc::clone(ops);
        tokio::spawn(async move {
            ops.activity.expired().await;
            let idle = ops.activity.timeout().unwrap_or_default().as_secs_f64();
            ops.shutdown.trigger(format!("idle for {idle:.0} s (idle_timeout_minutes)"));
        })
    };
    loop {
        tokio::select! {
            reason = ops.shutdown.triggered() => {
                tracing::info!("shutting down: {reason}");
                break;
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let (read, write) = stream.into_split();
                    spawn_connection(&mut connections, &admission, ops, read, write);
                }
                Err(error) => accept_failed(error).await,
            },
            accepted = accept_unix(unix.as_ref()) => match accepted.and_then(|(stream, _)| unix_stream::split(stream)) {
                Ok((read, write)) => spawn_connection(&mut connections, &admission, ops, read, write),
                Err(error) => accept_failed(error).await,
            },
        }
    }
    idle.abort();
    signals.abort();
    connections
}

/// The next connection on the Unix socket; never, without one.
async fn accept_unix(unix: Option<&UnixListener>) -> std::io::Result<(UnixStream, tokio::net::unix::SocketAddr)> {
    match unix {
        Some(unix) => unix.accept().await,
        None => std::future::pending().await,
    }
}

/// An accept failed (out of file descriptors, say): wait, do not spin.
async fn accept_failed(error: std::io::Error) {
    tracing::warn!("accept failed: {error}");
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Serves a new connection in `connections`.
fn spawn_connection<R, W>(connections: &mut JoinSet<()>, admission: &Arc<Admission>, ops: &Arc<Ops>, read: R, write: W)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    while connections.try_join_next().is_some() {}
    // Entered here, not in the task: a full pool must make room before the
    // next accept.
    let arrival = admission.arrive();
    let ops = Arc::clone(ops);
    connections.spawn(async move {
        ops.connections.fetch_add(1, Ordering::Relaxed);
        connection::serve(read, write, Arc::clone(&ops), arrival).await;
        ops.connections.fetch_sub(1, Ordering::Relaxed);
    });
}

/// SIGTERM and SIGINT pull the switch.
fn signals(shutdown: Shutdown) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{signal, SignalKind};
    tokio::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
            tracing::warn!("cannot listen for SIGTERM/SIGINT; `warden stop` still works");
            return;
        };
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        shutdown.trigger(format!("{name} received"));
    })
}

/// Closes every connection (calls in them have had their time).
async fn close_connections(mut connections: JoinSet<()>) {
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// A listener could not be bound: `warden serve` exits with
/// [`CannotListen::EXIT_CODE`] (3) when the address is taken, so a service
/// manager or script can tell it from a bad config (2).
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {address}{what}: {source}")]
pub(crate) struct CannotListen {
    pub(crate) address: SocketAddr,
    pub(crate) what: &'static str,
    pub(crate) source: std::io::Error,
}

impl CannotListen {
    /// The exit code for an address in use.
    pub(crate) const EXIT_CODE: u8 = 3;

    /// True when another process has the address.
    pub(crate) fn in_use(&self) -> bool {
        self.source.kind() == std::io::ErrorKind::AddrInUse
    }
}
