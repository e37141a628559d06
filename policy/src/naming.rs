//! Tool names a model can use.
//!
//! A host shows a model `server__tool`. The name must be unique across
//! servers and valid for every provider: Anthropic takes
//! `^[a-zA-Z0-9_-]{1,64}$`, Gemini also wants a letter or `_` first. MCP
//! servers may use up to 128 characters including `.`, so the tool part is
//! made safe: other characters become `_`, and a name that would run past 64
//! characters is cut and ends in a short hash of the original, so two long
//! names that share a start stay two names.
//!
//! Server names are held to a stricter rule (a letter first, then letters,
//! digits, `-` and single `_`, never ending in `_`), which makes the first
//! `__` of a namespaced name the end of the server part: no two servers can
//! produce the same name, and a name always splits back unambiguously.

/// Between the server name and the tool name.
pub const SEPARATOR: &str = "__";

/// The longest name handed to a model.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// The longest server name (leaves room for a useful tool part).
const MAX_SERVER_NAME_CHARS: usize = 32;

/// Why a server name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("a server name cannot be empty")]
    Empty,
    /// The name is too long.
    #[error("server name '{name}' is {chars} characters; the limit is {MAX_SERVER_NAME_CHARS}")]
    TooLong {
        /// The name.
        name: String,
        /// Its length.
        chars: usize,
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
}

/// Checks a server name against the rules above.
pub fn validate_server_name(name: &str) -> Result<(), NameError> {
    let bad = |problem| Err(NameError::BadCharacters { name: name.to_string(), problem });
    let chars = name.chars().count();
    if chars == 0 {
        return Err(NameError::Empty);
    }
    if chars > MAX_SERVER_NAME_CHARS {
        return Err(NameError::TooLong { name: name.to_string(), chars });
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return bad("does not start with a letter");
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return bad("has characters other than letters, digits, '-' and '_'");
    }
    if name.contains(SEPARATOR) {
        return bad("contains '__', which separates server from tool in tool names");
    }
    if name.ends_with('_') {
        return bad("ends with '_'");
    }
    Ok(())
}

/// The name a model sees for `tool` of `server` (a valid server name).
pub fn namespaced_tool_name(server: &str, tool: &str) -> String {
    let safe: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
    let full = format!("{server}{SEPARATOR}{safe}");
    if full.len() <= MAX_TOOL_NAME_CHARS {
        return full;
    }
    let hash = format!("_{:08x}", fnv1a(tool.as_bytes()) as u32);
    let keep = MAX_TOOL_NAME_CHARS - hash.len();
    // `full` is ASCII by now, so byte indexing is character indexing.
    format!("{}{hash}", &full[..keep])
}

/// Splits `server__tool` at the first separator.
pub fn split_namespaced(name: &str) -> Option<(&str, &str)> {
    name.split_once(SEPARATOR)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests;
