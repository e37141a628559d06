//! Why a POST did not produce an answer, in the words its caller reads.

use hyper::StatusCode;

/// Why a POST did not produce an answer.
pub(super) enum Failure {
    /// Anything but an expired session: the message says it all.
    Plain(String),
    /// A 2026-07-28 request's answer stream broke before the answer: the
    /// request is lost, and may or may not have run.
    Broken(String),
    /// An error status that is not about the session.
    Status { status: StatusCode, message: String },
    /// The server no longer knows the session id we sent.
    SessionExpired { status: StatusCode, body: String },
    /// 401 to a server with OAuth; `sent` is the `Authorization` sent.
    Unauthorized { challenge: crate::Challenge, sent: Option<String> },
    /// 403 `insufficient_scope` from a server with OAuth.
    Forbidden { challenge: crate::Challenge },
    /// No token could be had before sending.
    Auth(crate::AuthFailure),
}

/// Why a message could not be delivered, as the request's caller hears it.
pub(super) enum Refusal {
    /// The transport failed: the words say how.
    Transport(String),
    /// The answer's stream broke (2026-07-28): the words say how.
    Broken(String),
    /// Authorization is missing (OAuth).
    Auth(crate::AuthFailure),
}

impl Failure {
    /// The failure in words, for the error answering the request.
    pub(super) fn message(self, url: &str) -> String {
        match self {
            Failure::Plain(message) | Failure::Broken(message) | Failure::Status { message, .. } => message,
            Failure::SessionExpired { status, body } => {
                format!("the server forgot our session (HTTP {}) at {url}: {body}", status.as_u16())
            }
            Failure::Unauthorized { .. } => format!("HTTP 401 from {url}: the server wants authorization"),
            Failure::Forbidden { challenge } => format!(
                "HTTP 403 from {url}: the server needs the scope `{}`",
                challenge.scope.as_deref().unwrap_or("(unnamed)")
            ),
            Failure::Auth(failure) => failure.to_string(),
        }
    }

    /// True for the failures OAuth may fix.
    pub(super) fn is_auth(&self) -> bool {
        matches!(self, Failure::Unauthorized { .. } | Failure::Forbidden { .. } | Failure::Auth(_))
    }
}
