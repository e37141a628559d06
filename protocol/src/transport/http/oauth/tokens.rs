//! The token endpoint: one POST per grant (authorization code, refresh,
//! client credentials), the client proving itself the way the
//! authorization server's metadata allows, and the answer read into
//! [`Tokens`].
//!
//! Refresh-token rotation is honoured: a new refresh token in the answer
//! replaces the old one; an answer without one keeps the old (RFC 6749
//! §6 lets the server reuse it).

use std::sync::Arc;

use serde_json::Value;
use url::Url;

use super::discovery::AuthServer;
use super::jwt::SigningKey;
use super::store::{now_secs, Tokens};
use super::web::{Body, Web};

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    /// A public client: `client_id` in the body.
    None,
    /// HTTP Basic with the id and secret.
    Basic,
    /// Id and secret in the body.
    Post,
    /// A JWT signed with the client's key (RFC 7523).
    PrivateKeyJwt,
}

impl AuthMethod {
    pub(crate) fn name(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<AuthMethod> {
        [AuthMethod::None, AuthMethod::Basic, AuthMethod::Post, AuthMethod::PrivateKeyJwt]
            .into_iter()
            .find(|method| method.name() == name)
    }

    /// The method for a client with (or without) a secret or key, among
    /// those the server supports (none listed: RFC 8414's default,
    /// `client_secret_basic`).
    pub(crate) fn choose(secret: bool, key: bool, supported: &[String]) -> Result<AuthMethod, String> {
        let offers = |method: AuthMethod| {
            supported.iter().any(|s| s == method.name()) || (supported.is_empty() && method == AuthMethod::Basic)
        };
        if key {
            return if supported.is_empty() || offers(AuthMethod::PrivateKeyJwt) {
                Ok(AuthMethod::PrivateKeyJwt)
            } else {
                Err(format!(
                    "the authorization server does not accept `private_key_jwt` (it offers {})",
                    supported.join(", ")
                ))
            };
        }
        if !secret {
            return Ok(AuthMethod::None);
        }
        [AuthMethod::Basic, AuthMethod::Post].into_iter().find(|m| offers(*m)).ok_or_else(|| {
            format!(
                "the authorization server accepts none of client_secret_basic, client_secret_post for a client with a secret (it offers {})",
                supported.join(", ")
            )
        })
    }
}

/// The client as the token endpoint sees it.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
    pub(crate) key: Option<Arc<SigningKey>>,
    pub(crate) method: AuthMethod,
}

impl Client {
    /// Adds to `form` what proves the client by its method, for an
    /// endpoint of the authorization server `issuer`; the HTTP Basic
    /// credentials to send instead, for `client_secret_basic`.
    ///
    /// A signed assertion's audience is the issuer identifier, whichever
    /// endpoint it goes to: draft-ietf-oauth-rfc7523bis (in the RFC
    /// editor's queue) makes it so, replacing RFC 7523's loose "the token
    /// endpoint MAY be used" that let an assertion meant for one server
    /// be replayed at another; MCP's client credentials extension follows
    /// it, and the conformance suite's verifier accepts only the issuer.
    pub(crate) fn authenticate(
        &self,
        form: &mut Vec<(String, String)>,
        issuer: &str,
    ) -> Result<Option<(&str, &str)>, String> {
        if self.method == AuthMethod::Basic {
            return Ok(Some((self.id.as_str(), self.secret.as_deref().unwrap_or_default())));
        }
        form.push(("client_id".into(), self.id.clone()));
        match self.method {
            AuthMethod::Post => form.push(("client_secret".into(), self.secret.clone().unwrap_or_default())),
            AuthMethod::PrivateKeyJwt => {
                let key = self.key.as_ref().ok_or("private_key_jwt without a key")?;
                let assertion_type = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
                form.push(("client_assertion_type".into(), assertion_type.into()));
                form.push(("client_assertion".into(), key.assertion(&self.id, issuer)?));
            }
            AuthMethod::None | AuthMethod::Basic => {}
        }
        Ok(None)
    }
}

/// Why no tokens came back.
#[derive(Debug, Clone)]
pub(crate) enum TokenError {
    /// The authorization server said no (`invalid_grant`...): a person
    /// must log in again.
    Refused(String),
    /// Anything else: unreachable, not JSON, no `access_token`.
    Broken(String),
}

impl TokenError {
    pub(crate) fn message(&self) -> &str {
        match self {
            TokenError::Refused(message) | TokenError::Broken(message) => message,
        }
    }
}

/// POSTs `grant` to the token endpoint as `client`; `previous_refresh`
/// is kept when the answer brings no new refresh token.
pub(crate) async fn request(
    web: &Web,
    server: &AuthServer,
    client: &Client,
    mut grant: Vec<(String, String)>,
    previous_refresh: Option<&str>,
) -> Result<Tokens, TokenError> {
    let endpoint = Url::parse(&server.token_endpoint)
        .map_err(|error| TokenError::Broken(format!("the token endpoint is not a URL: {error}")))?;
    let basic = client.authenticate(&mut grant, &server.issuer).map_err(TokenError::Broken)?;
    let answer = web.post(&endpoint, Body::Form(&grant), basic, "token endpoint").await.map_err(TokenError::Broken)?;
    read_answer(answer.status, &answer.json, &endpoint, previous_refresh, now_secs())
}

/// The token endpoint's answer (`status`, its JSON) read into [`Tokens`]
/// at `now`: a refusal, a broken answer, or the tokens.
pub(crate) fn read_answer(
    status: hyper::StatusCode,
    json: &Value,
    endpoint: &Url,
    previous_refresh: Option<&str>,
    now: u64,
) -> Result<Tokens, TokenError> {
    let field = |name: &str| json.get(name).and_then(Value::as_str).map(str::to_string);
    if !status.is_success() {
        let error = field("error").unwrap_or_else(|| format!("HTTP {}", status.as_u16()));
        let description = field("error_description").map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(TokenError::Refused(format!("the token endpoint {endpoint} refused: {error}{description}")));
    }
    let access_token = field("access_token")
        .filter(|token| !token.is_empty())
        .ok_or_else(|| TokenError::Broken(format!("the token response from {endpoint} has no `access_token`")))?;
    if let Some(kind) = field("token_type") {
        if !kind.eq_ignore_ascii_case("bearer") {
            return Err(TokenError::Broken(format!(
                "the token endpoint {endpoint} issued a `{kind}` token; MCP needs Bearer tokens"
            )));
        }
    }
    // Any number a server sends: saturating, never overflowing (an
    // `expires_in` of 2^64 - 1 panicked here in a debug build).
    let expires_in = json.get("expires_in").and_then(Value::as_u64);
    let expires_at = expires_in.map(|secs| now.saturating_add(secs));
    Ok(Tokens {
        access_token,
        refresh_token: field("refresh_token").or_else(|| previous_refresh.map(str::to_string)),
        expires_at,
        refresh_at: expires_in.zip(expires_at).map(|(secs, at)| at - (secs / 5).min(60)),
        scope: field("scope"),
    })
}
