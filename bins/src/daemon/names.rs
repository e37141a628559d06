//! `server` + `tool` → the namespaced name, without copying the tool table.
//!
//! The seed's `call_tool` names a tool by its server and the server's own
//! name for it. Finding that in [`Warden::tools`] copies every tool
//! definition (schemas included) on every call, which with 32 concurrent
//! connections was a large part of the bridge's cost per call
//! (`benches/bridge_latency.rs`). So the
//! daemon keeps an index from (server, tool) to the namespaced name, and
//! rebuilds it only when the Registry's tool table has changed (its
//! `tools_version`), which is checked on every lookup, so the index never
//! answers from an old table.

use std::collections::HashMap;
use std::future::Future as _;
use std::sync::Mutex;

use warden_actors::Warden;

/// The index, and the tool-table version it was built from.
#[derive(Debug, Default)]
pub(crate) struct Names {
    index: Mutex<Index>,
}

#[derive(Debug, Default)]
struct Index {
    /// `None` until first built.
    version: Option<u64>,
    /// server → its tool name → the namespaced name.
    names: HashMap<String, HashMap<String, String>>,
}

impl Names {
    /// The namespaced name of `tool` of `server`, if it is registered now.
    pub(crate) fn resolve(&self, warden: &Warden, server: &str, tool: &str) -> Option<String> {
        let version = tools_version(warden);
        let mut index = self.index.lock().expect("never poisoned");
        if index.version != Some(version) {
            let mut names: HashMap<String, HashMap<String, String>> = HashMap::new();
            for entry in warden.tools() {
                names.entry(entry.server).or_default().insert(entry.tool.name, entry.name);
            }
            *index = Index { version: Some(version), names };
        }
        index.names.get(server)?.get(tool).cloned()
    }
}

/// The latest snapshot's `tools_version`. `Warden::wait_for` hands its
/// condition the latest snapshot before it waits for anything, so one poll
/// with a waker that does nothing reads it.
fn tools_version(warden: &Warden) -> u64 {
    let mut version = 0;
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    let read = warden.wait_for(|snapshot| {
        version = snapshot.tools_version();
        true
    });
    let _ = std::pin::pin!(read).poll(&mut context);
    version
}
