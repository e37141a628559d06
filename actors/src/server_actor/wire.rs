//! What a call looks like on the wire to its server: its request line,
//! built by hand (the hot path), with the modern revision's envelope when
//! the connection speaks it; the cancellation that withdraws it; the error
//! a caller reads for the server's error answer; and the hasher of
//! Warden's own request ids. Below both the actor's calls (`calls.rs`)
//! and the lane's (`lane.rs`), which send the same lines.

use std::hash::Hasher;

use serde_json::{json, Value};
use warden_config::CrashRetry;
use warden_protocol::{ErrorCode, ErrorObject, Message};

use crate::error::CallError;

use super::era::Spoken;

/// The start of every request line, up to the id.
pub(super) const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;

/// The request numbered `id`, as one line of JSON (no newline), built by
/// hand: `format!` took about 1,200 instructions a call here (callgrind),
/// most of it growing its buffer, for what is a few copies. The id goes
/// through serde_json's integer writer: `write!` took 230 instructions of
/// the remaining 480 (the formatting machinery, for one number). `method`
/// is one of Warden's own, which need no escaping.
pub(super) fn request_line(id: i64, method: &str, params: &str) -> Vec<u8> {
    let params = params.as_bytes();
    // Room for the longest id, the fixed text and the newline the transport adds.
    let mut line = Vec::with_capacity(HEAD.len() + 20 + method.len() + params.len() + 32);
    line.extend_from_slice(HEAD);
    serde_json::to_writer(&mut line, &id).expect("an integer always serialises");
    line.extend_from_slice(br#","method":""#);
    line.extend_from_slice(method.as_bytes());
    line.extend_from_slice(br#"","params":"#);
    line.extend_from_slice(params);
    line.push(b'}');
    line
}

/// The error a caller reads for the server's JSON-RPC error answering
/// call `name` (`crash_retry`: whether it may be repeated, should its
/// answer's stream have broken).
pub(super) fn answer_error(server: &str, name: String, error: ErrorObject, crash_retry: CrashRetry) -> CallError {
    let server = server.to_string();
    match error.code {
        ErrorCode::ANSWER_TOO_LARGE => CallError::AnswerTooLarge { server, name, detail: error.message },
        ErrorCode::URL_ELICITATION_REQUIRED => {
            let elicitations = error
                .data
                .as_ref()
                .and_then(|data| data.get("elicitations"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            CallError::UrlElicitationRequired { server, name, message: error.message, elicitations }
        }
        warden_protocol::STREAM_BROKEN => {
            CallError::StreamBroken { server, name, reason: error.message, policy: crash_retry }
        }
        ErrorCode::CLUSTER_CALL_FAILED => CallError::Remote { server, name, message: error.message },
        code => CallError::Server { server, name, code: code.0, message: error.message },
    }
}

/// Tells a server that Warden no longer waits for its request `id`, and why.
pub(super) fn cancellation(id: i64, reason: &str) -> Message {
    Message::notification("notifications/cancelled", Some(json!({"requestId": id, "reason": reason})))
}

/// A call's request line as this connection sends it: with the modern
/// revision's envelope in its `_meta` when the server speaks it.
pub(super) fn call_line(spoken: &Spoken, id: i64, method: &str, params: &str) -> Vec<u8> {
    match spoken {
        Spoken::Plain => request_line(id, method, params),
        Spoken::Modern(envelope) => request_line(id, method, envelope.stamp_raw(params).get()),
    }
}

/// Hashes the pending map's keys, Warden's own sequential request ids.
/// SipHash, the default, guards against keys an attacker picks; these are
/// not picked by anyone, and the four SipHash rounds of a call cost about
/// 900 instructions (callgrind). One multiplication by 2^64/φ spreads
/// consecutive ids over the whole word, top bits included, which is what
/// the map's buckets use.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_i64(&mut self, id: i64) {
        self.0 = (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `i64` keys are hashed; this keeps any other key correct.
        for &byte in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::request_line;
    use warden_protocol::{Message, RequestId};

    #[test]
    fn a_request_line_is_the_request_a_server_reads() {
        let params = r#"{"name":"echo","arguments":{"message":"hi"}}"#;
        for id in [0, 7, 1_234_567_890_123, i64::MAX] {
            let line = String::from_utf8(request_line(id, "tools/call", params)).unwrap();
            let Ok(Message::Request(request)) = Message::parse(&line) else { panic!("not a request: {line}") };
            assert_eq!(request.id, RequestId::Number(id));
            assert_eq!(request.method, "tools/call");
            assert_eq!(request.params, Some(serde_json::from_str(params).unwrap()));
        }
    }
}
