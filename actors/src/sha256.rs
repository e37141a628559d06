//! SHA-256 as lowercase hex: the summary cache's key, and the audit
//! record's digest of a call's arguments. `ring` is already built for TLS.

use ring::digest::{digest, Context, Digest, SHA256};

/// The SHA-256 of `bytes`, 64 hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&digest(&SHA256, bytes))
}

/// The SHA-256 of `value`'s JSON text (as `serde_json::to_vec` writes it),
/// 64 hex digits. The text is hashed as it is written, never held whole:
/// the audit record digests every call's arguments.
pub(crate) fn sha256_json_hex(value: &serde_json::Value) -> String {
    let mut hashing = Hashing(Context::new(&SHA256));
    // Writing to a hash cannot fail, nor can serialising a `Value`.
    let _ = serde_json::to_writer(&mut hashing, value);
    hex(&hashing.0.finish())
}

struct Hashing(Context);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn hex(digest: &Digest) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in digest.as_ref() {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    hex
}

#[cfg(test)]
mod tests;
