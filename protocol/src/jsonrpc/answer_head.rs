//! Where a successful answer's id and result sit in its line, found
//! without decoding it.
//!
//! [`RawResponse::parse`](super::RawResponse::parse) reads the envelope with
//! serde: it checks the whole `result` as JSON (serde's `ignore_value`) and
//! copies it out, and the caller then decodes the same text again into its
//! own type. For the answer a caller waits on, that was two passes over the
//! result, an allocation and a copy on every call: about a tenth of an
//! embedded call's instructions (callgrind, `benches/call_latency.rs`).
//!
//! [`answer_head`] instead walks the line's structure — member names, the
//! `"2.0"`, the id's digits, and the result's brackets and strings — without
//! checking what is inside the result. A result written last (as the Python
//! SDK and serde write it) is not even walked: nothing may follow it, so it
//! ends at the line's last `}` but one. Whoever decodes the result from the
//! range it gives checks that: if `&line[result]` is valid JSON, the whole
//! line is the answer `Message::parse` would read, to the same id and the
//! same result (the property tests hold it to that). When the result does
//! not decode, the line goes the usual way, which says what is wrong as it
//! always did. One difference remains, at serde's nesting limit (128
//! levels): read alone, a result may nest one level deeper than inside its
//! envelope, so a result exactly at the limit is read here where the full
//! parse would have skipped the whole line.
//!
//! Only the plain shape is taken: `jsonrpc`, `id` and `result` once each,
//! in any order, with no other member, names and `"2.0"` unescaped, an id
//! that is a non-negative integer within `i64`, and a result that is an
//! object. Anything else (error answers, requests, an extra member, an
//! escaped name) is left to the full parse.

use std::ops::Range;

/// A successful answer's id and where its `result` is in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AnswerHead {
    /// The id of the request answered.
    pub(crate) id: i64,
    /// The byte range of the `result` object, not yet checked as JSON.
    pub(crate) result: Range<usize>,
}

/// Finds the id and result of `line` when it is a plain successful answer
/// whose result is an object; `None` leaves the line to the full parse.
pub(crate) fn answer_head(line: &str) -> Option<AnswerHead> {
    let bytes = line.as_bytes();
    let mut at = skip_space(bytes, 0);
    at = expect(bytes, at, b'{')?;
    let (mut jsonrpc, mut id, mut result) = (false, None, None);
    loop {
        at = skip_space(bytes, at);
        let (name, after) = plain_string(bytes, at)?;
        at = expect(bytes, skip_space(bytes, after), b':')?;
        at = skip_space(bytes, at);
        at = match name {
            b"jsonrpc" if !jsonrpc => {
                jsonrpc = true;
                let (version, after) = plain_string(bytes, at)?;
                (version == b"2.0").then_some(after)?
            }
            b"id" if id.is_none() => {
                let (number, after) = integer(bytes, at)?;
                id = Some(number);
                after
            }
            b"result" if result.is_none() && bytes.get(at) == Some(&b'{') => {
                // After `jsonrpc` and `id` nothing may follow the result, so
                // it ends where the line does, but for the envelope's `}`.
                if jsonrpc && id.is_some() {
                    let end = last_member_end(bytes).filter(|&end| end > at + 1)?;
                    return Some(AnswerHead { id: id?, result: at..end });
                }
                let end = container_end(bytes, at)?;
                result = Some(at..end);
                end
            }
            _ => return None,
        };
        at = skip_space(bytes, at);
        match bytes.get(at)? {
            b',' => at += 1,
            b'}' => break,
            _ => return None,
        }
    }
    let rest = skip_space(bytes, at + 1);
    (jsonrpc && rest == bytes.len()).then_some(AnswerHead { id: id?, result: result? })
}

