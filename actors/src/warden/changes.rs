//! [`Changes`]: one shape for every subscription a host can take.
//!
//! Tool changes, server state changes and summary changes all come from
//! values Warden publishes on `watch` channels (the Registry's snapshot,
//! the Summarizer's view). A `Changes<T>` reads one of them: `changed()`
//! waits until the part it watches has changed since it was last read and
//! returns the new value; changes that land together are reported once;
//! `None` means Warden has shut down. `current()` reads it now.
//!
//! [`Reconnections`] reads the statuses for one thing: servers that
//! connected again, whose new connection must be told again what the old
//! one was asked (subscriptions, a log level).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::SystemTime;

use tokio::sync::watch;

use crate::registry::{ServerStatus, Snapshot, ToolEntry};
use crate::summarizer::SummaryView;

/// A subscription to one kind of change.
pub struct Changes<T> {
    source: Source,
    /// Which version of the watched part the source holds; `None` counts
    /// every publication as a change.
    version: fn(&Source) -> Option<u64>,
    read: fn(&Source) -> T,
    seen: Option<u64>,
}

/// Fires when the tool table changes: a server came up, restarted with a
/// different list, announced `tools/list_changed`, or failed.
pub type ToolChanges = Changes<Vec<ToolEntry>>;

enum Source {
    Snapshots(watch::Receiver<Arc<Snapshot>>),
    Summaries(watch::Receiver<Arc<SummaryView>>),
}

impl<T> Changes<T> {
    fn new(mut source: Source, version: fn(&Source) -> Option<u64>, read: fn(&Source) -> T) -> Changes<T> {
        match &mut source {
            Source::Snapshots(receiver) => drop(receiver.borrow_and_update()),
            Source::Summaries(receiver) => drop(receiver.borrow_and_update()),
        }
        let seen = version(&source);
        Changes { source, version, read, seen }
    }

    /// The watched value as it is now.
    pub fn current(&self) -> T {
        (self.read)(&self.source)
    }

    /// Waits for the next change and returns the new value; `None` once
    /// Warden has shut down.
    pub async fn changed(&mut self) -> Option<T> {
        loop {
            let open = match &mut self.source {
                Source::Snapshots(receiver) => receiver.changed().await.is_ok(),
                Source::Summaries(receiver) => receiver.changed().await.is_ok(),
            };
            if !open {
                return None;
            }
            let version = (self.version)(&self.source);
            if version.is_none() || version != self.seen {
                self.seen = version;
                return Some(self.current());
            }
        }
    }
}

fn snapshot(source: &Source) -> Arc<Snapshot> {
    match source {
        Source::Snapshots(receiver) => receiver.borrow().clone(),
        Source::Summaries(_) => unreachable!("a snapshot subscription reads snapshots"),
    }
}

/// The tool table's changes.
pub(super) fn tools(snapshots: watch::Receiver<Arc<Snapshot>>) -> Changes<Vec<ToolEntry>> {
    Changes::new(
        Source::Snapshots(snapshots),
        |source| Some(snapshot(source).tools_version),
        |source| snapshot(source).tools(),
    )
}

/// Every server's status, whenever one changes.
pub(super) fn statuses(snapshots: watch::Receiver<Arc<Snapshot>>) -> Changes<Vec<ServerStatus>> {
    Changes::new(
        Source::Snapshots(snapshots),
        |source| Some(snapshot(source).status_version),
        |source| snapshot(source).statuses(),
    )
}

/// Every snapshot the Registry publishes.
pub(super) fn snapshots(snapshots: watch::Receiver<Arc<Snapshot>>) -> Changes<Arc<Snapshot>> {
    Changes::new(Source::Snapshots(snapshots), |_| None, snapshot)
}

/// The Summarizer's view, whenever it publishes.
pub(super) fn summaries(view: watch::Receiver<Arc<SummaryView>>) -> Changes<Arc<SummaryView>> {
    Changes::new(
        Source::Summaries(view),
        |_| None,
        |source| match source {
            Source::Summaries(receiver) => receiver.borrow().clone(),
            Source::Snapshots(_) => unreachable!("a summary subscription reads summaries"),
        },
    )
}

/// The servers that connect again (a restart, a reconnection), one at a
/// time; a server's first connection is not one.
pub struct Reconnections {
    statuses: Changes<Vec<ServerStatus>>,
    /// Each server's last connection.
    seen: HashMap<String, SystemTime>,
    due: VecDeque<String>,
}

impl Reconnections {
    pub(super) fn new(statuses: Changes<Vec<ServerStatus>>) -> Reconnections {
        let now = statuses.current();
        let mut reconnections = Reconnections { statuses, seen: HashMap::new(), due: VecDeque::new() };
        reconnections.note(now);
        reconnections
    }

    /// The next server that connected again; `None` once Warden has shut
    /// down.
    pub async fn next(&mut self) -> Option<String> {
        loop {
            if let Some(server) = self.due.pop_front() {
                return Some(server);
            }
            let statuses = self.statuses.changed().await?;
            self.note(statuses);
        }
    }

    fn note(&mut self, statuses: Vec<ServerStatus>) {
        for status in statuses {
            let Some(at) = status.connected_at else { continue };
            if self.seen.insert(status.name.clone(), at).is_some_and(|before| before != at) {
                self.due.push_back(status.name);
            }
        }
    }
}
