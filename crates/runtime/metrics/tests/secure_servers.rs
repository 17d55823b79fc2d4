//! Secure serving of the metrics server over real HTTPS on 127.0.0.1: the certificate
//! (self-signed, or from a directory), the authentication and authorization filter in
//! front of every path, against a fake API server behind `kube::Client` answering the
//! TokenReviews and SubjectAccessReviews; the health server staying plain. The real API
//! server's answers: cmd/sample-controller/tests/e2e/secure_metrics.rs.

// Test code: an unwrap is an assertion.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use metrics::testing::{http_get, https_get, sample_value, tls_connect};
use metrics::{BindAddress, Health, Metrics, MetricsServing, ServingArgs, bind_health};
use rustls::pki_types::CertificateDer;
use serving::auth::AuthFilter;
use serving::certs::ServingCert;
use serving::limits::ConnectionLimits;
use serving::testing::FakeAuthApi;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

/// Generous: CI runs several test binaries on two cores.
const TIMEOUT: Duration = Duration::from_secs(30);

const READER: &str = "system:serviceaccount:monitoring:prometheus";
const STRANGER: &str = "system:serviceaccount:default:stranger";

/// The fake API server: "reader-token" is READER, "stranger-token" STRANGER; nothing
/// granted yet.
fn fake_api() -> FakeAuthApi {
    FakeAuthApi::default()
        .token("reader-token", READER)
        .token("stranger-token", STRANGER)
}

/// Reviews the fake was asked for, of both kinds.
fn reviews(api: &FakeAuthApi) -> usize {
    let (tokens, access) = api.counts();
    tokens + access
}

fn loopback() -> BindAddress {
    "127.0.0.1:0".parse().unwrap()
}

/// Serves `metrics` as `serving` says until `cancel`; its address.
async fn serve(
    metrics: &Metrics,
    serving: MetricsServing,
    cancel: &CancellationToken,
) -> SocketAddr {
    let server = metrics::bind_metrics_serving(&loopback(), metrics.registry.clone(), serving)
        .await
        .unwrap()
        .expect("enabled");
    let addr = server.local_addr();
    assert_eq!(server.scheme(), "https");
    tokio::spawn(server.serve(cancel.clone()));
    addr
}

async fn status(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let response = tokio::time::timeout(TIMEOUT, https_get(addr, path, token))
        .await
        .unwrap()
        .unwrap();
    (response.status, response.body)
}

#[tokio::test]
async fn every_path_needs_a_token_and_a_grant_and_health_stays_plain() {
    let api = fake_api();
    api.grant(READER, "/metrics", "get");
    let metrics = Metrics::new();
    metrics.leader_election.on("demo");
    let cancel = CancellationToken::new();
    let cert = ServingCert::load(None, "tls.crt", "tls.key").unwrap();
    let serving = MetricsServing::secure(true, cert, AuthFilter::new(api.client()));
    assert_eq!(serving.describe(), "https, authenticated and authorized");
    let addr = serve(&metrics, serving, &cancel).await;

    // No token: 401 on every path, existing or not; a made-up token likewise.
    for path in [
        "/metrics",
        "/debug/pipeline",
        "/debug/pipeline/state",
        "/nothing",
    ] {
        assert_eq!(
            status(addr, path, None).await,
            (401, "Unauthorized\n".into()),
            "{path}"
        );
    }
    assert_eq!(status(addr, "/metrics", Some("made-up")).await.0, 401);
    // Authenticated but not granted: 403 naming the user.
    assert_eq!(
        status(addr, "/metrics", Some("stranger-token")).await,
        (403, format!("Authorization denied for user {STRANGER}\n"))
    );
    // Granted /metrics: the exposition.
    let (code, body) = status(addr, "/metrics", Some("reader-token")).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        sample_value(&body, "leader_election_master_status", &[("name", "demo")]),
        Some(1.0),
        "{body}"
    );
    // Each /debug/pipeline path is its own non-resource URL: a grant of /metrics is not
    // enough (the stranger's), and a grant of the page does not cover its JSON.
    api.grant(STRANGER, "/metrics", "get");
    assert_eq!(
        status(addr, "/debug/pipeline", Some("stranger-token"))
            .await
            .0,
        403
    );
    api.grant(READER, "/debug/pipeline", "get");
    let (code, page) = status(addr, "/debug/pipeline", Some("reader-token")).await;
    assert_eq!(code, 200, "{page}");
    assert!(page.contains("<html"), "{page}");
    assert_eq!(
        status(addr, "/debug/pipeline/state", Some("reader-token"))
            .await
            .0,
        403
    );
    // A denial is cached (30 s): granting now changes nothing yet.
    api.grant(READER, "/debug/pipeline/state", "get");
    assert_eq!(
        status(addr, "/debug/pipeline/state", Some("reader-token"))
            .await
            .0,
        403
    );

    // Plain HTTP to the HTTPS port gets no answer.
    assert!(http_get(addr, "/metrics").await.is_err());

    // The health server is plain and asks nobody.
    let before = reviews(&api);
    let health = bind_health(&loopback(), Health::new())
        .await
        .unwrap()
        .unwrap();
    let health_addr = health.local_addr();
    assert_eq!(health.scheme(), "http");
    tokio::spawn(health.serve(cancel.clone()));
    assert_eq!(http_get(health_addr, "/healthz").await.unwrap().status, 200);
    assert_eq!(reviews(&api), before);
    cancel.cancel();
}

