//! The serving certificate, reloaded from its files without a restart:
//! controller-runtime's `certwatcher`. It lives in the `serving` crate
//! ([`serving::certs`]), shared with the metrics server; these are its names as this
//! crate has always exported them.

pub use serving::certs::{CertWatcher, DEFAULT_CERT_POLL_INTERVAL};

use serving::certs::CertError;

use crate::error::Error;

/// The webhook server's errors keep their variants: a certificate that cannot be read is
/// [`Error::ReadCertificate`], one that does not load [`Error::InvalidCertificate`].
impl From<CertError> for Error {
    fn from(error: CertError) -> Self {
        match error {
            CertError::ReadCertificate { path, source } => Error::ReadCertificate { path, source },
            CertError::InvalidCertificate { cert, key, reason } => {
                Error::InvalidCertificate { cert, key, reason }
            }
            CertError::Tls(e) | CertError::SelfSignedKey(e) => Error::Tls(e),
            // The webhook server never generates a certificate; should it one day, the
            // reason survives as text.
            CertError::SelfSigned(e) => Error::InvalidCertificate {
                cert: "(self-signed)".into(),
                key: "(self-signed)".into(),
                reason: e.to_string(),
            },
        }
    }
}
