//! A JSON value's compact text, byte for byte as serde_json writes it, with
//! string contents scanned eight bytes at a time.
//!
//! Every face that passes a tool's result on writes its text once: the
//! bridge's answer line, the front's line, body or event. serde_json looks
//! up every byte of a string in its escape table on its own; for a large
//! result, text almost all of which needs no escape, that loop was the
//! daemon's largest single cost (about 11 ms of a 10 MB call, a quarter of
//! the daemon's CPU for it: `perf`, `benches/large_results.rs`). Here a
//! string is read as words of eight bytes, and a word with no quote,
//! backslash or control character in it (tested with a few arithmetic
//! operations, not a byte at a time) is passed over whole; the runs
//! between escapes are copied in one piece.
//!
//! The text is the same as `serde_json::to_writer`'s — the same escapes
//! (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other control characters as
//! `\u00xx` in lowercase), numbers written by serde_json itself, members
//! in the map's order — which the tests hold it to.

use serde_json::{Map, Value};

/// Appends `value`'s compact JSON text to `out`.
pub fn write_json(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => serde_json::to_writer(&mut *out, number).expect("a number always serialises"),
        Value::String(text) => write_json_string(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_json(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => write_json_object(out, members),
    }
}

/// Appends the compact JSON text of an object with `members` to `out`.
pub fn write_json_object(out: &mut Vec<u8>, members: &Map<String, Value>) {
    out.push(b'{');
    for (index, (key, member)) in members.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_json_string(out, key);
        out.push(b':');
        write_json(out, member);
    }
    out.push(b'}');
}

/// Eight bytes of one value each, and their high bits.
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `word` must be escaped: a control
/// character (below 0x20), `"` or `\`. Exact: a byte's borrow can only
/// mark the bytes above it when that byte itself matched.
fn holds_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(0x20 * ONES) & !word;
    let quotes = word ^ (u64::from(b'"') * ONES);
    let backslashes = word ^ (u64::from(b'\\') * ONES);
    let quote = quotes.wrapping_sub(ONES) & !quotes;
    let backslash = backslashes.wrapping_sub(ONES) & !backslashes;
    (below_space | quote | backslash) & HIGHS != 0
}

/// How `byte` is escaped: 0 for not at all, `u` for `\u00xx`, else the
/// letter after the backslash.
fn escape_of(byte: u8) -> u8 {
    match byte {
        b'"' => b'"',
        b'\\' => b'\\',
        0x08 => b'b',
        0x0c => b'f',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x00..=0x1f => b'u',
        _ => 0,
    }
}

/// Appends `text` as a JSON string to `out`.
pub fn write_json_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.push(b'"');
    // `written`: where the run not yet copied starts.
    let (mut written, mut at) = (0, 0);
    while at < bytes.len() {
        while let Some(word) = bytes.get(at..at + 8) {
            if holds_escape(u64::from_le_bytes(word.try_into().expect("eight bytes"))) {
                break;
            }
            at += 8;
        }
        // A word that holds an escape (or the last few bytes), a byte at a
        // time.
        for at_byte in at..(at + 8).min(bytes.len()) {
            let escape = escape_of(bytes[at_byte]);
            if escape == 0 {
                continue;
            }
            out.extend_from_slice(&bytes[written..at_byte]);
            write_escape(out, bytes[at_byte], escape);
            written = at_byte + 1;
        }
        at += 8;
    }
    out.extend_from_slice(&bytes[written..]);
    out.push(b'"');
}

fn write_escape(out: &mut Vec<u8>, byte: u8, escape: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match escape {
        b'u' => {
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]])
        }
        letter => out.extend_from_slice(&[b'\\', letter]),
    }
}

#[cfg(test)]
mod tests;
