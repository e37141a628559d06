//! How fresh a server's tool list is: when its `ttlMs` has it read again,
//! and when a caller who did not find a name in it has it read at once.
//!
//! Warden reads a server's tool list once per change, for every caller: at
//! the start, when the server says it changed (`notifications/tools/
//! list_changed`, or a 2026-07-28 `subscriptions/listen`), and when the
//! list's `ttlMs` runs out (a modern server's word; at least a second, at
//! most a day). A server can add tools without saying so — the official
//! Python SDK's servers declare `tools.listChanged: false`, or announce
//! only the way of 2025 where 2026-07-28 has them announce nothing, and
//! mark their lists `ttlMs: 0` — and a client talking to such a server
//! directly sees the tool as soon as it lists again. Warden must not be
//! the layer that hides it. So a caller who asks for a name no list has
//! (a call, `describe_tool`, a schema), or lists the tools itself, has the
//! list read again first when the server's changes may go unheard: it
//! announces none, its subscription is not open, or its list's `ttlMs` has
//! run out (0: at once). At most once a second per server ([`AT_MOST_EVERY`]):
//! a caller who misses within a second of the last reading waits for the
//! next, a second after it, rather than go without. Never for a name that
//! is found: a known tool's call asks nothing.
//!
//! The caller waits for the list to be in the Registry's table: its sender
//! travels with the list (`ServerEvent::ToolsDiscovered`) and is dropped
//! by the Registry once it published it, or here at once when nothing is
//! read (or the listing failed).

use std::time::Duration;

use ractor::ActorRef;
use serde_json::{Map, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::cache::MAX_TTL;
use super::{spawn_timer, Phase, ServerActorState, ServerMsg};

/// The soonest a tool list is read again by its `ttlMs`.
const MIN_TOOLS_TTL: Duration = Duration::from_secs(1);

/// The soonest a caller's miss has the same server's list read again.
const AT_MOST_EVERY: Duration = Duration::from_secs(1);

/// Callers waiting for a tool list to reach the Registry's table: each
/// sender is dropped once it has.
pub(crate) type ListWaiters = Vec<oneshot::Sender<()>>;

/// The tool list's freshness, and who waits for the one being read.
#[derive(Default)]
pub(crate) struct ToolFreshness {
    /// The `ttlMs` of the list being read (its shortest page's), as given.
    ttl: Option<Duration>,
    /// The timer that reads the list again when its `ttlMs` runs out.
    timer: Option<JoinHandle<()>>,
    /// When the list last read goes stale by its `ttlMs`.
    stale_at: Option<Instant>,
    /// The server announces changes to its tools (`tools.listChanged`).
    announced: bool,
    /// When a caller last had the list read again (or will: a reading
    /// put off to keep them a second apart).
    asked_at: Option<Instant>,
    /// The timer of a reading put off.
    deferred: Option<JoinHandle<()>>,
    /// Callers waiting for the list being read.
    waiting: ListWaiters,
}

impl ToolFreshness {
    /// Stops the timers (the connection is going away).
    pub(super) fn stop(&mut self) {
        for timer in [self.timer.take(), self.deferred.take()].into_iter().flatten() {
            timer.abort();
        }
    }
}

impl ServerActorState {
    /// What the server said of its tools at the handshake.
    pub(super) fn note_tools_announced(&mut self, tools: Option<&Value>) {
        self.freshness.announced =
            tools.and_then(|tools| tools.get("listChanged")).and_then(Value::as_bool) == Some(true);
    }

    /// Notes how long a page of the tool list being read stays fresh (the
    /// list as a whole: its shortest page); `first` starts a new list. Only
    /// a modern server's `ttlMs` counts (an older one's means nothing).
    pub(super) fn note_tools_ttl(&mut self, first: bool, page: &Map<String, Value>) {
        let ttl = page
            .get("ttlMs")
            .and_then(Value::as_f64)
            .filter(|ttl| *ttl >= 0.0 && self.is_modern())
            .map(|ttl| Duration::from_millis(ttl as u64).min(MAX_TTL));
        self.freshness.ttl = match (first, self.freshness.ttl, ttl) {
            (true, _, ttl) => ttl,
            (false, Some(before), Some(ttl)) => Some(before.min(ttl)),
            (false, _, _) => None,
        };
    }

    /// The list was read whole: it is stale when its `ttlMs` says, and
    /// read again then (a list change announced before then reads it
    /// sooner).
    pub(super) fn tools_read(&mut self, myself: &ActorRef<ServerMsg>) {
        if let Some(timer) = self.freshness.timer.take() {
            timer.abort();
        }
        let now = Instant::now();
        self.freshness.stale_at = self.freshness.ttl.map(|ttl| now + ttl);
        // `ttlMs: 0` is stale at once, which a caller's miss acts on; only
        // a lasting one is worth a timer.
        if let Some(ttl) = self.freshness.ttl.filter(|ttl| !ttl.is_zero()) {
            let ttl = ttl.max(MIN_TOOLS_TTL);
            tracing::debug!(server = %self.name, ttl_ms = ttl.as_millis() as u64, "the tool list is read again when its ttlMs runs out");
            self.freshness.timer = Some(spawn_timer(myself, now + ttl, || ServerMsg::ToolsStale));
        }
    }

    /// The callers waiting for the list just read, to go with it to the
    /// Registry.
    pub(super) fn take_list_waiters(&mut self) -> ListWaiters {
        std::mem::take(&mut self.freshness.waiting)
    }

    /// Reading the list failed: nobody waits for it any more.
    pub(super) fn tools_not_read(&mut self) {
        self.freshness.waiting.clear();
    }

    /// A caller found no tool by the name it asked for (or lists the
    /// tools itself): the list is read again when its changes may go
    /// unheard — now, or a second after the last such reading — and
    /// `waiter` dropped once it is in the Registry's table; at once when
    /// nothing is read.
    pub(super) fn list_tools_for_caller(&mut self, myself: &ActorRef<ServerMsg>, waiter: oneshot::Sender<()>) {
        if self.phase != Phase::Ready {
            return; // Starting, its first list comes anyway; down, none will.
        }
        if self.listing.running {
            return self.freshness.waiting.push(waiter);
        }
        if !self.tool_changes_may_go_unheard() {
            return;
        }
        self.freshness.waiting.push(waiter);
        if self.freshness.deferred.as_ref().is_some_and(|timer| !timer.is_finished()) {
            return; // It waits for the reading already put off.
        }
        let now = Instant::now();
        match self.freshness.asked_at.map(|at| at + AT_MOST_EVERY) {
            Some(next) if now < next => {
                self.freshness.asked_at = Some(next);
                self.freshness.deferred = Some(spawn_timer(myself, next, || ServerMsg::ToolsStale));
            }
            _ => {
                tracing::debug!(server = %self.name, "a caller missed a tool: its list is read again (its changes may go unheard)");
                self.freshness.asked_at = Some(now);
                self.refresh_tools();
            }
        }
    }

    /// Whether the server may have changed its tools without Warden
    /// hearing: it announces nothing, its subscription is not open (a
    /// modern server's announcements come only through it), or the list's
    /// `ttlMs` has run out.
    fn tool_changes_may_go_unheard(&self) -> bool {
        let heard = if self.is_modern() { self.hears_tools() } else { self.freshness.announced };
        !heard || self.freshness.stale_at.is_some_and(|at| Instant::now() >= at)
    }
}
