//! The bridge's shared secret.
//!
//! Loopback is not private: any local user (and any process a browser can be
//! talked into connecting) can reach the port. The token, readable only by
//! the user who owns the `0600` lockfile, is what makes a caller that user.
//! 32 bytes from the kernel's generator, hex-encoded; compared in constant
//! time so the comparison does not tell an attacker how much they got right.
//! It is never logged.

/// A fresh token: 64 hex digits.
pub(crate) fn generate() -> std::io::Result<String> {
    warden_front::secret::random_hex(32)
}

/// True when `given` is `expected`, taking the same time wherever they differ.
pub(crate) fn matches(given: Option<&str>, expected: &str) -> bool {
    // The length is not secret: every token is 64 digits.
    given.is_some_and(|given| warden_front::secret::same(given, expected))
}

#[cfg(test)]
mod tests;
