//! The HTTP face's sessions: ids, the cap, idle expiry, and each session's
//! server → client stream with its replay buffer.
//!
//! A session is made by `initialize` and named by a random id (128 bits
//! from the kernel) the client sends back as `Mcp-Session-Id`. It belongs
//! to the identity (a bearer token, say) and endpoint that made it: the same id
//! with another token or on another path is an unknown session (404), so
//! one client cannot ride another's session. At most `max_sessions` live
//! at once. A session nobody used for `session_idle_secs` (no request
//! running, no open stream) is ended: its calls are cancelled upstream and
//! its subscriptions withdrawn, and the client's next request gets 404 and
//! re-initialises. When the table is full, the session unused the longest
//! is ended to make room, if it has been unused for [`EVICTABLE_AFTER`] —
//! so clients that open sessions and abandon them (a thousand, say) cannot
//! keep others out for the idle limit; only when every session is in use
//! is a new one refused, with a message saying so.
//!
//! What a session is told unasked (its notifier's output) goes to its GET
//! stream. Every event has an id, `T.N`: `T` names this front (random at
//! its start), `N` counts. The last [`REPLAY_EVENTS`] are kept, so a
//! client that lost its stream and opens a new one with `Last-Event-ID`
//! gets what it missed. With no stream open, events are only kept. An id
//! this front cannot replay after — another replica's, one from before a
//! restart, one older than what is kept — is said on the new stream, not
//! passed over (`replicated.rs`).
//!
//! With replicas (`crate::replicas`), each session's record is written
//! when it is made, when what it keeps changes, and while it is used,
//! often enough that it never lapses under a session in use.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::replicas::Replicas;
use crate::session::Session;

/// How long a session must have gone unused before a full table ends it
/// to make room for a new one.
pub(super) const EVICTABLE_AFTER: Duration = Duration::from_secs(10);

/// How many server → client events each session keeps for resumption.
pub(super) const REPLAY_EVENTS: usize = 256;

/// How many events wait for a slow GET stream before it is dropped (the
/// client resumes with `Last-Event-ID`).
const STREAM_DEPTH: usize = 256;

/// Something a session's holder keeps alive while it lives (the daemon's
/// activity guard: a session keeps the daemon up).
pub type KeepAlive = Box<dyn Send + Sync>;

/// One HTTP session.
pub(crate) struct HttpSession {
    pub(super) session: Session,
    /// The identity that made it (its subject), and the endpoint.
    pub(super) owner: (String, String),
    /// Its record's key among replicas: a digest of its id.
    pub(super) key: String,
    /// The change count its record was last written at, and when.
    pub(super) written: Mutex<(u64, Instant)>,
    last_used: Mutex<Instant>,
    stream: Mutex<Stream>,
    notifier: tokio::task::JoinHandle<()>,
    _keep: KeepAlive,
}

/// The server → client stream: what was sent, and where it goes now.
#[derive(Default)]
struct Stream {
    next_id: u64,
    sent: VecDeque<(u64, Value)>,
    live: Option<mpsc::Sender<(u64, Value)>>,
}

/// Every session of one HTTP front.
pub(crate) struct Sessions {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    pub(super) max: usize,
    pub(super) idle: Duration,
    /// Where records are kept for the other replicas, when there are any.
    pub(super) replicas: Option<Arc<dyn Replicas>>,
    /// The first part of this front's event ids.
    pub(super) tag: String,
    /// The retries other replicas relayed here, running (`relay.rs`).
    pub(super) relays: super::relay::Relays,
    /// Told how many sessions are open whenever that changes (the
    /// `warden_front_sessions` gauge).
    counted: Box<dyn Fn(usize) + Send + Sync>,
}

/// Why no session was made.
pub(crate) enum Refused {
    /// The cap is reached.
    Full,
    /// No random id could be made.
    NoId(std::io::Error),
}

