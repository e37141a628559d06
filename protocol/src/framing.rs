//! Newline-delimited framing with a size limit.
//!
//! stdio MCP is one JSON message per line. A server that prints a 2 GB line,
//! or a banner, or half a line before it dies, must not take the connection
//! down or make Warden buffer without bound: [`LineReader`] hands back each
//! line, and for a line over the limit it keeps reading to the newline,
//! throwing the bytes away, and reports only how long it was.
//!
//! [`LineReader::ready_frame`] takes the next line only if it can be had
//! without waiting, so a reader can hand on everything that arrived
//! together in one go (the stdio transport delivers such lines to the actor
//! as one message).

use std::future::Future as _;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use crate::heavy_work::{run_heavy, HEAVY_BYTES, YIELD_EVERY_BYTES};

/// The default largest message Warden reads from a server: 16 MiB, enough
/// for a large base64 image, small enough that one bad server cannot eat
/// the machine's memory.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How much of an oversized line is kept: enough for the envelope of a
/// response (`{"jsonrpc":"2.0","id":…`) before its `result`.
pub const HEAD_BYTES: usize = 128;

/// How much unused room a finished line may keep. Lines that arrive in
/// one read are allocated at their size; a long one grows by doubling.
const SLACK_BYTES: usize = 4096;

/// One unit read off the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its line ending.
    Line(String),
    /// A line longer than the limit; its bytes were discarded but the
    /// first [`HEAD_BYTES`], so the caller can tell which request a
    /// too-large answer was for.
    Oversized {
        /// How many bytes the line had.
        bytes: usize,
        /// The limit it passed.
        limit: usize,
        /// Its first bytes (at most [`HEAD_BYTES`]).
        head: Vec<u8>,
        /// Its last bytes (at most [`HEAD_BYTES`]): servers that write the
        /// `id` after the `result` end the line with it.
        tail: Vec<u8>,
    },
    /// A line that was not UTF-8.
    NotUtf8 {
        /// How many bytes the line had.
        bytes: usize,
    },
}

/// Reads [`Frame`]s from a buffered byte stream.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    line: Vec<u8>,
    /// The first bytes of the current line, taken when it passes the limit
    /// (until then `line` holds them).
    head: Vec<u8>,
    /// Its last bytes, kept while it is over the limit.
    tail: Vec<u8>,
    /// Bytes seen of the current line, counting discarded ones.
    seen: usize,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// A reader that accepts lines of at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Self {
        LineReader { inner, line: Vec::new(), head: Vec::new(), tail: Vec::new(), seen: 0, max }
    }

    /// The next non-empty line, or `None` at end of stream.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                // End of stream. A last line without a newline still counts:
                // a server may print its final message and exit.
                return Ok(self.finish_line());
            }
            let (chunk, found_newline) = match memchr::memchr(b'\n', available) {
                Some(at) => (&available[..at], true),
                None => (available, false),
            };
            let seen_before = self.seen;
            self.seen += chunk.len();
            if self.seen <= self.max {
                self.line.extend_from_slice(chunk);
            } else {
                // Over the limit: stop keeping bytes (but its head), keep counting them.
                if self.seen - chunk.len() <= self.max {
                    // The chunk that passed the limit: until now the line
                    // was all kept, so it gives the head and the last bytes.
                    let line = std::mem::take(&mut self.line);
                    self.head = line[..line.len().min(HEAD_BYTES)].to_vec();
                    self.tail = line[line.len().saturating_sub(HEAD_BYTES)..].to_vec();
                }
                // A limit under HEAD_BYTES: the head goes on past it.
                let room = HEAD_BYTES - self.head.len();
                self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
                self.tail.extend_from_slice(&chunk[chunk.len().saturating_sub(HEAD_BYTES)..]);
                let extra = self.tail.len().saturating_sub(HEAD_BYTES);
                self.tail.drain(..extra);
                self.line = Vec::new();
            }
            let consumed = chunk.len() + usize::from(found_newline);
            self.inner.consume(consumed);
            if found_newline {
                if let Some(frame) = self.finish_line() {
                    return Ok(Some(frame));
                }
            } else if self.seen >= HEAVY_BYTES && seen_before / YIELD_EVERY_BYTES != self.seen / YIELD_EVERY_BYTES {
                // A long line from a fast writer never makes a read wait:
                // past each YIELD_EVERY_BYTES of it, let the worker see to
                // its other tasks and sockets (`heavy_work.rs`). Cancelled
                // here, nothing is lost.
                tokio::task::yield_now().await;
            }
        }
    }

    /// What [`LineReader::next_frame`] would return, if it can return it
    /// without waiting: the next line when it is already buffered (or can
    /// be read at once); `None` when it would have to wait for the stream.
    /// Bytes of an incomplete line are kept for the next call, as they are
    /// when `next_frame` is cancelled. A line long enough that reading it
    /// yields on the way counts as having to wait.
    pub fn ready_frame(&mut self) -> Option<std::io::Result<Option<Frame>>> {
        // Polled once with a waker that does nothing: the task's own waker
        // is registered again by the next `next_frame().await`, which polls
        // the stream afresh.
        let mut context = Context::from_waker(Waker::noop());
        match pin!(self.next_frame()).poll(&mut context) {
            Poll::Ready(outcome) => Some(outcome),
            Poll::Pending => None,
        }
    }

    fn finish_line(&mut self) -> Option<Frame> {
        let seen = std::mem::take(&mut self.seen);
        let mut bytes = std::mem::take(&mut self.line);
        if seen > self.max {
            let (head, tail) = (std::mem::take(&mut self.head), std::mem::take(&mut self.tail));
            return Some(Frame::Oversized { bytes: seen, limit: self.max, head, tail });
        }
        self.head.clear();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            // Skipped, and its buffer kept for the next line.
            bytes.clear();
            self.line = bytes;
            return None;
        }
        if bytes.capacity() - bytes.len() > SLACK_BYTES {
            // A line read in many pieces grew by doubling: up to twice its
            // size. It lives on as the message (and beside its decoded
            // copy), so the unused half is given back now, in place.
            bytes.shrink_to_fit();
        }
        Some(match run_heavy(bytes.len(), || String::from_utf8(bytes)) {
            Ok(line) => Frame::Line(line),
            Err(_) => Frame::NotUtf8 { bytes: seen },
        })
    }

    /// Takes back `line`, a [`Frame::Line`] its caller is done with, to
    /// read the next line into: a reader of many small lines then
    /// allocates none. A buffer larger than `SLACK_BYTES` is let go, so
    /// one long line does not make every later one that large.
    pub fn recycle(&mut self, line: String) {
        if self.line.capacity() == 0 && line.capacity() <= SLACK_BYTES {
            let mut bytes = line.into_bytes();
            bytes.clear();
            self.line = bytes;
        }
    }

    /// The underlying stream.
    pub fn into_inner(self) -> R {
        self.inner
    }
}

#[cfg(test)]
mod tests;
