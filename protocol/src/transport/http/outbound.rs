//! Sending: one POST task per message, behind the acknowledgement barrier.
//!
//! Each message is POSTed on its own task, so [`Connection::send`] never
//! waits and calls run side by side; but a message waits until the server
//! has accepted every notification and response sent before it, so
//! `tools/list` never overtakes `notifications/initialized`.
//!
//! [`Connection::send`]: crate::transport::Connection::send

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;

use super::body::lock;
use super::kind::Kind;
use super::listen::FIRST_OPEN_WAIT;
use super::session::Session;
use crate::jsonrpc::Message;
use crate::transport::{Outbound, TransportError};

/// Starts one POST task per message.
pub(super) struct HttpOutbound {
    session: Arc<Session>,
}

impl HttpOutbound {
    pub(super) fn new(session: Arc<Session>) -> HttpOutbound {
        HttpOutbound { session }
    }
}

impl Outbound for HttpOutbound {
    fn send(&self, message: Message) -> Result<(), TransportError> {
        self.send_json(message.to_json().into_bytes())
    }

    /// Each message is POSTed on its own task, but not quite in any order:
    /// a message waits until the server has accepted every notification and
    /// response sent before it. Otherwise `tools/list` could overtake
    /// `notifications/initialized`, and a server that registers tools when
    /// initialised (server-everything does) would list too few. Requests do
    /// not wait for one another, so calls still run side by side.
    fn send_json(&self, json: Vec<u8>) -> Result<(), TransportError> {
        // `closed` without `closing`: a legacy connection's stream ended.
        if *self.session.closing.borrow() || self.session.closed.load(Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        let kind = Kind::of(&json);
        let json = Bytes::from(json);
        if let Kind::Request { initialize: true, .. } = kind {
            *lock(&self.session.initialize) = Some(json.clone());
        }
        let abandoned = match &kind {
            Kind::Request { id, modern, .. } => {
                if modern.as_ref().is_some_and(|modern| !modern.probes) {
                    self.session.modern.store(true, Ordering::SeqCst);
                }
                Some(self.session.in_flight.start(id))
            }
            // The actor gave up on a request: its POST goes now, not when
            // the server gets round to answering it.
            Kind::Other { .. } => {
                self.session.in_flight.cancel_from(&json);
                if self.session.modern.load(Ordering::SeqCst) {
                    // 2026-07-28 has no notifications to a server over
                    // HTTP: dropping the POST closed its stream, which is
                    // how a request is cancelled there.
                    return Ok(());
                }
                None
            }
        };
        let (earlier, accepted) = {
            let mut acknowledged = lock(&self.session.acknowledged);
            let earlier = acknowledged.clone();
            match kind {
                Kind::Request { .. } => (earlier, None),
                Kind::Other { .. } => {
                    let (accepted, pending) = watch::channel(false);
                    *acknowledged = pending;
                    (earlier, Some(accepted))
                }
            }
        };
        let session = self.session.clone();
        let mut closing = self.session.closing.clone();
        tokio::spawn(async move {
            let exchange = async {
                let mut earlier = earlier;
                // A sender dropped without saying `true` ended its POST too.
                let _ = earlier.wait_for(|done| *done).await;
                session.post(json, &kind).await;
                if let (Kind::Other { initialized: true }, None) = (&kind, session.legacy.get()) {
                    // The session is set up: the server may talk now (a
                    // legacy server talks on the stream it already has).
                    // What is queued behind (discovery) waits for the GET.
                    session.start_listening();
                    let mut opened = session.listen_opened.subscribe();
                    let _ = tokio::time::timeout(FIRST_OPEN_WAIT, opened.wait_for(|opened| *opened)).await;
                }
            };
            let abandoned = async {
                match abandoned {
                    Some(abandoned) => drop(abandoned.await),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = exchange => {}
                // Closing ends what is in flight; the actor fails its calls
                // when it sees `Closed`.
                _ = closing.wait_for(|closing| *closing) => {}
                // The actor cancelled the request: nobody waits for it.
                _ = abandoned => {}
            }
            if let Kind::Request { id, .. } = &kind {
                session.in_flight.finished(id);
            }
            // Dropping `accepted` (here or when the task is cancelled) lets
            // the messages queued behind this one go.
            drop(accepted);
        });
        Ok(())
    }
}
