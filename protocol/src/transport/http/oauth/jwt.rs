//! `private_key_jwt` (RFC 7523 §2.2): the client proves itself with a
//! short-lived JWT signed by its own key instead of a shared secret.
//!
//! The key is a PEM file: PKCS#8 (`BEGIN PRIVATE KEY`) for ES256 (P-256)
//! or RS256, or PKCS#1 (`BEGIN RSA PRIVATE KEY`) for RS256. It is read once
//! when the server is configured, so a bad file is an error at start, not
//! at the first token request. ring signs; no JWT crate is needed for one
//! header, five claims and a signature.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, RsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, RSA_PKCS1_SHA256};
use serde_json::json;

use super::pkce::random_string;
use super::store::now_secs;

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 60;

/// A loaded signing key.
pub(crate) enum SigningKey {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

impl SigningKey {
    /// Reads `pem` (the file's text) for `alg` (`ES256` or `RS256`).
    pub(crate) fn from_pem(pem: &str, alg: &str, file: &str) -> Result<SigningKey, String> {
        let (label, der) = pem_block(pem).ok_or_else(|| format!("{file} holds no PEM private key"))?;
        let bad = |error: String| format!("{file} is not a usable {alg} private key: {error}");
        match (alg, label.as_str()) {
            ("ES256", "PRIVATE KEY") => {
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
                    .map(SigningKey::Es256)
                    .map_err(|e| bad(e.to_string()))
            }
            ("RS256", "PRIVATE KEY") => {
                RsaKeyPair::from_pkcs8(&der).map(SigningKey::Rs256).map_err(|e| bad(e.to_string()))
            }
            ("RS256", "RSA PRIVATE KEY") => {
                RsaKeyPair::from_der(&der).map(SigningKey::Rs256).map_err(|e| bad(e.to_string()))
            }
            (_, label) => Err(bad(format!(
                "a `{label}` block; convert it to PKCS#8 with `openssl pkcs8 -topk8 -nocrypt -in KEY -out key.pem`"
            ))),
        }
    }

    /// A fresh assertion for `client_id` at `audience` (the authorization
    /// server's issuer identifier).
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let alg = match self {
            SigningKey::Es256(_) => "ES256",
            SigningKey::Rs256(_) => "RS256",
        };
        let now = now_secs();
        let header = json!({ "alg": alg, "typ": "JWT" });
        let claims = json!({
            "iss": client_id, "sub": client_id, "aud": audience,
            "jti": random_string(16), "iat": now, "exp": now + LIFETIME_SECS,
        });
        let signing_input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let rng = SystemRandom::new();
        let signature = match self {
            SigningKey::Es256(key) => key.sign(&rng, signing_input.as_bytes()).map(|s| s.as_ref().to_vec()),
            SigningKey::Rs256(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(&RSA_PKCS1_SHA256, &rng, signing_input.as_bytes(), &mut signature).map(|()| signature)
            }
        }
        .map_err(|_| "signing the client assertion failed".to_string())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// The first PEM block's label and bytes.
pub(super) fn pem_block(pem: &str) -> Option<(String, Vec<u8>)> {
    let begin = pem.find("-----BEGIN ")?;
    let rest = &pem[begin + "-----BEGIN ".len()..];
    let label_end = rest.find("-----")?;
    let label = rest[..label_end].to_string();
    let body_and_end = &rest[label_end + "-----".len()..];
    // The END line after the BEGIN line: `-----BEGIN X-----END X-----`
    // found it inside the BEGIN line and sliced backwards (a panic, found
    // by `oauth::properties`).
    let end = body_and_end.find(&format!("-----END {label}-----"))?;
    let body: String = body_and_end[..end].chars().filter(|c| !c.is_whitespace()).collect();
    Some((label, STANDARD.decode(body).ok()?))
}
