//! What a ServerActor reports about its server.

use warden_protocol::InitializeResult;

use crate::server_settings::ShapedTools;

/// An event of one ServerActor, for whoever started it (its supervisor,
/// which passes the news on to the Registry and keeps the restart count).
#[derive(Debug)]
pub(crate) enum ServerEvent {
    /// The handshake finished.
    Initialized {
        /// What the server answered.
        info: Box<InitializeResult>,
        /// Its process (stdio servers).
        pid: Option<u32>,
    },
    /// What the server speaks, found out on this connection: the next
    /// actor after a restart skips what need not be asked again.
    EraLearned(super::KnownEra),
    /// A complete tool list (the first one, or a refresh).
    ToolsDiscovered {
        /// Every tool it listed, filtered and renamed as configured.
        tools: ShapedTools,
        /// Callers waiting for it to be in the Registry's table.
        waiting: super::ListWaiters,
    },
    /// The connection reported an error it survived.
    TransportFaulted {
        /// What failed.
        problem: String,
    },
    /// A call to a server that outlives Warden's process now runs as the
    /// server-side task `task_id`: the journal keeps it while it runs.
    TaskStarted {
        /// The call's ticket.
        ticket: u64,
        /// Its namespaced tool.
        tool: String,
        /// The server's id for the task.
        task_id: String,
        /// A 2026-07-28 extension task (else 2025-11-25).
        extension: bool,
    },
    /// The call with this ticket, which ran as a task, ended.
    TaskEnded {
        /// The call's ticket.
        ticket: u64,
    },
    /// A call succeeded on a restarted server: its crash streak is over.
    /// Sent once per restarted actor.
    CallSucceeded,
    /// The server wants a login (OAuth) that no refresh could replace:
    /// this actor serves nothing more, and no restart is tried until a
    /// login asks for one ([`crate::Warden::reconnect`]).
    NeedsLogin {
        /// The actor reporting.
        actor: ractor::ActorId,
        /// Why, for people.
        reason: String,
    },
    /// The server is down; this actor serves nothing more.
    Down {
        /// The actor reporting (a late report from an older one is ignored).
        actor: ractor::ActorId,
        /// What happened, for people.
        reason: String,
        /// True when restarting cannot help.
        permanent: bool,
    },
}
