//! JSON with comments and trailing commas — Zed's `settings.json` and VS
//! Code's `mcp.json` — made plain JSON: `//` and `/* */` comments and a
//! comma before `}` or `]` are dropped, strings left alone.

/// `text` as plain JSON.
pub(crate) fn to_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut in_string = false;
    while let Some((at, c)) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next().map(|(_, escaped)| escaped)),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek().map(|&(_, next)| next)) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/' | '*')) => {
                let end = comment_end(text, at);
                while chars.peek().is_some_and(|&(next, _)| next < end) {
                    chars.next();
                }
            }
            // A trailing comma: the next significant character closes.
            (',', _) if matches!(first_significant(&text[at + 1..]), Some('}' | ']')) => {}
            _ => out.push(c),
        }
    }
    out
}

/// Where the comment starting at `at` ends (the byte after it; a line
/// comment keeps its newline).
fn comment_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    if rest.starts_with("//") {
        at + rest.find('\n').unwrap_or(rest.len())
    } else {
        at + rest[2..].find("*/").map_or(rest.len(), |end| end + 4)
    }
}

/// Whether `text` holds comments (which a rewrite would lose).
pub(crate) fn has_comments(text: &str) -> bool {
    let plain = to_json(text);
    // Only comments and trailing commas are dropped; whitespace aside, the
    // same length means there were none.
    let squeeze = |text: &str| text.chars().filter(|c| !c.is_whitespace()).count();
    squeeze(&plain) != squeeze(text)
}

/// The first character that is not whitespace or inside a comment.
fn first_significant(text: &str) -> Option<char> {
    let mut at = 0;
    while let Some(c) = text[at..].chars().next() {
        if c.is_whitespace() {
            at += c.len_utf8();
        } else if text[at..].starts_with("//") || text[at..].starts_with("/*") {
            at = comment_end(text, at);
        } else {
            return Some(c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_trailing_commas_go_strings_stay() {
        let text = "// Zed settings\n{\n  \"a\": \"http://x//y /* no */\", /* c */\n  \"b\": [1, 2,],\n}\n";
        let value: serde_json::Value = serde_json::from_str(&to_json(text)).unwrap();
        assert_eq!(value, serde_json::json!({"a": "http://x//y /* no */", "b": [1, 2]}));
        assert!(has_comments(text));
        assert!(!has_comments("{\"a\": \"//\"}"));
    }
}
