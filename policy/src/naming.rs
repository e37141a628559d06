//! Tool names a model can use.
//!
//! A host shows a model `server__tool`. The name must be unique across
//! servers and valid for every provider: Anthropic takes
//! `^[a-zA-Z0-9_-]{1,64}$`, Gemini also wants a letter or `_` first (server
//! names start with a letter, so every name does). MCP servers may use up to
//! 128 characters including `.`, so the tool part is made safe:
//!
//! - A tool name that is already valid is kept as it is: `fs__read_file`.
//! - A tool name with any other character has each one mapped to `_` and
//!   always gets `_` plus 8 hex digits of a hash of the *raw* tool name:
//!   `read.file` becomes `fs__read_file_1a2b3c4d`. So `a.b`, `a,b` and `a_b`
//!   stay three names, and a name depends only on its server and its own raw
//!   name — never on which other tools exist or in which order servers
//!   started, which is what keeps names stable across restarts and hosts.
//! - A name that would run past the limit (64 by default) is cut and ends in
//!   the same hash, so two long names that share a start stay two names.
//!
//! A hash can collide in theory (one in four billion per pair); the registry
//! still refuses a second tool under a taken name, so a collision costs a
//! warning, never a wrong call.
//!
//! Server names are held to a stricter rule (a letter first, then letters,
//! digits, `-` and single `_`, never ending in `_`), which makes the first
//! `__` of a namespaced name the end of the server part: no two servers can
//! produce the same name, and a name always splits back unambiguously.
//!
//! [`NameRules`] lets a host pick the single `_` separator some clients
//! prefer (`fs_read_file`) and a different limit. With `_`, server names may
//! not contain `_` at all (the first `_` ends the server part), and a
//! shorter limit also shortens the longest server name allowed, so the
//! separator and hash always fit. The free functions use the defaults.

/// Between the server name and the tool name, by default.
pub const SEPARATOR: &str = "__";

/// The longest name handed to a model, by default.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// The longest server name (leaves room for a useful tool part).
const MAX_SERVER_NAME_CHARS: usize = 32;

/// The separators a host may choose.
const ALLOWED_SEPARATORS: [&str; 2] = ["__", "_"];

/// The range a host may choose the name limit from: 16 leaves room for a
/// short server, the separator and the hash; 128 is what MCP itself allows.
const MAX_CHARS_RANGE: std::ops::RangeInclusive<usize> = 16..=128;

/// `_` and 8 hex digits.
const HASH_SUFFIX_CHARS: usize = 9;

/// Why a server name, or a naming rule, was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("a server name cannot be empty")]
    Empty,
    /// The name is too long.
    #[error("server name '{name}' is {chars} characters; the limit is {limit}")]
    TooLong {
        /// The name.
        name: String,
        /// Its length.
        chars: usize,
        /// The longest allowed under the rules in force.
        limit: usize,
    },
    /// The name breaks the character rules.
    #[error(
        "server name '{name}' {problem}; use a letter first, then letters, digits, '-' or single '_' (e.g. 'my-server')"
    )]
    BadCharacters {
        /// The name.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// The separator is `_` and the name contains one.
    #[error(
        "server name '{name}' contains '_', which ends the server part of tool names when the separator is '_'; \
         use '-' instead (e.g. '{suggestion}')"
    )]
    UnderscoreWithSingleSeparator {
        /// The name.
        name: String,
        /// The name with `-` for `_`.
        suggestion: String,
    },
    /// A separator other than the allowed ones.
    #[error("tool-name separator '{separator}' is not supported; use '__' or '_'")]
    BadSeparator {
        /// The separator asked for.
        separator: String,
    },
    /// A name limit outside the allowed range.
    #[error("tool-name limit {max_chars} is out of range; use a limit from 16 to 128 characters")]
    BadLimit {
        /// The limit asked for.
        max_chars: usize,
    },
}

/// How namespaced tool names are built: the separator and the length limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameRules {
    /// Between server and tool: `"__"` (the default) or `"_"`.
    pub separator: String,
    /// The longest name handed to a model (default 64).
    pub max_chars: usize,
}

impl Default for NameRules {
    fn default() -> NameRules {
        NameRules { separator: SEPARATOR.to_string(), max_chars: MAX_TOOL_NAME_CHARS }
    }
}

impl NameRules {
    /// Rules with `separator` (`"__"` or `"_"`) and `max_chars` (16 to 128).
    pub fn new(separator: &str, max_chars: usize) -> Result<NameRules, NameError> {
        if !ALLOWED_SEPARATORS.contains(&separator) {
            return Err(NameError::BadSeparator { separator: separator.to_string() });
        }
        if !MAX_CHARS_RANGE.contains(&max_chars) {
            return Err(NameError::BadLimit { max_chars });
        }
        Ok(NameRules { separator: separator.to_string(), max_chars })
    }

    /// The longest server name: 32, or less when the limit is so short that
    /// the server, the separator and the hash suffix would not fit.
    pub fn max_server_chars(&self) -> usize {
        MAX_SERVER_NAME_CHARS.min(self.max_chars.saturating_sub(self.separator.len() + HASH_SUFFIX_CHARS))
    }

    /// Checks a server name against the rules in the module doc.
    pub fn validate_server_name(&self, name: &str) -> Result<(), NameError> {
        let bad = |problem| Err(NameError::BadCharacters { name: name.to_string(), problem });
        let chars = name.chars().count();
        if chars == 0 {
            return Err(NameError::Empty);
        }
        let limit = self.max_server_chars();
        if chars > limit {
            return Err(NameError::TooLong { name: name.to_string(), chars, limit });
        }
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            return bad("does not start with a letter");
        }
        if !name.chars().all(is_safe) {
            return bad("has characters other than letters, digits, '-' and '_'");
        }
        if self.separator == "_" && name.contains('_') {
            return Err(NameError::UnderscoreWithSingleSeparator {
                name: name.to_string(),
                suggestion: name.replace('_', "-"),
            });
        }
        if name.contains("__") {
            return bad("contains '__', which separates server from tool in tool names");
        }
        if name.ends_with('_') {
            return bad("ends with '_'");
        }
        Ok(())
    }

    /// The name a model sees for `tool` of `server` (a valid server name).
    pub fn tool_name(&self, server: &str, tool: &str) -> String {
        let safe: String = tool.chars().map(|c| if is_safe(c) { c } else { '_' }).collect();
        let mapped = safe != tool;
        let full = format!("{server}{}{safe}", self.separator);
        if !mapped && full.len() <= self.max_chars {
            return full;
        }
        let hash = format!("_{:08x}", fnv1a(tool.as_bytes()) as u32);
        // `full` is ASCII by now, so byte indexing is character indexing.
        let keep = full.len().min(self.max_chars - hash.len());
        format!("{}{hash}", &full[..keep])
    }

    /// Splits a namespaced name at the first separator.
    pub fn split<'a>(&self, name: &'a str) -> Option<(&'a str, &'a str)> {
        name.split_once(self.separator.as_str())
    }
}

/// Checks a server name against the default rules.
pub fn validate_server_name(name: &str) -> Result<(), NameError> {
    NameRules::default().validate_server_name(name)
}

/// The name a model sees for `tool` of `server`, under the default rules.
pub fn namespaced_tool_name(server: &str, tool: &str) -> String {
    NameRules::default().tool_name(server, tool)
}

/// Splits `server__tool` at the first separator.
pub fn split_namespaced(name: &str) -> Option<(&str, &str)> {
    name.split_once(SEPARATOR)
}

/// A character every provider accepts in a tool name.
fn is_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests;
