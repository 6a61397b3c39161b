//! The testbed's TLS endpoint. Every cluster also speaks HTTPS on its one port (a connection
//! whose first byte opens a TLS handshake is served over TLS), because kubectl — client-go —
//! sends bearer tokens only to `https://` servers: ServiceAccount kubeconfigs must use it.
//! The administrator's kubeconfig stays plain HTTP, as before.
//!
//! The certificate is a fixed test certificate for 127.0.0.1, ::1 and localhost, signed by a
//! test CA that exists only for this (valid until 2126; its private key was thrown away).
//! To replace both: make a P-256 CA and a server certificate with those subject alternative
//! names and `extendedKeyUsage=serverAuth` (openssl), and store `ca.pem`, `server.pem` and
//! the server's PKCS#8 `server.key` in `tls/`.

use std::sync::{Arc, LazyLock};

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};

/// The CA that signed the testbed's certificate (PEM), for kubeconfigs and token Secrets.
pub use crate::server::api::ca::CA_PEM;
const CERT_PEM: &str = include_str!("tls/server.pem");
const KEY_PEM: &str = include_str!("tls/server.key");

/// The first byte of every TLS connection (a handshake record).
pub const HANDSHAKE: u8 = 0x16;

fn config() -> Result<ServerConfig, String> {
    let certs = CertificateDer::pem_slice_iter(CERT_PEM.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(KEY_PEM.as_bytes()).map_err(|e| e.to_string())?;
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

static ACCEPTOR: LazyLock<Option<TlsAcceptor>> = LazyLock::new(|| match config() {
    Ok(c) => Some(TlsAcceptor::from(Arc::new(c))),
    Err(e) => {
        tracing::error!(error = %e, "the testbed's TLS certificate is unusable; HTTPS is off");
        None
    }
});

/// The acceptor for TLS connections (None only if the built-in certificate is broken).
pub fn acceptor() -> Option<TlsAcceptor> {
    ACCEPTOR.clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_certificate_loads() {
        assert!(super::acceptor().is_some());
    }
}
