//! SHA-256 as lowercase hex: the summary cache's key, and the audit
//! record's digest of a call's arguments. `ring` is already built for TLS.

use std::fmt::Write as _;

use ring::digest::{digest, SHA256};

/// The SHA-256 of `bytes`, 64 hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for byte in digest(&SHA256, bytes).as_ref() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}
