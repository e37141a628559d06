//! Finding a server's authorization server and its endpoints (MCP
//! authorization, 2025-11-25 §Authorization Server Discovery).
//!
//! 1. **Protected Resource Metadata** (RFC 9728): the URL the 401's
//!    `WWW-Authenticate` names in `resource_metadata`; without it, the
//!    well-known URL for the server's path
//!    (`/.well-known/oauth-protected-resource/mcp`), then at the root.
//! 2. **Authorization server metadata**, for the first of the PRM's
//!    `authorization_servers`: RFC 8414 and OpenID Connect discovery, in
//!    the spec's order, path-aware (an issuer `https://a.example/t1` is
//!    tried at `/.well-known/oauth-authorization-server/t1`,
//!    `/.well-known/openid-configuration/t1`, then
//!    `/t1/.well-known/openid-configuration`).
//! 3. A server of the 2025-03-26 era has no PRM: its own origin is the
//!    authorization server, and with no metadata there either, the default
//!    endpoints `/authorize`, `/token` and `/register` are used.
//!
//! Every URL met on the way must be `https://`, or `http://` on a
//! loopback host (a server on this machine); the metadata's `issuer` must
//! be the URL it was fetched for (RFC 8414 §3.3), or anyone able to answer
//! one well-known URL could name the endpoints that get Warden's secrets.
//! One exception: in the 2025-03-26 fallback nobody named an issuer — the
//! MCP server's origin stands in for it — so the metadata found there may
//! name any issuer on that same origin (`https://mcp.example.com/oauth`),
//! as the official SDK clients accept. A document on that origin is the
//! server's own word either way; another origin is still refused.

use bytes::Bytes;
use http_body_util::Full;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::Url;

use super::challenge::Challenge;
use super::web::Web;

/// What Warden knows about an authorization server; saved with the tokens
/// so that refreshing needs no discovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AuthServer {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) revocation_endpoint: Option<String>,
    /// `token_endpoint_auth_methods_supported`; empty: the RFC 8414 default
    /// (`client_secret_basic`).
    #[serde(default)]
    pub(crate) auth_methods: Vec<String>,
    /// `code_challenge_methods_supported`; `None` when the metadata does
    /// not say (then PKCE support cannot be confirmed).
    #[serde(default)]
    pub(crate) code_challenge_methods: Option<Vec<String>>,
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
    /// `client_id_metadata_document_supported`.
    #[serde(default)]
    pub(crate) client_metadata_documents: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207).
    #[serde(default)]
    pub(crate) iss_in_response: bool,
    /// False for the 2025-03-26 default endpoints (no metadata at all).
    #[serde(default)]
    pub(crate) from_metadata: bool,
}

/// Everything discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovery {
    /// The `resource` parameter (RFC 8707): the MCP server's canonical URI.
    pub(crate) resource: String,
    pub(crate) server: AuthServer,
    /// The PRM's `scopes_supported`.
    pub(crate) resource_scopes: Vec<String>,
}

/// Runs discovery for the MCP server at `server_url`, given what its 401 said.
pub(crate) async fn discover(web: &Web, server_url: &Url, challenge: &Challenge) -> Result<Discovery, String> {
    let Some(prm) = protected_resource(web, server_url, challenge).await? else {
        // 2025-03-26: the MCP server's origin is its own authorization server.
        let origin = origin_of(server_url);
        let server = match authorization_server(web, &origin, IssuerRule::SameOrigin).await? {
            Some(server) => server,
            None => default_endpoints(&origin),
        };
        return Ok(Discovery { resource: canonical(server_url), server, resource_scopes: Vec::new() });
    };
    let field = |name: &str| prm.get(name);
    let first = field("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|servers| servers.first())
        .and_then(Value::as_str)
        .ok_or("the Protected Resource Metadata lists no `authorization_servers`")?;
    let issuer = checked_url(first, "authorization server")?;
    let server = authorization_server(web, &issuer, IssuerRule::Exact).await?.ok_or_else(|| {
        format!("the authorization server {issuer} publishes no metadata (tried RFC 8414 and OpenID Connect discovery)")
    })?;
    let resource = match field("resource").and_then(Value::as_str) {
        Some(resource) => resource.to_string(),
        None => canonical(server_url),
    };
    Ok(Discovery { resource, server, resource_scopes: strings(field("scopes_supported")) })
}

/// The PRM document, or `None` when the server publishes none.
async fn protected_resource(web: &Web, server_url: &Url, challenge: &Challenge) -> Result<Option<Value>, String> {
    const WHAT: &str = "Protected Resource Metadata";
    if let Some(named) = &challenge.resource_metadata {
        let url = checked_url(named, WHAT)?;
        return match web.get_json(&url, WHAT).await? {
            Some(document) => object(document, &url, WHAT).map(Some),
            None => Err(format!("the server's 401 names its {WHAT} at {url}, but nothing is there")),
        };
    }
    for url in well_known(server_url, "oauth-protected-resource") {
        if let Some(document) = web.get_json(&url, WHAT).await? {
            return object(document, &url, WHAT).map(Some);
        }
    }
    Ok(None)
}

/// The first request of a login: the server's 401 challenge, or `None`
/// when it answered without asking for authorization.
pub(crate) async fn probe(web: &super::web::Web, url: &Url) -> Result<Option<Challenge>, String> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": crate::LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "warden-login", "version": env!("CARGO_PKG_VERSION") }
        }
    });
    let request = hyper::Request::builder()
        .method(hyper::Method::POST)
        .uri(url.as_str())
        .header(hyper::header::ACCEPT, "application/json, text/event-stream")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|error| format!("the server URL {url} is not usable: {error}"))?;
    let response = web.raw(request).await.map_err(|error| format!("could not reach {url}: {error}"))?;
    let status = response.status();
    let challenge = response
        .headers()
        .get(hyper::header::WWW_AUTHENTICATE)
        .and_then(|value| value.to_str().ok())
        .map(Challenge::parse);
    // Only the head matters; an event stream's body would never end.
    drop(response);
    if status == hyper::StatusCode::UNAUTHORIZED {
        Ok(Some(challenge.unwrap_or_default()))
    } else {
        Ok(None)
    }
}

