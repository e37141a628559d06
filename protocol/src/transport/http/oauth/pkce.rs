//! PKCE (RFC 7636, S256) and the `state` value: random strings and their
//! SHA-256, in base64url without padding.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::{SecureRandom as _, SystemRandom};

/// `n` random bytes in base64url: 32 bytes make a 43-character verifier,
/// the shortest RFC 7636 allows, with 256 bits of entropy.
pub(crate) fn random_string(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    SystemRandom::new().fill(&mut buffer).expect("the system's random source works");
    URL_SAFE_NO_PAD.encode(buffer)
}

/// A code verifier and its S256 challenge.
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    pub(crate) fn new() -> Pkce {
        let verifier = random_string(32);
        let challenge = s256(&verifier);
        Pkce { verifier, challenge }
    }
}

/// `BASE64URL(SHA256(ASCII(verifier)))`.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_7636_example_challenge() {
        assert_eq!(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let pkce = Pkce::new();
        assert_eq!(pkce.verifier.len(), 43);
        assert_ne!(Pkce::new().verifier, pkce.verifier);
    }
}
