//! Server-Sent Events, parsed incrementally.
//!
//! Streamable HTTP answers a POSTed request either with one JSON body or with
//! a `text/event-stream`: the server may send its own requests and
//! notifications (progress, log messages, sampling) as events before the
//! response, and a GET opens a long-lived stream for messages the server
//! starts on its own. Each event's `data` is one JSON-RPC message.
//!
//! Streams break, and MCP plans for it. A server may open a stream with a
//! *priming* event — an `id` and empty data — and close the connection
//! early; the client waits the server's `retry` interval and resumes with a
//! GET carrying `Last-Event-ID`. So the parser must remember an id even when
//! no event is dispatched (a block with an `id` and no `data` line), and it
//! remembers it only once the block's blank line has arrived: an id from an
//! event cut off mid-way would make the server skip that event on
//! resumption. [`SseParser::last_event_id`] and
//! [`SseParser::retry`] are what the transport needs to resume.
//!
//! Note what the TypeScript SDK's servers actually send as a priming event:
//! `id: …`, `retry: …`, `data: ` (an empty *data line*), blank line. By the
//! standard an empty data line still makes the data buffer non-empty, so
//! that block *is* dispatched, as an [`SseEvent`] with empty `data`. The
//! parser follows the standard; the transport skips events with empty data,
//! which can never be a JSON-RPC message.
//!
//! The parser is pure and incremental: the transport hands it whatever bytes
//! the HTTP body yields, split anywhere — inside a UTF-8 sequence, between
//! the `\r` and `\n` of one line ending, inside the stream's byte order mark
//! — and gets back the events those bytes completed. It follows the WHATWG
//! HTML "event stream interpretation" rules exactly, so a server that is
//! correct for browsers is correct for Warden.
//!
//! Memory is bounded the way [`LineReader`](crate::LineReader) bounds a stdio
//! line: an event whose field lines add up to more than the limit is
//! dropped and reported as [`SseItem::Oversized`], never buffered whole. Its
//! remaining short fields (`id`, `retry`) still count, so resuming after it
//! does not fetch the same poisonous event again.

use std::mem;
use std::time::Duration;

use crate::framing::DEFAULT_MAX_MESSAGE_BYTES;

/// The UTF-8 byte order mark, skipped once at the start of a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// A line buffer that grew past this is given back to the allocator, so one
/// large event does not pin megabytes for the life of the stream.
const KEEP_LINE_CAPACITY: usize = 64 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type: the last `event` field, or `"message"` if none was
    /// given (or it was empty).
    pub event: String,
    /// The `data` lines joined with `\n`, without a trailing newline. Empty
    /// for a block with one empty `data:` line, such as an MCP priming event.
    pub data: String,
    /// The last event id at dispatch; it carries over from earlier events
    /// that set one. `None` if no id was set, or the last one was empty.
    pub id: Option<String>,
}

/// What a chunk of input completed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// An event, in stream order.
    Event(SseEvent),
    /// An event over the size limit; its data was discarded.
    Oversized {
        /// How many bytes its field lines had, without line endings.
        bytes: usize,
    },
}

/// An incremental `text/event-stream` parser.
///
/// ```
/// use warden_protocol::{SseEvent, SseItem, SseParser};
///
/// let mut parser = SseParser::new();
/// assert_eq!(parser.feed(b"id: 7\ndata: {\"jsonrpc\":"), vec![]);
/// assert_eq!(
///     parser.feed(b"\"2.0\"}\n\n"),
///     vec![SseItem::Event(SseEvent {
///         event: "message".into(),
///         data: "{\"jsonrpc\":\"2.0\"}".into(),
///         id: Some("7".into()),
///     })]
/// );
/// assert_eq!(parser.last_event_id(), Some("7"));
/// ```
#[derive(Debug)]
pub struct SseParser {
    max_event_bytes: usize,
    /// How many bytes of the byte order mark have been seen; `None` once the
    /// start of the stream is behind us.
    bom_matched: Option<usize>,
    /// The previous chunk ended in `\r`: a `\n` opening the next one belongs
    /// to the same line ending.
    after_cr: bool,
    /// The current line, at most `max_event_bytes` of it.
    line: Vec<u8>,
    /// The current line's full length, including bytes not kept.
    line_bytes: usize,
    /// Field-line bytes of the current event so far.
    event_bytes: usize,
    /// The current event went over the limit and will be dropped.
    oversized: bool,
    data: String,
    event_type: String,
    id_buffer: String,
    last_event_id: String,
    retry: Option<Duration>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    /// A parser for a new stream, with [`DEFAULT_MAX_MESSAGE_BYTES`] as the
    /// event size limit.
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// A parser that drops events whose field lines (`data: …`, `id: …` and
    /// so on, without line endings; comments do not count) add up to more
    /// than `max_event_bytes`. The parser holds at most about twice that.
    pub fn with_max_event_bytes(max_event_bytes: usize) -> Self {
        SseParser {
            max_event_bytes,
            bom_matched: Some(0),
            after_cr: false,
            line: Vec::new(),
            line_bytes: 0,
            event_bytes: 0,
            oversized: false,
            data: String::new(),
            event_type: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry: None,
        }
    }

