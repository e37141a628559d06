//! The lane on a 2026-07-28 connection.
//!
//! A modern server's calls need two things an older server's do not: the
//! envelope in every request's `_meta`, and care for an answer that is not
//! final — "input required" (Warden gathers what the server asked for and
//! sends the call again) or a task the server made of the call (the 2026
//! tasks extension). Neither needs the actor for a plain call. The caller
//! writes the envelope, from the connection's that the actor hands the lane
//! when it opens it (and again when a front sets a log level); and nearly
//! every answer is final. Through the actor, a modern server's calls had a
//! third of the throughput of an older server's (`benches/era_overhead.rs`:
//! the one actor task carried every call's request and answer).
//!
//! An answer that is not final — any `resultType` but `complete` — is
//! handed to the actor with its call, whose params the lane keeps for the
//! retry; from there the call is one of the actor's (`adopt.rs`), as if the
//! actor had sent it. Only `tools/call` goes down a modern lane: the
//! revision's cacheable requests (lists, reads) go through the actor, which
//! keeps their answers.

use std::borrow::Cow;
use std::sync::atomic::Ordering;

use serde_json::value::RawValue;
use warden_protocol::Envelope;

use super::{Lane, LaneCall, Reply};
use crate::server_actor::wire::request_line;
use crate::server_actor::{Params, ServerMsg, ToolCall};

/// A lane call handed to the actor, and its answer that was not final.
#[derive(Debug)]
pub(crate) struct Adopted {
    pub(in crate::server_actor) call: ToolCall,
    pub(in crate::server_actor) reply: Reply,
    pub(in crate::server_actor) result: Box<RawValue>,
}

/// The request line of lane call `id`, with `envelope` in its `_meta`:
/// added to the text when the call has no `_meta` of its own, else merged
/// as the actor merges it.
pub(super) fn enveloped_line(envelope: &Envelope, params: &Params, id: i64) -> Vec<u8> {
    params
        .line_with_meta(id, envelope.members())
        .unwrap_or_else(|| request_line(id, "tools/call", envelope.stamp_raw(params.get()).get()))
}

/// Whether `result` is a final answer: 2026-07-28 marks the others with a
/// `resultType` (`input_required`, a task's `task`); `complete`, none, or
/// text that is not an object (the caller's decoding says what is wrong
/// with it) is final.
pub(super) fn is_final(result: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(rename = "resultType", borrow)]
        result_type: Option<Cow<'a, str>>,
    }
    if !result.contains(r#""resultType""#) {
        return true;
    }
    match serde_json::from_str::<Kind<'_>>(result) {
        Ok(Kind { result_type: Some(kind) }) => kind == "complete",
        _ => true,
    }
}

impl Lane {
    /// A server on a current SDK whose tools still ask their client the
    /// pre-2026 way (a request mid-call) fails those questions when spoken
    /// to in 2026-07-28: the Python SDK says "no back-channel for
    /// server-initiated requests". The operator is told, once, what fixes
    /// it; `text` is an answer's result or error message.
    pub(in crate::server_actor) fn note_old_style_question(&self, text: &str) {
        // The short word first: searched far faster in a large result.
        if self.told_old_style.load(Ordering::Relaxed)
            || !text.contains("back-channel")
            || !text.contains("back-channel for server-initiated requests")
            || self.told_old_style.swap(true, Ordering::Relaxed)
        {
            return;
        }
        tracing::warn!(
            server = %self.server,
            "MCP '{}': a tool tried to ask its client with a request of its own, which MCP 2026-07-28 does not \
             allow; if its tools ask questions the old way, set `protocol_version = \"2025-11-25\"` for it",
            self.server
        );
    }

    /// Hands lane call `id` to the actor with `result`, if it is a modern
    /// call and `result` is not final: the call leaves the lane keeping
    /// its slot, deadline and caller. `Err` gives the result back.
    pub(super) fn hand_over(&self, id: i64, result: Box<RawValue>) -> Result<(), Box<RawValue>> {
        if !self.modern.load(Ordering::Relaxed) || is_final(result.get()) {
            return Err(result);
        }
        let call = {
            let mut state = self.lock();
            // Not a lane call (the actor's own), or gone from the lane
            // (timed out, withdrawn: a late answer, as ever).
            if state.calls.get(&id).is_none_or(|call| call.kept.is_none()) {
                return Err(result);
            }
            state.calls.remove(&id).expect("found above")
        };
        let LaneCall { name, ticket, asks, deadline, timeout, reply, kept, .. } = call;
        let params = kept.expect("checked above");
        // What a lane call can be: a plain `tools/call`, not a task, with
        // neither progress nor log messages wanted.
        let call = ToolCall {
            name,
            method: "tools/call",
            params,
            deadline,
            timeout,
            ticket,
            progress: None,
            logs: None,
            asks,
            as_task: false,
            caller: None,
        };
        // An actor gone drops the call with its reply: its caller reads
        // that the connection closed.
        if let Some(actor) = self.actor.get() {
            let _ = actor.cast(ServerMsg::Adopt(Box::new(Adopted { call, reply, result })));
        }
        Ok(())
    }
}
