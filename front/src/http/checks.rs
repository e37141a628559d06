//! What the HTTP face checks before it speaks MCP, as parts a host can
//! replace or extend: who is asking ([`Authenticate`]), and any number of
//! [`Check`]s on the request's head (which `Host`, which `Origin`, which
//! protocol version).
//!
//! The daemon's `[front]` is [`Authenticate`] by bearer tokens
//! ([`BearerTokens`], or [`NoAuthentication`] with `auth = "none"`) and the
//! three checks of [`standard_checks`]. A host that embeds the front signs
//! its clients in its own way (its SSO, a mutual-TLS peer, a header its
//! proxy sets) by giving its own [`Authenticate`], and adds a check (a
//! rate limit, a source-address rule) by pushing one more [`Check`]. The
//! head is all a check sees: the body is read only after every check
//! passed, and only up to the front's size limit.
//!
//! A refusal is a [`Refusal`]: the status, and a JSON-RPC error body that
//! says what was wrong and what to do, so a client's log explains itself.
//! The connection is closed after it (the body was never read).

use hyper::header::{HeaderName, HeaderValue, AUTHORIZATION, HOST, ORIGIN, WWW_AUTHENTICATE};
use hyper::http::request::Parts;
use hyper::StatusCode;
use warden_config::{FrontConfig, FrontToken};
use warden_protocol::{ErrorCode, ErrorObject, SUPPORTED_PROTOCOL_VERSIONS};

/// Who a request comes from, as the front treats it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    /// Unique to the credential: a session (and a parked call of a
    /// 2026-07-28 client) belongs to it, and another identity that shows
    /// its id is told the session does not exist.
    pub subject: String,
    /// How it is named in the audit record, approvals and logs — never a
    /// secret.
    pub label: String,
    /// The agent it is bound to: its allowlist and profile apply, and it
    /// may not use another agent's endpoint.
    pub agent: Option<String>,
}

/// Why a request was refused before any MCP was spoken.
#[derive(Debug)]
pub struct Refusal {
    pub(super) status: StatusCode,
    /// The JSON-RPC error the body carries.
    pub(super) error: ErrorObject,
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
}

impl Refusal {
    /// A refusal with this HTTP `status`; `message` says what was wrong
    /// and what to do about it (an invalid-request error).
    pub fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal::with_error(status, ErrorObject::new(ErrorCode::INVALID_REQUEST, message))
    }

    /// A refusal with this HTTP `status` and JSON-RPC `error` (its own
    /// code and data).
    pub fn with_error(status: StatusCode, error: ErrorObject) -> Refusal {
        Refusal { status, error, headers: Vec::new() }
    }

    /// The same, with a header (`WWW-Authenticate` on a 401, `Retry-After`).
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Refusal {
        self.headers.push((name, value));
        self
    }

    /// The HTTP status it answers with.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// What it says.
    pub fn message(&self) -> &str {
        &self.error.message
    }
}

/// Says who a request comes from, or refuses it (401, usually).
pub trait Authenticate: Send + Sync + 'static {
    /// The identity behind `request`'s head.
    fn authenticate(&self, request: &Parts) -> Result<Identity, Refusal>;
}

/// One check of a request's head.
pub trait Check: Send + Sync + 'static {
    /// `Ok` lets the request on to the next check; a refusal answers it.
    fn check(&self, request: &Parts) -> Result<(), Refusal>;
}

/// Bearer tokens (`Authorization: Bearer …`), each one identity: the
/// daemon's `[front] tokens`.
pub struct BearerTokens {
    tokens: Vec<FrontToken>,
}

impl BearerTokens {
    /// Accepts each of `tokens` (already expanded: no `${…}` left).
    pub fn new(tokens: Vec<FrontToken>) -> BearerTokens {
        BearerTokens { tokens }
    }
}

impl Authenticate for BearerTokens {
    fn authenticate(&self, request: &Parts) -> Result<Identity, Refusal> {
        let shown = header(request, AUTHORIZATION.as_str()).and_then(|value| value.strip_prefix("Bearer "));
        // Every token is compared, so the time does not say which one matched.
        let found = shown.and_then(|shown| {
            self.tokens.iter().enumerate().fold(None, |found, (index, entry)| {
                if crate::secret::same(shown, &entry.token) {
                    Some(index)
                } else {
                    found
                }
            })
        });
        let Some(index) = found else {
            tracing::warn!("front request refused: missing or wrong bearer token");
            return Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "send `Authorization: Bearer <token>` with one of the tokens in [front] tokens",
            )
            .with_header(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"warden\"")));
        };
        let entry = &self.tokens[index];
        let label = match entry.name.as_deref() {
            Some(name) => format!("token '{name}'"),
            None => format!("token #{}", index + 1),
        };
        // The subject is the token's digest, not its place in the list:
        // front replicas whose configs list the same tokens in another
        // order still agree on whose a session is.
        let digest = ring::digest::digest(&ring::digest::SHA256, entry.token.as_bytes());
        let subject = digest.as_ref()[..16].iter().fold(String::from("token "), |mut text, byte| {
            text.push_str(&format!("{byte:02x}"));
            text
        });
        Ok(Identity { subject, label, agent: entry.agent.clone() })
    }
}

