//! A self-signed serving certificate, made at start-up: what controller-runtime's
//! metrics server serves when no certificate directory holds a pair
//! (`certutil.GenerateSelfSignedCertKeyWithFixtures("localhost", {127.0.0.1})`), and
//! kube-controller-manager serves on its own secure port by default.
//!
//! Nobody can verify it (it is signed by nobody they trust), so it does not prove the
//! server's identity; it does encrypt the scrape, which carries a bearer token that
//! must not travel in clear text. The key exists only in this process's memory.

use std::sync::Arc;

use rustls::sign::CertifiedKey;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::CertError;

/// The names a self-signed certificate is for: controller-runtime's.
pub const SELF_SIGNED_HOSTS: &[&str] = &["localhost", "127.0.0.1"];

/// A fresh self-signed certificate (ECDSA P-256, rcgen's defaults: valid from 1975 to
/// 4096, so it never expires under a long-running Pod) for `hosts` (DNS names, or IP
/// addresses, which become IP subject alternative names), loaded with rustls' `ring`
/// provider.
pub fn self_signed(hosts: &[&str]) -> Result<Arc<CertifiedKey>, CertError> {
    let names: Vec<String> = hosts.iter().map(|h| (*h).to_string()).collect();
    let rcgen::CertifiedKey { cert, signing_key } = rcgen::generate_simple_self_signed(names)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(signing_key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
    let provider = super::ring_provider();
    let certified =
        CertifiedKey::from_der(chain, key, &provider).map_err(CertError::SelfSignedKey)?;
    Ok(Arc::new(certified))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_names_localhost_and_the_loopback_address() {
        let key = self_signed(SELF_SIGNED_HOSTS).unwrap();
        assert_eq!(key.cert.len(), 1, "a single self-signed certificate");
        let der = key.cert[0].as_ref();
        // The SAN extension holds the DNS name as text and the IP address as its four
        // octets (a DER-encoded certificate, searched for the raw values).
        let contains = |needle: &[u8]| der.windows(needle.len()).any(|w| w == needle);
        assert!(contains(b"localhost"));
        // [7] IMPLICIT OCTET STRING of length 4: 127.0.0.1.
        assert!(
            contains(&[0x87, 4, 127, 0, 0, 1]),
            "no IP SAN for 127.0.0.1"
        );
        // Two calls, two keys: nothing is shared between processes or servers.
        let other = self_signed(SELF_SIGNED_HOSTS).unwrap();
        assert_ne!(key.cert[0], other.cert[0]);
    }
}
