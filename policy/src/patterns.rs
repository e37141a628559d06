//! Tool name patterns: an exact name or a glob.
//!
//! Allowlists, grants and tool profiles all name tools the same way:
//! `fs__read_file` is that tool, `fs__*` is every tool of `fs` — present
//! and future, because a pattern is matched against a name when a call is
//! made, never expanded into a list at load time. `*` is any run of
//! characters, `?` one character, `[abc]` a class; names have no `/`, so
//! there is nothing like a path separator to stop `*`.

use globset::{GlobBuilder, GlobMatcher};

/// One exact name or glob.
#[derive(Debug, Clone)]
pub struct ToolPattern {
    text: String,
    /// `None` for an exact name (the common case, and a plain compare).
    glob: Option<GlobMatcher>,
}

/// A pattern that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tool pattern '{pattern}' is not a valid glob ({problem}); use an exact name or '*', '?', '[...]', e.g. 'fs__*'"
)]
pub struct PatternError {
    /// The pattern as written.
    pub pattern: String,
    /// What the glob parser said.
    pub problem: String,
}

impl ToolPattern {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Result<ToolPattern, PatternError> {
        let fail = |problem: String| PatternError { pattern: pattern.to_string(), problem };
        if pattern.is_empty() {
            return Err(fail("it is empty".into()));
        }
        if !pattern.contains(['*', '?', '[', ']', '{', '}']) {
            return Ok(ToolPattern { text: pattern.to_string(), glob: None });
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(false)
            .build()
            .map_err(|error| fail(error.kind().to_string()))?;
        Ok(ToolPattern { text: pattern.to_string(), glob: Some(glob.compile_matcher()) })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        match &self.glob {
            None => self.text == name,
            Some(glob) => glob.is_match(name),
        }
    }

    /// Whether this is an exact name rather than a glob.
    pub fn is_exact(&self) -> bool {
        self.glob.is_none()
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for ToolPattern {}

/// Several patterns; a name matches when any of them does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolPatterns {
    patterns: Vec<ToolPattern>,
}

impl ToolPatterns {
    /// Compiles every pattern; the first bad one is the error.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<ToolPatterns, PatternError> {
        let patterns = patterns.iter().map(|pattern| ToolPattern::new(pattern.as_ref())).collect::<Result<_, _>>()?;
        Ok(ToolPatterns { patterns })
    }

    /// The first pattern `name` matches.
    pub fn first_match(&self, name: &str) -> Option<&ToolPattern> {
        self.patterns.iter().find(|pattern| pattern.matches(name))
    }

    /// Whether any pattern matches `name`.
    pub fn matches(&self, name: &str) -> bool {
        self.first_match(name).is_some()
    }

    /// The patterns as written.
    pub fn iter(&self) -> impl Iterator<Item = &ToolPattern> {
        self.patterns.iter()
    }
}

#[cfg(test)]
mod tests;
