//! The bridge's shared secret.
//!
//! Loopback is not private: any local user (and any process a browser can be
//! talked into connecting) can reach the port. The token, readable only by
//! the user who owns the `0600` lockfile, is what makes a caller that user.
//! 32 bytes from the kernel's generator, hex-encoded; compared in constant
//! time so the comparison does not tell an attacker how much they got right.
//! It is never logged.

use std::io::Read as _;

/// A fresh token: 64 hex digits.
pub(crate) fn generate() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// True when `given` is `expected`, taking the same time wherever they differ.
pub(crate) fn matches(given: Option<&str>, expected: &str) -> bool {
    let Some(given) = given else { return false };
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    if given.len() != expected.len() {
        // The length is not secret: every token is 64 digits.
        return false;
    }
    given.iter().zip(expected).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

#[cfg(test)]
mod tests;
