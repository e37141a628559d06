//! What to do next, in `warden` commands: the CLI's advice after a
//! library error.
//!
//! Warden's library errors say what happened and what to change in the
//! config or the host; they never name a `warden` command, because a host
//! embedding Warden has none. The CLI (and the daemon, whose clients are
//! the CLI's users) adds the command that helps, here, in one place.

use warden_actors::{CallError, QueueError, ReloadError};

/// `error`'s message, with the command that helps when there is one.
pub(crate) fn call_error(error: &CallError) -> String {
    let login = error.needs_login_to().map(login_advice);
    let advice = match error {
        CallError::UnknownTool { .. } => Some("`warden tools` lists the tools available"),
        CallError::NoApprover { .. } => {
            Some("the daemon (any `warden` command without --no-daemon) queues such calls for `warden approve ID`")
        }
        CallError::UnknownTask { .. } => Some("`warden tasks` lists the ones there are"),
        _ => login.as_deref(),
    };
    with_advice(error.to_string(), advice)
}

/// What logs in to `server`: the front tells its clients the same.
pub(crate) fn login_advice(server: &str) -> String {
    format!("run `warden login {server}`")
}

/// A refused answer to a waiting approval, with where to look.
pub(crate) fn queue_error(error: &QueueError) -> String {
    let advice = match error {
        QueueError::NoSuchRequest(_) => Some("`warden approvals` lists the ones that are"),
        QueueError::NoSuchQuestion(_) => Some("`warden pending` lists the ones that are"),
        _ => None,
    };
    with_advice(error.to_string(), advice)
}

/// A refused reload, with how to apply what a reload cannot.
pub(crate) fn reload_error(error: &ReloadError) -> String {
    let advice = match error {
        ReloadError::NamingChanged => Some("`warden stop` ends the daemon; the next command starts one with it"),
        _ => None,
    };
    with_advice(error.to_string(), advice)
}

fn with_advice(message: String, advice: Option<&str>) -> String {
    match advice {
        Some(advice) => format!("{message}; {advice}"),
        None => message,
    }
}
