//! Unit tests of the certificates and the configuration helpers.

use std::sync::Arc;

use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

use std::path::PathBuf;

use k8s_openapi::api::core::v1::ConfigMap;

use super::certs::*;
use super::install::*;
use super::spec::*;
use super::*;
use crate::error::Error;
use crate::namespace::random_name;
use kube::Config;

/// Verifies the served chain in `certs` for `name` against `ca_pem`, as a TLS client
/// (the API server) would.
fn verify(certs: &WebhookCerts, ca_pem: &str, name: &str) -> std::result::Result<(), String> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
    let leaf = CertificateDer::from_pem_file(certs.cert_path()).unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    verifier
        .verify_server_cert(&leaf, &[], &name, &[], UnixTime::now())
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn generates_a_serving_certificate_for_loopback() {
    let certs = WebhookCerts::temporary().unwrap();
    let dir = certs.dir().to_path_buf();
    for file in [CERT_FILE, KEY_FILE, CA_FILE] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    // The key is PKCS#8, and private.
    let key = std::fs::read_to_string(certs.key_path()).unwrap();
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(certs.key_path())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(certs.ca_path()).unwrap(),
        certs.ca_pem()
    );

    // crates/runtime/webhook loads the pair (parses both, and the key is the certificate's).
    ::webhook::CertWatcher::new(certs.cert_path(), certs.key_path()).unwrap();

    // Valid for IP 127.0.0.1 and DNS localhost, chained to the CA; nothing else.
    let ca = certs.ca_pem();
    verify(&certs, &ca, "127.0.0.1").unwrap();
    verify(&certs, &ca, "localhost").unwrap();
    let err = verify(&certs, &ca, "10.0.0.1").unwrap_err();
    assert!(err.contains("not valid for name"), "{err}");
    assert!(err.contains("IpAddress(127.0.0.1)"), "{err}");
    let other = WebhookCerts::temporary().unwrap();
    let err = verify(&certs, &other.ca_pem(), "127.0.0.1").unwrap_err();
    assert!(err.to_lowercase().contains("unknownissuer"), "{err}");

    drop(certs);
    assert!(!dir.exists(), "a temporary directory is removed on drop");
}

#[test]
fn rotation_writes_a_new_pair_from_the_same_or_a_new_ca() {
    let certs = WebhookCerts::temporary().unwrap();
    let read = |path: PathBuf| std::fs::read_to_string(path).unwrap();
    let (cert0, key0, ca0) = (
        read(certs.cert_path()),
        read(certs.key_path()),
        certs.ca_pem(),
    );
    let watcher = ::webhook::CertWatcher::new(certs.cert_path(), certs.key_path()).unwrap();

    certs.rotate().unwrap();
    let (cert1, key1) = (read(certs.cert_path()), read(certs.key_path()));
    assert_ne!(cert1, cert0);
    assert_ne!(key1, key0);
    assert_eq!(certs.ca_pem(), ca0, "same CA");
    verify(&certs, &ca0, "127.0.0.1").unwrap();
    assert!(
        watcher.reload().unwrap(),
        "the webhook server picks the new pair up"
    );

    let ca2 = certs.rotate_with_new_ca().unwrap();
    assert_ne!(ca2, ca0);
    assert_eq!(certs.ca_pem(), ca2);
    assert_eq!(read(certs.ca_path()), ca2);
    verify(&certs, &ca2, "127.0.0.1").unwrap();
    assert!(
        verify(&certs, &ca0, "127.0.0.1").is_err(),
        "the old CA no longer verifies"
    );
    assert!(watcher.reload().unwrap());

    // No temporary files left behind.
    let mut files: Vec<String> = std::fs::read_dir(certs.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, [CA_FILE, CERT_FILE, KEY_FILE]);
}

#[test]
fn generate_creates_the_directory_and_keeps_it() {
    let dir = std::env::temp_dir().join(format!(
        "testenv-{}-webhook-generate-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let nested = dir.join("a/b");
    let certs = WebhookCerts::generate(&nested).unwrap();
    assert_eq!(certs.dir(), nested);
    drop(certs);
    assert!(
        nested.join(CERT_FILE).is_file(),
        "generate() leaves the files"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn names_and_selectors() {
    assert_eq!(
        label_from_path("/validate--v1-configmap"),
        "validate--v1-configmap"
    );
    assert_eq!(
        label_from_path("/mutate-cloudnative-tw-v1alpha1-virtualmachine"),
        "mutate-cloudnative-tw-v1alpha1-virtualmachine"
    );
    assert_eq!(label_from_path("/"), "webhook");
    assert!(label_from_path(&format!("/{}", "x".repeat(100))).len() <= 63);
    assert!(is_dns_label("vfoo"));
    assert!(!is_dns_label("vFoo") && !is_dns_label("-a") && !is_dns_label("a.b"));

    let selector = without_probe(None);
    let expressions = selector.match_expressions.unwrap();
    assert_eq!(expressions[0].key, PROBE_LABEL);
    assert_eq!(expressions[0].operator, "DoesNotExist");

    // The longest configuration name random_name() can make for install_webhooks
    // still gives a valid label value.
    let configuration = random_name(&"n".repeat(40));
    let value = probe_value(&configuration, "validating", u32::MAX);
    assert!(value.len() <= 63, "{value}");

    let spec = WebhookSpec::new("ns", "127.0.0.1:8443".parse().unwrap(), "ca");
    assert_eq!(
        spec.url("/validate--v1-pod"),
        "https://127.0.0.1:8443/validate--v1-pod"
    );
    let webhook =
        Webhook::validating("/validate--v1-configmap").for_resource::<ConfigMap>(&["CREATE"]);
    let rule = &webhook.rules[0];
    assert_eq!(rule.api_groups.as_deref(), Some(&[String::new()][..]));
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["configmaps".to_string()][..])
    );
}

#[tokio::test]
async fn a_spec_without_webhooks_is_refused_before_any_request() {
    // Nothing listens on port 1: any request would fail with a Kube error.
    let config = Config::new("http://127.0.0.1:1".parse().unwrap());
    let spec = WebhookSpec::new("ns", "127.0.0.1:8443".parse().unwrap(), "ca");
    let err = install_webhooks(&config, &spec).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidRequest(m) if m.contains("no webhooks")),
        "{err}"
    );
    let spec = spec.webhook(Webhook::validating("/v").name("Not_A_Label"));
    let err = install_webhooks(&config, &spec).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidRequest(m) if m.contains("DNS label")),
        "{err}"
    );
}
