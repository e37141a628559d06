//! One server's [`Authorizer`]: the token its requests carry, refreshed
//! before it expires and after a 401, shared by every connection to that
//! server (reconnects included) and by `warden login`.
//!
//! Concurrent requests share one refresh: the first to find the token
//! stale takes the lock and refreshes; the others wait on the lock, then
//! see the new token and use it. A request that got a 401 says which token
//! it sent, so a refresh someone else already did is not done twice.
//!
//! What another process wrote is picked up: the file's modification time
//! is checked before each use, so the daemon's servers use the tokens
//! `warden login` saved a moment ago.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use url::Url;
use warden_config::{OAuthConfig, OAuthGrant};

use super::challenge::Challenge;
use super::jwt::SigningKey;
use super::store::{Saved, Store};
use super::tokens::{self, AuthMethod, Client, TokenError};
use super::web::Web;
use super::{AuthFailure, OAuthError};

/// The OAuth state of one `url` server.
pub struct Authorizer {
    pub(super) server: String,
    pub(super) url: Url,
    pub(super) config: OAuthConfig,
    pub(super) key: Option<Arc<SigningKey>>,
    pub(super) store: Store,
    pub(super) web: Web,
    /// The file's contents as last read, and its modification time then.
    memory: Mutex<(Saved, Option<SystemTime>)>,
    /// Held while refreshing: one refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// Told of each refresh: `true` when it got a token (for metrics).
    on_refresh: Mutex<Option<RefreshHook>>,
}

/// What [`Authorizer::on_refresh`] calls.
type RefreshHook = Arc<dyn Fn(bool) + Send + Sync>;

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("server", &self.server).field("url", &self.url.as_str()).finish()
    }
}

impl Authorizer {
    /// The authorizer of server `server` at `url`, keeping its tokens under
    /// `state_dir/oauth/`; `ca_cert` is trusted for its OAuth endpoints too.
    /// `Err` says what is wrong with the configuration (the key file).
    pub fn new(
        server: &str,
        url: &str,
        config: Option<OAuthConfig>,
        state_dir: &Path,
        ca_cert: Option<&Path>,
    ) -> Result<Arc<Authorizer>, OAuthError> {
        let parsed = Url::parse(url).map_err(|error| OAuthError::Config(format!("`url` is not a URL: {error}")))?;
        let config = config.unwrap_or_default();
        let key = match &config.private_key_file {
            Some(file) => {
                let pem = std::fs::read_to_string(file).map_err(|error| {
                    OAuthError::Config(format!("cannot read `oauth.private_key_file` {}: {error}", file.display()))
                })?;
                let alg = config.signing_alg.as_deref().unwrap_or("RS256");
                let key = SigningKey::from_pem(&pem, alg, &file.display().to_string()).map_err(OAuthError::Config)?;
                Some(Arc::new(key))
            }
            None => None,
        };
        let store = Store::new(state_dir, server, parsed.as_str());
        let saved = store.load(parsed.as_str());
        let modified = modified(store.path());
        Ok(Arc::new(Authorizer {
            server: server.to_string(),
            url: parsed,
            config,
            key,
            store,
            web: Web::new(ca_cert).map_err(OAuthError::Config)?,
            memory: Mutex::new((saved, modified)),
            refreshing: tokio::sync::Mutex::new(()),
            on_refresh: Mutex::new(None),
        }))
    }

    /// The server's name in Warden.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The file this server's tokens are kept in.
    pub fn token_file(&self) -> PathBuf {
        self.store.path().to_path_buf()
    }

    /// The secrets Warden holds for this server — its access and refresh
    /// tokens, a registered client's secret — for the leak scanner: none
    /// of them may reach a model or another server.
    pub fn secrets(&self) -> Vec<String> {
        self.reload_if_changed();
        let memory = self.memory();
        let saved = &memory.0;
        let tokens =
            saved.tokens.iter().flat_map(|t| std::iter::once(t.access_token.clone()).chain(t.refresh_token.clone()));
        let client = saved.registration.iter().filter_map(|r| r.client_secret.clone());
        tokens.chain(client).filter(|secret| !secret.is_empty()).collect()
    }

    /// True when tokens are saved for this server.
    pub fn has_tokens(&self) -> bool {
        self.reload_if_changed();
        self.memory().0.tokens.is_some()
    }

