//! An authorization server and the MCP server it protects, in one
//! in-process HTTP server on a loopback port, scriptable per test.
//!
//! Written from the specs (MCP authorization 2025-11-25, RFC 9728, 8414,
//! 7591, 7636, 8707, 9207, 7523), sharing no code with Warden's client, and
//! strict where a real authorization server is: PKCE is verified, the
//! `resource` must name the MCP server, redirect URIs must be registered,
//! the client must authenticate the way it registered. Everything it sees
//! is recorded ([`Seen`]) for the tests to assert on.
//!
//! Layout on `http://127.0.0.1:PORT`: the MCP endpoint `/mcp` (tools
//! `whoami` and `admin`, the latter needing scope `admin`); the PRM and
//! metadata where [`Options`] puts them; `/authorize` (approves at once:
//! the test "person" always consents), `/token`, `/register`, `/revoke`.

use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;

mod authorization;
mod resource;
mod state;

use state::State;
pub use state::{Client, MetadataAt, Options, PrmAt, Seen};

/// A running server; stops when dropped.
pub struct OAuthServer {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    state: Arc<Mutex<State>>,
    _runtime: std::thread::JoinHandle<()>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl OAuthServer {
    /// Starts one on a free port, on its own thread and runtime (so sync
    /// and async tests alike can use it).
    pub fn start(options: Options) -> OAuthServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).expect("non-blocking");
        let origin = format!("http://{}", listener.local_addr().expect("an address"));
        let state = Arc::new(Mutex::new(State::new(options, &origin)));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let shared = state.clone();
        let runtime = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
                tokio::select! {
                    _ = stopped => {}
                    _ = serve(listener, shared) => {}
                }
            });
        });
        OAuthServer { origin, state, _runtime: runtime, stop: Some(stop) }
    }

    /// The MCP endpoint's URL.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.origin)
    }

    /// The authorization server's issuer.
    pub fn issuer(&self) -> String {
        self.lock().issuer.clone()
    }

    /// What the server has seen so far.
    pub fn seen(&self) -> Seen {
        self.lock().seen.clone()
    }

    /// Changes the options while running.
    pub fn change(&self, change: impl FnOnce(&mut Options)) {
        change(&mut self.lock().options);
    }

    /// Forgets every access token issued (as an expiry or a server restart
    /// would): the next request with one gets a 401.
    pub fn expire_access_tokens(&self) {
        self.lock().access.clear();
    }

    /// Forgets every refresh token too: a refresh is refused.
    pub fn revoke_refresh_tokens(&self) {
        self.lock().refresh.clear();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn serve(listener: tokio::net::TcpListener, state: Arc<Mutex<State>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(request, state.clone()));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

/// A response: status, headers, body.
pub(crate) struct Reply {
    status: StatusCode,
    headers: Vec<(&'static str, String)>,
    body: String,
}

impl Reply {
    pub(crate) fn json(status: StatusCode, body: &Value) -> Reply {
        Reply { status, headers: vec![("content-type", "application/json".into())], body: body.to_string() }
    }

    pub(crate) fn text(status: StatusCode, body: &str) -> Reply {
        Reply { status, headers: vec![("content-type", "text/plain".into())], body: body.to_string() }
    }

    pub(crate) fn header(mut self, name: &'static str, value: String) -> Reply {
        self.headers.push((name, value));
        self
    }
}

/// What a handler gets: method, path, query, headers, body.
pub(crate) struct Asked {
    pub(crate) method: hyper::Method,
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: hyper::HeaderMap,
    pub(crate) body: Bytes,
}

impl Asked {
    /// The body as a form.
    pub(crate) fn form(&self) -> Vec<(String, String)> {
        url::form_urlencoded::parse(&self.body).into_owned().collect()
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

async fn handle(request: Request<Incoming>, state: Arc<Mutex<State>>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let query =
        parts.uri.query().map(|q| url::form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let asked = Asked { method: parts.method, path: parts.uri.path().to_string(), query, headers: parts.headers, body };
    let reply = {
        let mut state = state.lock().unwrap_or_else(|p| p.into_inner());
        state.seen.paths.push(format!("{} {}", asked.method, asked.path));
        route(&mut state, &asked)
    };
    let mut response = Response::builder().status(reply.status);
    for (name, value) in reply.headers {
        response = response.header(name, value);
    }
    Ok(response.body(Full::new(Bytes::from(reply.body))).expect("a response"))
}

fn route(state: &mut State, asked: &Asked) -> Reply {
    let path = asked.path.as_str();
    if path == "/mcp" {
        return resource::mcp(state, asked);
    }
    if let Some(reply) = resource::metadata(state, path) {
        return reply;
    }
    if let Some(reply) = authorization::metadata(state, path) {
        return reply;
    }
    match path {
        "/authorize" => authorization::authorize(state, asked),
        "/token" => authorization::token(state, asked),
        "/register" => authorization::register(state, asked),
        "/revoke" => authorization::revoke(state, asked),
        _ => Reply::text(StatusCode::NOT_FOUND, "not found"),
    }
}
