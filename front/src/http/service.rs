//! Making an HTTP front, and mounting it as a service.
//!
//! [`HttpFront::builder`] starts from what is secure on a listener: the
//! host's own authentication, and the standard checks for that listener
//! (its `Host`, same-origin pages only, a protocol version Warden speaks).
//! A host replaces or extends them, sets its limits, and either lets the
//! front serve a listener ([`HttpFront::serve`]) or mounts
//! [`McpService`] on its own: it is a hyper service (for
//! `hyper::server::conn::http1::Builder::serve_connection`) and a tower
//! service (for a router such as axum's `route_service`), taking any
//! request body.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::BodyExt as _;
use hyper::{Request, Response};
use tokio::sync::mpsc;
use warden_config::FrontConfig;

use super::checks::{configured_authentication, standard_checks, Authenticate, Check};
use super::sessions::{KeepAlive, Sessions};
use super::HttpFront;
use crate::http_server::Body;
use crate::observe::Observe;
use crate::replicas::Replicas;
use crate::{AbortOnDrop, Front};

/// Why a request body could not be read (the client went away, say).
///
/// Its own type, not a boxed error: `Limited` boxes its body's error, and
/// a body whose error is already a box trips the compiler's check that
/// the front's futures are `Send` (rust-lang/rust#102211).
#[derive(Debug)]
pub struct BodyError(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Any request body, as the front reads it.
pub type RequestBody = UnsyncBoxBody<Bytes, BodyError>;

/// A request's body, whatever its type, as the front reads it.
pub(super) fn boxed<B>(body: B) -> RequestBody
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    body.map_err(|error| BodyError(error.into())).boxed_unsync()
}

/// How an [`HttpFront`] is made.
pub struct HttpFrontBuilder {
    front: Arc<Front>,
    authenticate: Box<dyn Authenticate>,
    checks: Vec<Box<dyn Check>>,
    max_body: usize,
    max_sessions: usize,
    session_idle: Duration,
    resource_tools: bool,
    keep_alive: Box<dyn Fn() -> KeepAlive + Send + Sync>,
    observe: Option<Observe>,
    replicas: Option<Arc<dyn Replicas>>,
}

impl HttpFront {
    /// A front of `front` on the listener at `address`, whose clients
    /// `authenticate` names. Its checks start as [`standard_checks`]
    /// (nothing allowed beyond the listener's own host and origin), its
    /// limits as `[front]`'s defaults.
    pub fn builder(front: Arc<Front>, authenticate: impl Authenticate, address: SocketAddr) -> HttpFrontBuilder {
        HttpFrontBuilder::new(front, Box::new(authenticate), address, &FrontConfig::default())
    }

    /// The front `[front]` describes, on the listener at `address`: its
    /// tokens (or none), hosts, origins, sessions and tools.
    pub fn from_config(front: Arc<Front>, config: &FrontConfig, address: SocketAddr) -> HttpFrontBuilder {
        HttpFrontBuilder::new(front, configured_authentication(config), address, config)
    }

    /// This front as a service to mount on a listener of the host's.
    pub fn service(self: &Arc<Self>) -> McpService {
        McpService(Arc::clone(self))
    }
}

impl HttpFrontBuilder {
    fn new(
        front: Arc<Front>,
        authenticate: Box<dyn Authenticate>,
        address: SocketAddr,
        config: &FrontConfig,
    ) -> HttpFrontBuilder {
        HttpFrontBuilder {
            front,
            authenticate,
            checks: standard_checks(address, config),
            max_body: warden_protocol::DEFAULT_MAX_MESSAGE_BYTES,
            max_sessions: config.max_sessions,
            session_idle: config.session_idle(),
            resource_tools: config.resource_tools,
            keep_alive: Box::new(|| Box::new(())),
            observe: None,
            replicas: None,
        }
    }

    /// One more check, after those already there.
    pub fn check(mut self, check: impl Check) -> HttpFrontBuilder {
        self.checks.push(Box::new(check));
        self
    }