    /// The `Authorization` value for the next request: `None` when Warden
    /// holds no token (the server may not need one). A stale token is
    /// refreshed first; a client-credentials client gets its first token.
    pub async fn authorization(&self) -> Result<Option<String>, AuthFailure> {
        self.reload_if_changed();
        let tokens = self.memory().0.tokens.clone();
        match tokens {
            None if self.config.grant() == OAuthGrant::ClientCredentials => self.refresh(None).await?,
            None => return Ok(None),
            Some(tokens) if tokens.stale() => self.refresh(Some(&tokens.access_token)).await?,
            Some(_) => {}
        }
        Ok(self.memory().0.tokens.as_ref().map(|tokens| format!("Bearer {}", tokens.access_token)))
    }

    /// After a 401 to a request that carried `sent` (the whole header
    /// value): `Ok` when a new token is ready and the request should be
    /// sent again; otherwise the server needs a login.
    pub async fn unauthorized(&self, sent: Option<&str>, challenge: &Challenge) -> Result<(), AuthFailure> {
        self.reload_if_changed();
        self.remember(challenge);
        let current = self.memory().0.tokens.as_ref().map(|t| format!("Bearer {}", t.access_token));
        if current.is_some() && current.as_deref() != sent {
            return Ok(()); // Refreshed (or logged in) since that request left.
        }
        let Some(sent) = sent else {
            if self.config.grant() == OAuthGrant::ClientCredentials {
                return self.refresh(None).await;
            }
            let why = challenge.error_description.clone().map(|d| format!(" ({d})")).unwrap_or_default();
            return Err(AuthFailure::NeedsLogin(format!("the server asks for authorization{why}")));
        };
        let token = sent.strip_prefix("Bearer ").unwrap_or(sent);
        self.refresh(Some(token)).await
    }

    /// After a 403 `insufficient_scope`: the scopes it asked for are
    /// remembered for the next login (step-up); the call cannot go on.
    pub fn insufficient_scope(&self, challenge: &Challenge) -> AuthFailure {
        let asked: Vec<String> =
            challenge.scope.as_deref().unwrap_or_default().split_whitespace().map(String::from).collect();
        let mut memory = self.memory();
        let saved = &mut memory.0;
        for scope in &asked {
            if !saved.wanted_scopes.contains(scope) {
                saved.wanted_scopes.push(scope.clone());
            }
        }
        if challenge.guides_a_login() {
            saved.last_challenge = Some(challenge.clone());
        }
        let copy = saved.clone();
        drop(memory);
        if let Err(error) = self.store.save(&copy) {
            tracing::warn!(server = %self.server, "{error}");
        }
        let what = if asked.is_empty() { "more scope".to_string() } else { format!("the scope `{}`", asked.join(" ")) };
        AuthFailure::MoreScope(format!("the server needs {what} for this call"))
    }

    /// Keeps `challenge` for the next login, when it says something new.
    fn remember(&self, challenge: &Challenge) {
        if !challenge.guides_a_login() || self.memory().0.last_challenge.as_ref() == Some(challenge) {
            return;
        }
        if let Err(error) = self.update(|saved| saved.last_challenge = Some(challenge.clone())) {
            tracing::warn!(server = %self.server, "{error}");
        }
    }

    /// Has `hook` told of every refresh from now on: `true` when it got a
    /// token, `false` when it failed.
    pub fn on_refresh(&self, hook: impl Fn(bool) + Send + Sync + 'static) {
        *self.on_refresh.lock().expect("refresh hook lock") = Some(Arc::new(hook));
    }

    /// [`Authorizer::refresh_once`], told to the hook.
    async fn refresh(&self, stale: Option<&str>) -> Result<(), AuthFailure> {
        let outcome = self.refresh_once(stale).await;
        let told = match &outcome {
            Ok(true) => Some(true),
            Ok(false) => None,
            Err(_) => Some(false),
        };
        let hook = self.on_refresh.lock().expect("refresh hook lock").clone();
        if let (Some(refreshed), Some(hook)) = (told, hook) {
            hook(refreshed);
        }
        outcome.map(|_| ())
    }

