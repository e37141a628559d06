//! [`OAuthError`]: why a login, a logout or an authorizer could not be
//! made, by the step that failed, so a host can tell a person where to
//! look (their config, the provider's settings, the browser) without
//! reading the text. The text says what happened and what to change.

/// Why an OAuth step failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The server's OAuth settings are wrong (`url`, `oauth.private_key_file`,
    /// a client secret or key the authorization server cannot use).
    #[error("{0}")]
    Config(String),
    /// The MCP server or its authorization server could not be found, read
    /// or trusted: nothing to log in to, metadata that is missing or
    /// unsafe, no PKCE.
    #[error("{0}")]
    Discovery(String),
    /// Registering Warden as a client failed, or the authorization server
    /// takes no registration and no client id is configured.
    #[error("{0}")]
    Registration(String),
    /// The browser's part: the redirect listener, the time the person
    /// took, or a redirect that is refused (forged state, another issuer,
    /// an error the authorization server sent back).
    #[error("{0}")]
    Browser(String),
    /// The token endpoint refused or failed.
    #[error("{0}")]
    Token(String),
    /// The tokens could not be saved or removed.
    #[error("{0}")]
    Store(String),
}
