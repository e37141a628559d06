//! A 2026-07-28 server's answers kept for as long as it says they stay
//! fresh (`ttlMs`), and shared only as far as it allows (`cacheScope`).
//!
//! The revision marks the answers of `resources/list`,
//! `resources/templates/list`, `prompts/list` and `resources/read` as
//! cacheable. A front passes those requests on for every client that
//! asks, and a wrapper tool (`srv__list_resources`, ...) makes them on
//! every call; so a fresh answer is given again, from here, without
//! asking the server. What is kept:
//!
//! - only on a modern connection (an older server's stray `ttlMs` means
//!   nothing), only a `ttlMs` above 0 (0: stale at once), at most 24 hours;
//! - keyed by the method and what the answer depends on: a list page's
//!   cursor, a read's URI (other params, `_meta` among them, do not change
//!   the answer);
//! - `"public"` answers for everyone; `"private"` ones (and any without a
//!   scope) only for the identity whose request fetched them — the agent
//!   it was made for, or the host. Warden's own credentials reach the
//!   server either way, but its agents are separate principals to the
//!   people running it, and a shared gateway is exactly the intermediary
//!   the scope speaks to;
//! - given out with `ttlMs` lowered to the time left, so a client caching
//!   it in turn never holds it past the server's word.
//!
//! What the server announces drops entries at once: a list change drops
//! that list (resources: templates too), a resource update drops its
//! reads. A subscription that broke may have missed announcements, so it
//! drops everything. An answer fetched while something was dropped is not
//! kept (it may be the old one). The cache dies with the connection.
//!
//! `tools/list` answers are not kept here: Warden reads the list once per
//! change for every caller, and its `ttlMs` sets when it is read again
//! (`freshness.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::ToolCall;

/// The methods whose answers are cached.
const CACHEABLE: [&str; 4] = ["resources/list", "resources/templates/list", "prompts/list", "resources/read"];

/// The longest a server's word keeps an answer.
pub(super) const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How many answers are kept; the one nearest its end goes first.
const MAX_ENTRIES: usize = 256;

/// The largest answer kept (a big resource is read again instead).
const MAX_ENTRY_BYTES: usize = 1 << 20;

/// What an answer is kept under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    method: &'static str,
    /// The cursor of a list page, the URI of a read.
    on: String,
    /// `None` for a public answer; else whose it is.
    owner: Option<Arc<str>>,
}

struct Entry {
    /// The answer's members, as the server wrote them.
    result: Map<String, Value>,
    expires: Instant,
}

/// The answers of one connection's server.
#[derive(Default)]
pub(crate) struct ResultCache {
    entries: HashMap<Key, Entry>,
    /// Bumped by every drop: an answer to a request sent before a drop is
    /// not kept.
    drops: u64,
}

/// Who a request was made for, as a private answer's owner: the agent, or
/// the host (`""`).
fn owner(caller: Option<&Arc<str>>) -> Arc<str> {
    caller.cloned().unwrap_or_else(|| Arc::from(""))
}

/// The part of `params` an answer to `method` depends on; `None` when the
/// method is not cacheable or the params are not an object.
fn depends_on(method: &str, params: &str) -> Option<String> {
    if !CACHEABLE.contains(&method) {
        return None;
    }
    let params: Map<String, Value> = serde_json::from_str(params).ok()?;
    let field = if method == "resources/read" { "uri" } else { "cursor" };
    match params.get(field) {
        Some(Value::String(text)) => Some(text.clone()),
        None | Some(Value::Null) if method != "resources/read" => Some(String::new()),
        _ => None,
    }
}

impl ResultCache {
    /// Whether an answer to `method` may be kept: asked now, before the
    /// request is sent, and given back to [`ResultCache::keep`].
    pub(super) fn ticket(&self, method: &str) -> Option<u64> {
        CACHEABLE.contains(&method).then_some(self.drops)
    }

