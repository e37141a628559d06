//! A message's JSON text, written into a buffer sized for it up front.
//!
//! Both faces write every message as one piece of text: a line (stdio,
//! and `warden mcp` through the daemon), an HTTP body, an SSE event. A
//! buffer grown by doubling as the text is written holds its old and its
//! new capacity at once at each step, and at the last one copies what it
//! has: for a large tool result, a third copy of it, where the goal is two
//! (`large_results`). The size comes from the protocol crate's estimate,
//! the one the bridge's answer lines use, and the text from its writer
//! (serde_json's text, strings copied in runs: `json_write.rs`).

use serde_json::Value;
use warden_protocol::{json_len_hint, run_heavy, write_json};

/// `value`'s JSON text between `before` and `after`.
pub(crate) fn json_text(value: &Value, before: &[u8], after: &[u8]) -> Vec<u8> {
    let len_hint = json_len_hint(value);
    // A large result's writing is done off the worker (`run_heavy`).
    run_heavy(len_hint, || {
        let mut text = Vec::with_capacity(before.len() + len_hint + after.len());
        text.extend_from_slice(before);
        write_json(&mut text, value);
        text.extend_from_slice(after);
        text
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use warden_protocol::json_len_hint;

    use super::json_text;

    #[test]
    fn the_text_is_the_values_between_its_ends() {
        let message = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "a \"quoted\"\nline ☃"}], "isError": false, "n": [1.5, null, -3]}});
        assert_eq!(json_text(&message, b"<", b">\n"), format!("<{message}>\n").as_bytes());
    }

    #[test]
    fn a_large_messages_buffer_is_sized_for_it_up_front() {
        let prose = "A line of \"quoted\" text,\twith a tab and a newline.\n".repeat(20_000);
        for text in ["x".repeat(1 << 20), prose] {
            let message = json!({"result": {"content": [{"type": "text", "text": text}]}});
            let reserved = json_len_hint(&message) + 1;
            let line = json_text(&message, b"", b"\n");
            // Never grown (a buffer that doubles holds its old and new
            // capacity at once), and not much larger than it needs.
            assert_eq!(line.capacity(), reserved, "grown past the estimate for {} bytes", line.len());
            assert!(reserved <= line.len() * 5 / 4 + 64, "{reserved} reserved for {} bytes", line.len());
        }
    }
}
