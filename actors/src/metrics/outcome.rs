//! How a call ended, as the `outcome` label says it.

use warden_protocol::CallToolResult;

use crate::error::CallError;

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tool ran and answered.
    Ok,
    /// The tool ran and reported an error (`isError`).
    ToolError,
    /// The call ran out of time.
    Timeout,
    /// Policy or a person said no: an agent's allowlist, a denial, no
    /// approver, an approval nobody answered.
    Denied,
    /// Leak policing stopped it: a secret in the arguments, or a result
    /// withheld.
    Blocked,
    /// The server went away, crashed or stopped during the call.
    ServerGone,
    /// The server answered with a JSON-RPC error or something that is not
    /// a tool result.
    ServerError,
    /// The tool could not be called: unknown, or its server not running.
    Unavailable,
    /// The arguments were not an object.
    InvalidArguments,
    /// The caller went away (or cancelled) before it ended.
    Cancelled,
}

impl Outcome {
    /// Every outcome, for dropping a removed server's series.
    pub const ALL: [Outcome; 10] = [
        Outcome::Ok,
        Outcome::ToolError,
        Outcome::Timeout,
        Outcome::Denied,
        Outcome::Blocked,
        Outcome::ServerGone,
        Outcome::ServerError,
        Outcome::Unavailable,
        Outcome::InvalidArguments,
        Outcome::Cancelled,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::Timeout => "timeout",
            Outcome::Denied => "denied",
            Outcome::Blocked => "blocked",
            Outcome::ServerGone => "server_gone",
            Outcome::ServerError => "server_error",
            Outcome::Unavailable => "unavailable",
            Outcome::InvalidArguments => "invalid_arguments",
            Outcome::Cancelled => "cancelled",
        }
    }

    /// The outcome of a call's result.
    pub fn of(result: &Result<CallToolResult, CallError>) -> Outcome {
        use CallError as E;
        match result {
            Ok(result) if result.is_error() => Outcome::ToolError,
            Ok(_) => Outcome::Ok,
            Err(E::Timeout { .. } | E::RestartTimeout { .. }) => Outcome::Timeout,
            Err(
                E::NotAllowed { .. }
                | E::ApprovalDenied { .. }
                | E::ApprovalTimedOut { .. }
                | E::NoApprover { .. }
                | E::UnknownAgent { .. }
                | E::UrlElicitationNotDone { .. },
            ) => Outcome::Denied,
            Err(E::SecretInArguments { .. } | E::Withheld { .. }) => Outcome::Blocked,
            Err(
                E::ServerGone { .. }
                | E::ServerStopped { .. }
                | E::CrashedMidCall { .. }
                | E::StreamBroken { .. }
                | E::StreamBrokenRepeatedly { .. }
                | E::ShutDown { .. },
            ) => Outcome::ServerGone,
            Err(
                E::Server { .. }
                | E::BadResult { .. }
                | E::AnswerTooLarge { .. }
                | E::UrlElicitationRequired { .. }
                | E::InputNotGiven { .. },
            ) => Outcome::ServerError,
            Err(E::InvalidArguments { .. }) => Outcome::InvalidArguments,
            Err(_) => Outcome::Unavailable,
        }
    }
}
