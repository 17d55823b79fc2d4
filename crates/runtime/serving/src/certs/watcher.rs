//! The serving certificate, reloaded from its files without a restart:
//! controller-runtime's `certwatcher` (moved here from the webhook crate, which
//! re-exports it, so the metrics server reloads its certificate the same way).
//!
//! cert-manager (or whatever issues the certificate) renews it long before it expires and
//! rewrites the Secret; the kubelet then swaps the mounted files (an atomic symlink
//! switch, up to a minute or so later). A server that read its certificate once
//! would serve the old one until it expires and its clients (the API server calling a
//! webhook, Prometheus scraping metrics) refuse it. So
//! [`CertWatcher`] is the TLS configuration's [`ResolvesServerCert`]: every handshake
//! asks it for the current key pair, and [`CertWatcher::watch`] re-reads the files every
//! [`DEFAULT_CERT_POLL_INTERVAL`].
//!
//! Polling rather than inotify (controller-runtime does both, and also polls every 10
//! s): the symlink dance of secret volumes makes file watches fragile, and reading two
//! files of a few kilobytes once a second costs nothing. The contents are compared, not
//! modification times, so nothing is missed on coarse-grained file systems.
//!
//! A new pair that does not load (half-written, key and certificate not matching,
//! garbage) is not installed: the old pair keeps being served, and the error is logged
//! once per distinct bad content, so a rotation caught between its two file writes
//! resolves itself at the next poll.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;

use super::CertError as Error;

type Result<T, E = Error> = std::result::Result<T, E>;

/// How often [`CertWatcher::watch`] re-reads the files by default.
pub const DEFAULT_CERT_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The file contents a key pair was loaded from.
#[derive(PartialEq, Eq)]
struct Contents {
    cert: Vec<u8>,
    key: Vec<u8>,
}

/// Serves the key pair most recently loaded from a certificate file and a key file (PEM).
pub struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<(Arc<CertifiedKey>, Contents)>,
    /// The last contents that failed to load, so the error is logged once.
    last_bad: Mutex<Option<Contents>>,
}

impl fmt::Debug for CertWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertWatcher")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertWatcher {
    /// Loads the pair from `cert_path` (the chain, leaf first) and `key_path` (PKCS#8,
    /// PKCS#1 or SEC1), with rustls' `ring` provider. Fails if they cannot be read, do
    /// not parse, or the key is not the certificate's.
    pub fn new(cert_path: impl Into<PathBuf>, key_path: impl Into<PathBuf>) -> Result<Self> {
        let (cert_path, key_path) = (cert_path.into(), key_path.into());
        let provider = Arc::new(super::ring_provider());
        let contents = read_contents(&cert_path, &key_path)?;
        let key = load(&cert_path, &key_path, &contents, &provider)?;
        tracing::info!(cert = %cert_path.display(), key = %key_path.display(), "loaded the serving certificate");
        Ok(Self {
            cert_path,
            key_path,
            provider,
            current: RwLock::new((key, contents)),
            last_bad: Mutex::new(None),
        })
    }

    /// The certificate file.
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// The key file.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// The key pair served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.read().0.clone()
    }

    /// The crypto provider the pair is loaded with (also the server's).
    pub fn provider(&self) -> &Arc<CryptoProvider> {
        &self.provider
    }

    /// Re-reads the files. `Ok(true)`: a new pair is now served; `Ok(false)`: the files
    /// did not change; `Err`: they changed but do not load, and the old pair stays.
    pub fn reload(&self) -> Result<bool> {
        let contents = read_contents(&self.cert_path, &self.key_path)?;
        if self.current.read().1 == contents {
            return Ok(false);
        }
        let key = load(&self.cert_path, &self.key_path, &contents, &self.provider)?;
        *self.current.write() = (key, contents);
        Ok(true)
    }

    /// Re-reads the files every `interval` until `cancel`, logging each new pair, and each
    /// distinct failure once.
    pub async fn watch(self: Arc<Self>, interval: Duration, cancel: CancellationToken) {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = ticker.tick() => {}
            }
            let watcher = self.clone();
            match tokio::task::spawn_blocking(move || watcher.poll_once()).await {
                Ok(()) => {}
                Err(e) => tracing::error!(error = %e, "certificate reload task failed"),
            }
        }
    }

    fn poll_once(&self) {
        match self.reload() {
            Ok(true) => {
                *self.last_bad.lock() = None;
                tracing::info!(cert = %self.cert_path.display(), "updated the serving certificate");
            }
            Ok(false) => {}
            Err(e) => {
                // Log each bad content once; unreadable files are logged every time they
                // are found so (rare, and worth noticing).
                let contents = read_contents(&self.cert_path, &self.key_path).ok();
                let mut last_bad = self.last_bad.lock();
                if contents.is_none() || *last_bad != contents {
                    tracing::error!(error = %e, "new serving certificate not loaded; still serving the previous one");
                    *last_bad = contents;
                }
            }
        }
    }
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn read_contents(cert_path: &Path, key_path: &Path) -> Result<Contents> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| Error::ReadCertificate {
            path: path.to_path_buf(),
            source,
        })
    };
    Ok(Contents {
        cert: read(cert_path)?,
        key: read(key_path)?,
    })
}

fn load(
    cert_path: &Path,
    key_path: &Path,
    contents: &Contents,
    provider: &CryptoProvider,
) -> Result<Arc<CertifiedKey>> {
    let invalid = |reason: String| Error::InvalidCertificate {
        cert: cert_path.to_path_buf(),
        key: key_path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(&contents.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(format!("certificate file: {e}")))?;
    if chain.is_empty() {
        return Err(invalid(
            "no CERTIFICATE block in the certificate file".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&contents.key)
        .map_err(|e| invalid(format!("key file: {e}")))?;
    let certified = CertifiedKey::from_der(chain, key, provider)
        .map_err(|e| invalid(format!("key pair: {e}")))?;
    Ok(Arc::new(certified))
}
