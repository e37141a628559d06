use serde_json::json;

use super::cache::tool_hash;
use super::client::first_line;

#[test]
fn the_hash_ignores_key_order_and_sees_every_change() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}});
    let reordered = json!({"properties": {"b": {"type": "number"}, "a": {"type": "string"}}, "type": "object"});
    assert_eq!(tool_hash("Reads.", &schema), tool_hash("Reads.", &reordered));
    assert_ne!(tool_hash("Reads.", &schema), tool_hash("Reads!", &schema));
    assert_ne!(tool_hash("Reads.", &schema), tool_hash("Reads.", &json!({"type": "object"})));
    // Stable across builds and Rust versions: the cache outlives this binary.
    assert_eq!(
        tool_hash("Reads.", &json!({"b": [true, null], "a": 1})),
        "4cd9b44da4b47ba7c1162e2da94139e97fd7795e57ba8bfe9ccc49720391c8ac"
    );
}

#[test]
fn an_answer_is_cut_to_its_first_line_with_whitespace_collapsed() {
    assert_eq!(first_line("\n\n  Reads   a file.\nMore."), "Reads a file.");
    let long = "word ".repeat(100);
    let cut = first_line(&long);
    assert_eq!(cut.chars().count(), 301);
    assert!(cut.ends_with('…'));
}
