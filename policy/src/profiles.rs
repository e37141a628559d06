//! Tool profiles: how much of each tool definition a model is shown.
//!
//! Every tool definition sent to a model costs context on every turn, and a
//! host with many servers can spend thousands of tokens on schemas before
//! the conversation starts. A [`ToolProfile`] picks a [`Detail`] per tool,
//! and [`present_tool`] builds what the model sees at that detail:
//!
//! - **`full`**: the tool exactly as the server listed it — `title`,
//!   `description`, `inputSchema`, `outputSchema`, `annotations`, `_meta`
//!   and any member Warden does not know — with only `name` replaced by the
//!   namespaced name.
//! - **`summary`**: `name`; `title` if the server gave one; `description`
//!   cut to one sentence (the cached summary when there is one, otherwise
//!   the first sentence of the server's description, see
//!   [`first_sentence`]); `inputSchema` in full (an empty object schema if
//!   the server gave none); `annotations` if given. `outputSchema`, `_meta`
//!   and unknown members are left out.
//! - **`brief`**: `name`; `description` as one line of at most 120
//!   characters (the summary or first sentence, cut on a character boundary
//!   and ending in `…` when longer) followed by ` Call describe_tool for its
//!   parameters.`; and `inputSchema` `{"type":"object"}`. The model fetches
//!   the real schema when it decides to use the tool.
//! - **`deferred`**: not in the presented list at all; the model finds it
//!   with the built-in `find_tools` (tool search), which a list that
//!   defers any tool carries. [`present_tool`] shows a deferred tool as
//!   `brief`, for a caller that presents it anyway.
//!
//! Rules map tool names to details. A rule's pattern is an exact tool name,
//! or a glob when it contains `*` (any run of characters), `?` (one
//! character), `[..]` (a character class) or `{a,b}` (alternatives); `/` is
//! an ordinary character. Patterns are matched against the name as given to
//! [`ToolProfile::detail_for`]. The rule that applies is chosen the same
//! way whatever order the config listed them in: an exact name beats every
//! glob; among matching globs the longest pattern wins, and patterns of
//! equal length are taken in text order. A tool no rule matches gets the
//! profile's default.

use std::collections::HashMap;

use globset::{GlobBuilder, GlobMatcher};
use serde_json::{json, Map, Value};

/// The longest `brief` description before the describe-tool hint.
const BRIEF_CHARS: usize = 120;

/// What a `brief` tool's description ends with.
const BRIEF_HINT: &str = "Call describe_tool for its parameters.";

/// How much of a tool definition the model sees; see the module doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// Everything the server listed.
    Full,
    /// One sentence of description and the full input schema.
    Summary,
    /// One line and no schema.
    Brief,
    /// Not presented: found with `find_tools`.
    Deferred,
}

/// Why a tool profile was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// A glob that does not parse.
    #[error("tool profile pattern '{pattern}' is not a valid glob: {problem}")]
    BadGlob {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An empty pattern.
    #[error("a tool profile pattern cannot be empty")]
    EmptyPattern,
    /// The same pattern with two different details.
    #[error("tool profile pattern '{pattern}' is given twice, as {first:?} and as {second:?}; keep one")]
    Conflicting {
        /// The pattern.
        pattern: String,
        /// One detail given.
        first: Detail,
        /// The other.
        second: Detail,
    },
}

/// Which [`Detail`] each tool gets.
#[derive(Debug, Clone)]
pub struct ToolProfile {
    default: Detail,
    exact: HashMap<String, Detail>,
    /// Longest pattern first, then in text order: the first match wins.
    globs: Vec<GlobRule>,
}

#[derive(Debug, Clone)]
struct GlobRule {
    pattern: String,
    matcher: GlobMatcher,
    detail: Detail,
}

