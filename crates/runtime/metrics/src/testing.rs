//! Helpers for tests: reading a text exposition back ("what does /metrics say about
//! series X?") and a minimal HTTP(S) GET to ask a running server.
//!
//! The parser is deliberately small: it understands the sample lines of the
//! OpenMetrics / Prometheus text format (`name{label="value",...} number`), skips `#`
//! lines, and unescapes `\\`, `\"` and `\n` in label values. That is all a test needs to
//! assert on values after driving real queues, reflectors and controllers.
//!
//! **Requires the `testing` feature.** A test helper is not part of the production API:
//! this module is compiled for the crate's own unit tests and, elsewhere, only with the
//! `testing` cargo feature, which the tests that use it enable under
//! `[dev-dependencies]`: `metrics = { workspace = true, features = ["testing"] }`
//! (the staleness benchmark, a tool that reads /metrics, enables it as a dependency).

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response read by [`http_get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The header lines, as sent.
    pub headers: String,
    /// The body.
    pub body: String,
}

/// `GET path` from the server at `addr` over a fresh HTTP/1.1 connection
/// (`Connection: close`), read to the end. Plain tokio, so a test needs no HTTP client.
pub async fn http_get(addr: SocketAddr, path: &str) -> io::Result<HttpResponse> {
    http_get_with(addr, path, &[]).await
}

/// [`http_get`] with extra request headers (e.g. `("Accept-Language", "zh-TW")`).
pub async fn http_get_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> io::Result<HttpResponse> {
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    get_over(TcpStream::connect(addr).await?, addr, path, &extra).await
}

/// [`http_get`] over TLS (HTTP/1.1), with `Authorization: Bearer <token>` when a token
/// is given: what Prometheus does with a ServiceMonitor's `bearerTokenFile` and
/// `insecureSkipVerify: true`. The server's certificate is **not verified** (it is
/// self-signed by default); the signatures of the handshake are.
pub async fn https_get(
    addr: SocketAddr,
    path: &str,
    token: Option<&str>,
) -> io::Result<HttpResponse> {
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    get_over(tls_connect(addr).await?, addr, path, &authorization).await
}

/// A TLS connection to the server at `addr`, its certificate **not verified** (the
/// handshake's signatures are), as [`https_get`] makes it. The server's certificate
/// chain is `stream.get_ref().1.peer_certificates()`.
pub async fn tls_connect(
    addr: SocketAddr,
) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let provider = Arc::new(serving::certs::ring_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    connector
        .connect(name, TcpStream::connect(addr).await?)
        .await
}

async fn get_over<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    addr: SocketAddr,
    path: &str,
    extra_headers: &str,
) -> io::Result<HttpResponse> {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra_headers}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    // A TLS peer that closes without close_notify ends the read with UnexpectedEof
    // after the whole response: what was read is the answer.
    match stream.read_to_end(&mut raw).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        Err(e) => return Err(e),
    }
    let raw = String::from_utf8(raw).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {raw:?}"));
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let (status_line, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status code"))?;
    Ok(HttpResponse {
        status,
        headers: headers.to_string(),
        body: body.to_string(),
    })
}

/// Accepts any server certificate, checking only the handshake's signatures.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The series name, e.g. `workqueue_adds_total` or `..._bucket`.
    pub name: String,
    /// The labels.
    pub labels: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
}

/// Every sample in `text`; lines that do not parse are skipped.
pub fn parse_samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(parse_line)
        .collect()
}

/// The value of the sample named `name` whose labels include all of `labels`; `None`
/// if there is none.
///
/// ```
/// let text = "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"foos\"} 3\n# EOF\n";
/// assert_eq!(metrics::testing::sample_value(text, "workqueue_depth", &[("name", "foos")]), Some(3.0));
/// assert_eq!(metrics::testing::sample_value(text, "workqueue_depth", &[("name", "bars")]), None);
/// ```
pub fn sample_value(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    parse_samples(text)
        .into_iter()
        .find(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|s| s.value)
}

fn parse_line(line: &str) -> Option<Sample> {
    let (name, rest) = match line.find(['{', ' ']) {
        Some(i) => line.split_at(i),
        None => return None,
    };
    let mut labels = BTreeMap::new();
    let rest = if let Some(mut rest) = rest.strip_prefix('{') {
        loop {
            rest = rest.trim_start_matches(',');
            if let Some(after) = rest.strip_prefix('}') {
                break after;
            }
            let (key, after) = rest.split_once("=\"")?;
            let mut value = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                let (i, c) = chars.next()?;
                match c {
                    '\\' => match chars.next()?.1 {
                        'n' => value.push('\n'),
                        other => value.push(other),
                    },
                    '"' => break i,
                    c => value.push(c),
                }
            };
            labels.insert(key.to_string(), value);
            rest = &after[end + 1..];
        }
    } else {
        rest
    };
    // The value; an exemplar (" # {...} ...") or a timestamp may follow.
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_escapes_and_values() {
        let text = "# HELP x y\nplain 1.5\nh_bucket{name=\"a\\\"b\",le=\"+Inf\"} 2\nbad line\n";
        let samples = parse_samples(text);
        assert_eq!(samples.len(), 2, "{samples:?}");
        assert_eq!(samples[0].name, "plain");
        assert_eq!(samples[0].value, 1.5);
        assert_eq!(samples[1].labels["name"], "a\"b");
        assert_eq!(samples[1].labels["le"], "+Inf");
        assert_eq!(sample_value(text, "h_bucket", &[("le", "+Inf")]), Some(2.0));
    }
}
