//! `ca_cert`: a PEM file of private certificate authorities for one
//! `https://` server, read and checked at load time.
//!
//! Checked here, not at the first handshake, so a missing file or a file
//! that is not a certificate is a config error naming the server and the
//! field, before any server starts. The HTTP transport reads the same file
//! through [`ca_roots`] when it connects, so both say the same thing.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

/// Checks that `path` is a PEM file of certificates rustls can trust.
pub fn check_ca_cert(path: &Path) -> Result<(), String> {
    ca_roots(&mut RootCertStore::empty(), path)
}

/// Adds the certificates of the PEM file at `path` to `roots`.
pub fn ca_roots(roots: &mut RootCertStore, path: &Path) -> Result<(), String> {
    for certificate in read_ca_cert(path)? {
        roots.add(certificate).map_err(|error| {
            format!("`ca_cert` \"{}\" holds a certificate that cannot be used as a root: {error}", path.display())
        })?;
    }
    Ok(())
}

/// The certificates of a PEM file; none is an error.
fn read_ca_cert(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let text = std::fs::read(path).map_err(|error| format!("`ca_cert` \"{shown}\" cannot be read: {error}"))?;
    let certificates = CertificateDer::pem_slice_iter(&text)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("`ca_cert` \"{shown}\" is not a valid PEM file: {error}"))?;
    if certificates.is_empty() {
        return Err(format!(
            "`ca_cert` \"{shown}\" holds no certificate; it must be a PEM file with `-----BEGIN CERTIFICATE-----` blocks"
        ));
    }
    Ok(certificates)
}
