//! OAuth on the Streamable HTTP transport: every POST carries the
//! server's current access token (refreshed first when it is about to
//! expire); a 401 refreshes once and the request goes again; a 403 with
//! `insufficient_scope` fails the request, remembering the scope for the
//! next login. What no refresh fixes is a [`Refusal::Auth`]: the request
//! is answered with [`AUTH_REQUIRED`](super::AUTH_REQUIRED) and the owner
//! told with [`TransportEvent::AuthRequired`](crate::TransportEvent).
//!
//! GET streams and the session's DELETE carry the token the last POST
//! used: they cannot refresh (nothing waits on them), and a stream the
//! server refuses is reopened with backoff, by then with a fresh token.

use hyper::header::{HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use hyper::StatusCode;

use super::body::lock;
use super::session::{Failure, Refusal, Session};
use crate::{AuthFailure, Challenge};

impl Session {
    /// Brings the token up to date before a POST; returns the
    /// `Authorization` value sent (for telling a refresh that someone else
    /// already did from one still to do).
    pub(super) async fn authorize(&self) -> Result<Option<String>, Failure> {
        let Some(authorizer) = &self.spec.authorizer else { return Ok(None) };
        let value = authorizer.authorization().await.map_err(Failure::Auth)?;
        *lock(&self.authorization) = value.as_deref().and_then(|text| {
            let mut header = HeaderValue::from_str(text).ok()?;
            header.set_sensitive(true);
            Some(header)
        });
        Ok(value)
    }

    /// The failure a 401, or a 403 asking for scope, means — for a server
    /// with OAuth; others' 401s are plain HTTP errors.
    pub(super) fn auth_failure(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<String>,
    ) -> Option<Failure> {
        self.spec.authorizer.as_ref()?;
        let challenge = headers
            .get(WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .map(Challenge::parse)
            .unwrap_or_default();
        match status {
            StatusCode::UNAUTHORIZED => Some(Failure::Unauthorized { challenge, sent }),
            StatusCode::FORBIDDEN if challenge.wants_more_scope() => Some(Failure::Forbidden { challenge }),
            _ => None,
        }
    }

    /// After an auth failure: `Ok` when a new token is ready and the
    /// request should go again.
    pub(super) async fn recover(&self, failure: Failure) -> Result<(), Refusal> {
        let Some(authorizer) = &self.spec.authorizer else {
            return Err(Refusal::Transport(failure.message(&self.spec.url)));
        };
        match failure {
            Failure::Unauthorized { challenge, sent } => {
                authorizer.unauthorized(sent.as_deref(), &challenge).await.map_err(Refusal::Auth)
            }
            Failure::Forbidden { challenge } => Err(Refusal::Auth(authorizer.insufficient_scope(&challenge))),
            Failure::Auth(failure) => Err(Refusal::Auth(failure)),
            other => Err(Refusal::Transport(other.message(&self.spec.url))),
        }
    }

    /// A second auth failure, right after a refresh: no more tries.
    pub(super) fn refused_again(&self, failure: Failure) -> Refusal {
        match (failure, &self.spec.authorizer) {
            (Failure::Forbidden { challenge }, Some(authorizer)) => {
                Refusal::Auth(authorizer.insufficient_scope(&challenge))
            }
            (Failure::Auth(failure), _) => Refusal::Auth(failure),
            _ => {
                Refusal::Auth(AuthFailure::NeedsLogin("the server refused the token Warden had just refreshed".into()))
            }
        }
    }
}
