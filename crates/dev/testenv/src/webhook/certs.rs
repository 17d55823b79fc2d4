//! Throw-away CAs and serving certificates for webhook servers (see the [module docs](super)).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::*;
use crate::error::{Error, Result};
use crate::namespace::random_name;

// ------------------------------------------------------------------ certificates --

/// A CA that can sign serving certificates.
pub(super) struct Ca {
    pub(super) issuer: Issuer<'static, KeyPair>,
    pub(super) pem: String,
}

impl Ca {
    fn new() -> Result<Self> {
        let key = KeyPair::generate().map_err(cert_error)?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // A unique name per CA, so chains never get mixed up between CAs.
        params
            .distinguished_name
            .push(DnType::CommonName, random_name("testenv-webhook-ca"));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(cert_error)?;
        Ok(Self {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// A fresh key and a serving certificate for 127.0.0.1 and localhost: (cert, key) PEM.
    fn issue_serving(&self) -> Result<(String, String)> {
        let key = KeyPair::generate().map_err(cert_error)?;
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .map_err(cert_error)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "testenv-webhook");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer).map_err(cert_error)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

pub(super) fn cert_error(e: rcgen::Error) -> Error {
    Error::Certificate(e.to_string())
}

/// A throw-away CA and a serving certificate for `127.0.0.1` and `localhost` that it
/// signed, in a directory: `tls.crt` (the leaf), `tls.key` (its ECDSA P-256 key,
/// PKCS#8 PEM) and `ca.crt` (the CA). Point a `webhook::WebhookServer` at
/// [`dir`](Self::dir) and put [`ca_pem`](Self::ca_pem) in the webhook configuration's
/// `caBundle`.
///
/// Every file is replaced by a rename, key before certificate, so a reader sees an old
/// or a new file, never a partial one; between the two renames it may see a new key
/// with the old certificate, which `webhook::CertWatcher` refuses to load (it keeps the
/// old pair until the next poll finds the matching certificate).
///
/// Certificates are valid from 1975 to 4096 (rcgen's defaults): expiry is never what a
/// test observes.
pub struct WebhookCerts {
    pub(super) dir: PathBuf,
    pub(super) ca: Mutex<Ca>,
    pub(super) remove_on_drop: bool,
}

impl fmt::Debug for WebhookCerts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookCerts")
            .field("dir", &self.dir)
            .field("remove_on_drop", &self.remove_on_drop)
            .finish_non_exhaustive()
    }
}

impl WebhookCerts {
    /// A new CA and serving certificate, written to `dir` (created if missing; left in
    /// place on drop).
    pub fn generate(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let certs = Self {
            dir,
            ca: Mutex::new(Ca::new()?),
            remove_on_drop: false,
        };
        certs.rotate_with(false)?;
        Ok(certs)
    }

    /// [`generate`](Self::generate) into a new directory under the system's temp dir
    /// (`testenv-<pid>-webhook-certs-<random>`), removed on drop (or, after a crash, by
    /// the next test process starting a control plane).
    pub fn temporary() -> Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "testenv-{}-webhook-certs-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let mut certs = Self::generate(dir.clone());
        match &mut certs {
            Ok(certs) => certs.remove_on_drop = true,
            Err(_) => {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        certs
    }

    /// The directory holding `tls.crt`, `tls.key` and `ca.crt`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `dir/tls.crt`: the serving certificate.
    pub fn cert_path(&self) -> PathBuf {
        self.dir.join(CERT_FILE)
    }

    /// `dir/tls.key`: the serving certificate's key.
    pub fn key_path(&self) -> PathBuf {
        self.dir.join(KEY_FILE)
    }

    /// `dir/ca.crt`: the current CA certificate.
    pub fn ca_path(&self) -> PathBuf {
        self.dir.join(CA_FILE)
    }

    /// The current CA certificate (PEM): the `caBundle` of the webhook configurations.
    pub fn ca_pem(&self) -> String {
        self.lock_ca().pem.clone()
    }

    /// Writes a new serving certificate with a new key, signed by the same CA: the
    /// configurations' `caBundle` stays valid, as when cert-manager renews a certificate.
    pub fn rotate(&self) -> Result<()> {
        self.rotate_with(false).map(drop)
    }

    /// Writes a new serving certificate signed by a new CA (also written to `ca.crt`),
    /// and returns the new CA's PEM. The API server refuses the new certificate until
    /// the configurations carry the new CA
    /// ([`WebhookGuard::set_ca_bundle`]).
    pub fn rotate_with_new_ca(&self) -> Result<String> {
        self.rotate_with(true)
    }

    fn lock_ca(&self) -> std::sync::MutexGuard<'_, Ca> {
        self.ca.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Issues and writes a new pair (after replacing the CA if `new_ca`); returns the CA PEM.
    fn rotate_with(&self, new_ca: bool) -> Result<String> {
        let mut ca = self.lock_ca();
        if new_ca {
            *ca = Ca::new()?;
        }
        let (cert, key) = ca.issue_serving()?;
        write_atomically(&self.dir.join(CA_FILE), ca.pem.as_bytes(), 0o644)?;
        write_atomically(&self.key_path(), key.as_bytes(), 0o600)?;
        write_atomically(&self.cert_path(), cert.as_bytes(), 0o644)?;
        Ok(ca.pem.clone())
    }
}

impl Drop for WebhookCerts {
    fn drop(&mut self) {
        if self.remove_on_drop {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Writes `contents` to a temporary file next to `path`, then renames it over `path`.
pub(super) fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.tmp-{:08x}", rand::random::<u32>()));
    let write = || -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(format!("writing {}", path.display()), e)
    })
}