    /// Gets a new token: with the refresh token, or the client's own
    /// credentials. `stale` is the token found wanting; when another task
    /// has replaced it meanwhile, that one is used instead (`Ok(false)`:
    /// nothing was asked).
    async fn refresh_once(&self, stale: Option<&str>) -> Result<bool, AuthFailure> {
        let _one_at_a_time = self.refreshing.lock().await;
        self.reload_if_changed();
        let saved = self.memory().0.clone();
        if let Some(tokens) = &saved.tokens {
            if Some(tokens.access_token.as_str()) != stale && !tokens.stale() {
                return Ok(false);
            }
        }
        let client_credentials = self.config.grant() == OAuthGrant::ClientCredentials;
        let result = if client_credentials {
            self.client_credentials().await
        } else {
            let (Some(server), Some(refresh_token)) =
                (&saved.auth_server, saved.tokens.as_ref().and_then(|t| t.refresh_token.clone()))
            else {
                return Err(AuthFailure::NeedsLogin("the token expired and there is no refresh token".into()));
            };
            let client = self.client(&saved, server).map_err(AuthFailure::Failed)?;
            let mut grant = vec![
                ("grant_type".to_string(), "refresh_token".to_string()),
                ("refresh_token".to_string(), refresh_token.clone()),
            ];
            if let Some(resource) = &saved.resource {
                grant.push(("resource".into(), resource.clone()));
            }
            tokens::request(&self.web, server, &client, grant, Some(&refresh_token)).await.map(|t| (server.clone(), t))
        };
        match result {
            Ok((server, tokens)) => {
                tracing::info!(server = %self.server, "MCP '{}': OAuth token refreshed", self.server);
                self.update(|saved| {
                    saved.auth_server = Some(server);
                    saved.tokens = Some(tokens);
                })
                .map(|()| true)
                .map_err(AuthFailure::Failed)
            }
            Err(TokenError::Refused(message)) if !client_credentials => {
                // The refresh token is dead: forget the tokens, keep the client.
                let _ = self.update(|saved| saved.tokens = None);
                Err(AuthFailure::NeedsLogin(format!("refreshing the token failed: {message}")))
            }
            Err(error) if client_credentials => Err(AuthFailure::Failed(error.message().to_string())),
            Err(error) => Err(AuthFailure::NeedsLogin(format!("refreshing the token failed: {}", error.message()))),
        }
    }

    /// The client credentials grant: discovery (cached), then the token.
    async fn client_credentials(&self) -> Result<(super::discovery::AuthServer, super::store::Tokens), TokenError> {
        let saved = self.memory().0.clone();
        let (server, resource) = match (&saved.auth_server, &saved.resource) {
            (Some(server), Some(resource)) => (server.clone(), resource.clone()),
            _ => {
                let challenge = super::discovery::probe(&self.web, &self.url).await.map_err(TokenError::Broken)?;
                let found = super::discovery::discover(&self.web, &self.url, &challenge.unwrap_or_default())
                    .await
                    .map_err(TokenError::Broken)?;
                let _ = self.update(|saved| saved.resource = Some(found.resource.clone()));
                (found.server, found.resource)
            }
        };
        let client = self.client(&saved, &server).map_err(TokenError::Broken)?;
        let mut grant =
            vec![("grant_type".to_string(), "client_credentials".to_string()), ("resource".into(), resource)];
        if let Some(scopes) = &self.config.scopes {
            grant.push(("scope".into(), scopes.join(" ")));
        }
        tokens::request(&self.web, &server, &client, grant, None).await.map(|tokens| (server, tokens))
    }

    /// The client Warden is at `server`: the configured one, else the
    /// saved registration.
    pub(super) fn client(&self, saved: &Saved, server: &super::discovery::AuthServer) -> Result<Client, String> {
        if let Some(id) = &self.config.client_id {
            let method =
                AuthMethod::choose(self.config.client_secret.is_some(), self.key.is_some(), &server.auth_methods)?;
            return Ok(Client {
                id: id.clone(),
                secret: self.config.client_secret.clone(),
                key: self.key.clone(),
                method,
            });
        }
        if let Some(url) = &self.config.client_metadata_url {
            if server.client_metadata_documents {
                return Ok(Client { id: url.clone(), secret: None, key: None, method: AuthMethod::None });
            }
        }
        let registration =
            saved.registration.as_ref().ok_or("Warden is not registered with the authorization server")?;
        let method = registration.auth_method.as_deref().and_then(AuthMethod::parse).unwrap_or(AuthMethod::None);
        Ok(Client { id: registration.client_id.clone(), secret: registration.client_secret.clone(), key: None, method })
    }

    /// Changes the saved state and writes it.
    pub(super) fn update(&self, change: impl FnOnce(&mut Saved)) -> Result<(), String> {
        let mut memory = self.memory();
        change(&mut memory.0);
        self.store.save(&memory.0)?;
        memory.1 = modified(self.store.path());
        Ok(())
    }

    /// A copy of the saved state, fresh from the file.
    pub(super) fn saved(&self) -> Saved {
        self.reload_if_changed();
        self.memory().0.clone()
    }

    fn reload_if_changed(&self) {
        let now = modified(self.store.path());
        let mut memory = self.memory();
        if memory.1 != now {
            memory.0 = self.store.load(self.url.as_str());
            memory.1 = now;
        }
    }

    fn memory(&self) -> MutexGuard<'_, (Saved, Option<SystemTime>)> {
        self.memory.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}
