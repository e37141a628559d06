//! Logging in: the authorization code flow with PKCE, run by `warden
//! login` (or a one-shot command that met a server needing it), and
//! logging out.
//!
//! 1. **Probe**: an unauthenticated `initialize` POST; its 401 names the
//!    Protected Resource Metadata and the scope. A server that lets
//!    `initialize` through and challenges later requests only is logged
//!    in to from the last challenge a request met (saved with its tokens).
//! 2. **Discover** the authorization server (`discovery.rs`).
//! 3. **Who Warden is** there, in this order: the configured client; a
//!    Client ID Metadata Document URL, when configured and supported; the
//!    registration saved for this issuer; dynamic registration.
//! 4. **Authorize**: the browser goes to the authorization endpoint with
//!    PKCE (S256), `state`, `resource` and the scopes; it comes back to the
//!    loopback listener, where `state` and `iss` (RFC 9207) are checked.
//! 5. **Exchange** the code for tokens and save them.
//!
//! Scopes asked: the config's `scopes`, else the 401's `scope`, else the
//! PRM's `scopes_supported`; plus what a 403 asked for (step-up), plus
//! `offline_access` when the authorization server offers it (so there is
//! a refresh token and no daily re-login).

use std::collections::BTreeMap;
use std::time::Duration;

use url::Url;
use warden_config::OAuthGrant;

use super::authorizer::Authorizer;
use super::callback::Callback;
use super::challenge::Challenge;
use super::discovery::{self, probe, AuthServer, Discovery};
use super::pkce::{random_string, Pkce};
use super::registration;
use super::tokens;
use super::{LoginUi, OAuthError};

/// What a finished login says.
#[derive(Debug, Clone)]
pub struct LoggedIn {
    /// The authorization server's issuer.
    pub issuer: String,
    /// The scopes granted (or asked, when the server did not say).
    pub scope: Option<String>,
}

