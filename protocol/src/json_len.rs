//! About how long a JSON value's text is, to size the buffer it is written
//! into up front: a buffer grown by doubling holds its old and its new
//! capacity at once at each step, and copies what it has at the last one —
//! for a large tool result, a third copy of it where the goal is two
//! (`benches/large_results.rs`). Each face that writes a message (the
//! bridge's answer lines, the front's lines, bodies and events) sizes it
//! from here.
//!
//! Strings count their bytes, an eighth more for escapes (quotes,
//! newlines, control characters) and their quotes; other scalars a
//! generous 24. Over rather than under: a buffer reserved too large only
//! maps pages it never touches.

use serde_json::{Map, Value};

/// About how long `value`'s JSON text is.
pub fn json_len_hint(value: &Value) -> usize {
    match value {
        Value::String(text) => text_len_hint(text),
        Value::Array(items) => items.iter().map(|item| json_len_hint(item) + 1).sum::<usize>() + 2,
        Value::Object(members) => members_len_hint(members),
        Value::Null | Value::Bool(_) | Value::Number(_) => 24,
    }
}

/// About how long a string is as JSON text.
pub(crate) fn text_len_hint(text: &str) -> usize {
    text.len() + text.len() / 8 + 2
}

/// About how long an object with these members is as JSON text.
pub fn members_len_hint(members: &Map<String, Value>) -> usize {
    members.iter().map(|(key, value)| key.len() + 4 + json_len_hint(value)).sum::<usize>() + 2
}
