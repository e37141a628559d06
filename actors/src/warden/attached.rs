//! Servers a host attaches while Warden runs, beside the configured ones:
//! [`Warden::attach_server`] and [`Warden::detach_server`].
//!
//! A cluster node attaches each server another node exports (its connector
//! reaches that server over NATS) and detaches it when no node serves it
//! any more; a host may attach servers it discovers itself. An attached
//! server is a server like any other — a supervisor and a server actor,
//! its tools in the Registry under the same naming rules, policed the
//! same — but it is not the config's: a reload neither stops nor restarts
//! it. A configured server of the same name wins: attaching under a name
//! in use is refused, and a reload that configures one detaches the
//! attached server first.
//!
//! Attaching and detaching take the lock reloads take, so the set of names
//! never changes under a reload.

use std::sync::Arc;

use super::plans::Identity;
use super::{ServerSpec, Warden};
use crate::call::slots::Slot;
use crate::hub::{HubMsg, ServerPlan};

/// Why a server could not be attached.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// A configured or attached server has the name.
    #[error("a server named '{0}' is running already (a configured server wins over an attached one)")]
    Taken(String),
    /// The name breaks the naming rules.
    #[error(transparent)]
    BadName(#[from] warden_policy::NameError),
    /// Warden is shutting down.
    #[error("Warden is shutting down; the server was not attached")]
    Stopped,
}

impl Warden {
    /// Starts `server` beside the configured servers, in the background
    /// (like a server a reload adds): its tools appear once it has listed
    /// them. Refused when its name is taken.
    pub async fn attach_server(&self, server: ServerSpec) -> Result<(), AttachError> {
        let mut identities = self.core.identities.lock().await;
        self.core.path.rules.borrow().names.validate_server_name(&server.name)?;
        if identities.contains_key(&server.name) {
            return Err(AttachError::Taken(server.name));
        }
        identities.insert(server.name.clone(), Identity::Attached);
        let slots = self.core.path.slots.borrow().with(&server.name, Slot::new(server.settings.clone()));
        self.core.path.slots.send_replace(Arc::new(slots));
        let plan = ServerPlan { name: server.name, connector: Ok(server.connector), settings: server.settings };
        self.core.hub.call(|reply| HubMsg::AddServer { plan, reply }, None).await.map_err(|_| AttachError::Stopped)?;
        Ok(())
    }

    /// Withdraws the attached server `name` (no new call reaches it), waits
    /// for its calls in flight (at most its call timeout), and stops it.
    /// `false` when no attached server has that name (a configured one is
    /// left alone).
    pub async fn detach_server(&self, name: &str) -> bool {
        let mut identities = self.core.identities.lock().await;
        if !matches!(identities.get(name), Some(Identity::Attached)) {
            return false;
        }
        identities.remove(name);
        let _ = self.retire(&[name.to_string()]).await;
        let slots = self.core.path.slots.borrow().without(name);
        self.core.path.slots.send_replace(Arc::new(slots));
        true
    }

    /// The names of the attached servers, sorted.
    pub async fn attached_servers(&self) -> Vec<String> {
        let identities = self.core.identities.lock().await;
        let mut names: Vec<String> = identities
            .iter()
            .filter(|(_, identity)| matches!(identity, Identity::Attached))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}
