//! A request in a session's running set, taken out when it ends.

use super::Session;

/// Takes a request out of the running set when its answer is made or its
/// future dropped (the client went away).
pub(super) struct Registered {
    pub(super) session: Session,
    pub(super) key: String,
    pub(super) serial: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let mut state = self.session.state();
        if state.running.get(&self.key).is_some_and(|(serial, _)| *serial == self.serial) {
            state.running.remove(&self.key);
        }
    }
}
