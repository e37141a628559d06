//! Certificates made at test time, for HTTPS test servers.
//!
//! A private CA, like a company's, signs one server certificate; the test
//! hands Warden the CA's PEM file as `ca_cert` (or withholds it, to see the
//! handshake refused). Nothing is checked in: keys in a repository are a
//! bad habit even for tests, and certificates made now never expire
//! mid-run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// A CA and one server certificate it signed.
pub struct TestCerts {
    /// The CA's certificate as a PEM file, in `dir`.
    pub ca_pem: PathBuf,
    /// Serves TLS with the server certificate.
    pub acceptor: TlsAcceptor,
}

impl TestCerts {
    /// A new CA, and a server certificate for `names` (DNS names or IP
    /// addresses) signed by it; the CA's PEM is written into `dir`.
    pub fn new(names: &[&str], dir: &Path) -> TestCerts {
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.distinguished_name.push(DnType::CommonName, "Warden test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = ca_params.self_signed(&ca_key).expect("a CA certificate");

        let key = KeyPair::generate().expect("a server key");
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let params = CertificateParams::new(names).expect("server params");
        let certificate = params.signed_by(&key, &ca, &ca_key).expect("a server certificate");

        let ca_pem = dir.join("ca.pem");
        std::fs::write(&ca_pem, ca.pem()).expect("the CA's PEM is written");
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(certificate.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("a server TLS config");
        TestCerts { ca_pem, acceptor: TlsAcceptor::from(Arc::new(config)) }
    }
}