    /// These checks instead of the standard ones (a host behind a proxy
    /// that rewrites `Host`, say). Keep an `Origin` check: without one a
    /// web page can call the front from a person's browser.
    pub fn checks(mut self, checks: Vec<Box<dyn Check>>) -> HttpFrontBuilder {
        self.checks = checks;
        self
    }

    /// The longest request body, in bytes (413 beyond).
    pub fn max_body(mut self, bytes: usize) -> HttpFrontBuilder {
        self.max_body = bytes;
        self
    }

    /// The most sessions at once (503 beyond, when none can be ended).
    pub fn max_sessions(mut self, sessions: usize) -> HttpFrontBuilder {
        self.max_sessions = sessions;
        self
    }

    /// How long an unused session lives.
    pub fn session_idle(mut self, idle: Duration) -> HttpFrontBuilder {
        self.session_idle = idle;
        self
    }

    /// Whether the primitive tools (`srv__read_resource`, ...) are listed.
    pub fn resource_tools(mut self, listed: bool) -> HttpFrontBuilder {
        self.resource_tools = listed;
        self
    }

    /// What each session holds while it lives (the daemon: a guard that
    /// keeps it from exiting idle).
    pub fn keep_alive(mut self, keep: impl Fn() -> KeepAlive + Send + Sync + 'static) -> HttpFrontBuilder {
        self.keep_alive = Box::new(keep);
        self
    }

    /// Serves as one of several replicas behind a load balancer: sessions
    /// are recorded in `replicas` and carried on by whichever replica a
    /// client's next request reaches (`crate::replicas`).
    pub fn replicas(mut self, replicas: Arc<dyn Replicas>) -> HttpFrontBuilder {
        self.replicas = Some(replicas);
        self
    }

    /// `/metrics`, `/healthz` and `/readyz` on the same listener, before
    /// the MCP checks.
    pub fn observe(mut self, observe: Observe) -> HttpFrontBuilder {
        self.observe = Some(observe);
        self
    }

    /// The front; its idle sessions are swept until it is dropped.
    pub fn build(self) -> Arc<HttpFront> {
        let metrics = Arc::clone(&self.front.metrics);
        let counted = Box::new(move |open| metrics.set_sessions(open));
        let sessions = Sessions::new(self.max_sessions, self.session_idle, counted, self.replicas);
        let sweeper = AbortOnDrop(sessions.spawn_sweeper().abort_handle());
        let (closed_outbox, _) = mpsc::channel(1);
        let replication =
            sessions.spawn_replication(closed_outbox.clone()).map(|task| AbortOnDrop(task.abort_handle()));
        if let Some(replicas) = &sessions.replicas {
            // Its parked calls' states name it, so a retry elsewhere is relayed here.
            self.front.parked.name_replica(replicas.name());
        }
        let replicas = sessions.replicas.clone();
        Arc::new_cyclic(|front| HttpFront {
            _relaying: replicas.map(|replicas| {
                AbortOnDrop(tokio::spawn(super::relay::answer_relayed(front.clone(), replicas)).abort_handle())
            }),
            front: self.front,
            authenticate: self.authenticate,
            checks: self.checks,
            resource_tools: self.resource_tools,
            max_body: self.max_body,
            sessions,
            keep_alive: self.keep_alive,
            observe: self.observe,
            closed_outbox,
            _sweeper: sweeper,
            _replication: replication,
        })
    }
}

/// An [`HttpFront`] as a service: clones share the front and its sessions.
#[derive(Clone)]
pub struct McpService(Arc<HttpFront>);

/// What the service's answer is made of.
type Answering = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

impl McpService {
    fn answer<B>(&self, request: Request<B>) -> Answering
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let front = Arc::clone(&self.0);
        let request = request.map(boxed);
        Box::pin(async move { Ok(front.handle(request).await) })
    }
}

impl<B> hyper::service::Service<Request<B>> for McpService
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, request: Request<B>) -> Answering {
        self.answer(request)
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answering;

    /// Always ready: each request is its own task's work.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Answering {
        self.answer(request)
    }
}
