//! An in-memory connection whose far end is a test script.
//!
//! Actor tests need a server that answers, hangs, lies or dies on cue, with
//! no process and no timing noise. [`memory_pair`] returns a [`Connection`]
//! for the code under test and a [`MemoryPeer`] for the script: the peer
//! reads what Warden sent and pushes back whatever events the test wants,
//! including raw lines that go through the same parsing as stdio output.

use tokio::sync::{mpsc, watch};

use super::{frame_to_event, ConnectFuture, Connection, Connector, EventSink, StderrTail, TransportEvent};
use crate::framing::Frame;
use crate::jsonrpc::{Message, Request};

/// The script's end of an in-memory connection.
pub struct MemoryPeer {
    outbound: mpsc::UnboundedReceiver<Message>,
    sink: EventSink,
    closed: watch::Receiver<bool>,
    stderr: StderrTail,
}

/// A connection for the code under test and the peer that scripts it.
pub fn memory_pair(sink: EventSink) -> (Connection, MemoryPeer) {
    let (outbound_tx, outbound_rx) = mpsc::unbounded_channel();
    let (closed_tx, closed_rx) = watch::channel(false);
    let stderr = StderrTail::default();
    let close_sink = sink.clone();
    let closer = Box::pin(async move {
        let _ = closed_tx.send(true);
        close_sink(TransportEvent::Closed { reason: "closed by Warden".into() });
    });
    let connection = Connection::new(Box::new(outbound_tx), closer, stderr.clone());
    (connection, MemoryPeer { outbound: outbound_rx, sink, closed: closed_rx, stderr })
}

impl MemoryPeer {
    /// The next message Warden sent, or `None` once Warden dropped its end.
    pub async fn recv(&mut self) -> Option<Message> {
        self.outbound.recv().await
    }

    /// The next request Warden sent, skipping notifications and responses.
    pub async fn recv_request(&mut self) -> Option<Request> {
        loop {
            match self.recv().await? {
                Message::Request(request) => return Some(request),
                _ => continue,
            }
        }
    }

    /// Delivers a message to Warden as if the server had sent it.
    pub fn send(&self, message: Message) {
        (self.sink)(TransportEvent::Message(message));
    }

    /// Delivers a raw line, parsed exactly as stdio output is.
    pub fn send_line(&self, line: &str) {
        (self.sink)(frame_to_event(Frame::Line(line.to_string())));
    }

    /// Records a line as if the server had written it to stderr.
    pub fn write_stderr(&self, line: &str) {
        self.stderr.push(line);
    }

    /// Makes the connection die, as a crashed server would.
    pub fn die(&self, reason: &str) {
        (self.sink)(TransportEvent::Closed { reason: reason.to_string() });
    }

    /// Waits until Warden closes the connection.
    pub async fn closed_by_warden(&mut self) {
        let _ = self.closed.wait_for(|closed| *closed).await;
    }
}

/// A [`Connector`] that hands each new connection's peer to the test.
pub struct MemoryConnector {
    peers: mpsc::UnboundedSender<MemoryPeer>,
}

impl MemoryConnector {
    /// The connector, and where the test receives a peer per connection.
    pub fn new() -> (MemoryConnector, mpsc::UnboundedReceiver<MemoryPeer>) {
        let (peers, rx) = mpsc::unbounded_channel();
        (MemoryConnector { peers }, rx)
    }
}

impl Connector for MemoryConnector {
    fn connect(&self, sink: EventSink) -> ConnectFuture {
        let (connection, peer) = memory_pair(sink);
        let _ = self.peers.send(peer);
        Box::pin(async move { Ok(connection) })
    }
}