#[tokio::test]
async fn the_flags_choose_the_mode_and_a_certificate_directory() {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serving: ServingArgs,
    }
    let client = fake_api().client();
    let parse = |args: &[&str]| {
        let mut argv = vec!["x"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).unwrap().serving
    };
    let plain = parse(&["--metrics-secure=false"])
        .metrics_serving(&client)
        .unwrap();
    assert!(plain.cert.is_none() && plain.filter.is_none());
    let secure = parse(&[]).metrics_serving(&client).unwrap();
    assert!(matches!(secure.cert, Some(ServingCert::SelfSigned(_))));
    assert!(secure.filter.is_some());
    // Disabled: nothing loaded, even with a directory that does not exist.
    let off = parse(&[
        "--metrics-bind-address=0",
        "--metrics-cert-path=/nonexistent",
    ]);
    assert!(off.metrics_serving(&client).unwrap().cert.is_none());

    // A directory without the files is an error naming the file.
    let dir = std::env::temp_dir().join(format!("metrics-certs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let args = parse(&[
        &format!("--metrics-cert-path={}", dir.display()),
        "--metrics-cert-name=m.crt",
        "--metrics-cert-key=m.key",
    ]);
    let err = args.metrics_serving(&client).unwrap_err().to_string();
    assert!(err.contains("m.crt"), "{err}");

    // With the pair there, that pair is served.
    let pair = rcgen::generate_simple_self_signed(vec!["metrics.example".to_string()]).unwrap();
    std::fs::write(dir.join("m.crt"), pair.cert.pem()).unwrap();
    std::fs::write(dir.join("m.key"), pair.signing_key.serialize_pem()).unwrap();
    let serving = args.metrics_serving(&client).unwrap();
    assert!(matches!(serving.cert, Some(ServingCert::Watched(_))));
    let cancel = CancellationToken::new();
    let addr = serve(&Metrics::new(), serving, &cancel).await;
    assert_eq!(presented_certificate(addr).await, *pair.cert.der());
    cancel.cancel();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_completes_the_handshake_is_dropped() {
    let cancel = CancellationToken::new();
    let cert = ServingCert::load(None, "tls.crt", "tls.key").unwrap();
    let serving = MetricsServing {
        cert: Some(cert),
        ..MetricsServing::default()
    };
    let server = metrics::bind_metrics_serving(&loopback(), Metrics::new().registry, serving)
        .await
        .unwrap()
        .unwrap()
        .with_limits(ConnectionLimits {
            handshake_timeout: Duration::from_secs(3),
            ..ConnectionLimits::default()
        });
    let addr = server.local_addr();
    tokio::spawn(server.serve(cancel.clone()));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Half a ClientHello's record header, then nothing.
    stream.write_all(&[0x16, 0x03]).await.unwrap();
    let started = tokio::time::Instant::now();
    let mut buf = [0u8; 16];
    let read = tokio::io::AsyncReadExt::read(&mut stream, &mut buf).await;
    // Closed by the server (EOF or reset) at the handshake deadline.
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(4),
        "{waited:?}"
    );
    cancel.cancel();
}

/// The leaf certificate the server at `addr` presents.
async fn presented_certificate(addr: SocketAddr) -> CertificateDer<'static> {
    let tls = tls_connect(addr).await.unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0]
        .clone()
        .into_owned()
}
