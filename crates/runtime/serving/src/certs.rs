//! The serving certificate of an HTTPS server: from a directory, reloaded when its files
//! change ([`CertWatcher`], controller-runtime's `certwatcher`), or generated
//! self-signed at start-up ([`self_signed`]) when no directory is given.
//!
//! [`ServingCert`] is the choice between the two, and what a server builds its rustls
//! configuration from ([`ServingCert::server_config`]). The webhook server always reads
//! a directory (the API server must trust the certificate, through the caBundle of the
//! webhook configuration). The metrics server falls back to a self-signed certificate,
//! as controller-runtime's metrics server does (`createListener` in
//! `pkg/metrics/server/server.go`): what matters there is that the scrape, and the
//! bearer token in it, is encrypted; Prometheus is told to skip verification
//! (kubebuilder's ServiceMonitor sets `insecureSkipVerify: true`) or is given the
//! certificate of a directory that cert-manager fills.

mod self_signed;
mod watcher;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

pub use self_signed::{SELF_SIGNED_HOSTS, self_signed};
pub use watcher::{CertWatcher, DEFAULT_CERT_POLL_INTERVAL};

/// rustls' *ring* crypto provider: the one every TLS connection of this workspace uses
/// (kube's client is built with its `ring` feature too; aws-lc-rs would add a C and
/// CMake toolchain to every build of a controller).
///
/// rustls 0.23.48 deprecates `rustls::crypto::ring::default_provider` (its key
/// exchange has no post-quantum group) and offers no other way to get the *ring*
/// provider, so the deprecation is allowed here, once, rather than warned about in
/// every build of a project on these crates (which resolves the newest rustls 0.23).
pub fn ring_provider() -> CryptoProvider {
    #[allow(deprecated)]
    rustls::crypto::ring::default_provider()
}

/// Why a serving certificate could not be loaded or made.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The certificate or key file could not be read.
    #[error("cannot read {path}: {source}")]
    ReadCertificate {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The files were read but do not hold a usable certificate chain and matching key.
    #[error("invalid serving certificate ({cert}, {key}): {reason}")]
    InvalidCertificate {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
        /// What is wrong with them.
        reason: String,
    },
    /// Generating the self-signed certificate failed.
    #[error("generating a self-signed serving certificate: {0}")]
    SelfSigned(#[from] rcgen::Error),
    /// The generated key was refused by the crypto provider (not expected: rcgen
    /// generates ECDSA P-256, which ring supports).
    #[error("loading the self-signed serving certificate: {0}")]
    SelfSignedKey(#[source] rustls::Error),
    /// rustls refused the TLS configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

/// Where a server's certificate comes from.
#[derive(Debug, Clone)]
pub enum ServingCert {
    /// A certificate and key file, re-read as they change.
    Watched(Arc<CertWatcher>),
    /// A certificate generated at start-up for [`SELF_SIGNED_HOSTS`], kept in memory
    /// only (a new one at every start).
    SelfSigned(Arc<CertifiedKey>),
}

impl ServingCert {
    /// The pair `dir/cert_name` + `dir/key_name` (watched for changes) when `dir` is
    /// given, else a fresh self-signed one.
    ///
    /// A directory that is given but lacks the files is an error, not a silent fallback
    /// to self-signed (controller-runtime falls back when its default directory is empty;
    /// kubebuilder's `main.go` fails when `--metrics-cert-path` names files that do not
    /// load, and so do we): a mistyped path or a Secret that is not mounted should stop
    /// the Pod, not downgrade what Prometheus was configured to verify.
    pub fn load(dir: Option<&Path>, cert_name: &str, key_name: &str) -> Result<Self, CertError> {
        match dir {
            Some(dir) => Ok(Self::Watched(Arc::new(CertWatcher::new(
                dir.join(cert_name),
                dir.join(key_name),
            )?))),
            None => Ok(Self::SelfSigned(self_signed(SELF_SIGNED_HOSTS)?)),
        }
    }

    /// The crypto provider the key is loaded with (rustls' `ring`, as everywhere in
    /// this workspace).
    pub fn provider(&self) -> Arc<CryptoProvider> {
        match self {
            Self::Watched(watcher) => watcher.provider().clone(),
            Self::SelfSigned(_) => Arc::new(ring_provider()),
        }
    }

    /// The key pair served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        match self {
            Self::Watched(watcher) => watcher.current(),
            Self::SelfSigned(key) => key.clone(),
        }
    }

    /// A rustls server configuration serving this certificate (the current pair at every
    /// handshake), TLS 1.2 and 1.3, no client certificates, offering `alpn` (e.g.
    /// `[b"http/1.1"]`: the servers here speak HTTP/1.1 only).
    pub fn server_config(&self, alpn: &[&[u8]]) -> Result<rustls::ServerConfig, CertError> {
        let mut config = rustls::ServerConfig::builder_with_provider(self.provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(self.clone()));
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }

    /// Re-reads a watched pair every `interval` until `cancel` (see
    /// [`CertWatcher::watch`]); returns at once for a self-signed one, which never
    /// changes.
    pub async fn watch(self, interval: Duration, cancel: CancellationToken) {
        if let Self::Watched(watcher) = self {
            watcher.watch(interval, cancel).await;
        }
    }

    /// What to log about it: `"<cert file>"` or `"self-signed for localhost, 127.0.0.1"`.
    pub fn describe(&self) -> String {
        match self {
            Self::Watched(watcher) => watcher.cert_path().display().to_string(),
            Self::SelfSigned(_) => format!("self-signed for {}", SELF_SIGNED_HOSTS.join(", ")),
        }
    }
}

impl ResolvesServerCert for ServingCert {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let dir = std::env::temp_dir().join("serving-certs-test-does-not-exist");
        let err = ServingCert::load(Some(&dir), "tls.crt", "tls.key").unwrap_err();
        match &err {
            CertError::ReadCertificate { path, .. } => assert_eq!(path, &dir.join("tls.crt")),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn without_a_directory_the_certificate_is_self_signed_and_configures_tls() {
        let cert = ServingCert::load(None, "tls.crt", "tls.key").unwrap();
        assert!(matches!(cert, ServingCert::SelfSigned(_)));
        assert_eq!(cert.describe(), "self-signed for localhost, 127.0.0.1");
        let config = cert.server_config(&[b"http/1.1"]).unwrap();
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }
}