    /// The id to send as `Last-Event-ID` when resuming: the id in force when
    /// the last event ended, whether or not it carried data. `None` if there
    /// is none (or the server reset it with an empty `id`).
    pub fn last_event_id(&self) -> Option<&str> {
        Some(self.last_event_id.as_str()).filter(|id| !id.is_empty())
    }

    /// How long the server asked the client to wait before reconnecting, if
    /// it sent a valid `retry` field.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Feeds the next bytes of the stream and returns the events they
    /// completed. A trailing partial event stays buffered for the next call;
    /// at the end of the stream it is discarded, as the standard requires.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while let Some(matched) = self.bom_matched {
            let Some((&byte, tail)) = rest.split_first() else { return out };
            if byte == BOM[matched] {
                rest = tail;
                self.bom_matched = Some(matched + 1).filter(|&m| m < BOM.len());
            } else {
                self.bom_matched = None;
                // Not a byte order mark after all: what was held back is text
                // (and holds no line ending).
                self.push(&BOM[..matched], &mut out);
            }
        }
        self.push(rest, &mut out);
        out
    }

    fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseItem>) {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(pos) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.append(&bytes[..pos]);
            let ending = bytes[pos];
            bytes = &bytes[pos + 1..];
            if ending == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            self.end_line(out);
        }
        self.append(bytes);
    }

    /// Adds bytes to the current line, keeping no more than the limit.
    fn append(&mut self, bytes: &[u8]) {
        let room = self.max_event_bytes.saturating_sub(self.line.len());
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
        self.line_bytes = self.line_bytes.saturating_add(bytes.len());
    }

    fn end_line(&mut self, out: &mut Vec<SseItem>) {
        let line_bytes = mem::take(&mut self.line_bytes);
        if line_bytes == 0 {
            self.dispatch(out);
        } else if self.line.first() != Some(&b':') {
            // Comments don't count: they are never buffered, and a server's
            // keep-alive comments must not add up to an "oversized" event.
            self.event_bytes = self.event_bytes.saturating_add(line_bytes);
            if self.event_bytes > self.max_event_bytes {
                self.oversized = true;
            }
            // A line over the limit was only partly kept: drop it whole.
            if line_bytes <= self.max_event_bytes {
                let line = mem::take(&mut self.line);
                let text = String::from_utf8_lossy(&line);
                match text.split_once(':') {
                    Some((name, value)) => self.field(name, value.strip_prefix(' ').unwrap_or(value)),
                    None => self.field(&text, ""),
                }
                self.line = line;
            }
        }
        self.line.clear();
        self.line.shrink_to(KEEP_LINE_CAPACITY);
    }

    fn field(&mut self, name: &str, value: &str) {
        match name {
            "event" => value.clone_into(&mut self.event_type),
            "data" if !self.oversized => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            // An id with NUL could not go back out in a `Last-Event-ID` header.
            "id" if !value.contains('\0') => value.clone_into(&mut self.id_buffer),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Digits too many for a u64 are as good as no digits.
                if let Ok(ms) = value.parse() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }

    /// A blank line: the end of an event.
    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        // The id counts even when nothing is dispatched: that is how a
        // priming event (id, empty data) gives the client a resume point.
        self.last_event_id.clone_from(&self.id_buffer);
        let event_type = mem::take(&mut self.event_type);
        let event_bytes = mem::take(&mut self.event_bytes);
        if mem::take(&mut self.oversized) {
            self.data = String::new();
            out.push(SseItem::Oversized { bytes: event_bytes });
            return;
        }
        if self.data.is_empty() {
            return;
        }
        let mut data = mem::take(&mut self.data);
        data.pop(); // the `\n` after the last data line
        out.push(SseItem::Event(SseEvent {
            event: if event_type.is_empty() { "message".to_owned() } else { event_type },
            data,
            id: self.last_event_id().map(str::to_owned),
        }));
    }
}

#[cfg(test)]
mod tests;
