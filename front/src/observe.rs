//! What operators look at: `GET /metrics` (Prometheus), `GET /healthz`
//! (the process answers) and `GET /readyz` (every server running).
//!
//! Served on the MCP front's listener, ahead of its MCP checks (a scraper
//! or load balancer is not an MCP client), and on `[metrics] listen` for a
//! daemon without a front ([`listener`]). Metrics name every server and
//! tool, so they want `[metrics] token` when one is set, and are refused
//! off loopback without one; health checks answer anyone, since load
//! balancers and service managers send no token. `warden status --json`
//! carries the same readiness ([`readiness`]).

use hyper::header::{ACCEPT, AUTHORIZATION};
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Value};
use warden_actors::{ServerStatus, Warden};
use warden_config::MetricsConfig;

pub mod listener;
mod text_format;

/// OpenMetrics text, which Prometheus scrapes (and prefers); others get
/// the classic text format ([`text_format`]).
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The answer to one of these requests.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) status: StatusCode,
    pub(crate) content_type: &'static str,
    pub(crate) body: String,
    /// Sent with a 401: how to authenticate.
    pub(crate) challenge: bool,
}

impl Page {
    fn new(status: StatusCode, content_type: &'static str, body: String) -> Page {
        Page { status, content_type, body, challenge: false }
    }

    fn text(status: StatusCode, body: &str) -> Page {
        Page::new(status, "text/plain; charset=utf-8", format!("{body}\n"))
    }
}

/// The endpoints of one listener.
pub struct Observe {
    warden: Warden,
    token: Option<String>,
    /// Whether the listener is on loopback (metrics answer without a token
    /// only there).
    loopback: bool,
}

impl Observe {
    /// The pages of `warden`, as `config` (`[metrics]`) says; `loopback`:
    /// the listener is on loopback (a token is then not required).
    pub fn new(warden: Warden, config: &MetricsConfig, loopback: bool) -> Observe {
        Observe { warden, token: config.token.clone(), loopback }
    }

    /// The page for `request`, or `None` when it is for another endpoint.
    pub(crate) fn page<B>(&self, request: &Request<B>) -> Option<Page> {
        let path = request.uri().path();
        if !matches!(path, "/metrics" | "/healthz" | "/readyz") {
            return None;
        }
        if request.method() != Method::GET {
            return Some(Page::text(StatusCode::METHOD_NOT_ALLOWED, &format!("{path} takes GET")));
        }
        Some(match path {
            "/healthz" => Page::text(StatusCode::OK, "ok"),
            "/readyz" => {
                let readiness = readiness(&self.warden.status());
                let status = if readiness["ready"] == true { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
                Page::new(status, "application/json", format!("{readiness}\n"))
            }
            _ => match self.refusal(request) {
                Some(refused) => refused,
                None => {
                    let metrics = self.warden.metrics_text();
                    let accept = request.headers().get(ACCEPT).and_then(|value| value.to_str().ok()).unwrap_or("");
                    if accept.contains("application/openmetrics-text") {
                        Page::new(StatusCode::OK, OPENMETRICS, metrics)
                    } else {
                        Page::new(StatusCode::OK, text_format::CONTENT_TYPE, text_format::from_openmetrics(&metrics))
                    }
                }
            },
        })
    }

    /// Why `/metrics` is not answered to this request, if it is not.
    fn refusal<B>(&self, request: &Request<B>) -> Option<Page> {
        let Some(token) = &self.token else {
            return (!self.loopback).then(|| {
                Page::text(
                    StatusCode::FORBIDDEN,
                    "metrics are served off loopback only with a token: set `token` in [metrics]",
                )
            });
        };
        let given = request.headers().get(AUTHORIZATION).and_then(|value| value.to_str().ok());
        let given = given.and_then(|value| value.strip_prefix("Bearer "));
        if given.is_some_and(|given| crate::secret::same(given, token)) {
            return None;
        }
        let mut page = Page::text(StatusCode::UNAUTHORIZED, "send `Authorization: Bearer` with [metrics] token");
        page.challenge = true;
        Some(page)
    }
}

/// Whether every server is running, and those that are not: what
/// `/readyz` answers and `warden status --json` includes.
pub fn readiness(servers: &[ServerStatus]) -> Value {
    let waiting: Vec<Value> = servers
        .iter()
        .filter(|server| server.state.label() != "running")
        .map(|server| json!({"name": server.name, "state": server.state.label(), "detail": server.state.to_string()}))
        .collect();
    json!({"ready": waiting.is_empty(), "not_ready": waiting})
}
