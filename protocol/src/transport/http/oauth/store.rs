//! Where a server's tokens live between runs: one JSON file per server
//! URL in `<state>/oauth/`, the file `0600` and the directory `0700`.
//!
//! The file holds the access and refresh tokens, the client Warden
//! registered (its secret too), and the authorization server's endpoints,
//! so that a refresh needs no discovery. It is written whole to a
//! temporary file and renamed, so a crash mid-write never leaves half a
//! token behind, and two processes (the daemon refreshing, `warden login`
//! finishing) never interleave. A record for another issuer is not used:
//! when a server moves to a new authorization server, its old client and
//! tokens mean nothing there.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::challenge::Challenge;
use super::discovery::AuthServer;

/// A token set, as saved.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    /// Seconds since the Unix epoch; `None`: the server did not say.
    #[serde(default)]
    pub(crate) expires_at: Option<u64>,
    /// When to refresh: a little before `expires_at` (a fifth of the
    /// lifetime, at most a minute), so no request goes out with a token
    /// about to die.
    #[serde(default)]
    pub(crate) refresh_at: Option<u64>,
    /// The scopes granted, space-separated, when the server said.
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

impl Tokens {
    /// True once the token should be refreshed before it is used.
    pub(crate) fn stale(&self) -> bool {
        self.refresh_at.or(self.expires_at).is_some_and(|at| now_secs() >= at)
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "(hidden)"))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The client Warden is known by at an authorization server.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Registration {
    pub(crate) client_id: String,
    #[serde(default)]
    pub(crate) client_secret: Option<String>,
    /// The redirect URI it was registered with (its port is reused).
    #[serde(default)]
    pub(crate) redirect_uri: Option<String>,
    /// How it authenticates at the token endpoint.
    #[serde(default)]
    pub(crate) auth_method: Option<String>,
}

/// Everything saved about one server.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct Saved {
    pub(crate) server_url: String,
    #[serde(default)]
    pub(crate) resource: Option<String>,
    #[serde(default)]
    pub(crate) auth_server: Option<AuthServer>,
    /// A dynamically registered client (never a configured one).
    #[serde(default)]
    pub(crate) registration: Option<Registration>,
    #[serde(default)]
    pub(crate) tokens: Option<Tokens>,
    /// Scopes a 403 asked for that the tokens lack: the next login asks
    /// for them too (step-up).
    #[serde(default)]
    pub(crate) wanted_scopes: Vec<String>,
    /// The challenge of the last 401 or 403 a request met. A server may
    /// let `initialize` through and challenge only later requests (its
    /// tools behind a scope): a login's own probe then meets no challenge,
    /// and starts from this one instead.
    #[serde(default)]
    pub(crate) last_challenge: Option<Challenge>,
}

/// The file of one server.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    path: PathBuf,
}

impl Store {
    /// The file for the server named `server` at `url`, under `state_dir`.
    pub(crate) fn new(state_dir: &Path, server: &str, url: &str) -> Store {
        let digest = ring::digest::digest(&ring::digest::SHA256, url.as_bytes());
        let hex: String = digest.as_ref()[..6].iter().map(|b| format!("{b:02x}")).collect();
        let safe: String =
            server.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        Store { path: state_dir.join("oauth").join(format!("{safe}-{hex}.json")) }
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What is saved for `url`; nothing when there is no file, or it is
    /// for another URL, or unreadable (then the server needs a new login,
    /// which writes a good file).
    pub(crate) fn load(&self, url: &str) -> Saved {
        let fresh = || Saved { server_url: url.to_string(), ..Saved::default() };
        let Ok(text) = std::fs::read_to_string(&self.path) else { return fresh() };
        match serde_json::from_str::<Saved>(&text) {
            Ok(saved) if saved.server_url == url => saved,
            Ok(_) => fresh(),
            Err(error) => {
                tracing::warn!("ignoring the unreadable OAuth state file {}: {error}", self.path.display());
                fresh()
            }
        }
    }

    /// Writes `saved` (the directory `0700`, the file `0600`).
    pub(crate) fn save(&self, saved: &Saved) -> Result<(), String> {
        let dir = self.path.parent().expect("a file in the oauth directory");
        let failed = |what: &str, error: std::io::Error| format!("cannot {what} {}: {error}", dir.display());
        if !dir.is_dir() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(|e| failed("create", e))?;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|e| failed("secure", e))?;
        let text = serde_json::to_string_pretty(saved).expect("the saved state serialises");
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nth = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let partial = self.path.with_extension(format!("{}.{nth}.partial", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)
            .map_err(|e| failed("write a token file in", e))?;
        file.write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| failed("write a token file in", e))?;
        std::fs::rename(&partial, &self.path).map_err(|e| failed("write a token file in", e))
    }

    /// Deletes the file; `Ok` when there was none.
    pub(crate) fn forget(&self) -> Result<(), String> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(format!("cannot delete {}: {error}", self.path.display())),
        }
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}
