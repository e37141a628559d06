//! Calls of 2026-07-28 clients that wait for the client's input, and the
//! `requestState` that names one.
//!
//! A 2026-07-28 client cannot be sent a request; when a server asks a
//! question during its call (or the call needs the client's approval),
//! the front answers the call "input required" and the call waits here,
//! parked, until the client calls again with its answers and the state
//! it was given. The state is sealed: the parked call's number, who may
//! resume it (the identity that made it), what was called (a digest of
//! the tool and its arguments) and until when, with an HMAC-SHA256 under
//! a key made at start, never written anywhere. A state a client made up
//! or altered, one presented by another identity or for another call, or
//! one whose time ran out is refused; a state is used once (the parked
//! call leaves the table when it is resumed, and goes back only if it
//! waits again, under a new state).
//!
//! What this keeps per client, and where: only the parked calls, in this
//! process's memory. A replica that did not park a call cannot resume it
//! (its key differs, so the state is refused as not its own); so among
//! front replicas the state also names, outside the seal's secret but
//! under it, the replica that parked the call, and a retry that reaches
//! another replica is relayed to that one (`http/relay.rs`). Everything
//! else a 2026-07-28 client does needs nothing kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::hmac;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

/// How long a parked call waits for its client to come back.
pub(crate) const PARKED_FOR: Duration = Duration::from_secs(600);

/// The most calls one client may have parked at once, and all clients:
/// each holds a call (and a server's question) open, so a client that
/// never comes back must not hold more.
pub(crate) const MAX_PARKED_PER_CLIENT: usize = 32;
pub(crate) const MAX_PARKED: usize = 1024;

/// A call waiting for its client's input.
pub(crate) struct ParkedCall {
    /// Who may resume it.
    pub(crate) owner: String,
    /// What was called: the tool and its arguments.
    pub(crate) digest: String,
    /// What the call sends its client: progress, questions, its answer.
    pub(crate) messages: mpsc::Receiver<Value>,
    /// Where the client's answers go: the call's own session.
    pub(crate) answers: Arc<dyn Fn(&str, Value) -> bool + Send + Sync>,
    /// The questions asked and not answered yet: id → `{method, params}`.
    pub(crate) open: serde_json::Map<String, Value>,
    /// Ends the call (cancelled upstream) when dropped.
    pub(crate) _task: super::AbortOnDrop,
}

/// The parked calls of one front, and its sealing key.
pub(crate) struct Parked {
    calls: Mutex<HashMap<u64, ParkedCall>>,
    next: AtomicU64,
    key: hmac::Key,
    /// The front replica this is, among several (`crate::replicas`).
    replica: std::sync::OnceLock<String>,
}

/// What a `requestState` says, under its seal.
#[derive(Serialize, Deserialize)]
struct Sealed {
    call: u64,
    owner: String,
    digest: String,
    /// Seconds since the epoch after which it is refused.
    until: u64,
    /// The front replica that parked the call, among several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replica: Option<String>,
}

impl Parked {
    pub(crate) fn new() -> Parked {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng).expect("the system's random numbers");
        Parked { calls: Mutex::new(HashMap::new()), next: AtomicU64::new(1), key, replica: std::sync::OnceLock::new() }
    }

    /// Names the front replica whose calls these are: their states say so.
    pub(crate) fn name_replica(&self, name: &str) {
        let _ = self.replica.set(name.to_string());
    }

    /// The replica `state` says parked its call (not verified: that
    /// replica verifies it when the retry is relayed there).
    pub(crate) fn replica_of(state: &str) -> Option<String> {
        let (payload, _) = state.split_once('.')?;
        let sealed: Sealed = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
        sealed.replica
    }

    /// Parks `call` for [`PARKED_FOR`]; the sealed state that resumes it.
    /// `Err` (the call is dropped, so ended) when its client, or all
    /// clients, have as many calls parked as they may.
    pub(crate) fn park(self: &Arc<Self>, call: ParkedCall) -> Result<String, String> {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let sealed = Sealed {
            call: number,
            owner: call.owner.clone(),
            digest: call.digest.clone(),
            until: now() + PARKED_FOR.as_secs(),
            replica: self.replica.get().cloned(),
        };
        {
            let mut calls = self.calls.lock().expect("parked lock");
            let own = calls.values().filter(|parked| parked.owner == call.owner).count();
            if own >= MAX_PARKED_PER_CLIENT || calls.len() >= MAX_PARKED {
                tracing::warn!(owner = %call.owner, own, all = calls.len(), "a call waiting for its client's input was refused: too many wait already");
                return Err(format!(
                    "too many of this client's calls already wait for its input ({MAX_PARKED_PER_CLIENT} at most, {MAX_PARKED} for all clients): answer or drop those first"
                ));
            }
            calls.insert(number, call);
        }
        // Not resumed in time: dropped, which ends the call upstream.
        let parked = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(PARKED_FOR).await;
            if parked.calls.lock().expect("parked lock").remove(&number).is_some() {
                tracing::info!(call = number, "a call waiting for its 2026-07-28 client's input was dropped: the client did not come back within {} s", PARKED_FOR.as_secs());
            }
        });
        let payload = serde_json::to_vec(&sealed).expect("the state serialises");
        let tag = hmac::sign(&self.key, &payload);
        Ok(format!("{}.{}", URL_SAFE_NO_PAD.encode(&payload), URL_SAFE_NO_PAD.encode(tag.as_ref())))
    }

    /// The parked call `state` names, taken out of the table; `Err` says
    /// why it cannot be resumed (for the client; never which check failed
    /// first beyond what it needs to know).
    pub(crate) fn resume(&self, state: &str, owner: &str, digest: &str) -> Result<ParkedCall, String> {
        let forged = || "`requestState` was not made by this front, or was altered: call again without it".to_string();
        let (payload, tag) = state.split_once('.').ok_or_else(forged)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| forged())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| forged())?;
        hmac::verify(&self.key, &payload, &tag).map_err(|_| forged())?;
        let sealed: Sealed = serde_json::from_slice(&payload).map_err(|_| forged())?;
        if sealed.owner != owner {
            return Err("`requestState` belongs to another client's call".into());
        }
        if sealed.digest != digest {
            return Err("`requestState` belongs to another call: send it with the same tool and arguments".into());
        }
        if sealed.until < now() {
            return Err("`requestState` has expired: call again without it".into());
        }
        self.calls.lock().expect("parked lock").remove(&sealed.call).ok_or_else(|| {
            "the call `requestState` names is no longer waiting (it was resumed already, or dropped): call again \
             without it"
                .to_string()
        })
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|since| since.as_secs()).unwrap_or(0)
}

