//! The `[audit]` table: the daemon's record of every call (`audit.jsonl`).
//!
//! ```toml
//! [audit]
//! enabled = true            # default: every call is recorded
//! arguments = "digest"      # or "redacted": the arguments too, secrets redacted
//! max_mb = 10               # rotated past this size...
//! files = 5                 # ...keeping this many old files
//! ```
//!
//! On by default: the record is how an operator shows afterwards who was
//! allowed to do what. Arguments are kept only as a SHA-256 digest unless
//! `arguments = "redacted"` says otherwise, since they may hold what a
//! person typed.

use serde::Deserialize;

/// The `[audit]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditConfig {
    /// Record every call.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `digest` (default) or `redacted`.
    #[serde(default = "digest")]
    pub arguments: String,
    /// The size past which the file is rotated, in MiB.
    #[serde(default = "default_max_mb")]
    pub max_mb: f64,
    /// How many rotated files are kept.
    #[serde(default = "default_files")]
    pub files: u32,
}

fn yes() -> bool {
    true
}

fn digest() -> String {
    "digest".into()
}

fn default_max_mb() -> f64 {
    10.0
}

fn default_files() -> u32 {
    5
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig { enabled: true, arguments: digest(), max_mb: default_max_mb(), files: default_files() }
    }
}

impl AuditConfig {
    /// Whether records carry the arguments (redacted).
    pub fn keeps_arguments(&self) -> bool {
        self.arguments == "redacted"
    }

    /// The rotation size in bytes.
    pub fn max_bytes(&self) -> u64 {
        (self.max_mb * 1024.0 * 1024.0) as u64
    }

    pub(super) fn check(&self) -> Result<(), (String, String)> {
        if !matches!(self.arguments.as_str(), "digest" | "redacted") {
            return Err((
                "audit.arguments".into(),
                format!("must be \"digest\" or \"redacted\", not \"{}\"", self.arguments),
            ));
        }
        if !(self.max_mb.is_finite() && self.max_mb > 0.0) {
            return Err(("audit.max_mb".into(), format!("must be a positive number of MiB, not {}", self.max_mb)));
        }
        if self.files == 0 {
            return Err(("audit.files".into(), "must be at least 1 (how many rotated files are kept)".into()));
        }
        Ok(())
    }
}
