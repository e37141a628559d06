//! The server-side tasks of calls in flight, kept in a file, so that a
//! daemon that dies leaves them for the next one to pick up.
//!
//! A call that runs as a task (`server_actor/tasks.rs`) is an ordinary
//! call to its caller, and dies with the process that waits for it. But
//! the task itself lives on in its server — when that server is not
//! Warden's child: an HTTP server keeps running when the daemon is killed,
//! while a stdio server dies with it. So while a task-backed call to an
//! HTTP server runs, its server's name, the task's id and the tool are in
//! `tasks.json` (the daemon's state directory, `0600`); the entry goes
//! when the call ends in any way this process sees. A process that dies
//! leaves its entries: the next daemon reads them as *left* tasks, which
//! `warden tasks` lists (with the server's word on each) and `warden tasks
//! --result KEY` fetches (`tasks/get`'s result for the 2026-07-28
//! extension, `tasks/result` for 2025-11-25) and then forgets.
//!
//! What this cannot do: hand the result to the caller that asked (it is
//! gone with the old process); reach a 2025-11-25 task whose server ties
//! tasks to the old HTTP session (its answer says so). Nothing secret is
//! written: a task id is the server's handle, not a credential, and the
//! arguments are not kept.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::state_file;

/// A task a call started, as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftTask {
    /// The server's configured name.
    pub server: String,
    /// The namespaced tool the call ran.
    pub tool: String,
    /// The server's id for the task.
    pub task_id: String,
    /// A task of the 2026-07-28 extension (`tasks/get` carries its end),
    /// else of 2025-11-25 (`tasks/result`).
    pub extension: bool,
    /// When the call started it (Unix seconds).
    pub started: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entries {
    /// Left by earlier processes, by key.
    #[serde(default)]
    left: BTreeMap<String, LeftTask>,
    /// This process's calls in flight, by key.
    #[serde(default)]
    running: BTreeMap<String, LeftTask>,
}

/// The journal of one Warden.
#[derive(Debug, Default)]
pub(crate) struct TaskJournal {
    /// Where it is kept; `None`: nowhere (an embedded Warden not given a
    /// file, whose tasks die with it).
    file: Option<PathBuf>,
    entries: Mutex<Entries>,
}

impl TaskJournal {
    /// The journal in `file`: what it holds was left by earlier processes.
    pub(crate) fn in_file(file: PathBuf) -> TaskJournal {
        let read: Entries = state_file::read(&file, "a task journal");
        let mut left = read.left;
        left.extend(read.running);
        if !left.is_empty() {
            tracing::info!("{} task(s) left by an earlier daemon (Warden::left_tasks lists them)", left.len());
        }
        TaskJournal { file: Some(file), entries: Mutex::new(Entries { left, running: BTreeMap::new() }) }
    }

    /// The call with `ticket` started `task`.
    pub(crate) fn started(&self, ticket: u64, task: LeftTask) {
        let mut entries = self.entries.lock().expect("task journal lock");
        entries.running.insert(key(ticket), task);
        self.write(&entries);
    }

    /// The call with `ticket` ended, in this process.
    pub(crate) fn ended(&self, ticket: u64) {
        let mut entries = self.entries.lock().expect("task journal lock");
        if entries.running.remove(&key(ticket)).is_some() {
            self.write(&entries);
        }
    }

    /// The tasks earlier processes left, by key.
    pub(crate) fn left(&self) -> Vec<(String, LeftTask)> {
        let entries = self.entries.lock().expect("task journal lock");
        entries.left.iter().map(|(key, task)| (key.clone(), task.clone())).collect()
    }

    /// Forgets the left task `key`.
    pub(crate) fn forget(&self, key: &str) {
        let mut entries = self.entries.lock().expect("task journal lock");
        if entries.left.remove(key).is_some() {
            self.write(&entries);
        }
    }

    fn write(&self, entries: &Entries) {
        if let Some(file) = &self.file {
            state_file::write(file, entries, "a task running now is lost if the daemon dies");
        }
    }
}

/// A call's key, unique across processes: this process and its ticket.
fn key(ticket: u64) -> String {
    format!("{}-{ticket}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> LeftTask {
        LeftTask { server: "s".into(), tool: "s__long".into(), task_id: id.into(), extension: true, started: 1 }
    }

    #[test]
    fn what_a_process_had_running_is_left_to_the_next_and_what_ended_is_not() {
        let dir = std::env::temp_dir().join(format!("warden-task-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tasks.json");
        let _ = std::fs::remove_file(&file);
        let first = TaskJournal::in_file(file.clone());
        first.started(1, task("t-1"));
        first.started(2, task("t-2"));
        first.ended(2);
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        drop(first); // the process "dies": nothing more is written

        let next = TaskJournal::in_file(file.clone());
        let left = next.left();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].1.task_id, "t-1");
        next.started(3, task("t-3"));
        next.forget(&left[0].0);
        let after = TaskJournal::in_file(file.clone());
        let ids: Vec<String> = after.left().into_iter().map(|(_, task)| task.task_id).collect();
        assert_eq!(ids, ["t-3"], "forgotten once fetched; the next process's running one is left in turn");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