/// Which `issuer` an authorization server's metadata may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IssuerRule {
    /// The URL it was looked up for, and no other (RFC 8414 §3.3).
    Exact,
    /// Any on the same origin as that URL: the 2025-03-26 fallback, where
    /// the MCP server's origin was only a stand-in for an issuer nobody named.
    SameOrigin,
}

/// An authorization server's metadata, tried in the spec's order.
pub(crate) async fn authorization_server(
    web: &Web,
    issuer: &Url,
    rule: IssuerRule,
) -> Result<Option<AuthServer>, String> {
    const WHAT: &str = "authorization server metadata";
    let path = issuer.path().trim_end_matches('/');
    let root = origin_of(issuer);
    let mut tries = vec![
        join(&root, &format!("/.well-known/oauth-authorization-server{path}")),
        join(&root, &format!("/.well-known/openid-configuration{path}")),
    ];
    if !path.is_empty() {
        tries.push(join(&root, &format!("{path}/.well-known/openid-configuration")));
    }
    for url in tries {
        let Some(document) = web.get_json(&url, WHAT).await? else { continue };
        let document = object(document, &url, WHAT)?;
        return read_metadata(&document, issuer, &url, rule).map(Some);
    }
    Ok(None)
}

pub(super) fn read_metadata(document: &Value, issuer: &Url, url: &Url, rule: IssuerRule) -> Result<AuthServer, String> {
    let text = |name: &str| document.get(name).and_then(Value::as_str).map(str::to_string);
    let required =
        |name: &str| text(name).ok_or_else(|| format!("the authorization server metadata at {url} has no `{name}`"));
    let named_issuer = required("issuer")?;
    let exact = named_issuer.trim_end_matches('/') == issuer.as_str().trim_end_matches('/');
    let same_origin = || Url::parse(&named_issuer).is_ok_and(|named| named.origin() == issuer.origin());
    match rule {
        _ if exact => {}
        IssuerRule::SameOrigin if same_origin() => {}
        IssuerRule::Exact => {
            return Err(format!(
                "the authorization server metadata at {url} names the issuer {named_issuer}, not {issuer}; refusing it (RFC 8414 §3.3)"
            ))
        }
        IssuerRule::SameOrigin => {
            return Err(format!(
                "the authorization server metadata at {url} names the issuer {named_issuer}, which is not on the MCP server's origin {}; refusing it (RFC 8414 §3.3)",
                issuer.origin().ascii_serialization()
            ))
        }
    }
    let endpoint = |name: &str| -> Result<String, String> { Ok(checked_url(&required(name)?, name)?.to_string()) };
    let optional = |name: &str| -> Result<Option<String>, String> {
        text(name).map(|u| checked_url(&u, name).map(|u| u.to_string())).transpose()
    };
    Ok(AuthServer {
        issuer: named_issuer,
        authorization_endpoint: endpoint("authorization_endpoint")?,
        token_endpoint: endpoint("token_endpoint")?,
        registration_endpoint: optional("registration_endpoint")?,
        revocation_endpoint: optional("revocation_endpoint")?,
        auth_methods: strings(document.get("token_endpoint_auth_methods_supported")),
        code_challenge_methods: document.get("code_challenge_methods_supported").map(|v| strings(Some(v))),
        scopes_supported: strings(document.get("scopes_supported")),
        client_metadata_documents: document.get("client_id_metadata_document_supported") == Some(&Value::Bool(true)),
        iss_in_response: document.get("authorization_response_iss_parameter_supported") == Some(&Value::Bool(true)),
        from_metadata: true,
    })
}

