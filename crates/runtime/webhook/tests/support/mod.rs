//! Shared by the integration tests: a throw-away PKI (rcgen), an HTTPS client trusting
//! it (hyper-util + hyper-rustls), a raw TLS probe that returns the certificate the server
//! presents, review bodies, and a Foo validator and defaulter.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use apis::samplecontroller::v1alpha1::Foo;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::StatusCode;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use webhook::{Defaulter, Denied, Validator, Warnings, WebhookMetrics, WebhookServer};

/// A CA and a serving certificate for 127.0.0.1 that it signed.
pub struct Pki {
    pub ca_der: CertificateDer<'static>,
    pub cert_pem: String,
    pub key_pem: String,
    pub leaf_der: CertificateDer<'static>,
}

impl Pki {
    /// A fresh CA named `name`, and a serving certificate for IP 127.0.0.1.
    pub fn new(name: &str) -> Self {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name.push(DnType::CommonName, name);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);

        let key = KeyPair::generate().unwrap();
        let mut leaf = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
        leaf.distinguished_name
            .push(DnType::CommonName, "webhook-service.default.svc");
        leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let leaf_cert = leaf.signed_by(&key, &issuer).unwrap();
        Self {
            ca_der: ca_cert.der().clone(),
            cert_pem: leaf_cert.pem(),
            key_pem: key.serialize_pem(),
            leaf_der: leaf_cert.der().clone(),
        }
    }

    /// Writes `tls.crt` and `tls.key` into `dir`, each through a rename (as the kubelet
    /// swaps secret files), certificate first.
    pub fn write_to(&self, dir: &Path) {
        write_atomically(&dir.join("tls.crt"), self.cert_pem.as_bytes());
        write_atomically(&dir.join("tls.key"), self.key_pem.as_bytes());
    }
}

pub fn write_atomically(path: &Path, contents: &[u8]) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A fresh, empty directory under the system's temp dir, unique per test and process,
/// removed when dropped.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("webhook-test-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(serving::certs::ring_provider())
}

fn client_config(cas: &[&CertificateDer<'static>]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for ca in cas {
        roots.add((*ca).clone()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}

pub type Body = BoxBody<Bytes, Infallible>;
pub type HttpsClient = Client<HttpsConnector<HttpConnector>, Body>;

/// An HTTPS client that trusts `ca` only.
pub fn client(ca: &CertificateDer<'static>) -> HttpsClient {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(client_config(&[ca]))
        .https_only()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(https)
}

pub fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).boxed()
}

/// Sends `method path` with `body` and returns the status and the body as text.
pub async fn send(
    client: &HttpsClient,
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: Body,
) -> (StatusCode, String) {
    let request = hyper::Request::builder()
        .method(method)
        .uri(format!("https://127.0.0.1:{}{path}", addr.port()))
        .header("content-type", content_type)
        .body(body)
        .unwrap();
    let response = client.request(request).await.expect("request failed");
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// POSTs a JSON review and returns the status and the parsed body.
pub async fn post_review(
    client: &HttpsClient,
    addr: SocketAddr,
    path: &str,
    review: &Value,
) -> (StatusCode, Value) {
    let (status, body) = send(
        client,
        addr,
        "POST",
        path,
        "application/json",
        full(review.to_string()),
    )
    .await;
    let body = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    (status, body)
}

/// A fresh TLS connection to `addr`, trusting `cas`: the leaf certificate the server
/// presented, or the handshake error.
pub async fn presented_certificate(
    addr: SocketAddr,
    cas: &[&CertificateDer<'static>],
) -> Result<CertificateDer<'static>, std::io::Error> {
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config(cas)));
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(name, tcp).await?;
    let (_, connection) = tls.get_ref();
    Ok(connection.peer_certificates().unwrap()[0].clone())
}

pub const FOO_GVK: (&str, &str, &str) = ("samplecontroller.k8s.io", "v1alpha1", "Foo");

pub fn foo(name: &str, deployment: &str, replicas: i32) -> Value {
    json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": null},
        "spec": {"deploymentName": deployment, "replicas": replicas},
    })
}

/// An `admission.k8s.io/v1` review of `operation` on `object` (and `old`).
pub fn review(uid: &str, operation: &str, object: Value, old: Value) -> Value {
    let (group, version, kind) = FOO_GVK;
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": "foos"},
            "name": object["metadata"]["name"].clone(),
            "namespace": "default",
            "operation": operation,
            "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false,
        },
    })
}

/// 1 to 10 replicas; a name that panics, to test the recovery.
pub struct FooValidator;

impl Validator<Foo> for FooValidator {
    fn validate_create(&self, foo: &Foo) -> Result<Warnings, Denied> {
        if foo.metadata.name.as_deref() == Some("panic") {
            panic!("validator bug");
        }
        match foo.spec.replicas {
            1..=10 => Ok(Warnings::new()),
            n => Err(
                Denied::invalid(format!("spec.replicas: {n} is not between 1 and 10"))
                    .with_warning("replicas are capped at 10"),
            ),
        }
    }

    fn validate_update(&self, _old: &Foo, new: &Foo) -> Result<Warnings, Denied> {
        self.validate_create(new)
    }
}

/// An empty deployment name becomes `<name>-nginx`.
pub struct FooDefaulter;

impl Defaulter<Foo> for FooDefaulter {
    fn default(&self, foo: &mut Foo) -> Result<(), Denied> {
        if foo.spec.deployment_name.is_empty() {
            foo.spec.deployment_name =
                format!("{}-nginx", foo.metadata.name.as_deref().unwrap_or_default());
        }
        Ok(())
    }
}

pub const VALIDATE: &str = "/validate-samplecontroller-k8s-io-v1alpha1-foo";
pub const MUTATE: &str = "/mutate-samplecontroller-k8s-io-v1alpha1-foo";

pub struct Running {
    pub addr: SocketAddr,
    pub cancel: CancellationToken,
    pub task: JoinHandle<()>,
    pub registry: metrics::Registry,
    pub readiness: webhook::Readiness,
}

impl Running {
    pub async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("the server stops after cancel")
            .unwrap();
    }

    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        metrics::testing::sample_value(&self.registry.encode().unwrap(), name, labels)
    }
}

/// Foo's validator and defaulter on 127.0.0.1:0 with the certificate in `dir`.
pub async fn start(
    dir: &std::path::Path,
    configure: impl FnOnce(WebhookServer) -> WebhookServer,
) -> Running {
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();
    let registry = metrics::Registry::new();
    let server = WebhookServer::new("127.0.0.1:0".parse().unwrap(), dir)
        .with_metrics(WebhookMetrics::new(&registry))
        .with_cert_poll_interval(Duration::from_millis(50));
    let mut server = configure(server);
    assert_eq!(
        server.register_validator::<Foo, _>(FooValidator).unwrap(),
        VALIDATE
    );
    assert_eq!(
        server.register_defaulter::<Foo, _>(FooDefaulter).unwrap(),
        MUTATE
    );
    let readiness = server.readiness();
    assert!(!readiness.is_ready());
    let bound = server.bind().await.unwrap().expect("enabled");
    let addr = bound.local_addr();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(bound.serve(cancel.clone()));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), readiness.wait())
            .await
            .unwrap()
    );
    Running {
        addr,
        cancel,
        task,
        registry,
        readiness,
    }
}
