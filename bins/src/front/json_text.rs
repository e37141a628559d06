//! A message's JSON text, written into a buffer sized for it up front.
//!
//! Both faces write every message as one piece of text: a line (stdio,
//! and `warden mcp` through the daemon), an HTTP body, an SSE event. A
//! buffer grown by doubling as the text is written holds its old and its
//! new capacity at once at each step, and at the last one copies what it
//! has: for a large tool result, a third copy of it, where the goal is two
//! (`large_results`).

use serde_json::Value;

/// `value`'s JSON text between `before` and `after`.
pub(crate) fn json_text(value: &Value, before: &[u8], after: &[u8]) -> Vec<u8> {
    let mut text = Vec::with_capacity(before.len() + json_size(value) + after.len());
    text.extend_from_slice(before);
    serde_json::to_writer(&mut text, value).expect("a JSON value always serialises");
    text.extend_from_slice(after);
    text
}

/// About how long `value`'s JSON text is: exact but for escapes and numbers.
fn json_size(value: &Value) -> usize {
    match value {
        Value::String(text) => text.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|item| json_size(item) + 1).sum::<usize>(),
        Value::Object(map) => 2 + map.iter().map(|(key, item)| key.len() + 4 + json_size(item)).sum::<usize>(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::json_text;

    #[test]
    fn the_text_is_the_values_between_its_ends() {
        let message = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "a \"quoted\"\nline ☃"}], "isError": false, "n": [1.5, null, -3]}});
        assert_eq!(json_text(&message, b"<", b">\n"), format!("<{message}>\n").as_bytes());
    }

    #[test]
    fn a_large_messages_buffer_is_sized_for_it_up_front() {
        let message = json!({"result": {"content": [{"type": "text", "text": "x".repeat(1 << 20)}]}});
        let text = json_text(&message, b"", b"\n");
        assert!(text.capacity() < text.len() + 64, "capacity {} for {} bytes", text.capacity(), text.len());
    }
}
