//! Event streams: reading a request's answer from one, resuming it when it
//! ends too early, and opening one with GET.
//!
//! A server may answer a request with an event stream, send a *priming*
//! event (an id, empty data) and close the connection long before the
//! answer is ready — to free the connection, or because a proxy cut it.
//! That is not a failure: the client waits the server's `retry` interval
//! and asks for the rest with GET and `Last-Event-ID`, and the server
//! replays what came after that id on the new stream, answer included.
//! Warden keeps resuming for as long as each stream names an id to resume
//! from, within [`HttpSpec::resume_limit`](super::HttpSpec::resume_limit)
//! in all. A stream that ends without ever naming an id cannot be resumed:
//! the request fails at once.
//!
//! Disconnecting never cancels the request on the server; cancelling is
//! `notifications/cancelled`, which the actor sends.
//!
//! An event on a request's stream that is over the size limit, or is not
//! JSON-RPC, fails that request at once with what was wrong: it most
//! likely was the answer, and the caller would otherwise wait out its
//! timeout for an answer that already came and was lost. The session is
//! untouched; the next request gets its own stream. On the GET stream,
//! where nobody waits, such an event is reported and skipped.

use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::StatusCode;

use super::{answers, content_type, error_chain, parse_message, Answer, Failure, Session};
use crate::jsonrpc::{Message, RequestId};
use crate::sse::{SseItem, SseParser};
use crate::transport::TransportEvent;

/// How long to wait before resuming when the server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// The `Last-Event-ID` request header.
const LAST_EVENT_ID: &str = "last-event-id";

/// Where a request's event stream got to, across resumptions.
#[derive(Default)]
struct Position {
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

/// How reading one stream for an answer ended.
enum StreamEnd {
    /// The answer came (kept here if the caller asked to keep it).
    Answered(Option<TransportEvent>),
    /// The stream ended or broke first: resumable if it named an id.
    Early(String),
    /// An event was unusable: the request fails, whatever comes next.
    Failed(String),
}

/// Why a GET brought no event stream.
pub(super) struct NoStream {
    /// The status the server answered, if it answered.
    pub(super) status: Option<StatusCode>,
    /// What happened, in words.
    pub(super) problem: String,
}

impl Session {
    /// Delivers the stream's events until the answer to `id` has come,
    /// resuming the stream when it ends early; the answer itself is
    /// returned instead if `answer` says to keep it.
    pub(super) async fn read_stream(
        &self,
        body: Incoming,
        id: &RequestId,
        initialize: bool,
        answer: Answer,
    ) -> Result<Option<TransportEvent>, Failure> {
        let started = Instant::now();
        let mut position = Position::default();
        let mut body = body;
        loop {
            let ended = match self.read_until_answer(body, id, initialize, answer, &mut position).await {
                StreamEnd::Answered(kept) => return Ok(kept),
                StreamEnd::Failed(problem) => return Err(Failure::Plain(problem)),
                StreamEnd::Early(ended) => ended,
            };
            // A stream that cannot be resumed loses the request's answer
            // (whether the server ran it is unknown): `Broken`, which the
            // caller may repeat only if the tool is safe to repeat.
            if self.modern.load(std::sync::atomic::Ordering::SeqCst) {
                // 2026-07-28 streams are not resumed.
                return Err(Failure::Broken(ended));
            }
            let Some(last_event_id) = position.last_event_id.clone() else { return Err(Failure::Broken(ended)) };
            let wait = position.retry.unwrap_or(DEFAULT_RETRY);
            if started.elapsed() + wait > self.spec.resume_limit {
                return Err(Failure::Broken(format!(
                    "{ended}; gave up resuming it after {} s",
                    self.spec.resume_limit.as_secs_f64()
                )));
            }
            tokio::time::sleep(wait).await;
            tracing::debug!(server = %self.spec.server, "resuming an event stream");
            body = self.open_stream(Some(&last_event_id)).await.map_err(|no_stream| {
                Failure::Broken(format!("{ended}, and resuming it failed: {}", no_stream.problem))
            })?;
        }
    }

    /// Reads one stream until the answer to `id`, or until it ends or
    /// carries an unusable event. `position` follows the stream's ids and
    /// `retry`.
    async fn read_until_answer(
        &self,
        mut body: Incoming,
        id: &RequestId,
        initialize: bool,
        answer: Answer,
        position: &mut Position,
    ) -> StreamEnd {
        let mut parser = SseParser::with_max_event_bytes(self.spec.max_message_bytes);
        while let Some(frame) = self.paced_frame(&mut body).await {
            let frame = match frame {
                Ok(frame) => frame,
                Err(error) => {
                    return StreamEnd::Early(format!(
                        "the event stream from {} broke before the answer came: {}",
                        self.spec.url,
                        error_chain(&error)
                    ))
                }
            };
            let Ok(chunk) = frame.into_data() else { continue };
            let items = parser.feed(&chunk);
            // A resumed stream starts afresh but goes on from where the
            // last one left off: keep what it has not said again.
            position.last_event_id = parser.last_event_id().map(str::to_string).or(position.last_event_id.take());
            position.retry = parser.retry().or(position.retry);
            if let Some(end) = self.deliver_items(items, id, initialize, answer) {
                return end;
            }
        }
        StreamEnd::Early(format!("the event stream from {} ended before the answer came", self.spec.url))
    }

