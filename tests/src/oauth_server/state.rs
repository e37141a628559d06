//! What the test OAuth server is told ([`Options`]), what it holds
//! (codes, tokens, clients) and what it saw ([`Seen`]).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Where the Protected Resource Metadata is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrmAt {
    /// Named in the 401's `WWW-Authenticate` (`resource_metadata`), served
    /// at a non-standard path so only that pointer finds it.
    Header,
    /// At `/.well-known/oauth-protected-resource/mcp` only.
    WellKnownPath,
    /// At `/.well-known/oauth-protected-resource` only.
    WellKnownRoot,
    /// Nowhere: a 2025-03-26 server.
    None,
}

/// Where the authorization server's metadata is found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataAt {
    /// RFC 8414 (`/.well-known/oauth-authorization-server[/path]`).
    Oauth,
    /// OpenID Connect discovery (`/.well-known/openid-configuration[/path]`).
    Oidc,
    /// Nowhere: the 2025-03-26 default endpoints must be used.
    None,
    /// At the RFC 8414 URL, but not JSON.
    NotJson,
    /// At the RFC 8414 URL, a 302 to another host.
    Redirect,
}

/// A client known beforehand (pre-registered).
#[derive(Debug, Clone)]
pub struct Client {
    /// Its id.
    pub id: String,
    /// Its secret, for a confidential client.
    pub secret: Option<String>,
    /// How it must authenticate at the token endpoint.
    pub method: String,
    /// Its public key (P-256, uncompressed point) for `private_key_jwt`.
    pub public_key: Option<Vec<u8>>,
}

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the PRM is.
    pub prm: PrmAt,
    /// Where the metadata is.
    pub metadata: MetadataAt,
    /// A path on the issuer (`/tenant`): metadata is then path-aware.
    pub issuer_path: String,
    /// `token_endpoint_auth_methods_supported`.
    pub auth_methods: Vec<String>,
    /// Offer dynamic client registration.
    pub registration: bool,
    /// Accept Client ID Metadata Document URLs as client ids.
    pub client_metadata_documents: bool,
    /// Pre-registered clients.
    pub clients: Vec<Client>,
    /// Access token lifetime.
    pub token_secs: u64,
    /// Issue a new refresh token on every refresh (and retire the old).
    pub rotate_refresh_tokens: bool,
    /// Put `iss` in the redirect (RFC 9207), and advertise it.
    pub iss_in_redirect: bool,
    /// Redirect with this `iss` instead of the real one.
    pub forged_iss: Option<String>,
    /// Redirect with this `state` instead of the one sent.
    pub forged_state: Option<String>,
    /// The scope the 401 asks for.
    pub challenge_scope: Option<String>,
    /// `scopes_supported` of the metadata (and the PRM).
    pub scopes_supported: Vec<String>,
    /// Answer the token request without `access_token`.
    pub token_without_access_token: bool,
    /// The PRM's `authorization_servers` entry, instead of the real issuer.
    pub advertised_issuer: Option<String>,
    /// Answer 403 `insufficient_scope` to `admin` even with the scope.
    pub always_insufficient: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            prm: PrmAt::Header,
            metadata: MetadataAt::Oauth,
            issuer_path: String::new(),
            auth_methods: vec!["none".into(), "client_secret_basic".into(), "client_secret_post".into()],
            registration: true,
            client_metadata_documents: false,
            clients: Vec::new(),
            token_secs: 3600,
            rotate_refresh_tokens: true,
            iss_in_redirect: true,
            forged_iss: None,
            forged_state: None,
            challenge_scope: Some("read".into()),
            scopes_supported: vec!["read".into(), "admin".into(), "offline_access".into()],
            token_without_access_token: false,
            advertised_issuer: None,
            always_insufficient: false,
        }
    }
}

/// What the server saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Every request, `METHOD /path`.
    pub paths: Vec<String>,
    /// Every `/authorize` query.
    pub authorizations: Vec<HashMap<String, String>>,
    /// Every token request: the form, plus `auth` = the client
    /// authentication used (`none`, `client_secret_basic`, ...).
    pub token_requests: Vec<HashMap<String, String>>,
    /// Every registration body.
    pub registrations: Vec<serde_json::Value>,
    /// Every `Authorization` the MCP endpoint got (absent: empty).
    pub mcp_authorizations: Vec<String>,
    /// Tokens revoked.
    pub revoked: Vec<String>,
}

impl Seen {
    /// The token requests of one grant type.
    pub fn grants(&self, grant_type: &str) -> Vec<&HashMap<String, String>> {
        self.token_requests.iter().filter(|r| r.get("grant_type").map(String::as_str) == Some(grant_type)).collect()
    }
}

/// A code waiting to be exchanged.
pub(crate) struct Code {
    pub(crate) client_id: String,
    pub(crate) challenge: String,
    pub(crate) redirect_uri: String,
    pub(crate) scope: String,
    pub(crate) resource: String,
}

/// What a token stands for.
#[derive(Clone)]
pub(crate) struct Grant {
    pub(crate) client_id: String,
    pub(crate) scope: String,
    pub(crate) expires: Instant,
}

/// Everything the server holds.
pub(crate) struct State {
    pub(crate) options: Options,
    pub(crate) origin: String,
    pub(crate) issuer: String,
    pub(crate) seen: Seen,
    pub(crate) codes: HashMap<String, Code>,
    pub(crate) access: HashMap<String, Grant>,
    pub(crate) refresh: HashMap<String, Grant>,
    /// Registered clients: id → (redirect URIs, auth method).
    pub(crate) registered: HashMap<String, Vec<String>>,
    next: u64,
}

impl State {
    pub(crate) fn new(options: Options, origin: &str) -> State {
        let issuer = format!("{origin}{}", options.issuer_path);
        State {
            options,
            origin: origin.to_string(),
            issuer,
            seen: Seen::default(),
            codes: HashMap::new(),
            access: HashMap::new(),
            refresh: HashMap::new(),
            registered: HashMap::new(),
            next: 0,
        }
    }

    /// A fresh unguessable-enough value for a test.
    pub(crate) fn fresh(&mut self, kind: &str) -> String {
        self.next += 1;
        let mut random = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random).expect("random");
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        format!("{kind}-{}-{hex}", self.next)
    }

    /// Issues an access token (and a refresh token) for `client_id`.
    pub(crate) fn issue(&mut self, client_id: &str, scope: &str, with_refresh: bool) -> serde_json::Value {
        let grant = Grant {
            client_id: client_id.to_string(),
            scope: scope.to_string(),
            expires: Instant::now() + Duration::from_secs(self.options.token_secs),
        };
        let access = self.fresh("at");
        self.access.insert(access.clone(), grant.clone());
        let mut answer = serde_json::json!({
            "access_token": access, "token_type": "Bearer", "expires_in": self.options.token_secs, "scope": scope,
        });
        if with_refresh {
            let refresh = self.fresh("rt");
            self.refresh.insert(refresh.clone(), grant);
            answer["refresh_token"] = refresh.into();
        }
        if self.options.token_without_access_token {
            answer.as_object_mut().expect("an object").remove("access_token");
        }
        answer
    }
}