/// What was called, for the seal: the tool and its arguments, keys sorted
/// so that a client re-sending the same object in another order matches.
pub(crate) fn call_digest(tool: &str, arguments: &Value) -> String {
    fn canonical(value: &Value) -> Value {
        match value {
            Value::Object(object) => {
                let mut keys: Vec<&String> = object.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|key| (key.clone(), canonical(&object[key]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string(&(tool, canonical(arguments))).expect("JSON serialises");
    let digest = ring::digest::digest(&ring::digest::SHA256, text.as_bytes());
    URL_SAFE_NO_PAD.encode(digest.as_ref())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn parked(owner: &str, digest: &str) -> ParkedCall {
        let (_, messages) = mpsc::channel(1);
        let task = super::super::AbortOnDrop(tokio::spawn(std::future::pending::<()>()).abort_handle());
        ParkedCall {
            owner: owner.into(),
            digest: digest.into(),
            messages,
            answers: Arc::new(|_, _| true),
            open: serde_json::Map::new(),
            _task: task,
        }
    }

    #[tokio::test]
    async fn a_state_resumes_its_own_call_once_and_nothing_else() {
        let table = Arc::new(Parked::new());
        let digest = call_digest("t", &json!({"b": 1, "a": [2, {"d": 3, "c": 4}]}));
        assert_eq!(digest, call_digest("t", &json!({"a": [2, {"c": 4, "d": 3}], "b": 1})), "key order is no matter");
        let state = table.park(parked("token 0", &digest)).unwrap();
        assert_eq!(
            table.resume(&state, "token 1", &digest).err().unwrap(),
            "`requestState` belongs to another client's call"
        );
        let other = call_digest("t", &json!({"b": 2}));
        assert!(table.resume(&state, "token 0", &other).err().unwrap().contains("another call"));
        // Altered: the payload re-encoded with another call number.
        let (payload, tag) = state.split_once('.').unwrap();
        let mut sealed: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        sealed["call"] = json!(99);
        let forged = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(serde_json::to_vec(&sealed).unwrap()));
        assert!(table.resume(&forged, "token 0", &digest).err().unwrap().contains("not made by this front"));
        assert!(table.resume("garbage", "token 0", &digest).err().unwrap().contains("not made by this front"));
        // Another front's state (another key) is refused the same way.
        let stranger = Arc::new(Parked::new()).park(parked("token 0", &digest)).unwrap();
        assert!(table.resume(&stranger, "token 0", &digest).err().unwrap().contains("not made by this front"));

        assert!(table.resume(&state, "token 0", &digest).is_ok());
        assert!(table.resume(&state, "token 0", &digest).err().unwrap().contains("no longer waiting"), "used once");
    }

    #[tokio::test]
    async fn one_client_may_park_only_so_many_calls() {
        let table = Arc::new(Parked::new());
        for _ in 0..MAX_PARKED_PER_CLIENT {
            table.park(parked("greedy", "d")).unwrap();
        }
        assert!(table.park(parked("greedy", "d")).unwrap_err().starts_with("too many of this client's calls"));
        assert!(table.park(parked("another", "d")).is_ok(), "others are not held up");
    }
}
