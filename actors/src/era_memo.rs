//! Which servers were found to speak only the `initialize` revisions,
//! remembered across runs of Warden.
//!
//! A server is asked `server/discover` first (`server_actor/era.rs`). A
//! legacy one that ignores the probe costs up to 5 s of silence before
//! Warden falls back to `initialize`; its supervisor remembers the answer
//! across restarts, but a new process — the next `--no-daemon` command,
//! a restarted daemon — would wait again. So the answer is also kept in a
//! file (the daemon's state directory, `eras.json`, 0600): server name →
//! a SHA-256 of what the server is (its command, arguments and directory,
//! or its URL; hashed, so no secret a URL may carry is written) and until
//! when it is believed (7 days; then it is probed again, so a server
//! upgraded to 2026-07-28 is found out).
//!
//! A wrong memory costs little: a server that now speaks only 2026-07-28
//! refuses `initialize` naming its version, and is probed at once (one
//! round trip); one whose command changed has another fingerprint. A file
//! that cannot be read or written is ignored (with a warning): the memo
//! saves time, it never decides whether a server can start.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::server_actor::KnownEra;
use crate::state_file::{self, now};

/// How long a server is believed to be legacy without a probe.
const BELIEVED_FOR: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// One remembered server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Remembered {
    /// The SHA-256 of what it is.
    of: String,
    /// Until when (Unix seconds) it is believed to speak `initialize` only.
    legacy_until: u64,
}

/// The servers found to speak `initialize` only.
#[derive(Debug, Default)]
pub(crate) struct EraMemo {
    /// Where it is kept; `None`: in this process only.
    file: Option<PathBuf>,
    servers: Mutex<BTreeMap<String, Remembered>>,
}

impl EraMemo {
    /// A memo kept in `file`, read now (an unreadable one is started afresh).
    pub(crate) fn in_file(file: PathBuf) -> EraMemo {
        let servers = state_file::read(&file, "a memo of server eras");
        EraMemo { file: Some(file), servers: Mutex::new(servers) }
    }

    /// What `server`, being `identity`, was found to speak, if that is
    /// still believed.
    pub(crate) fn recall(&self, server: &str, identity: &str) -> Option<KnownEra> {
        let servers = self.servers.lock().expect("era memo lock");
        let remembered = servers.get(server)?;
        (remembered.of == fingerprint(identity) && remembered.legacy_until > now()).then_some(KnownEra::Legacy)
    }

    /// `server`, being `identity`, was found to speak `era`.
    pub(crate) fn learn(&self, server: &str, identity: &str, era: KnownEra) {
        let mut servers = self.servers.lock().expect("era memo lock");
        let changed = match era {
            KnownEra::Legacy => {
                let remembered = Remembered { of: fingerprint(identity), legacy_until: now() + BELIEVED_FOR.as_secs() };
                servers.insert(server.to_string(), remembered);
                true
            }
            KnownEra::Modern => servers.remove(server).is_some(),
        };
        if changed {
            self.write(&servers);
        }
    }

    fn write(&self, servers: &BTreeMap<String, Remembered>) {
        if let Some(file) = &self.file {
            state_file::write(file, servers, "the next run probes its servers again");
        }
    }
}

fn fingerprint(identity: &str) -> String {
    crate::sha256::sha256_hex(identity.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_server_is_remembered_across_memos_of_one_file_until_it_is_another_or_modern() {
        let dir = std::env::temp_dir().join(format!("warden-era-memo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("eras.json");
        let _ = std::fs::remove_file(&file);
        let memo = EraMemo::in_file(file.clone());
        assert_eq!(memo.recall("old", "stdio old-server"), None);
        memo.learn("old", "stdio old-server --token=s3cret", KnownEra::Legacy);
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("s3cret"), "only a digest is written: {text}");
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);

        let next_run = EraMemo::in_file(file.clone());
        assert_eq!(next_run.recall("old", "stdio old-server --token=s3cret"), Some(KnownEra::Legacy));
        assert_eq!(next_run.recall("old", "stdio new-server"), None, "another command is another server");
        next_run.learn("old", "stdio old-server --token=s3cret", KnownEra::Modern);
        assert_eq!(EraMemo::in_file(file.clone()).recall("old", "stdio old-server --token=s3cret"), None);

        let expired = format!(r#"{{"old": {{"of": "{}", "legacy_until": 1}}}}"#, fingerprint("x"));
        std::fs::write(&file, expired).unwrap();
        assert_eq!(EraMemo::in_file(file.clone()).recall("old", "x"), None, "believed a week, not forever");
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(EraMemo::in_file(file).recall("old", "x"), None, "a bad file is started afresh");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
