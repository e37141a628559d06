//! Leak detection: secrets that must not travel between a model and a server.
//!
//! Warden hands secrets to servers (tokens in `env`, headers) and sees every
//! argument and result that passes. A [`LeakScanner`] finds two kinds of
//! secret in that traffic:
//!
//! - **Known secrets**: the exact values Warden handed out, each with a
//!   label (`GITHUB_PAT`) that is shown instead of the value. They are found
//!   anywhere, even inside a longer word or a URL, because the value is
//!   exact. Values shorter than 8 characters are ignored: a 4-character
//!   "secret" such as `true` or `1234` would redact ordinary words and
//!   numbers all over the output. The same value given twice is scanned for
//!   once, under the first label.
//! - **Shapes**: well-known token formats, whoever issued them. Each is a
//!   named kind: `aws_access_key`, `github_token`, `gitlab_token`,
//!   `slack_token`, `openai_key`, `anthropic_key`, `google_api_key`,
//!   `stripe_key` and `private_key` (a PEM block, from `-----BEGIN … PRIVATE
//!   KEY-----` through its `-----END` line; when the end line is missing,
//!   as in cut output, the base64 body after the header). Token shapes must
//!   start at a word boundary, and an AWS key (all capitals and digits, so
//!   easily part of a longer word) must end at one too, so `task-…`, a git
//!   SHA, a UUID or base64 data do not match. A prefix alone (`ghp_`,
//!   `sk-`) is not enough: each shape needs its full length of body.
//!
//! Where a known secret and a shape cover the same text, the known label
//! wins (it says more: which secret, not just what kind); overlapping
//! matches are merged into one redaction, labelled by a known secret if one
//! is involved, otherwise by the leftmost match.
//!
//! Redaction replaces each match with `[REDACTED:<kind>]`. In JSON, every
//! string and every object key is scanned; a [`Leak`]'s path is the JSON
//! pointer of the string, built from already redacted keys, so a report
//! never repeats the secret it is about. A scan reports each kind once per
//! string, however often it occurs there.
//!
//! Everything is compiled once in [`LeakScanner::new`]: one regex of the
//! known values (escaped literals, longest first, which the `regex` crate
//! searches with Aho-Corasick) and one alternation of all shapes, whose
//! literal prefixes (`AKIA`, `ghp_`, `-----BEGIN`, …) let the engine skip
//! text that cannot match. A scan is two linear passes over the text (a PEM
//! header without an end line makes the engine read on to the end once
//! more). Short text is first walked for the byte pairs a secret can begin
//! with, and passed over when none stands where one could (`starts.rs`):
//! on a short string, starting the engines cost more than the text.
//! `benches/leak_scan.rs` measures it.
//!
//! Not caught: a known value that reaches the text transformed — URL- or
//! base64-encoded, split across lines, or with `"` and `\` escaped inside a
//! JSON string that is scanned as raw text (scan the parsed JSON instead:
//! its strings are unescaped).

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use starts::Starts;

mod starts;

/// Known values shorter than this are ignored (see the module doc).
const MIN_KNOWN_CHARS: usize = 8;

/// The longest text the pre-check walks (`starts.rs`): where starting a
/// search costs more than reading the text.
const PRECHECK_MAX_BYTES: usize = 256;

/// An ASCII word boundary: secrets are ASCII, and the ASCII form keeps the
/// fast DFA engines usable on any text.
const B: &str = r"(?-u:\b)";

/// A secret Warden knows, because it handed it to a server.
#[derive(Clone)]
pub struct KnownSecret {
    /// A name for it (`GITHUB_PAT`), shown in redactions instead of the value.
    pub label: String,
    /// The value itself.
    pub value: String,
}

impl fmt::Debug for KnownSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KnownSecret").field("label", &self.label).field("value", &"<hidden>").finish()
    }
}

/// One secret found in a text or a JSON tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// The known secret's label, or a shape name such as `github_token`.
    pub kind: String,
    /// The JSON pointer of the string it was found in; `""` for plain text.
    pub path: String,
}

