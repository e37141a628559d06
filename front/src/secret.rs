//! Comparing secrets (the bridge's token, the front's bearer tokens) so
//! that the time taken does not tell an attacker how much they got right.

/// True when `given` is `expected`, taking the same time wherever they
/// differ (a different length returns at once: lengths are not secret).
pub fn same(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    if given.len() != expected.len() {
        return false;
    }
    given.iter().zip(expected).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// `bytes` random bytes from the kernel's generator, as hex digits.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut buffer = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buffer)?;
    Ok(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}
