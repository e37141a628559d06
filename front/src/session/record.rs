//! What of a session another front replica needs to carry it on
//! ([`crate::replicas`]): the version agreed, what the client declared,
//! its log level, its subscriptions, the tools it approved for the
//! session. Not what runs (calls, the questions they ask): that stays on
//! the replica it runs on.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::Session;

/// A session's state as its record keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Kept {
    pub(crate) version: String,
    pub(crate) capabilities: Value,
    pub(crate) level: Option<String>,
    pub(crate) subscriptions: Vec<(String, String)>,
    /// Tool → until when, in milliseconds since the epoch (`None`: the
    /// session's end): wall-clock time, which replicas share.
    pub(crate) approved: Vec<(String, Option<u64>)>,
}

impl Session {
    /// What the record keeps now, and the change count it was taken at;
    /// `None` before `initialize`.
    pub(crate) fn kept(&self) -> Option<(Kept, u64)> {
        let state = self.state();
        let version = state.version.clone()?;
        let (now, wall) = (Instant::now(), SystemTime::now());
        let approved = state
            .approved
            .iter()
            .filter(|(_, until)| until.is_none_or(|until| until > now))
            .map(|(tool, until)| (tool.clone(), until.map(|until| millis(wall + (until - now)))))
            .collect();
        let mut subscriptions: Vec<(String, String)> = state.subscriptions.iter().cloned().collect();
        subscriptions.sort();
        let kept = Kept {
            version,
            capabilities: state.declared.clone(),
            level: state.level.map(|level| level.name().to_string()),
            subscriptions,
            approved,
        };
        Some((kept, state.changes))
    }

    /// How many changes the record would see: it is written again when
    /// this moved.
    pub(crate) fn changes(&self) -> u64 {
        self.state().changes
    }

    /// Takes on what the session's requests read of another replica's
    /// record: the version, the declarations, the approvals (the record's
    /// replace this copy's: the last writer wins).
    pub(crate) fn restore(&self, kept: &Kept) {
        self.declare(&kept.version, kept.capabilities.clone());
        let (now, wall) = (Instant::now(), millis(SystemTime::now()));
        let mut state = self.state();
        state.approved.clear();
        for (tool, until) in &kept.approved {
            let until = match *until {
                None => None,
                Some(until) if until > wall => Some(now + Duration::from_millis(until - wall)),
                Some(_) => continue,
            };
            state.approved.insert(tool.clone(), until);
        }
    }

    /// Asks the servers, in a task, for what the record says the session
    /// wants of them and this copy does not have yet (its level, its
    /// subscriptions; those it no longer has are withdrawn): the request
    /// that adopted the session is not held up by them.
    pub(crate) fn restore_upstream(&self, kept: Kept) {
        let session = self.clone();
        tokio::spawn(async move {
            let (level, subscribed) = {
                let state = session.state();
                (state.level.map(|level| level.name().to_string()), state.subscriptions.clone())
            };
            if let Some(wanted) = kept.level.filter(|wanted| level.as_ref() != Some(wanted)) {
                let _ = session.set_level(&json!({ "level": wanted })).await;
            }
            for (server, uri) in subscribed.iter().filter(|pair| !kept.subscriptions.contains(pair)) {
                let _ = session.unsubscribe(server, uri).await;
            }
            for (server, uri) in kept.subscriptions.iter().filter(|pair| !subscribed.contains(*pair)) {
                if let Err(error) = session.subscribe(server, uri).await {
                    tracing::warn!(session = %session.who(), server, uri, "a subscription the session made on another replica could not be made here: {}", error.message);
                }
            }
        });
    }

    /// Takes on another replica's newer record of this session.
    pub(crate) fn apply(&self, kept: Kept) {
        if self.kept().is_some_and(|(now, _)| now == kept) {
            return;
        }
        self.restore(&kept);
        self.restore_upstream(kept);
    }
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX))
}