/// Finds and redacts secrets; see the module doc for what counts.
#[derive(Clone)]
pub struct LeakScanner {
    /// The known values, longest first; `None` when there are none.
    known: Option<Regex>,
    /// Value → label, to name a known match.
    labels: HashMap<String, String>,
    /// Every shape, one named group each.
    shapes: Regex,
    /// The fewest bytes any secret can take: shorter text (most object
    /// keys, short values) holds none and is not searched.
    shortest: usize,
    /// The byte pairs a secret can begin with: text where none stands
    /// where a secret could begin is not searched (`starts.rs`).
    starts: Option<Starts>,
}

impl fmt::Debug for LeakScanner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut labels: Vec<&str> = self.labels.values().map(String::as_str).collect();
        labels.sort_unstable();
        f.debug_struct("LeakScanner").field("known", &labels).field("shapes", &SHAPES.len()).finish()
    }
}

/// The shapes, each a named group of the one alternation. Order matters
/// where two could start at the same place: `anthropic_key` (`sk-ant-`)
/// comes before the broader `openai_key` (`sk-`).
const SHAPES: &[(&str, &str)] = &[
    (
        "private_key",
        concat!(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----",
            r"(?:(?s:.)*?-----END[A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\]*)"
        ),
    ),
    ("aws_access_key", r"(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b)"),
    ("github_token", r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})"),
    ("gitlab_token", r"glpat-[A-Za-z0-9_-]{20,}"),
    ("slack_token", r"xox[abprs]-[A-Za-z0-9-]{10,}"),
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_-]{32,}"),
    ("openai_key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_-]{35}"),
    ("stripe_key", r"(?:sk|rk)_live_[0-9A-Za-z]{24,}"),
];

/// A match before merging: where, what, and whether it is a known secret.
struct Hit {
    span: Range<usize>,
    kind: String,
    known: bool,
}

impl LeakScanner {
    /// Compiles a scanner for `known` secrets plus every shape.
    pub fn new(known: Vec<KnownSecret>) -> LeakScanner {
        let mut labels = HashMap::new();
        for secret in known {
            if secret.value.chars().count() >= MIN_KNOWN_CHARS {
                labels.entry(secret.value).or_insert(secret.label);
            }
        }
        let known = (!labels.is_empty()).then(|| {
            let mut values: Vec<&str> = labels.keys().map(String::as_str).collect();
            // Longest first, so a value that contains another wins where both start.
            values.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
            let pattern = values.iter().map(|value| regex::escape(value)).collect::<Vec<_>>().join("|");
            RegexBuilder::new(&pattern)
                .size_limit(1 << 28)
                .dfa_size_limit(1 << 28)
                .build()
                .expect("an alternation of escaped literals always compiles")
        });
        let pattern = SHAPES
            .iter()
            .map(|(name, shape)| {
                let start = if name == &"private_key" { "" } else { B };
                format!("(?P<{name}>{start}{shape})")
            })
            .collect::<Vec<_>>()
            .join("|");
        let shapes = Regex::new(&pattern).expect("the built-in shapes compile");
        let known_shortest = labels.keys().map(String::len).min().unwrap_or(usize::MAX);
        let shortest = known_shortest.min(minimum_len(&pattern));
        let each_shape: Vec<(&str, bool)> =
            SHAPES.iter().map(|(name, shape)| (*shape, *name != "private_key")).collect();
        let starts = Starts::new(&each_shape, labels.keys().map(String::as_str));
        LeakScanner { known, labels, shapes, shortest, starts }
    }

    /// No known secrets were given (or all were too short); shapes are
    /// still scanned for.
    pub fn is_empty_of_known(&self) -> bool {
        self.known.is_none()
    }

    /// Every secret in `text`, each kind once, in order of first appearance.
    pub fn find_in_text(&self, text: &str) -> Vec<Leak> {
        let mut leaks = Vec::new();
        for hit in self.hits(text) {
            push_once(&mut leaks, hit.kind, "");
        }
        leaks
    }

