//! Where the questions of a remote server's calls find their calls: the
//! calls that entered at this node and run on others, by call id
//! (`asks.rs` reads it; the links of `remote.rs` keep it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use warden_protocol::RequestId;

use super::Link;

/// The calls that entered at this node and run on others, by call id:
/// where their questions go.
#[derive(Default)]
pub(crate) struct AskRoutes(Mutex<HashMap<String, (Weak<Link>, RequestId)>>);

impl AskRoutes {
    pub(crate) fn register(&self, call: &str, link: &Arc<Link>, id: RequestId) {
        self.lock().insert(call.to_string(), (Arc::downgrade(link), id));
    }

    pub(crate) fn forget(&self, call: &str) {
        self.lock().remove(call);
    }

    pub(crate) fn find(&self, call: &str) -> Option<(Arc<Link>, RequestId)> {
        let (link, id) = self.lock().get(call).cloned()?;
        Some((link.upgrade()?, id))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Weak<Link>, RequestId)>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
