//! OAuth 2.1 for remote servers: the MCP authorization flow (2025-11-25,
//! with 2025-06-18 and 2025-03-26 servers still served).
//!
//! A `url` server behind OAuth answers 401. Two things follow:
//!
//! - **At run time** (the HTTP transport, every face): each request carries
//!   the saved access token ([`Authorizer::authorization`]), refreshed a
//!   little before it expires; a 401 refreshes once and retries
//!   ([`Authorizer::unauthorized`]). When no refresh can help — no tokens,
//!   a refresh token the server refused — the transport reports the
//!   server as needing a login ([`AuthFailure::NeedsLogin`]): its state
//!   becomes `needs_login`, never a crash loop. A 403 asking for more scope
//!   ([`Authorizer::insufficient_scope`]) fails that call and remembers the
//!   scope for the next login (step-up).
//! - **Logging in** ([`Authorizer::login`], `login.rs`) needs a person and
//!   a browser: discovery, client registration, PKCE, the loopback
//!   redirect, the code exchanged for tokens. `warden login` runs it; so
//!   does a one-shot command that meets a server needing it, when a person
//!   is there. The client-credentials grant needs no person: the runtime
//!   gets its tokens itself.
//!
//! Tokens live in `<state>/oauth/` (`store.rs`: files 0600, directory
//! 0700), never in the config and never in a log line: the types that hold
//! them print `(hidden)`.
//!
//! The files (in `transport/http/oauth/`): `challenge.rs` (reading `WWW-Authenticate`), `discovery.rs`
//! (PRM, authorization server metadata, the 2025-03-26 defaults),
//! `registration.rs` (RFC 7591), `pkce.rs`, `callback.rs` (the loopback
//! listener), `tokens.rs` (the token endpoint and client authentication),
//! `jwt.rs` (`private_key_jwt`), `web.rs` (bounded JSON over HTTP, no
//! redirects followed), `store.rs`, `authorizer.rs`, `login.rs`;
//! `properties.rs` fuzzes what they read from servers.

mod authorizer;
mod callback;
mod challenge;
mod discovery;
mod error;
mod jwt;
mod login;
mod pkce;
#[cfg(test)]
mod properties;
mod registration;
mod store;
mod tokens;
mod web;

pub use authorizer::Authorizer;
pub use challenge::Challenge;
pub use error::OAuthError;
pub use login::LoggedIn;

/// Why a request cannot be authorized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthFailure {
    /// A person must log in (`warden login NAME`): no tokens, or they
    /// could not be refreshed. The text says which.
    NeedsLogin(String),
    /// The server wants more scope for one call (a 403
    /// `insufficient_scope`): a new login asks for it.
    MoreScope(String),
    /// Something no login fixes: a broken configuration, an authorization
    /// server that answers nonsense. The text names it.
    Failed(String),
}

impl AuthFailure {
    /// What the caller of a request to server `server` reads: what is
    /// wrong and what fixes it (a host names its own way of logging in:
    /// the CLI adds `warden login`).
    pub fn advice(&self, server: &str) -> String {
        match self {
            AuthFailure::NeedsLogin(why) => format!("server '{server}' needs a login ({why})"),
            AuthFailure::MoreScope(why) => format!("{why}: a new login must grant it, then call again"),
            AuthFailure::Failed(why) => format!("OAuth for server '{server}' failed: {why}"),
        }
    }
}

impl std::fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthFailure::NeedsLogin(why) | AuthFailure::MoreScope(why) | AuthFailure::Failed(why) => f.write_str(why),
        }
    }
}

/// What a login shows the person and how it opens their browser.
pub trait LoginUi: Send + Sync {
    /// One line of progress.
    fn say(&self, line: &str);
    /// Opens `url` in the person's browser (or prints it for them to open);
    /// a failure is said, not returned: the login still waits.
    fn open(&self, url: &str);
}