    /// `text` with every secret replaced by `[REDACTED:<kind>]`, and what was
    /// found; `None` when nothing was.
    pub fn redact_text(&self, text: &str) -> Option<(String, Vec<Leak>)> {
        let hits = self.hits(text);
        if hits.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut leaks = Vec::new();
        let mut last = 0;
        for hit in hits {
            out.push_str(&text[last..hit.span.start]);
            out.push_str("[REDACTED:");
            out.push_str(&hit.kind);
            out.push(']');
            last = hit.span.end;
            push_once(&mut leaks, hit.kind, "");
        }
        out.push_str(&text[last..]);
        Some((out, leaks))
    }

    /// Every secret in the strings and object keys of `value`.
    pub fn find_in_json(&self, value: &Value) -> Vec<Leak> {
        let mut leaks = Vec::new();
        self.find_json_at(value, Place::Root, &mut leaks);
        leaks
    }

    /// Redacts every string and object key of `value` in place; numbers,
    /// booleans and nulls are left alone. Returns what was found.
    pub fn redact_json(&self, value: &mut Value) -> Vec<Leak> {
        let mut leaks = Vec::new();
        self.redact_json_at(value, Place::Root, &mut leaks);
        leaks
    }

    fn find_json_at(&self, value: &Value, place: Place<'_>, leaks: &mut Vec<Leak>) {
        match value {
            Value::String(text) => self.note(text, place, leaks),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.find_json_at(item, Place::Index(&place, index), leaks);
                }
            }
            Value::Object(map) => {
                // Keys first, then values, in the order `redact_json` finds
                // them. A key holding a secret is named redacted in paths;
                // those (rare) are kept by position.
                let mut renamed: Vec<(usize, String)> = Vec::new();
                for (index, key) in map.keys().enumerate() {
                    if let Some((redacted, found)) = self.redact_text(key) {
                        let pointer = Place::Key(&place, &redacted).pointer();
                        for leak in found {
                            push_once(leaks, leak.kind, &pointer);
                        }
                        renamed.push((index, redacted));
                    }
                }
                let mut renamed = renamed.iter().peekable();
                for (index, (key, item)) in map.iter().enumerate() {
                    let shown =
                        renamed.next_if(|(at, _)| *at == index).map_or(key.as_str(), |(_, shown)| shown.as_str());
                    self.find_json_at(item, Place::Key(&place, shown), leaks);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn redact_json_at(&self, value: &mut Value, place: Place<'_>, leaks: &mut Vec<Leak>) {
        match value {
            Value::String(text) => {
                if let Some((redacted, found)) = self.redact_text(text) {
                    *text = redacted;
                    let pointer = place.pointer();
                    for leak in found {
                        push_once(leaks, leak.kind, &pointer);
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    self.redact_json_at(item, Place::Index(&place, index), leaks);
                }
            }
            Value::Object(map) => {
                if map.keys().any(|key| !self.hits(key).is_empty()) {
                    // Rebuild the map so keys can change; the order is kept.
                    let old = std::mem::take(map);
                    for (key, item) in old {
                        let key = match self.redact_text(&key) {
                            Some((redacted, found)) => {
                                let redacted = unique_key(map, redacted);
                                let pointer = Place::Key(&place, &redacted).pointer();
                                for leak in found {
                                    push_once(leaks, leak.kind, &pointer);
                                }
                                redacted
                            }
                            None => key,
                        };
                        map.insert(key, item);
                    }
                }
                for (key, item) in map.iter_mut() {
                    self.redact_json_at(item, Place::Key(&place, key), leaks);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Records the leaks of one string at `place`.
    fn note(&self, text: &str, place: Place<'_>, leaks: &mut Vec<Leak>) {
        let hits = self.hits(text);
        if hits.is_empty() {
            return;
        }
        let pointer = place.pointer();
        for hit in hits {
            push_once(leaks, hit.kind, &pointer);
        }
    }

    /// Whether `text` is short and the pre-check promises it holds no
    /// secret. Long text goes straight to the engines, whose own literal
    /// prefilter reads faster than the pre-check's walk; so a long text
    /// whose one possible start comes late is never read twice.
    fn passes_over(&self, text: &str) -> bool {
        text.len() <= PRECHECK_MAX_BYTES && self.starts.as_ref().is_some_and(|starts| !starts.may_begin_in(text))
    }

    /// Every match in `text`, merged, in order.
    fn hits(&self, text: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        if text.len() < self.shortest || self.passes_over(text) {
            return hits;
        }
        if let Some(known) = &self.known {
            for found in known.find_iter(text) {
                let kind = self.labels.get(found.as_str()).cloned().unwrap_or_default();
                hits.push(Hit { span: found.range(), kind, known: true });
            }
        }
        // Found first, named after: most text holds no secret, and a plain
        // search neither allocates capture slots nor needs the slower
        // engines that report groups. The captures search from a match's
        // start finds that same match (leftmost-first, the text before it
        // still seen for `\b`), now with the group that names its kind.
        for found in self.shapes.find_iter(text) {
            let captures = self.shapes.captures_at(text, found.start()).expect("the match just found");
            let kind = SHAPES.iter().find(|(name, _)| captures.name(name).is_some()).map_or("secret", |(name, _)| name);
            hits.push(Hit { span: found.range(), kind: kind.to_string(), known: false });
        }
        merge(hits)
    }
}

/// The fewest bytes a match of `pattern` can take (0 when unknown).
fn minimum_len(pattern: &str) -> usize {
    regex_syntax::parse(pattern).ok().and_then(|hir| hir.properties().minimum_len()).unwrap_or(0)
}

/// Sorts hits and merges overlapping ones: a known secret names the merged
/// hit if one is in it, otherwise the leftmost (then longest) hit does.
fn merge(mut hits: Vec<Hit>) -> Vec<Hit> {
    if hits.len() < 2 {
        return hits;
    }
    hits.sort_by(|a, b| a.span.start.cmp(&b.span.start).then(b.known.cmp(&a.known)).then(b.span.end.cmp(&a.span.end)));
    let mut merged: Vec<Hit> = Vec::with_capacity(hits.len());
    for hit in hits {
        match merged.last_mut() {
            Some(last) if hit.span.start < last.span.end => {
                last.span.end = last.span.end.max(hit.span.end);
                if hit.known && !last.known {
                    last.kind = hit.kind;
                    last.known = true;
                }
            }
            _ => merged.push(hit),
        }
    }
    merged
}

/// Adds a leak unless the same kind at the same path is already there.
fn push_once(leaks: &mut Vec<Leak>, kind: String, path: &str) {
    if !leaks.iter().any(|leak| leak.kind == kind && leak.path == path) {
        leaks.push(Leak { kind, path: path.to_string() });
    }
}

/// Where a string sits in a JSON tree: a chain of its parents, on the
/// walk's stack. Its JSON pointer is written only when a leak is found
/// there; the walk over a tree holding no secret allocates nothing.
#[derive(Clone, Copy)]
enum Place<'a> {
    Root,
    Key(&'a Place<'a>, &'a str),
    Index(&'a Place<'a>, usize),
}

impl Place<'_> {
    /// The JSON pointer (RFC 6901) of this place: `~` and `/` in keys escaped.
    fn pointer(&self) -> String {
        let mut pointer = String::new();
        self.write_pointer(&mut pointer);
        pointer
    }

    fn write_pointer(&self, pointer: &mut String) {
        match *self {
            Place::Root => {}
            Place::Key(parent, key) => {
                parent.write_pointer(pointer);
                pointer.push('/');
                for c in key.chars() {
                    match c {
                        '~' => pointer.push_str("~0"),
                        '/' => pointer.push_str("~1"),
                        c => pointer.push(c),
                    }
                }
            }
            Place::Index(parent, index) => {
                parent.write_pointer(pointer);
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
        }
    }
}

/// `key`, or `key~2`, `key~3`… when two redacted keys would collide, so no
/// member is lost.
fn unique_key(map: &serde_json::Map<String, Value>, key: String) -> String {
    if !map.contains_key(&key) {
        return key;
    }
    (2..).map(|n| format!("{key}~{n}")).find(|candidate| !map.contains_key(candidate)).expect("some suffix is free")
}

#[cfg(test)]
mod tests;
