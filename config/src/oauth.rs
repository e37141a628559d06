//! A `url` server's `oauth` table: how Warden identifies itself to the
//! server's authorization server, when the defaults (discovery and dynamic
//! client registration) are not what the server wants.
//!
//! ```toml
//! [servers.linear.oauth]
//! client_id = "…"                   # a pre-registered client
//! client_secret = "${LINEAR_SECRET}"
//! client_metadata_url = "https://…" # a Client ID Metadata Document this client is known by
//! scopes = ["read", "write"]        # instead of the server's advertised ones
//! grant = "authorization_code"      # or "client_credentials" (no person)
//! private_key_file = "key.pem"      # client_credentials with private_key_jwt
//! signing_alg = "ES256"             # its algorithm (RS256 or ES256)
//! ```
//!
//! Every key is optional: a server entry with none of them, and even with no
//! `oauth` table at all, still logs in when its server answers 401 — the
//! table only overrides what discovery would find. The secret is expanded
//! from `${VAR}` at load time and masked like a header.

use std::path::PathBuf;

use serde::Deserialize;

/// How Warden gets its tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OAuthGrant {
    /// A person logs in in a browser (`warden login`): the default.
    #[default]
    AuthorizationCode,
    /// No person: the client's own credentials buy the token.
    ClientCredentials,
}

/// The `oauth` table of one server. `Debug` never shows the secret.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// A client registered beforehand with the authorization server.
    pub client_id: Option<String>,
    /// Its secret (a confidential client); `${VAR}` expanded.
    pub client_secret: Option<String>,
    /// The URL of a Client ID Metadata Document: used as the client id
    /// when the authorization server supports such documents.
    pub client_metadata_url: Option<String>,
    /// The scopes asked for, instead of those the server advertises.
    pub scopes: Option<Vec<String>>,
    /// `authorization_code` (default) or `client_credentials`.
    #[serde(default, rename = "grant")]
    pub grant_name: Option<String>,
    /// client_credentials with `private_key_jwt`: the PEM private key.
    pub private_key_file: Option<PathBuf>,
    /// Its signing algorithm: `RS256` or `ES256`.
    pub signing_alg: Option<String>,
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "(hidden)"))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant_name)
            .field("private_key_file", &self.private_key_file)
            .field("signing_alg", &self.signing_alg)
            .finish()
    }
}

/// The signing algorithms `private_key_jwt` supports.
pub const OAUTH_SIGNING_ALGS: &[&str] = &["RS256", "ES256"];

impl OAuthConfig {
    /// The grant, once [`OAuthConfig::check`] has passed.
    pub fn grant(&self) -> OAuthGrant {
        match self.grant_name.as_deref() {
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            _ => OAuthGrant::AuthorizationCode,
        }
    }

    /// Checks the table and expands `${VAR}` in the secret.
    pub(crate) fn check(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        match self.grant_name.as_deref() {
            None | Some("authorization_code") | Some("client_credentials") => {}
            Some(other) => {
                return Err(format!(
                    "`oauth.grant` must be \"authorization_code\" or \"client_credentials\", not \"{other}\""
                ))
            }
        }
        if let Some(url) = &self.client_metadata_url {
            if !url.starts_with("https://") || url.contains(char::is_whitespace) {
                return Err(format!("`oauth.client_metadata_url` must be an https:// URL, not \"{url}\""));
            }
        }
        if let Some(scopes) = &self.scopes {
            if let Some(bad) = scopes.iter().find(|s| s.is_empty() || s.contains(char::is_whitespace)) {
                return Err(format!("`oauth.scopes`: \"{bad}\" is not a scope (one word each, no spaces)"));
            }
        }
        if let Some(alg) = &self.signing_alg {
            if !OAUTH_SIGNING_ALGS.contains(&alg.as_str()) {
                return Err(format!("`oauth.signing_alg` must be \"RS256\" or \"ES256\", not \"{alg}\""));
            }
        }
        if self.private_key_file.is_some() && self.client_secret.is_some() {
            return Err(
                "`oauth` has both `client_secret` and `private_key_file`; a client proves itself with one".into()
            );
        }
        if self.grant() == OAuthGrant::ClientCredentials {
            if self.client_id.is_none() {
                return Err("`oauth.grant = \"client_credentials\"` needs `client_id` (and `client_secret` or `private_key_file`)".into());
            }
            if self.client_secret.is_none() && self.private_key_file.is_none() {
                return Err("`oauth.grant = \"client_credentials\"` needs `client_secret` or `private_key_file`".into());
            }
        }
        if self.private_key_file.is_some() && self.grant() != OAuthGrant::ClientCredentials {
            return Err("`oauth.private_key_file` only applies with `grant = \"client_credentials\"`".into());
        }
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err("`oauth.client_secret` needs the `client_id` it belongs to".into());
        }
        if let Some(secret) = &mut self.client_secret {
            *secret = crate::expand(secret, lookup).map_err(|problem| format!("`oauth.client_secret`: {problem}"))?;
        }
        Ok(())
    }
}

/// Where Warden keeps its state (the daemon's lockfile and log, OAuth
/// tokens): `WARDEN_HOME` when set, else `$XDG_STATE_HOME/warden`, else
/// `~/.local/state/warden`, with the environment read through `var`.
/// `None` when none of them is set.
pub fn state_home(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| var(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    non_empty("WARDEN_HOME")
        .or_else(|| non_empty("XDG_STATE_HOME").map(|state| state.join("warden")))
        .or_else(|| non_empty("HOME").map(|home| home.join(".local/state/warden")))
}