/// The 2025-03-26 defaults for a server with no metadata at all.
fn default_endpoints(origin: &Url) -> AuthServer {
    AuthServer {
        issuer: origin.as_str().trim_end_matches('/').to_string(),
        authorization_endpoint: join(origin, "/authorize").to_string(),
        token_endpoint: join(origin, "/token").to_string(),
        registration_endpoint: Some(join(origin, "/register").to_string()),
        revocation_endpoint: None,
        auth_methods: Vec::new(),
        code_challenge_methods: None,
        scopes_supported: Vec::new(),
        client_metadata_documents: false,
        iss_in_response: false,
        from_metadata: false,
    }
}

/// `/.well-known/NAME/PATH` then `/.well-known/NAME` (RFC 9728 §3.1).
fn well_known(server_url: &Url, name: &str) -> Vec<Url> {
    let root = origin_of(server_url);
    let path = server_url.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(join(&root, &format!("/.well-known/{name}{path}")));
    }
    urls.push(join(&root, &format!("/.well-known/{name}")));
    urls
}

fn origin_of(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    origin
}

fn join(root: &Url, path: &str) -> Url {
    let mut url = root.clone();
    url.set_path(path);
    url
}

/// The server's URL as the `resource` parameter: no fragment, and no
/// trailing slash on the root.
pub(crate) fn canonical(server_url: &Url) -> String {
    let mut url = server_url.clone();
    url.set_fragment(None);
    url.as_str().trim_end_matches('/').to_string()
}

/// Parses a URL met during discovery; only https, or http on loopback.
pub(crate) fn checked_url(text: &str, what: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|error| format!("the {what} URL \"{text}\" is not a URL: {error}"))?;
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err(format!("the {what} URL {url} is plain http:// on another machine; OAuth needs https://")),
        other => Err(format!("the {what} URL {url} has the scheme `{other}`; OAuth needs https://")),
    }
}

fn object(document: Value, url: &Url, what: &str) -> Result<Value, String> {
    if document.is_object() {
        Ok(document)
    } else {
        Err(format!("the {what} at {url} is JSON but not an object"))
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_are_path_aware() {
        let url = Url::parse("https://mcp.example.com/public/mcp").unwrap();
        let urls: Vec<String> = well_known(&url, "oauth-protected-resource").iter().map(Url::to_string).collect();
        assert_eq!(
            urls,
            [
                "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://mcp.example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(canonical(&Url::parse("https://mcp.example.com/").unwrap()), "https://mcp.example.com");
    }

    #[test]
    fn the_2025_03_26_fallback_takes_an_issuer_on_the_servers_origin_and_nothing_else_does() {
        let document = |issuer: &str| {
            serde_json::json!({
                "issuer": issuer,
                "authorization_endpoint": "https://mcp.example.com/oauth/authorize",
                "token_endpoint": "https://mcp.example.com/oauth/token",
            })
        };
        let origin = Url::parse("https://mcp.example.com/").unwrap();
        let at = Url::parse("https://mcp.example.com/.well-known/oauth-authorization-server").unwrap();
        let on_origin = document("https://mcp.example.com/oauth");
        let read = read_metadata(&on_origin, &origin, &at, IssuerRule::SameOrigin).unwrap();
        assert_eq!(read.issuer, "https://mcp.example.com/oauth");
        let strict = read_metadata(&on_origin, &origin, &at, IssuerRule::Exact).unwrap_err();
        assert!(strict.contains("names the issuer https://mcp.example.com/oauth, not"), "{strict}");
        for elsewhere in
            ["https://auth.example.com/oauth", "http://mcp.example.com/oauth", "https://mcp.example.com:8443"]
        {
            let refused = read_metadata(&document(elsewhere), &origin, &at, IssuerRule::SameOrigin).unwrap_err();
            assert!(refused.contains("not on the MCP server's origin https://mcp.example.com"), "{refused}");
        }
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(checked_url("http://127.0.0.1:9/x", "t").is_ok());
        assert!(checked_url("http://localhost/x", "t").is_ok());
        let refused = checked_url("http://auth.example.com/", "authorization server").unwrap_err();
        assert!(refused.contains("plain http:// on another machine"), "{refused}");
        assert!(checked_url("ftp://auth.example.com/", "t").unwrap_err().contains("scheme `ftp`"));
    }
}
