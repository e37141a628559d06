//! OAuth tokens as secrets, in steps 2 and 4 of a call.
//!
//! The leak scanner's known secrets are fixed when the config loads, but a
//! server's OAuth tokens change at every refresh, so they are asked of its
//! `Authorizer` at each call instead. A call's arguments are checked for
//! every server's tokens (a model must not hand a token to any server); a
//! result for its own server's (the only ones that server was ever sent).
//! Only when a token is actually there is a scanner compiled, labelled
//! `oauth_token:<server>`, so the common case costs a substring search.

use std::sync::Arc;

use serde::Serialize;
use warden_policy::{KnownSecret, LeakScanner};
use warden_protocol::Authorizer;

use super::slots::Slots;

/// Every OAuth secret Warden holds, by server.
pub(crate) fn all(slots: &Slots) -> Vec<KnownSecret> {
    slots.oauth().iter().flat_map(|(name, authorizer)| of(name, authorizer)).collect()
}

/// The secrets of one server's authorizer.
pub(crate) fn of(server: &str, authorizer: &Arc<Authorizer>) -> Vec<KnownSecret> {
    let label = format!("oauth_token:{server}");
    authorizer.secrets().into_iter().map(|value| KnownSecret { label: label.clone(), value }).collect()
}

/// A scanner for the secrets among `known` that `value` holds; `None`
/// when it holds none (or there are none).
pub(crate) fn scanner_for(known: Vec<KnownSecret>, value: &impl Serialize) -> Option<LeakScanner> {
    if known.is_empty() {
        return None;
    }
    let text = serde_json::to_string(value).ok()?;
    let present: Vec<KnownSecret> = known.into_iter().filter(|secret| text.contains(&secret.value)).collect();
    (!present.is_empty()).then(|| LeakScanner::new(present))
}
