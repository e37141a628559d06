use serde_json::json;

use super::*;

#[test]
fn bodies_hold_the_json_text_and_events_frame_it() {
    let message = json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "a \"quoted\"\nline ☃"}], "isError": false, "n": [1.5, null, -3]}});
    let text = message.to_string();
    assert_eq!(json_text(&message, b"", b""), text.as_bytes());
    assert_eq!(event("r1-0", &message), format!("id: r1-0\nevent: message\ndata: {text}\n\n").as_bytes());
}
