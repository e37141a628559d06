//! Where things are on NATS: subjects, queue groups, buckets and keys, all
//! under the configured prefix so deployments can share one NATS.
//!
//! ```text
//! PREFIX.call.SERVER.NODE   a call for SERVER, to NODE's copy of it
//! PREFIX.call.SERVER        the same, to any node that exports SERVER
//!                           (queue group PREFIX.SERVER: replicas share it)
//! PREFIX.cancel.NODE        "stop running call ID" (the caller left)
//! PREFIX.approve.NODE       a decision on a call waiting in NODE's queue
//! bucket PREFIX_nodes       NODE → its heartbeat, with a per-message TTL
//! bucket PREFIX_catalog     NODE.SERVER → what NODE's SERVER offers
//! bucket PREFIX_approvals   NODE.ID → a call waiting for a person on NODE
//! bucket PREFIX_grants      NODE.ID → a grant NODE gave, covering calls on every node
//! bucket PREFIX_questions   NODE.ID → a server's question waiting on NODE
//! PREFIX.answer.NODE        an answer to a question waiting in NODE's queue
//! PREFIX.ask.NODE           a server's question during a call that entered at NODE
//! stream PREFIX_audit       PREFIX.audit.NODE: every call's audit record, by the node it entered
//! PREFIX.grant.revoke.NODE  "revoke your grant ID" (a mirror of it was revoked elsewhere)
//! bucket PREFIX_sessions    DIGEST → a front session's record (front replicas)
//! PREFIX.front.forward      a client's message for another front replica's call
//! PREFIX.front.relay.NODE   a 2026-07-28 retry of a call parked on NODE's front
//! ```
//!
//! Importing nodes address a node's own subject: they pick a live node
//! themselves, so a node that froze or was cut off gets no new calls once
//! its heartbeat lapsed, which a queue group would keep routing to it until
//! NATS noticed the dead connection (minutes). The queue subject serves
//! clients of the cluster that do not track nodes.
//!
//! Server and node names are letters, digits, `-` and `_` (the config
//! checks both), so they are always single subject tokens and valid keys.

/// The names of one node's cluster.
#[derive(Debug, Clone)]
pub(crate) struct Names {
    prefix: String,
    /// The prefix as bucket names allow it (no dots).
    bucket_prefix: String,
    /// This node.
    pub(crate) node: String,
    /// How many copies NATS keeps of each bucket and stream: one per NATS
    /// server of its cluster, up to three (so any one server may die).
    pub(crate) replicas: usize,
}

impl Names {
    pub(crate) fn new(prefix: &str, node: &str) -> Names {
        Names {
            prefix: prefix.to_string(),
            bucket_prefix: prefix.replace('.', "_"),
            node: node.to_string(),
            replicas: 1,
        }
    }

    /// The same names, for a NATS of `servers` servers.
    pub(crate) fn replicated(mut self, servers: usize) -> Names {
        self.replicas = servers.clamp(1, 3);
        self
    }

    /// The subject of `node`'s copy of `server`.
    pub(crate) fn call_on(&self, server: &str, node: &str) -> String {
        format!("{}.call.{server}.{node}", self.prefix)
    }

    /// The subject every node exporting `server` answers, in a queue group.
    pub(crate) fn call_any(&self, server: &str) -> String {
        format!("{}.call.{server}", self.prefix)
    }

    /// The queue group of `server`'s replicas.
    pub(crate) fn replicas(&self, server: &str) -> String {
        format!("{}.{server}", self.prefix)
    }

    /// Every call to this node, whatever the server.
    pub(crate) fn calls_to_me(&self) -> String {
        format!("{}.call.*.{}", self.prefix, self.node)
    }

