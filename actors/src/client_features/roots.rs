//! Roots: the directories each server is told it may work in.
//!
//! One table per Warden: the default list (the config's top-level `roots`,
//! or what a host set) and each server's own list (its config entry's
//! `roots`), which wins for that server. A server is told Warden supports
//! roots (`roots.listChanged`) when it has roots of its own, when the
//! default list is not empty, or when the host said it manages roots —
//! so a server that would treat "no roots" differently from "roots not
//! supported" (server-filesystem keeps its command-line directories when
//! the client has no roots capability) is not handed an empty list by
//! surprise. When a server's list changes (a host's `set_roots`, a
//! reload), its actor sends `notifications/roots/list_changed`.

use std::collections::BTreeMap;

use serde::Serialize;

/// One root, as `roots/list` answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root without a name.
    pub fn new(uri: impl Into<String>) -> Root {
        Root { uri: uri.into(), name: None }
    }
}

/// Every server's roots.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RootsTable {
    /// For servers without their own.
    pub(crate) default: Vec<Root>,
    /// Servers' own lists, by server name.
    pub(crate) servers: BTreeMap<String, Vec<Root>>,
    /// The host manages roots (declared even while the default is empty).
    pub(crate) host_managed: bool,
}

impl RootsTable {
    /// A config's `roots`, top level and per server.
    pub(crate) fn of_config(config: &warden_config::WardenConfig) -> RootsTable {
        let list = |uris: &[String]| uris.iter().map(Root::new).collect::<Vec<_>>();
        RootsTable {
            default: list(&config.roots),
            servers: config
                .servers
                .iter()
                .filter_map(|(name, server)| Some((name.clone(), list(server.roots.as_ref()?))))
                .collect(),
            host_managed: false,
        }
    }

    /// What `server` is told.
    pub(crate) fn for_server(&self, server: &str) -> Vec<Root> {
        self.servers.get(server).unwrap_or(&self.default).clone()
    }

    /// Whether `server` is told Warden supports roots.
    pub(crate) fn declared_for(&self, server: &str) -> bool {
        self.host_managed || !self.default.is_empty() || self.servers.contains_key(server)
    }
}
