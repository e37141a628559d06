//! A request's params, serialised once, by the caller, into the line that
//! will carry them.
//!
//! A call's params used to be serialised into a `Box<RawValue>` (a buffer
//! grown while writing, then shrunk to fit: a realloc) and copied again
//! into the request line when the call was sent. Down the fast lane that
//! was two allocations, a realloc and a copy on every call, about 700
//! instructions (callgrind, `benches/call_latency.rs`). Here the params are
//! written after room left for the line's head; sending down the lane
//! writes the id into that room and hands the buffer itself to the
//! transport. The line reads exactly as before:
//! `{"jsonrpc":"2.0","id":N,"method":"…","params":…}`.
//!
//! The actor's path (queued calls, the 2026 envelope, tasks, input
//! retries) reads the params as text ([`Params::get`]) and frames its own
//! line from them, as it did.

use std::ops::Range;

use super::wire::HEAD;

/// Room for the head and the longest id (`-9223372036854775808`).
const HEAD_ROOM: usize = HEAD.len() + 20;

/// Room kept after the params for the closing `}` and the newline the
/// transport adds, so sending never grows the buffer.
const TAIL_ROOM: usize = 2;

/// The buffer a line starts with: most calls' lines fit.
const LINE_CAPACITY: usize = 512;

/// A request's params, in the line that will carry them.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    /// `HEAD_ROOM` bytes of room, `,"method":"…","params":`, the params,
    /// `}`. Bytes, not a `String`: the lane sends them without reading
    /// them, so they are checked as UTF-8 only where read as text.
    line: Vec<u8>,
    /// Where the params are in `line`.
    params: Range<usize>,
}

impl Params {
    /// `params` as the params of a `method` request (one of Warden's own
    /// methods, which need no escaping).
    pub(crate) fn new(method: &str, params: &impl serde::Serialize) -> Params {
        // Room for most calls' params: growing while serde writes is a
        // realloc and a copy.
        Params::written(method, LINE_CAPACITY, |line| {
            serde_json::to_writer(line, params).expect("request params always serialise");
        })
    }

    /// The params `write` appends to the line (as JSON text) as the params
    /// of a `method` request, in a line with room for `capacity` bytes.
    pub(crate) fn written(method: &str, capacity: usize, write: impl FnOnce(&mut Vec<u8>)) -> Params {
        let mut line = Vec::with_capacity(capacity.max(LINE_CAPACITY));
        line.resize(HEAD_ROOM, b' ');
        line.extend_from_slice(br#","method":""#);
        line.extend_from_slice(method.as_bytes());
        line.extend_from_slice(br#"","params":"#);
        let start = line.len();
        write(&mut line);
        let end = line.len();
        line.reserve_exact(TAIL_ROOM);
        line.push(b'}');
        Params { line, params: start..end }
    }

    /// The params, as JSON text.
    pub(crate) fn get(&self) -> &str {
        std::str::from_utf8(&self.line[self.params.clone()]).expect("serde_json writes UTF-8")
    }

    /// The whole request line for request `id`: the buffer itself, with no
    /// copy of the params.
    pub(crate) fn into_line(self, id: i64) -> Vec<u8> {
        // The id's digits, on the stack: this runs on every lane call.
        let mut digits = [0u8; HEAD_ROOM - HEAD.len()];
        let id_len = {
            let mut unwritten = &mut digits[..];
            serde_json::to_writer(&mut unwritten, &id).expect("an i64 fits its room");
            HEAD_ROOM - HEAD.len() - unwritten.len()
        };
        let mut line = self.line;
        let start = HEAD_ROOM - id_len - HEAD.len();
        line[start..start + HEAD.len()].copy_from_slice(HEAD);
        line[HEAD_ROOM - id_len..HEAD_ROOM].copy_from_slice(&digits[..id_len]);
        line.drain(..start);
        line
    }

    /// The request line for request `id` with `members` (JSON object
    /// members, no braces) as the params' `_meta`: a copy, so the params
    /// stay as they were (a 2026-07-28 lane call keeps them for a retry).
    /// `None` when the params are not an object, or have a `_meta` of
    /// their own to merge with.
    pub(crate) fn line_with_meta(&self, id: i64, members: &str) -> Option<Vec<u8>> {
        let params = self.get();
        if !params.starts_with('{') || !params.ends_with('}') || params.contains(r#""_meta""#) {
            return None;
        }
        let mut line = Vec::with_capacity(self.line.len() + members.len() + 12);
        // The head's room, the method and the params but for their `}`.
        line.extend_from_slice(&self.line[..self.params.end - 1]);
        if params.len() > 2 {
            line.push(b',');
        }
        line.extend_from_slice(br#""_meta":{"#);
        line.extend_from_slice(members.as_bytes());
        line.extend_from_slice(b"}}");
        let end = line.len();
        line.reserve_exact(TAIL_ROOM);
        line.push(b'}');
        Some(Params { line, params: self.params.start..end }.into_line(id))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use warden_protocol::{Message, RequestId};

    use super::Params;

    #[test]
    fn a_line_from_params_is_the_request_a_server_reads() {
        let value = json!({"name": "echo", "arguments": {"message": "hi \"there\" ☃"}});
        let params = Params::new("tools/call", &value);
        assert_eq!(params.get(), value.to_string());
        for id in [0, 7, 1_234_567_890_123, i64::MAX, -1, i64::MIN] {
            let line = String::from_utf8(params.clone().into_line(id)).unwrap();
            assert!(line.starts_with(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"#)));
            let Ok(Message::Request(request)) = Message::parse(&line) else { panic!("not a request: {line}") };
            assert_eq!(request.id, RequestId::Number(id));
            assert_eq!(request.method, "tools/call");
            assert_eq!(request.params, Some(value.clone()));
        }
    }

    #[test]
    fn a_line_with_meta_carries_the_params_and_the_members_as_its_meta() {
        let members = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","x":{"a":1}"#;
        for value in [json!({"name": "echo", "arguments": {"message": "hi"}}), json!({})] {
            let params = Params::new("tools/call", &value);
            let line = String::from_utf8(params.line_with_meta(42, members).unwrap()).unwrap();
            let Ok(Message::Request(request)) = Message::parse(&line) else { panic!("not a request: {line}") };
            let mut expected = value.clone();
            expected["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "x": {"a": 1}});
            assert_eq!(request.id, RequestId::Number(42));
            assert_eq!(request.method, "tools/call");
            assert_eq!(request.params, Some(expected));
            assert_eq!(params.get(), value.to_string(), "the params are kept as they were");
        }
        let own = Params::new("tools/call", &json!({"name": "echo", "_meta": {"traceparent": "t"}}));
        assert!(own.line_with_meta(1, members).is_none(), "a call's own _meta is merged the slow way");
        assert!(Params::new("tools/call", &json!([1])).line_with_meta(1, members).is_none());
    }
}
