//! The GET stream: messages the server starts on its own.
//!
//! A POST's stream carries what belongs to that request. Everything else a
//! server has to say — `notifications/tools/list_changed`, log messages,
//! its own requests — goes on a long-lived stream the client opens with
//! `GET` and `Accept: text/event-stream` once the session is initialised.
//! A server without one answers 405, and that is the end of it.
//!
//! The stream is supposed to stay open, but connections drop, proxies time
//! out, servers restart. It is reopened after a wait that starts at
//! [`HttpSpec::reconnect_initial`](super::HttpSpec::reconnect_initial),
//! doubles after every attempt that brought no event up to
//! [`HttpSpec::reconnect_max`](super::HttpSpec::reconnect_max), and is
//! jittered by ±20% so that many Warden instances cut off together do not
//! come back together. Never a tight loop: a gateway that reconnected at
//! once re-initialised 8,813 times in 3 hours against a rate-limited server.
//! When the server gave event ids, the reopened stream carries
//! `Last-Event-ID` so the server can replay what was missed.
//!
//! It is opened right after `notifications/initialized` is accepted, and
//! the messages queued behind that notification (discovery's `tools/list`)
//! wait until the GET has its answer (at most [`FIRST_OPEN_WAIT`]): a
//! server that answers a request with a priming event and closes expects
//! the resume (`GET` + `Last-Event-ID`) after its `retry`, and finds the
//! session's own stream already there rather than opened in the middle.
//!
//! The task ends when Warden closes the connection.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::StatusCode;

use super::stream::NoStream;
use super::{error_chain, lock, Session};
use crate::sse::SseParser;

/// How long discovery waits for the GET stream's first answer: a server
/// that never answers GET does not hold up its tools for longer.
pub(super) const FIRST_OPEN_WAIT: Duration = Duration::from_secs(2);

/// How one opening of the GET stream went.
enum Outcome {
    /// The server has no GET stream (405): stop for good.
    NotOffered,
    /// The stream ran and ended; `delivered` says whether any event came.
    Ended { delivered: bool },
    /// The stream could not be opened, or broke.
    Failed(String),
}

/// Where a stream left off, to resume it.
#[derive(Default)]
struct Resume {
    /// The session the id belongs to: ids mean nothing to another one.
    session: Option<HeaderValue>,
    last_event_id: Option<String>,
}

impl Session {
    /// Starts the GET stream's task, once per connection.
    pub(super) fn start_listening(self: &Arc<Self>) {
        if self.listening.swap(true, Ordering::SeqCst) {
            return;
        }
        let session = self.clone();
        let mut closing = self.closing.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = session.listen() => {}
                _ = closing.wait_for(|closing| *closing) => {}
            }
        });
    }

    /// Keeps the GET stream open until the server says it has none.
    async fn listen(&self) {
        let mut resume = Resume::default();
        let mut delay = self.spec.reconnect_initial;
        loop {
            let outcome = self.listen_once(&mut resume).await;
            match outcome {
                Outcome::NotOffered => {
                    tracing::debug!(server = %self.spec.server, "the server has no GET stream (405)");
                    return;
                }
                // A stream that brought something was worth having: the
                // next break starts the backoff afresh.
                Outcome::Ended { delivered: true } => delay = self.spec.reconnect_initial,
                Outcome::Ended { delivered: false } => {}
                Outcome::Failed(reason) => {
                    tracing::debug!(server = %self.spec.server, "the GET stream failed: {reason}")
                }
            }
            tokio::time::sleep(jittered(delay)).await;
            delay = (delay * 2).min(self.spec.reconnect_max);
        }
    }

    /// Opens the GET stream once and delivers its events until it ends.
    async fn listen_once(&self, resume: &mut Resume) -> Outcome {
        let session = lock(&self.session_id).clone();
        if resume.session != session {
            *resume = Resume { session, last_event_id: None };
        }
        let opened = self.open_stream(resume.last_event_id.as_deref()).await;
        self.listen_opened.send_replace(true);
        match opened {
            Ok(body) => self.read_events(body, resume).await,
            Err(NoStream { status: Some(StatusCode::METHOD_NOT_ALLOWED), .. }) => Outcome::NotOffered,
            Err(NoStream { problem, .. }) => Outcome::Failed(problem),
        }
    }

    /// Delivers every event of the GET stream, remembering the last id.
    async fn read_events(&self, mut body: Incoming, resume: &mut Resume) -> Outcome {
        let mut parser = SseParser::with_max_event_bytes(self.spec.max_message_bytes);
        let mut delivered = false;
        while let Some(frame) = self.paced_frame(&mut body).await {
            let chunk = match frame {
                Ok(frame) => match frame.into_data() {
                    Ok(chunk) => chunk,
                    Err(_) => continue,
                },
                Err(error) => return Outcome::Failed(format!("the GET stream broke: {}", error_chain(&error))),
            };
            for item in parser.feed(&chunk) {
                delivered = true;
                if let Some(event) = self.event_of(item) {
                    self.deliver(event);
                }
            }
            resume.last_event_id = parser.last_event_id().map(str::to_string).or(resume.last_event_id.take());
        }
        Outcome::Ended { delivered }
    }
}

/// `delay` give or take 20%, at random.
pub(super) fn jittered(delay: Duration) -> Duration {
    // A fresh `RandomState` is randomly seeded: randomness enough for
    // spreading reconnects, without a dependency.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let factor = 0.8 + 0.4 * (random as f64 / u64::MAX as f64);
    delay.mul_f64(factor)
}
