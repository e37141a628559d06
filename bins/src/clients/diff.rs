//! What `--dry-run` prints: a unified diff of each file a command would
//! change, as `diff -u` would show it.

use std::path::Path;

/// The unified diff from `before` to `after` of `path` (empty when equal).
pub(crate) fn unified(path: &Path, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    let name = path.display().to_string();
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("{name} (now)"), &format!("{name} (after)"))
        .to_string()
}
