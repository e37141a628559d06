//! TLS for `https://` servers: which certificates are trusted, and what a
//! failed handshake means in words a user can act on.
//!
//! Trust starts from the operating system's store (rustls-native-certs),
//! so a server an admin's browser trusts, Warden trusts too, corporate
//! roots included. A machine without one (a slim container with no
//! `ca-certificates`) falls back to Mozilla's roots compiled in
//! (webpki-roots) rather than trusting nothing. The fallback is not added
//! on top of a working store: a root an admin removed stays removed.
//!
//! A server behind a private CA needs that CA: `ca_cert = "ca.pem"` in the
//! server's config adds the PEM file's certificates to the roots for that
//! server only.
//!
//! rustls with the `ring` provider: rustls' default, aws-lc-rs, needs cmake
//! and a C toolchain to build. HTTP/1.1 only, like the plain transport; the
//! client's pool keeps TLS connections alive between requests as it does
//! TCP ones.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector as TcpConnector;
use rustls::{CertificateError, ClientConfig, RootCertStore};

/// The connector every request goes through: TLS for `https://`, plain
/// TCP for `http://`.
pub(super) type Connector = HttpsConnector<TcpConnector>;

/// A connector trusting the system's roots plus the certificates of
/// `ca_cert` (a PEM file) if given; `Err` says what is wrong with the file.
pub(super) fn connector(ca_cert: Option<&Path>, https: bool) -> Result<Connector, String> {
    let mut roots = if https { system_roots().as_ref().clone() } else { RootCertStore::empty() };
    if let Some(path) = ca_cert {
        warden_config::ca_roots(&mut roots, path)?;
    }
    let config = ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|error| format!("TLS could not be set up: {error}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut tcp = TcpConnector::new();
    // The TLS layer chooses by scheme; the TCP layer below it must accept
    // `https://` URIs too.
    tcp.enforce_http(false);
    Ok(HttpsConnectorBuilder::new().with_tls_config(config).https_or_http().enable_http1().wrap_connector(tcp))
}

/// The system's roots, or webpki-roots where there are none; read once,
/// since the store does not change while Warden runs and reading it walks
/// the file system.
fn system_roots() -> &'static Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let loaded = rustls_native_certs::load_native_certs();
        for error in &loaded.errors {
            tracing::debug!("reading the system's certificates: {error}");
        }
        let mut roots = RootCertStore::empty();
        let (added, _ignored) = roots.add_parsable_certificates(loaded.certs);
        if added == 0 {
            tracing::info!("no certificates in the system's store; trusting the roots built into Warden");
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        Arc::new(roots)
    })
}

/// What a failed TLS handshake somewhere in `error`'s causes means and
/// what to do about it; `None` when TLS was not the problem.
pub(super) fn explain(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let tls = tls_error(error)?;
    let what = match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            "the server's certificate is not trusted (it is not signed by a known certificate authority); \
             for a server with a private CA, set `ca_cert = \"path/to/ca.pem\"` in this server's config"
                .to_string()
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "the server's certificate is for another name than the URL's host; \
              use the host name the certificate was issued for in `url`"
            .to_string(),
        rustls::Error::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. }) => {
            "the server's certificate has expired; the server needs a new one".to_string()
        }
        other => format!("the TLS handshake failed: {other}"),
    };
    Some(format!("TLS: {what}"))
}

/// The rustls error among `error`'s causes. It travels inside an
/// `io::Error` (inside another: hyper-rustls wraps tokio-rustls' one),
/// and `io::Error::source()` skips the error it wraps: look inside.
fn tls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(tls) = error.downcast_ref::<rustls::Error>() {
            return Some(tls);
        }
        current = match error.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref) {
            Some(inner) => Some(inner as &(dyn std::error::Error + 'static)),
            None => error.source(),
        };
    }
    None
}