    /// A fresh answer to `method` with `params` for `caller`, its `ttlMs`
    /// the time it has left.
    pub(super) fn answer(
        &mut self,
        method: &'static str,
        params: &str,
        caller: Option<&Arc<str>>,
        now: Instant,
    ) -> Option<Box<RawValue>> {
        let on = depends_on(method, params)?;
        let own = Key { method, on: on.clone(), owner: Some(owner(caller)) };
        let public = Key { method, on, owner: None };
        let key = [own, public].into_iter().find(|key| self.entries.contains_key(key))?;
        let entry = &self.entries[&key];
        if entry.expires <= now {
            self.entries.remove(&key);
            return None;
        }
        let mut result = entry.result.clone();
        let left = entry.expires.duration_since(now).as_millis() as u64;
        result.insert("ttlMs".into(), Value::from(left));
        serde_json::value::to_raw_value(&result).ok()
    }

    /// Keeps `result`, the answer to `method` with `params` fetched for
    /// `caller` under `ticket`, if the server said it stays fresh.
    pub(super) fn keep(
        &mut self,
        ticket: u64,
        method: &'static str,
        params: &str,
        caller: Option<&Arc<str>>,
        result: &RawValue,
        now: Instant,
    ) {
        if ticket != self.drops || result.get().len() > MAX_ENTRY_BYTES {
            return;
        }
        let Some(on) = depends_on(method, params) else { return };
        let Ok(result) = serde_json::from_str::<Map<String, Value>>(result.get()) else { return };
        let ttl = match result.get("ttlMs").and_then(Value::as_f64) {
            Some(ttl) if ttl >= 1.0 => Duration::from_millis(ttl as u64).min(MAX_TTL),
            _ => return,
        };
        let public = result.get("cacheScope").and_then(Value::as_str) == Some("public");
        let owner = (!public).then(|| owner(caller));
        // Never two arms for one answer: the other scope's entry goes.
        let other = Key { method, on: on.clone(), owner: if public { Some(self::owner(caller)) } else { None } };
        self.entries.remove(&other);
        if self.entries.len() >= MAX_ENTRIES {
            self.make_room(now);
        }
        self.entries.insert(Key { method, on, owner }, Entry { result, expires: now + ttl });
    }

    /// Drops what a server's notification says changed.
    pub(super) fn notified(&mut self, method: &str, params: Option<&Value>) {
        match method {
            "notifications/resources/list_changed" => {
                self.drop_where(|key| matches!(key.method, "resources/list" | "resources/templates/list"))
            }
            "notifications/prompts/list_changed" => self.drop_where(|key| key.method == "prompts/list"),
            "notifications/resources/updated" => {
                let uri = params.and_then(|params| params.get("uri")).and_then(Value::as_str);
                self.drop_where(|key| key.method == "resources/read" && uri.is_none_or(|uri| key.on == uri))
            }
            _ => {}
        }
    }

    /// Drops everything (announcements may have been missed).
    pub(super) fn clear(&mut self) {
        self.drop_where(|_| true);
    }

    fn drop_where(&mut self, doomed: impl Fn(&Key) -> bool) {
        self.drops += 1;
        self.entries.retain(|key, _| !doomed(key));
    }

    /// Drops the stale entries, or else the one that would go stale first.
    fn make_room(&mut self, now: Instant) {
        self.entries.retain(|_, entry| entry.expires > now);
        if self.entries.len() < MAX_ENTRIES {
            return;
        }
        let first = self.entries.iter().min_by_key(|(_, entry)| entry.expires).map(|(key, _)| key.clone());
        if let Some(first) = first {
            self.entries.remove(&first);
        }
    }
}

impl super::ServerActorState {
    /// A fresh answer kept for `call`, on a modern connection.
    pub(super) fn cached_answer(&mut self, call: &ToolCall) -> Option<Box<RawValue>> {
        if !self.is_modern() {
            return None;
        }
        let found = self.cache.answer(call.method, call.params.get(), call.caller.as_ref(), Instant::now());
        if found.is_some() {
            tracing::trace!(server = %self.name, method = call.method, "answered from the cache (ttlMs)");
        }
        found
    }

    /// Whether `call`'s answer may be kept, and under what ticket.
    pub(super) fn cache_ticket(&self, call: &ToolCall) -> Option<u64> {
        self.is_modern().then(|| self.cache.ticket(call.method)).flatten()
    }

    /// Keeps `call`'s answer `result` if the server says it stays fresh.
    pub(super) fn keep_answer(&mut self, ticket: u64, call: &ToolCall, result: &RawValue) {
        self.cache.keep(ticket, call.method, call.params.get(), call.caller.as_ref(), result, Instant::now());
    }
}

#[cfg(test)]
mod tests;
