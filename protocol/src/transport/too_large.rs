//! An answer too large to read still answers its request.
//!
//! A line over `max_message_bytes` is skipped unread, so on its own the
//! request it answered would wait until its timeout and then say only
//! "timed out" — and a `tools/list` answer would leave the server "not
//! ready in 30 s". The framer keeps the line's first bytes; when they hold
//! the envelope of a response (`{"jsonrpc":"2.0","id":7,` — the `id` at the
//! top level, before any nested object, and no `method`), the transport
//! delivers an error response for that id with
//! [`ErrorCode::ANSWER_TOO_LARGE`], naming the size and the limit, so the
//! caller learns at once and learns why. When the head does not say (the
//! `id` comes after `result`, or is nested), nothing is guessed: a wrong id
//! would fail another caller's request.

use crate::jsonrpc::{ErrorCode, ErrorObject, Message, RequestId, Response};

/// The error response for an oversized line, if its first and last bytes
/// show which request it answers.
pub(crate) fn answer_too_large(bytes: usize, limit: usize, head: &[u8], tail: &[u8]) -> Option<Message> {
    let id = response_id(head, tail)?;
    let message = format!(
        "is {bytes} bytes, more than `max_message_bytes` ({limit}) allows, so Warden did not read it; raise \
         `max_message_bytes` for this server if such answers are expected"
    );
    Some(Message::Response(Response {
        id: Some(id),
        outcome: Err(ErrorObject::new(ErrorCode::ANSWER_TOO_LARGE, message)),
    }))
}

/// The id of a response from its first and last bytes. The head must show
/// it is a response: a top-level `result` or `error` key, before any
/// `method` and before any nested value ends the look. The id is the
/// top-level `id` seen on the way, or else the line's last member
/// (`…,"id":7}`), as servers that write `result` first end their lines.
fn response_id(head: &[u8], tail: &[u8]) -> Option<RequestId> {
    let text = String::from_utf8_lossy(head);
    let mut rest = text.trim_start().strip_prefix('{')?;
    let mut id = None;
    loop {
        rest = rest.trim_start().trim_start_matches(',').trim_start();
        let (key, after) = string_at(rest)?;
        let after = after.trim_start().strip_prefix(':')?.trim_start();
        match key {
            "method" => return None,
            "result" | "error" => return id.or_else(|| trailing_id(tail)),
            "id" => id = Some(id_at(after)?),
            _ => {}
        }
        // Only flat values are skipped: a nested object or array ends the look.
        rest = match after.chars().next()? {
            '"' => string_at(after)?.1,
            '{' | '[' => return None,
            _ => after.find([',', '}']).map(|at| &after[at..])?,
        };
        if rest.starts_with('}') {
            return None;
        }
    }
}

/// The id when the line ends with its top-level `"id":…}` member: one
/// closing brace only (`}}` would be a nested object's), preceded by `,`.
fn trailing_id(tail: &[u8]) -> Option<RequestId> {
    let text = String::from_utf8_lossy(tail);
    let body = text.trim_end().strip_suffix('}')?.trim_end();
    let (value, before) = if let Some(quoted) = body.strip_suffix('"') {
        let open = quoted.rfind('"')?;
        let id = &quoted[open + 1..];
        (!id.contains('\\')).then_some(())?;
        (RequestId::String(id.to_string()), &quoted[..open])
    } else {
        let start = body.rfind(|c: char| !(c.is_ascii_digit() || c == '-'))? + 1;
        (RequestId::Number(body[start..].parse().ok()?), &body[..start])
    };
    let before = before.trim_end().strip_suffix(':')?.trim_end().strip_suffix("\"id\"")?.trim_end();
    before.ends_with(',').then_some(value)
}

/// The string starting `text` (unescaped only as far as needed to find its
/// end) and what follows it.
fn string_at(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix('"')?;
    let mut escaped = false;
    for (at, character) in body.char_indices() {
        match character {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some((&body[..at], &body[at + 1..])),
            _ => {}
        }
    }
    None
}

/// A complete number or string id at the start of `text` (one cut off by
/// the end of the head is not trusted).
fn id_at(text: &str) -> Option<RequestId> {
    if text.starts_with('"') {
        let (id, after) = string_at(text)?;
        return (!id.contains('\\') && !after.is_empty()).then(|| RequestId::String(id.to_string()));
    }
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '-'))?;
    text[..end].parse().ok().map(RequestId::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_is_named_by_its_id_first_or_last_and_nothing_else_is() {
        let tail_of = |id: &str| format!(r#"xxxxx"}}]}},"jsonrpc":"2.0","id":{id}}}"#);
        let cases: Vec<(String, String, Option<RequestId>)> = vec![
            // Keys sorted (Rust servers): the id comes first.
            (r#"{"id":7,"jsonrpc":"2.0","result":{"content":[{"#.into(), String::new(), Some(RequestId::Number(7))),
            (r#"{ "jsonrpc" : "2.0", "id" : 12 , "error": {"#.into(), String::new(), Some(RequestId::Number(12))),
            // `result` first (the TypeScript SDK): the id ends the line.
            (r#"{"result":{"content":[{"type":"text","text":"xxxx"#.into(), tail_of("5"), Some(RequestId::Number(5))),
            (r#"{"result":{"#.into(), tail_of("\"a-1\""), Some(RequestId::String("a-1".into()))),
            // A nested object's id at the end is not the line's.
            (r#"{"result":{"#.into(), r#"xxx","id":3}}"#.into(), None),
            // A request or notification is not an answer, wherever its id is.
            (r#"{"id":4,"jsonrpc":"2.0","method":"x","params":{"#.into(), String::new(), None),
            (r#"{"method":"sampling/createMessage","params":{"#.into(), tail_of("4"), None),
            // Cut off inside the id, or nothing to go on: not trusted.
            (r#"{"jsonrpc":"2.0","id":12"#.into(), String::new(), None),
            ("not json at all".into(), "nor this".into(), None),
        ];
        for (head, tail, expected) in cases {
            assert_eq!(response_id(head.as_bytes(), tail.as_bytes()), expected, "{head} … {tail}");
        }
    }
}