    /// Delivers a chunk's events together; `Some` once the answer to `id`
    /// was among them (holding it if `answer` says to keep it), or once an
    /// event was unusable (the events before it are delivered).
    fn deliver_items(
        &self,
        items: Vec<SseItem>,
        id: &RequestId,
        initialize: bool,
        answer: Answer,
    ) -> Option<StreamEnd> {
        let mut answered = None;
        let mut events = Vec::new();
        let mut failed = None;
        for item in items {
            // An answer the taker takes goes to its caller from here, after
            // the events that came before it.
            if let SseItem::Event(event) = &item {
                if answer == Answer::Deliver && !initialize && !event.data.is_empty() {
                    if let Some(taken) = self.took_after(&event.data, &mut events) {
                        answered = answered.or((*id == RequestId::Number(taken)).then_some(StreamEnd::Answered(None)));
                        continue;
                    }
                }
            }
            let event = match self.message_of(item) {
                Ok(Some(event)) => event,
                Ok(None) => continue,
                Err(problem) => {
                    failed = Some(StreamEnd::Failed(problem));
                    break;
                }
            };
            if answers(&event, id) {
                if initialize {
                    self.note_protocol_version(&event, id);
                }
                if answer == Answer::Keep {
                    answered = Some(StreamEnd::Answered(Some(event)));
                    continue;
                }
                answered = Some(StreamEnd::Answered(None));
            }
            // A server's request or notification on this request's stream
            // belongs to it.
            let event = match event {
                TransportEvent::Message(Message::Request(request)) if !initialize => {
                    TransportEvent::RequestDuring { request, during: id.clone() }
                }
                TransportEvent::Message(Message::Notification(notification)) if !initialize => {
                    TransportEvent::NotificationDuring { notification, during: id.clone() }
                }
                event => event,
            };
            events.push(event);
        }
        match events.len() {
            0 => {}
            1 => self.deliver(events.pop().expect("one event")),
            _ => self.deliver(TransportEvent::Batch(events)),
        }
        answered.or(failed)
    }

    /// The id whose answer the taker took from `data`, the events ahead
    /// of it (`before`) delivered first — only when `data` is an answer,
    /// so that a stream's other events still go to the sink together.
    fn took_after(&self, data: &str, before: &mut Vec<TransportEvent>) -> Option<i64> {
        self.took(data, || match before.len() {
            0 => {}
            1 => self.deliver(before.pop().expect("one event")),
            _ => self.deliver(TransportEvent::Batch(std::mem::take(before))),
        })
    }

    /// The message an SSE item carries, or what is wrong with it; `None`
    /// for a priming event (an id, empty data), which carries none.
    fn message_of(&self, item: SseItem) -> Result<Option<TransportEvent>, String> {
        match item {
            SseItem::Event(event) if event.data.is_empty() => Ok(None),
            SseItem::Event(event) => parse_message(&event.data)
                .map(Some)
                .map_err(|problem| format!("an event from {} is not a JSON-RPC message: {problem}", self.spec.url)),
            SseItem::Oversized { bytes } => Err(format!(
                "a {bytes}-byte event from {} is over the {}-byte message size limit (`max_message_bytes`)",
                self.spec.url, self.spec.max_message_bytes
            )),
        }
    }

    /// Like [`Session::message_of`], with what is wrong as a `Malformed`
    /// event: for the GET stream, where nobody waits for an answer.
    pub(super) fn event_of(&self, item: SseItem) -> Option<TransportEvent> {
        self.message_of(item).unwrap_or_else(|problem| Some(TransportEvent::Malformed { problem }))
    }

    /// GETs an event stream in this session, resuming after
    /// `last_event_id` if given.
    pub(super) async fn open_stream(&self, last_event_id: Option<&str>) -> Result<Incoming, NoStream> {
        let mut request = self.event_stream_request(true);
        if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
            request.headers_mut().insert(LAST_EVENT_ID, id);
        }
        let response = self.client.request(request).await.map_err(|error| NoStream {
            status: None,
            problem: format!("could not reach {}: {}", self.spec.url, error_chain(&error)),
        })?;
        let status = response.status();
        if !status.is_success() {
            let body = self.error_body(response.into_body()).await;
            let problem = format!("HTTP {} from {}: {body}", status.as_u16(), self.spec.url);
            return Err(NoStream { status: Some(status), problem });
        }
        let content_type = content_type(response.headers());
        if content_type != "text/event-stream" {
            return Err(NoStream {
                status: Some(status),
                problem: format!(
                    "{} answered GET with content type `{content_type}`; expected text/event-stream",
                    self.spec.url
                ),
            });
        }
        Ok(response.into_body())
    }
}
