//! Mistakes in what the user asked for: they end the command with exit 2.
//!
//! A leaf module, so the client side and the commands can both say it
//! without importing each other.

/// An error that means the user asked for something malformed (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(pub(crate) String);

/// What to say when no config was named and none was found.
pub(crate) const NO_CONFIG: &str =
    "no config given; pass --config FILE or set WARDEN_CONFIG (examples/warden.toml is a start)";