impl Authorizer {
    /// Runs the login flow, telling `ui` what happens; waits at most `wait`
    /// for the browser. The tokens are saved for every Warden process.
    pub async fn login(&self, ui: &dyn LoginUi, wait: Duration) -> Result<LoggedIn, OAuthError> {
        if self.config.grant() == OAuthGrant::ClientCredentials {
            ui.say("getting a token with the client's own credentials (client_credentials)");
            let _ = self.update(|saved| saved.tokens = None);
            self.authorization().await.map_err(|failure| OAuthError::Token(failure.to_string()))?;
            let saved = self.saved();
            let issuer = saved.auth_server.map(|s| s.issuer).unwrap_or_default();
            return Ok(LoggedIn { issuer, scope: saved.tokens.and_then(|t| t.scope) });
        }
        ui.say(&format!("asking {} what authorization it needs", self.url));
        let challenge = match probe(&self.web, &self.url).await.map_err(OAuthError::Discovery)? {
            Some(challenge) => challenge,
            // It lets `initialize` through and challenged a later request.
            None => self.saved().last_challenge.ok_or_else(|| {
                OAuthError::Discovery(format!(
                    "{} answered without asking for authorization, and no request to it has been refused yet: there is nothing to log in to",
                    self.url
                ))
            })?,
        };
        ui.say("discovering its authorization server");
        let found = discovery::discover(&self.web, &self.url, &challenge).await.map_err(OAuthError::Discovery)?;
        ui.say(&format!("authorization server: {}", found.server.issuer));
        check_pkce(&found.server).map_err(OAuthError::Discovery)?;
        let scope = self.scope_to_ask(&challenge, &found);
        let mut saved = self.saved();
        if saved.auth_server.as_ref().map(|s| &s.issuer) != Some(&found.server.issuer) {
            // Another issuer: what was known about the old one means nothing.
            saved.registration = None;
            saved.tokens = None;
        }
        let port = saved
            .registration
            .as_ref()
            .and_then(|r| r.redirect_uri.as_deref())
            .and_then(|uri| Url::parse(uri).ok())
            .and_then(|uri| uri.port())
            .unwrap_or(0);
        let callback = match Callback::bind(port).await {
            Ok(callback) => callback,
            Err(_) if port != 0 => {
                saved.registration = None; // Its port is taken: register anew.
                Callback::bind(0).await.map_err(|e| listener_failed(&e))?
            }
            Err(error) => return Err(listener_failed(&error)),
        };
        let redirect_uri = callback.redirect_uri();
        let uses_configured = self.config.client_id.is_some()
            || (self.config.client_metadata_url.is_some() && found.server.client_metadata_documents);
        if !uses_configured && saved.registration.as_ref().and_then(|r| r.redirect_uri.as_ref()) != Some(&redirect_uri)
        {
            let endpoint = found.server.registration_endpoint.as_deref().ok_or_else(|| {
                OAuthError::Registration(format!(
                    "the authorization server {} offers no dynamic client registration; register Warden there and set `oauth.client_id` (and `client_secret`) for server '{}'",
                    found.server.issuer, self.server
                ))
            })?;
            ui.say(&format!("registering Warden with {}", found.server.issuer));
            saved.registration = Some(
                registration::register(&self.web, endpoint, &redirect_uri, scope.as_deref())
                    .await
                    .map_err(OAuthError::Registration)?,
            );
        }
        let client = self.client(&saved, &found.server).map_err(OAuthError::Config)?;
        let pkce = Pkce::new();
        let state = random_string(16);
        let mut authorize = Url::parse(&found.server.authorization_endpoint)
            .map_err(|error| OAuthError::Discovery(format!("the authorization endpoint is not a URL: {error}")))?;
        {
            let mut query = authorize.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &client.id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &pkce.challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &found.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        ui.open(authorize.as_str());
        ui.say(&format!(
            "waiting up to {} min for the browser to come back to {redirect_uri} (Ctrl-C to stop)",
            wait.as_secs().div_ceil(60)
        ));
        let params = tokio::time::timeout(wait, callback.wait())
            .await
            .map_err(|_| {
                OAuthError::Browser(format!(
                    "the browser did not come back within {} s; run the login again",
                    wait.as_secs()
                ))
            })?
            .map_err(|error| OAuthError::Browser(format!("the redirect listener failed: {error}")))?;
        let code = check_redirect(&params, &state, &found.server).map_err(OAuthError::Browser)?;
        ui.say("exchanging the code for tokens");
        let grant = vec![
            ("grant_type".to_string(), "authorization_code".to_string()),
            ("code".to_string(), code),
            ("redirect_uri".to_string(), redirect_uri),
            ("code_verifier".to_string(), pkce.verifier),
            ("resource".to_string(), found.resource.clone()),
        ];
        let tokens = tokens::request(&self.web, &found.server, &client, grant, None)
            .await
            .map_err(|error| OAuthError::Token(error.message().to_string()))?;
        let granted = tokens.scope.clone().or(scope);
        self.update(|state| {
            state.auth_server = Some(found.server.clone());
            state.resource = Some(found.resource.clone());
            state.registration = saved.registration.clone();
            state.tokens = Some(tokens);
            state.wanted_scopes.clear();
            state.last_challenge = None;
        })
        .map_err(OAuthError::Store)?;
        Ok(LoggedIn { issuer: found.server.issuer, scope: granted })
    }

    /// Forgets the server's tokens, revoking the refresh token (else the
    /// access token) first when the authorization server offers revocation
    /// (RFC 7009). Returns what was done, in words.
    pub async fn logout(&self) -> Result<String, OAuthError> {
        let saved = self.saved();
        let Some(tokens) = &saved.tokens else {
            self.store.forget().map_err(OAuthError::Store)?;
            return Ok("no tokens were saved".into());
        };
        let mut done = "tokens forgotten".to_string();
        if let (Some(server), Some(endpoint)) =
            (&saved.auth_server, saved.auth_server.as_ref().and_then(|s| s.revocation_endpoint.clone()))
        {
            let (token, hint) = match &tokens.refresh_token {
                Some(refresh) => (refresh.clone(), "refresh_token"),
                None => (tokens.access_token.clone(), "access_token"),
            };
            let mut form = vec![("token".to_string(), token), ("token_type_hint".to_string(), hint.to_string())];
            let revoked = match (self.client(&saved, server), Url::parse(&endpoint)) {
                (Ok(client), Ok(url)) => match client.authenticate(&mut form, &server.issuer) {
                    Ok(basic) => self.web.post(&url, super::web::Body::Form(&form), basic, "revocation endpoint").await,
                    Err(error) => Err(error),
                },
                (Err(error), _) => Err(error),
                (_, Err(error)) => Err(error.to_string()),
            };
            done = match revoked {
                Ok(answer) if answer.status.is_success() => format!("tokens revoked at {endpoint} and forgotten"),
                Ok(answer) => {
                    let said =
                        |name: &str| answer.json.get(name).and_then(serde_json::Value::as_str).unwrap_or_default();
                    format!(
                        "the revocation endpoint {endpoint} refused (HTTP {}: {} {}); tokens forgotten here, revoke Warden in the provider's settings too",
                        answer.status.as_u16(),
                        said("error"),
                        said("error_description")
                    )
                }
                Err(error) => format!("revoking failed ({error}); tokens forgotten here"),
            };
        }
        self.update(|saved| saved.tokens = None).map_err(OAuthError::Store)?;
        Ok(done)
    }

    fn scope_to_ask(&self, challenge: &Challenge, found: &Discovery) -> Option<String> {
        let mut scopes: Vec<String> = match (&self.config.scopes, &challenge.scope) {
            (Some(configured), _) => configured.clone(),
            (None, Some(asked)) => asked.split_whitespace().map(String::from).collect(),
            (None, None) => found.resource_scopes.clone(),
        };
        for wanted in self.saved().wanted_scopes {
            if !scopes.contains(&wanted) {
                scopes.push(wanted);
            }
        }
        let offline = "offline_access".to_string();
        if found.server.scopes_supported.contains(&offline) && !scopes.contains(&offline) && !scopes.is_empty() {
            scopes.push(offline);
        }
        (!scopes.is_empty()).then(|| scopes.join(" "))
    }
}

/// Refuses an authorization server whose metadata does not list S256
/// (MCP 2025-11-25: clients MUST NOT proceed without PKCE).
/// The redirect listener could not be opened.
fn listener_failed(error: &std::io::Error) -> OAuthError {
    OAuthError::Browser(format!("cannot listen on 127.0.0.1 for the redirect: {error}"))
}

fn check_pkce(server: &AuthServer) -> Result<(), String> {
    match &server.code_challenge_methods {
        _ if !server.from_metadata => Ok(()),
        Some(methods) if methods.iter().any(|m| m == "S256") => Ok(()),
        _ => Err(format!(
            "the authorization server {} does not advertise PKCE with S256 (`code_challenge_methods_supported`); Warden will not log in without it",
            server.issuer
        )),
    }
}

/// The code from the redirect, once `state` and `iss` are right.
fn check_redirect(params: &BTreeMap<String, String>, state: &str, server: &AuthServer) -> Result<String, String> {
    if let Some(error) = params.get("error") {
        let description = params.get("error_description").map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(format!("the authorization server refused the login: {error}{description}"));
    }
    if params.get("state").map(String::as_str) != Some(state) {
        return Err("the redirect's `state` is not the one Warden sent: refused (a forged or stale redirect)".into());
    }
    match params.get("iss") {
        Some(iss) if iss.trim_end_matches('/') != server.issuer.trim_end_matches('/') => {
            return Err(format!(
                "the redirect comes from the issuer {iss}, not {}: refused (RFC 9207 mix-up protection)",
                server.issuer
            ))
        }
        None if server.iss_in_response => {
            return Err(format!("the redirect has no `iss` though {} promises one: refused (RFC 9207)", server.issuer))
        }
        _ => {}
    }
    params.get("code").cloned().ok_or_else(|| "the redirect carries no `code`".into())
}