impl ToolProfile {
    /// A profile from `default` and rules of (pattern, detail); a pattern is
    /// an exact tool name or a glob (`*`, `?`, `[..]`).
    pub fn new(default: Detail, rules: Vec<(String, Detail)>) -> Result<ToolProfile, ProfileError> {
        let mut exact = HashMap::new();
        let mut globs: Vec<GlobRule> = Vec::new();
        let mut seen: HashMap<String, Detail> = HashMap::new();
        for (pattern, detail) in rules {
            if pattern.is_empty() {
                return Err(ProfileError::EmptyPattern);
            }
            if let Some(&first) = seen.get(&pattern) {
                if first != detail {
                    return Err(ProfileError::Conflicting { pattern, first, second: detail });
                }
                continue;
            }
            seen.insert(pattern.clone(), detail);
            if !is_glob(&pattern) {
                exact.insert(pattern, detail);
                continue;
            }
            let glob = GlobBuilder::new(&pattern).literal_separator(false).build().map_err(|error| {
                ProfileError::BadGlob { pattern: pattern.clone(), problem: error.kind().to_string() }
            })?;
            globs.push(GlobRule { pattern, matcher: glob.compile_matcher(), detail });
        }
        globs.sort_by(|a, b| b.pattern.len().cmp(&a.pattern.len()).then_with(|| a.pattern.cmp(&b.pattern)));
        Ok(ToolProfile { default, exact, globs })
    }

    /// The detail `tool_name` is shown at.
    pub fn detail_for(&self, tool_name: &str) -> Detail {
        if let Some(&detail) = self.exact.get(tool_name) {
            return detail;
        }
        self.globs.iter().find(|rule| rule.matcher.is_match(tool_name)).map_or(self.default, |rule| rule.detail)
    }
}

/// A pattern with glob syntax in it; anything else is an exact name.
fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

/// What the model sees of `tool` (the MCP Tool JSON as the server listed
/// it) at `detail`, under the namespaced `name`, using the cached one-line
/// `summary` when there is one.
pub fn present_tool(name: &str, tool: &Value, detail: Detail, summary: Option<&str>) -> Value {
    let member = |key: &str| tool.get(key).filter(|value| !value.is_null());
    let short = || {
        let summary = summary.map(str::trim).filter(|summary| !summary.is_empty());
        summary
            .map(one_line)
            .unwrap_or_else(|| first_sentence(member("description").and_then(Value::as_str).unwrap_or_default()))
    };
    match detail {
        Detail::Full => {
            let mut shown = tool.as_object().cloned().unwrap_or_default();
            shown.insert("name".to_string(), Value::String(name.to_string()));
            Value::Object(shown)
        }
        Detail::Summary => {
            let mut shown = Map::new();
            shown.insert("name".to_string(), Value::String(name.to_string()));
            if let Some(title) = member("title") {
                shown.insert("title".to_string(), title.clone());
            }
            let description = short();
            if !description.is_empty() {
                shown.insert("description".to_string(), Value::String(description));
            }
            let schema = member("inputSchema").cloned().unwrap_or_else(|| json!({ "type": "object" }));
            shown.insert("inputSchema".to_string(), schema);
            if let Some(annotations) = member("annotations") {
                shown.insert("annotations".to_string(), annotations.clone());
            }
            Value::Object(shown)
        }
        Detail::Brief | Detail::Deferred => {
            let line = cut_chars(&short(), BRIEF_CHARS);
            let description = if line.is_empty() { BRIEF_HINT.to_string() } else { format!("{line} {BRIEF_HINT}") };
            json!({ "name": name, "description": description, "inputSchema": { "type": "object" } })
        }
    }
}

/// The first sentence of `text`, on one line.
///
/// The sentence runs to the first `.`, `!` or `?` that is followed by
/// whitespace (the mark is kept), to the first blank line, or to the end.
/// So `v1.2` or `3.5` never end a sentence (no whitespace after the dot),
/// and neither do the abbreviations `e.g.`, `i.e.`, `vs.` and `cf.`
/// (checked without regard to case). Line breaks and runs of whitespace
/// inside the sentence become one space, and the result is trimmed.
pub fn first_sentence(text: &str) -> String {
    let text = text.trim();
    let mut end = text.len();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let next = chars.peek().map(|&(_, next)| next);
        if c == '\n' && text[at + 1..].trim_start_matches([' ', '\t', '\r']).starts_with('\n') {
            end = at;
            break;
        }
        if matches!(c, '.' | '!' | '?') && next.is_some_and(char::is_whitespace) && !ends_abbreviation(&text[..=at]) {
            end = at + 1;
            break;
        }
    }
    one_line(&text[..end])
}

/// `sentence` ends in an abbreviation that does not end a sentence.
fn ends_abbreviation(sentence: &str) -> bool {
    let word = sentence.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or_default();
    ["e.g.", "i.e.", "vs.", "cf."].iter().any(|abbreviation| word.eq_ignore_ascii_case(abbreviation))
}

/// `text` with every run of whitespace as one space, trimmed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
fn cut_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests;