/// Every request is the same anonymous identity (`[front] auth = "none"`,
/// for loopback clients that cannot send a token).
pub struct NoAuthentication;

impl Authenticate for NoAuthentication {
    fn authenticate(&self, _: &Parts) -> Result<Identity, Refusal> {
        Ok(Identity { subject: "anonymous".into(), label: "no token (auth = \"none\")".into(), agent: None })
    }
}

/// The authentication `[front]` asks for.
pub fn configured_authentication(config: &FrontConfig) -> Box<dyn Authenticate> {
    if config.open() {
        Box::new(NoAuthentication)
    } else {
        Box::new(BearerTokens::new(config.tokens.clone()))
    }
}

/// `Host` must name the listener (DNS rebinding: a browser tricked into
/// calling a loopback port sends the attacker's host name) → 421.
pub struct AllowedHosts {
    hosts: Vec<String>,
}

impl AllowedHosts {
    /// The listener on `port` by its loopback names and `address`, and
    /// every one of `also` (`[front] allowed_hosts`).
    pub fn of_listener(address: std::net::SocketAddr, also: &[String]) -> AllowedHosts {
        let port = address.port();
        let mut hosts = vec![
            address.to_string(),
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        hosts.extend(also.iter().cloned());
        AllowedHosts { hosts }
    }
}

impl Check for AllowedHosts {
    fn check(&self, request: &Parts) -> Result<(), Refusal> {
        let host = header(request, HOST.as_str()).unwrap_or_default();
        if self.hosts.iter().any(|allowed| allowed == host) {
            return Ok(());
        }
        tracing::warn!(host, "front request refused: Host is not this listener");
        Err(Refusal::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!("Host '{host}' is not this front's; add it to [front] allowed_hosts if it should be"),
        ))
    }
}

/// `Origin`, when sent, must be the front's own (`http://` and the request's
/// `Host`: a page the front itself served) or one of a list → 403.
pub struct AllowedOrigins {
    origins: Vec<String>,
}

impl AllowedOrigins {
    /// Same-origin requests and those from `origins` (`[front] allowed_origins`).
    pub fn new(origins: Vec<String>) -> AllowedOrigins {
        AllowedOrigins { origins }
    }
}

impl Check for AllowedOrigins {
    fn check(&self, request: &Parts) -> Result<(), Refusal> {
        let Some(origin) = header(request, ORIGIN.as_str()) else { return Ok(()) };
        let host = header(request, HOST.as_str()).unwrap_or_default();
        if same_origin(origin, host) || self.origins.iter().any(|allowed| allowed == origin) {
            return Ok(());
        }
        tracing::warn!(origin, "front request refused: Origin not allowed");
        Err(Refusal::new(
            StatusCode::FORBIDDEN,
            format!("Origin '{origin}' is not allowed; add it to [front] allowed_origins if it should be"),
        ))
    }
}

/// `MCP-Protocol-Version`, when sent, must be one Warden speaks → 400 with
/// `-32022` and the versions it speaks.
pub struct KnownProtocolVersion;

impl Check for KnownProtocolVersion {
    fn check(&self, request: &Parts) -> Result<(), Refusal> {
        let Some(version) = header(request, super::VERSION_HEADER) else { return Ok(()) };
        if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) || warden_protocol::is_modern(version) {
            return Ok(());
        }
        Err(Refusal::with_error(StatusCode::BAD_REQUEST, crate::session::unsupported_version(version)))
    }
}

/// The daemon's checks, in its order: `Host` for a listener on `address`,
/// `Origin`, the protocol version.
pub fn standard_checks(address: std::net::SocketAddr, config: &FrontConfig) -> Vec<Box<dyn Check>> {
    vec![
        Box::new(AllowedHosts::of_listener(address, &config.allowed_hosts)),
        Box::new(AllowedOrigins::new(config.allowed_origins.clone())),
        Box::new(KnownProtocolVersion),
    ]
}

pub(super) fn header<'a>(request: &'a Parts, name: &str) -> Option<&'a str> {
    request.headers.get(name).and_then(|value| value.to_str().ok())
}

/// Whether `origin` is the front's own origin as the request reached it:
/// its scheme (plain `http://`: the front does not speak TLS) and `host`,
/// the `Host` already checked to be this listener's or an allowed one. A
/// page the front served is same-origin (RFC 6454), not a rebinding
/// attack: that one comes with the attacker's host in both headers.
fn same_origin(origin: &str, host: &str) -> bool {
    !host.is_empty() && origin.strip_prefix("http://").is_some_and(|authority| authority.eq_ignore_ascii_case(host))
}