impl Sessions {
    pub(crate) fn new(
        max: usize,
        idle: Duration,
        counted: Box<dyn Fn(usize) + Send + Sync>,
        replicas: Option<Arc<dyn Replicas>>,
    ) -> Arc<Sessions> {
        let tag = crate::secret::random_hex(4).unwrap_or_else(|_| format!("{:x}", std::process::id()));
        Arc::new(Sessions {
            sessions: Mutex::new(HashMap::new()),
            max,
            idle,
            replicas,
            tag,
            relays: Default::default(),
            counted,
        })
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().expect("sessions lock")
    }

    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    /// Registers a new session for `owner`; its id.
    pub(crate) fn create(
        &self,
        session: Session,
        owner: (&str, &str),
        keep: KeepAlive,
    ) -> Result<(String, Arc<HttpSession>), Refused> {
        let mut sessions = self.lock();
        self.make_room(&mut sessions)?;
        let id = crate::secret::random_hex(16).map_err(Refused::NoId)?;
        let (http, _) = self.insert(&mut sessions, &id, session, owner, keep);
        Ok((id, http))
    }

    /// Ends the session unused the longest when the table is full and it
    /// has been unused for [`EVICTABLE_AFTER`]; `Full` when none has.
    pub(super) fn make_room(&self, sessions: &mut HashMap<String, Arc<HttpSession>>) -> Result<(), Refused> {
        if sessions.len() >= self.max {
            let unused = sessions
                .iter()
                .map(|(id, http)| (id, http.idle_for()))
                .filter(|(_, idle)| *idle >= EVICTABLE_AFTER)
                .max_by_key(|(_, idle)| *idle)
                .map(|(id, idle)| (id.clone(), idle));
            let Some((oldest, idle)) = unused else { return Err(Refused::Full) };
            let evicted = sessions.remove(&oldest).expect("found above");
            tracing::info!(session = %evicted.session.who(), "front session ended to make room for a new one: unused for {:.0} s, and all {} places taken", idle.as_secs_f64(), self.max);
            tokio::spawn(async move { evicted.end().await });
        }
        Ok(())
    }

    /// Puts the session `id` in the table (its GET stream fed by its
    /// notifier), and true; the one already there and false if another
    /// request put it first.
    pub(super) fn insert(
        &self,
        sessions: &mut HashMap<String, Arc<HttpSession>>,
        id: &str,
        session: Session,
        owner: (&str, &str),
        keep: KeepAlive,
    ) -> (Arc<HttpSession>, bool) {
        if let Some(there) = sessions.get(id) {
            return (Arc::clone(there), false);
        }
        let (notices, mut received) = mpsc::channel::<Value>(STREAM_DEPTH);
        let notifier = session.spawn_notifier(notices);
        let http = Arc::new(HttpSession {
            session,
            owner: (owner.0.to_string(), owner.1.to_string()),
            key: key_of(id),
            written: Mutex::new((0, Instant::now())),
            last_used: Mutex::new(Instant::now()),
            stream: Mutex::new(Stream::default()),
            notifier,
            _keep: keep,
        });
        let weak = Arc::downgrade(&http);
        tokio::spawn(async move {
            while let Some(message) = received.recv().await {
                let Some(http) = weak.upgrade() else { return };
                http.push(message);
            }
        });
        sessions.insert(id.to_string(), Arc::clone(&http));
        (self.counted)(sessions.len());
        (http, true)
    }

    /// The session `id` if `owner` made it; counts as use.
    pub(crate) fn get(&self, id: &str, (subject, path): (&str, &str)) -> Option<Arc<HttpSession>> {
        let http = self.lock().get(id).filter(|http| http.owner.0 == subject && http.owner.1 == path).cloned()?;
        *http.last_used.lock().expect("session lock") = Instant::now();
        Some(http)
    }

    /// Takes session `id` out of the table.
    pub(super) fn take(&self, id: &str) -> Option<Arc<HttpSession>> {
        let mut sessions = self.lock();
        let http = sessions.remove(id);
        (self.counted)(sessions.len());
        http
    }