/// Whether `byte` is JSON whitespace.
fn is_space(byte: &u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The first position at or after `at` that is not JSON whitespace.
fn skip_space(bytes: &[u8], at: usize) -> usize {
    at + bytes.get(at..).map_or(0, |rest| rest.iter().take_while(|byte| is_space(byte)).count())
}

/// The position after `byte`, when `byte` is at `at`.
fn expect(bytes: &[u8], at: usize, byte: u8) -> Option<usize> {
    (bytes.get(at) == Some(&byte)).then_some(at + 1)
}

/// A string at `at` with no escape in it: its contents and the position
/// after its closing quote.
fn plain_string(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let start = expect(bytes, at, b'"')?;
    let end = start + memchr::memchr2(b'"', b'\\', &bytes[start..])?;
    (bytes[end] == b'"').then_some((&bytes[start..end], end + 1))
}

/// A non-negative JSON integer at `at` that fits `i64`, and the position
/// after it. A fraction or exponent after the digits is refused by the
/// caller, which expects `,` or `}` next.
fn integer(bytes: &[u8], at: usize) -> Option<(i64, usize)> {
    let digits = bytes[at..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    // JSON has no leading zeros ("007"); serde refuses them, so must this.
    if digits == 0 || (digits > 1 && bytes[at] == b'0') {
        return None;
    }
    let mut value: i64 = 0;
    for &digit in &bytes[at..at + digits] {
        value = value.checked_mul(10)?.checked_add(i64::from(digit - b'0'))?;
    }
    Some((value, at + digits))
}

/// The position after the last member's value, when the line ends with
/// `}` (its envelope's) preceded by another `}` (the value's), whitespace
/// aside.
fn last_member_end(bytes: &[u8]) -> Option<usize> {
    let envelope_end = bytes.iter().rposition(|byte| !is_space(byte))?;
    if bytes[envelope_end] != b'}' {
        return None;
    }
    let value_end = bytes[..envelope_end].iter().rposition(|byte| !is_space(byte))?;
    (bytes[value_end] == b'}').then_some(value_end + 1)
}

/// The position after the object or array that opens at `at`, found by
/// counting brackets outside strings. Nothing else is checked: a result
/// that is not valid JSON fails whoever decodes it.
fn container_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match bytes.get(at)? {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            b'"' => at = string_end(bytes, at)? - 1,
            _ => {}
        }
        at += 1;
    }
}

/// The position after the string that opens at `at`, escapes skipped.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut at = at + 1;
    loop {
        at += memchr::memchr2(b'"', b'\\', &bytes[at..])?;
        if bytes[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash escapes the byte after it, whatever it is.
        at += 2;
        if at > bytes.len() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::jsonrpc::{Message, RequestId};

    /// The id and result text `answer_head` finds in `line`.
    fn head(line: &str) -> Option<(i64, &str)> {
        answer_head(line).map(|head| (head.id, &line[head.result]))
    }

    #[test]
    fn finds_the_id_and_result_of_a_plain_answer_in_any_member_order() {
        let found = [
            (r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#, 7, r#"{"content":[]}"#),
            // The TypeScript SDK writes the result first.
            (r#"{"result":{"content":[]},"jsonrpc":"2.0","id":3}"#, 3, r#"{"content":[]}"#),
            (r#"{"id":0,"result":{},"jsonrpc":"2.0"}"#, 0, "{}"),
            (" {\t\"jsonrpc\" : \"2.0\" ,\r\n\"id\": 12 , \"result\" :{ } } \r", 12, "{ }"),
            (r#"{"jsonrpc":"2.0","id":9223372036854775807,"result":{}}"#, i64::MAX, "{}"),
            // Brackets and quotes inside strings are not structure.
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"text":"}]{\"\\","a":[{"b":"\\\\"}]}}"#,
                1,
                r#"{"text":"}]{\"\\","a":[{"b":"\\\\"}]}"#,
            ),
        ];
        for (line, id, result) in found {
            assert_eq!(head(line), Some((id, result)), "{line}");
            let value: Value = serde_json::from_str(result).unwrap();
            assert_eq!(Message::parse(line).unwrap(), Message::result(RequestId::Number(id), value), "{line}");
        }
    }

    #[test]
    fn leaves_every_other_line_to_the_full_parse() {
        let left = [
            r#"{"jsonrpc":"2.0","id":7,"result":{}},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":1}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[1]}"#,
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"nope"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"error":null}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.\u0030","id":7,"result":{}}"#,
            r#"{"json\u0072pc":"2.0","id":7,"result":{}}"#,
            r#"{"jsonrpc":"1.0","id":7,"result":{}}"#,
            r#"{"id":7,"result":{}}"#,
            r#"{"jsonrpc":"2.0","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":"7","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":-1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":007,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1e3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{}} trailing"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{},}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":"}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"a":"\"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"#,
            r#"{"jsonrpc":"2.0","id":7"#,
            "{}",
            "",
            "not json",
        ];
        for line in left {
            // Not found, or found with a range that is not one JSON value
            // (a result written last is delimited by the line's end), which
            // its decoder refuses.
            if let Some((_, result)) = head(line) {
                assert!(serde_json::from_str::<Value>(result).is_err(), "{line}: {result}");
            }
        }
    }
}