    /// The server a call subject names.
    pub(crate) fn server_of<'a>(&self, subject: &'a str) -> Option<&'a str> {
        let rest = subject.strip_prefix(&self.prefix)?.strip_prefix(".call.")?;
        Some(rest.split('.').next().unwrap_or(rest))
    }

    /// Where `node` is told to stop a call.
    pub(crate) fn cancel(&self, node: &str) -> String {
        format!("{}.cancel.{node}", self.prefix)
    }

    /// Where `node` takes decisions on the calls waiting in its queue.
    pub(crate) fn approve(&self, node: &str) -> String {
        format!("{}.approve.{node}", self.prefix)
    }

    /// The bucket of calls waiting for a person, `NODE.ID` each.
    pub(crate) fn approvals_bucket(&self) -> String {
        format!("{}_approvals", self.bucket_prefix)
    }

    /// The bucket of heartbeats.
    pub(crate) fn nodes_bucket(&self) -> String {
        format!("{}_nodes", self.bucket_prefix)
    }

    /// The bucket of what each node's servers offer.
    pub(crate) fn catalog_bucket(&self) -> String {
        format!("{}_catalog", self.bucket_prefix)
    }

    /// The bucket of servers' questions waiting, `NODE.ID` each.
    pub(crate) fn questions_bucket(&self) -> String {
        format!("{}_questions", self.bucket_prefix)
    }

    /// Where `node` takes answers to the questions waiting in its queue.
    pub(crate) fn answer(&self, node: &str) -> String {
        format!("{}.answer.{node}", self.prefix)
    }

    /// Where `node` takes servers' questions during the calls that
    /// entered at it.
    pub(crate) fn ask(&self, node: &str) -> String {
        format!("{}.ask.{node}", self.prefix)
    }

    /// The stream of every node's audit records.
    pub(crate) fn audit_stream(&self) -> String {
        format!("{}_audit", self.bucket_prefix)
    }

    /// Where `node` appends its audit records (`*`: every node).
    pub(crate) fn audit_subject(&self, node: &str) -> String {
        format!("{}.audit.{node}", self.prefix)
    }

    /// The bucket of grants, `NODE.ID` each.
    pub(crate) fn grants_bucket(&self) -> String {
        format!("{}_grants", self.bucket_prefix)
    }

    /// Where `node` revokes a grant of its own.
    pub(crate) fn revoke_grant(&self, node: &str) -> String {
        format!("{}.grant.revoke.{node}", self.prefix)
    }

    /// The bucket of front sessions' records.
    pub(crate) fn sessions_bucket(&self) -> String {
        format!("{}_sessions", self.bucket_prefix)
    }

    /// Where front replicas hand each other a client's message.
    pub(crate) fn front_forward(&self) -> String {
        format!("{}.front.forward", self.prefix)
    }

    /// Where `node`'s front takes retries of the calls parked on it.
    pub(crate) fn front_relay(&self, node: &str) -> String {
        format!("{}.front.relay.{node}", self.prefix)
    }

    /// Where `node` takes other nodes' subscriptions to its servers'
    /// resources.
    pub(crate) fn holds(&self, node: &str) -> String {
        format!("{}.resources.{node}", self.prefix)
    }

    /// Where the nodes serving `server` publish what it says for the
    /// nodes that import it.
    pub(crate) fn notices(&self, server: &str) -> String {
        format!("{}.notice.{server}", self.prefix)
    }

    /// `node`'s `server` in the catalog.
    pub(crate) fn catalog_key(node: &str, server: &str) -> String {
        format!("{node}.{server}")
    }

    /// The node and server of a catalog key.
    pub(crate) fn split_catalog_key(key: &str) -> Option<(&str, &str)> {
        key.split_once('.')
    }
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn subjects_and_keys_put_the_prefix_first_and_round_trip() {
        let names = Names::new("team.warden", "build-box");
        assert_eq!(names.call_on("git", "db-host"), "team.warden.call.git.db-host");
        assert_eq!(names.call_any("git"), "team.warden.call.git");
        assert_eq!(names.server_of("team.warden.call.git.build-box"), Some("git"));
        assert_eq!(names.server_of("team.warden.call.git"), Some("git"));
        assert_eq!(names.server_of("other.call.git"), None);
        assert_eq!(names.calls_to_me(), "team.warden.call.*.build-box");
        assert_eq!(names.nodes_bucket(), "team_warden_nodes");
        assert_eq!(Names::split_catalog_key(&Names::catalog_key("a", "git")), Some(("a", "git")));
    }
}