    /// Ends the session `id`; false when there is none.
    pub(super) async fn remove(&self, id: &str) -> bool {
        let Some(http) = self.take(id) else { return false };
        http.end().await;
        true
    }

    /// Ends every session (the front is stopping).
    pub(super) async fn close_all(&self) {
        let all: Vec<Arc<HttpSession>> = self.lock().drain().map(|(_, http)| http).collect();
        (self.counted)(0);
        for http in all {
            http.end().await;
        }
    }

    /// Ends the sessions unused for the idle limit, now and then (and
    /// keeps the records of those in use from lapsing).
    pub(crate) fn spawn_sweeper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let sessions = Arc::clone(self);
        let every = sessions.sweep_every();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                sessions.write_used().await;
                let expired: Vec<(String, Arc<HttpSession>)> = {
                    let mut map = sessions.lock();
                    let ids: Vec<String> = map
                        .iter()
                        .filter(|(_, http)| http.idle_for() >= sessions.idle)
                        .map(|(id, _)| id.clone())
                        .collect();
                    let expired = ids.into_iter().filter_map(|id| map.remove(&id).map(|http| (id, http))).collect();
                    (sessions.counted)(map.len());
                    expired
                };
                for (_, http) in expired {
                    tracing::info!(session = %http.session.who(), "front session ended: unused for {:.0} s", sessions.idle.as_secs_f64());
                    http.end().await;
                }
            }
        })
    }
}

/// A session's key among replicas: the SHA-256 of its id, in hex. The
/// store never holds an id a reader could present.
pub(super) fn key_of(id: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, id.as_bytes());
    digest.as_ref().iter().map(|byte| format!("{byte:02x}")).collect()
}

impl HttpSession {
    /// How long since it was last used; an open stream, or a request
    /// running, is use.
    pub(super) fn idle_for(&self) -> Duration {
        let streaming = self.stream.lock().expect("stream lock").live.as_ref().is_some_and(|live| !live.is_closed());
        if streaming || self.session.busy() {
            return Duration::ZERO;
        }
        self.last_used.lock().expect("session lock").elapsed()
    }

    /// Whether its record is due to be written again: it was used since
    /// the last write, is in use now, or changed.
    pub(super) fn record_due(&self) -> bool {
        let (changes, at) = *self.written.lock().expect("session lock");
        *self.last_used.lock().expect("session lock") > at
            || self.idle_for() == Duration::ZERO
            || self.session.changes() != changes
    }

    pub(super) async fn end(&self) {
        self.notifier.abort();
        self.stream.lock().expect("stream lock").live = None;
        self.session.close().await;
    }

    /// One event for the GET stream: numbered, kept, and sent if a stream is open.
    pub(super) fn push(&self, message: Value) {
        let mut stream = self.stream.lock().expect("stream lock");
        stream.next_id += 1;
        let id = stream.next_id;
        if stream.sent.len() == REPLAY_EVENTS {
            stream.sent.pop_front();
        }
        stream.sent.push_back((id, message.clone()));
        if let Some(live) = &stream.live {
            if live.try_send((id, message)).is_err() {
                // Closed, or too slow: it resumes with Last-Event-ID.
                stream.live = None;
            }
        }
    }

    /// Opens the GET stream (replacing one already open), replaying the
    /// events after `after` (an event number of this front's). False when
    /// some of those are no longer kept.
    pub(super) fn open_stream(&self, after: Option<u64>) -> (mpsc::Receiver<(u64, Value)>, bool) {
        let (live, receiver) = mpsc::channel(STREAM_DEPTH + REPLAY_EVENTS);
        let mut stream = self.stream.lock().expect("stream lock");
        let mut whole = true;
        if let Some(after) = after {
            let oldest = stream.sent.front().map_or(stream.next_id + 1, |(id, _)| *id);
            whole = after + 1 >= oldest;
            for (id, message) in stream.sent.iter().filter(|(id, _)| *id > after) {
                let _ = live.try_send((*id, message.clone()));
            }
        }
        stream.live = Some(live);
        (receiver, whole)
    }
}
