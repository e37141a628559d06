//! How `env` and `headers` values are shown: never their text.
//!
//! `warden config check` prints the resolved servers, and its output ends up
//! in bug reports and terminal scrollback. A value's literal text may be a
//! token, so it is shown as `***`; a `${VAR}` reference names a variable,
//! not a secret, and is what tells the user where the value comes from, so
//! it is kept: `"Bearer ${TOKEN}"` shows as `***${TOKEN}`. The masks are
//! taken before expansion, which replaces the references with values.

use std::collections::BTreeMap;

/// The shown form of a server's `env` and `headers`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Masked {
    /// `env`, each value masked.
    pub env: BTreeMap<String, String>,
    /// `headers`, each value masked.
    pub headers: BTreeMap<String, String>,
}

/// `text` with its literal parts as `***` and its `${VAR}` references kept.
pub(crate) fn mask(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let mut literal = false;
    loop {
        let reference = rest.find("${").filter(|at| !rest[..*at].ends_with('$'));
        let Some(at) = reference else {
            literal |= !rest.is_empty();
            break;
        };
        let Some(end) = rest[at..].find('}') else {
            literal = true;
            break;
        };
        if at > 0 {
            out.push_str("***");
        }
        out.push_str(&rest[at..at + end + 1]);
        rest = &rest[at + end + 1..];
        literal = false;
    }
    if literal || out.is_empty() {
        out.push_str("***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::mask;

    #[test]
    fn literal_text_is_hidden_and_references_are_named() {
        assert_eq!(mask("s3cret"), "***");
        assert_eq!(mask(""), "***");
        assert_eq!(mask("${TOKEN}"), "${TOKEN}");
        assert_eq!(mask("Bearer ${TOKEN}"), "***${TOKEN}");
        assert_eq!(mask("${USER}:${PASS}@host"), "${USER}***${PASS}***");
        assert_eq!(mask("$${NOT_A_REFERENCE}"), "***");
    }
}
