//! The text must be serde_json's, byte for byte.

use serde_json::{json, Value};

use super::write_json;

fn ours(value: &Value) -> String {
    let mut out = Vec::new();
    write_json(&mut out, value);
    String::from_utf8(out).expect("UTF-8")
}

fn assert_same(value: &Value) {
    assert_eq!(ours(value), serde_json::to_string(value).unwrap(), "for {value:?}");
}

#[test]
fn every_ascii_character_is_written_as_serde_json_writes_it() {
    for byte in 0u8..0x80 {
        let character = char::from(byte);
        assert_same(&Value::String(character.to_string()));
        // At every place in and around a word of eight.
        for before in 0..17 {
            assert_same(&Value::String(format!("{}{character}{}", "a".repeat(before), "b".repeat(16 - before))));
        }
    }
}

#[test]
fn text_beyond_ascii_and_long_runs_are_written_as_serde_json_writes_them() {
    let cases = [
        String::new(),
        "☃ snow, 𝄞 clef, é".into(),
        "x".repeat(1 << 16),
        "A line of \"quoted\" text,\twith a tab and a newline.\n".repeat(300),
        "\u{7f}\u{80}\u{ff}\u{2028}\u{2029}".into(),
        "\\\\\"\"\u{0}\u{1f}".repeat(9),
    ];
    for text in cases {
        assert_same(&Value::String(text));
    }
    // Pseudo-random text, escapes dense and sparse.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for length in 0..300 {
        let text: String = (0..length)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                match seed % 10 {
                    0 => char::from((seed >> 8) as u8 % 0x20),
                    1 => ['"', '\\', '/', 'é', '☃'][(seed >> 8) as usize % 5],
                    _ => char::from(b'a' + (seed >> 8) as u8 % 26),
                }
            })
            .collect();
        assert_same(&Value::String(text));
    }
}

#[test]
fn every_kind_of_value_is_written_as_serde_json_writes_it() {
    let value = json!({
        "jsonrpc": "2.0", "id": 7, "null": null, "yes": true, "no": false,
        "numbers": [0, -1, 1.5, -2.25e-10, 1e300, u64::MAX, i64::MIN, 0.1],
        "empty": {}, "none": [], "nested": [[[{"a\nb": {"\"key\"": [null]}}]]],
        "result": {"content": [{"type": "text", "text": "a \"quoted\"\nline ☃"}], "isError": false},
        "z first?": 1, "a": 2
    });
    assert_same(&value);
}
