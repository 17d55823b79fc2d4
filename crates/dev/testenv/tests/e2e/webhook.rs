//! Admission webhooks served by `crates/runtime/webhook` inside the test process and called by
//! the real kube-apiserver over TLS on 127.0.0.1 (`testenv::webhook`): denials reach the
//! client with the webhook's message, other namespaces are not affected, a rotated
//! certificate keeps working, a stopped server makes `failurePolicy: Fail` refuse
//! requests until it is back, a caBundle for another CA is refused, and defaults from a
//! mutating webhook are persisted.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ::webhook::{CertWatcher, Defaulter, Denied, Validator, Warnings, WebhookServer};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
use testenv::{Check, TestEnv, wait_for};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::TIMEOUT;

/// The validator's message.
const DENIAL: &str = "data key \"forbidden\" is not allowed (testenv e2e)";
/// The key and value the defaulter adds.
const DEFAULTED: (&str, &str) = ("defaulted-by", "testenv-e2e");

/// Denies ConfigMaps whose data has the key "forbidden".
struct NoForbiddenKey;

impl NoForbiddenKey {
    fn check(cm: &ConfigMap) -> Result<Warnings, Denied> {
        if cm
            .data
            .as_ref()
            .is_some_and(|d| d.contains_key("forbidden"))
        {
            return Err(Denied::new(DENIAL));
        }
        Ok(Warnings::new())
    }
}

impl Validator<ConfigMap> for NoForbiddenKey {
    fn validate_create(&self, cm: &ConfigMap) -> Result<Warnings, Denied> {
        Self::check(cm)
    }
    fn validate_update(&self, _old: &ConfigMap, new: &ConfigMap) -> Result<Warnings, Denied> {
        Self::check(new)
    }
}

/// Adds `defaulted-by: testenv-e2e` to the data.
struct DefaultedBy;

impl Defaulter<ConfigMap> for DefaultedBy {
    fn default(&self, cm: &mut ConfigMap) -> Result<(), Denied> {
        let (key, value) = DEFAULTED;
        cm.data
            .get_or_insert_with(BTreeMap::new)
            .entry(key.to_string())
            .or_insert_with(|| value.to_string());
        Ok(())
    }
}

/// A webhook server with both handlers, running on the test's runtime.
struct Server {
    addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<JoinHandle<()>>,
    watcher: Arc<CertWatcher>,
}

impl Server {
    /// Serves on `bind` ("127.0.0.1:0", or a fixed port to come back on) with the
    /// certificate in `certs`, once it accepts connections.
    async fn start(bind: &str, certs: &WebhookCerts) -> anyhow::Result<Self> {
        let mut server = WebhookServer::new(bind.parse()?, certs.dir());
        server.register_validator::<ConfigMap, _>(NoForbiddenKey)?;
        server.register_defaulter::<ConfigMap, _>(DefaultedBy)?;
        let bound = server.bind().await?.expect("the server is enabled");
        let (addr, watcher) = (bound.local_addr(), bound.cert_watcher().clone());
        let readiness = bound.readiness();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(bound.serve(cancel.clone()));
        assert!(readiness.wait().await, "the webhook server starts serving");
        Ok(Self {
            addr,
            cancel,
            task: Some(task),
            watcher,
        })
    }

    /// The leaf certificate the server presents now.
    fn served_certificate(&self) -> Vec<u8> {
        self.watcher.current().cert[0].to_vec()
    }

    /// Waits until the server presents a different certificate than `before` (it
    /// re-reads its files every second).
    async fn wait_for_new_certificate(&self, before: &[u8]) -> anyhow::Result<()> {
        wait_for(
            "the webhook server to load the rotated certificate",
            Duration::from_secs(15),
            || async {
                let changed = self.served_certificate() != before;
                Ok::<_, String>(Check::ready_if(changed, (), "the old certificate"))
            },
        )
        .await?;
        Ok(())
    }

    /// Stops serving and closes every connection (the API server's keep-alive ones too).
    async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(20), task)
                .await
                .expect("the webhook server stops")
                .expect("the server task does not panic");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn config_map(name: &str, key: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(key.to_string(), "x".to_string())])),
        ..ConfigMap::default()
    }
}

/// `result` is the API server's refusal on behalf of `webhook`, with the validator's
/// message and code.
fn assert_denied<T: std::fmt::Debug>(result: Result<T, kube::Error>, webhook: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            let message = &status.message;
            assert!(
                message.contains(&format!(
                    "admission webhook \"{webhook}\" denied the request"
                )),
                "{status:?}"
            );
            assert!(message.contains(DENIAL), "{status:?}");
            assert_eq!(status.code, 403, "{status:?}");
        }
        other => panic!("expected a denial by {webhook}, got {other:?}"),
    }
}

/// `result` is a refusal because the API server could not call `webhook`; returns the
/// message.
fn assert_call_failed<T: std::fmt::Debug>(result: Result<T, kube::Error>, webhook: &str) -> String {
    match result {
        Err(kube::Error::Api(status)) => {
            assert!(
                status
                    .message
                    .contains(&format!("failed calling webhook \"{webhook}\"")),
                "{status:?}"
            );
            assert_eq!(status.code, 500, "{status:?}");
            status.message
        }
        other => panic!("expected a failed call of {webhook}, got {other:?}"),
    }
}

/// Creates `cm` until the API server admits it (e.g. once the webhook is reachable again).
async fn wait_until_admitted(api: &Api<ConfigMap>, cm: &ConfigMap) -> anyhow::Result<()> {
    let pp = PostParams::default();
    let name = cm.metadata.name.as_deref().unwrap_or_default();
    wait_for(
        &format!("ConfigMap {name} to be admitted"),
        TIMEOUT,
        || async {
            api.create(&pp, cm).await?;
            Ok::<_, kube::Error>(Check::Ready(()))
        },
    )
    .await?;
    Ok(())
}

#[tokio::test]
async fn validating_webhook_over_tls_survives_rotation_and_restarts() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("webhook").await?;
    let certs = WebhookCerts::temporary()?;
    let server = Server::start("127.0.0.1:0", &certs).await?;
    let path = ::webhook::validate_path::<ConfigMap>();
    assert_eq!(path, "/validate--v1-configmap");
    let spec = WebhookSpec::new(env.namespace(), server.addr, certs.ca_pem())
        .webhook(Webhook::validating(&path).for_resource::<ConfigMap>(&["CREATE", "UPDATE"]));
    // Returns once the API server calls the configuration.
    let mut guard = env.install_webhooks(&spec).await?;
    let name = guard.webhook_name(&path).expect("installed").to_string();
    assert!(name.ends_with(".kube-controllers-rs.test"), "{name}");
    let api = Api::<ConfigMap>::namespaced(env.client().clone(), env.namespace());
    let pp = PostParams::default();

    // Denied with the webhook's message; allowed otherwise; updates are checked too.
    assert_denied(
        api.create(&pp, &config_map("bad", "forbidden")).await,
        &name,
    );
    let created = api.create(&pp, &config_map("good-1", "fine")).await?;
    let mut edited = created.clone();
    edited
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("forbidden".into(), "x".into());
    assert_denied(api.replace("good-1", &pp, &edited).await, &name);
    assert!(api.get_opt("bad").await?.is_none());

    // The namespace selector keeps the webhook to this test's namespace.
    let other = TestEnv::with_prefix("webhook-other").await?;
    Api::<ConfigMap>::namespaced(other.client().clone(), other.namespace())
        .create(&pp, &config_map("bad", "forbidden"))
        .await?;

    // A new serving certificate from the same CA: the server reloads it, the caBundle
    // stays valid.
    let before = server.served_certificate();
    certs.rotate()?;
    server.wait_for_new_certificate(&before).await?;
    assert_denied(
        api.create(&pp, &config_map("bad", "forbidden")).await,
        &name,
    );
    api.create(&pp, &config_map("good-2", "fine")).await?;

    // Server gone + failurePolicy Fail: refused, naming the webhook that failed.
    let addr = server.addr;
    server.stop().await;
    let message = assert_call_failed(api.create(&pp, &config_map("good-3", "fine")).await, &name);
    assert!(message.contains(&addr.to_string()), "{message}");
    assert!(api.get_opt("good-3").await?.is_none());

    // Back on the same port: admission recovers. Every connection is new now, so this
    // also proves the API server accepts the rotated certificate in a fresh handshake.
    let server = Server::start(&addr.to_string(), &certs).await?;
    assert_eq!(server.addr, addr);
    wait_until_admitted(&api, &config_map("good-3", "fine")).await?;
    assert_denied(
        api.create(&pp, &config_map("bad", "forbidden")).await,
        &name,
    );

    // A certificate from a new CA is refused while the caBundle names the old one
    // (restarting the server closes the kept-alive connections), and accepted once the
    // configuration carries the new CA.
    let before = server.served_certificate();
    let new_ca = certs.rotate_with_new_ca()?;
    server.wait_for_new_certificate(&before).await?;
    server.stop().await;
    let server = Server::start(&addr.to_string(), &certs).await?;
    // The first call may still go to a connection of the stopped server ("broken
    // pipe"): retry until the handshake with the new server is what fails.
    let refused = wait_for(
        "the API server to refuse a certificate of an unknown CA",
        TIMEOUT,
        || async {
            Ok::<_, String>(match api.create(&pp, &config_map("good-4", "fine")).await {
                Ok(_) => Check::Ready(Err("admitted although the caBundle is another CA's")),
                Err(kube::Error::Api(status)) if status.message.contains("x509") => {
                    Check::Ready(Ok(status.message))
                }
                Err(e) => Check::Pending(e.to_string()),
            })
        },
    )
    .await?;
    let message = refused.map_err(anyhow::Error::msg)?;
    assert!(
        message.contains(&format!("failed calling webhook \"{name}\"")),
        "{message}"
    );
    assert!(message.contains("unknown authority"), "{message}");
    guard.set_ca_bundle(&new_ca).await?;
    wait_until_admitted(&api, &config_map("good-4", "fine")).await?;
    assert_denied(
        api.create(&pp, &config_map("bad", "forbidden")).await,
        &name,
    );

    drop(guard);
    server.stop().await;
    Ok(())
}

#[tokio::test]
async fn mutating_and_validating_webhooks_and_their_cleanup() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("webhook-mutating").await?;
    let certs = WebhookCerts::temporary()?;
    let server = Server::start("127.0.0.1:0", &certs).await?;
    let (validate, mutate) = (
        ::webhook::validate_path::<ConfigMap>(),
        ::webhook::mutate_path::<ConfigMap>(),
    );
    let spec = WebhookSpec::new(env.namespace(), server.addr, certs.ca_pem())
        .webhook(Webhook::mutating(&mutate).for_resource::<ConfigMap>(&["CREATE"]))
        .webhook(
            Webhook::validating(&validate)
                .name("vconfigmap")
                .for_resource::<ConfigMap>(&["CREATE"]),
        );
    let guard = env.install_webhooks(&spec).await?;
    let validating = guard
        .validating_configuration()
        .expect("validating")
        .to_string();
    let mutating = guard
        .mutating_configuration()
        .expect("mutating")
        .to_string();
    let vname = guard
        .webhook_name(&validate)
        .expect("installed")
        .to_string();
    assert!(vname.starts_with("vconfigmap."), "{vname}");

    let api = Api::<ConfigMap>::namespaced(env.client().clone(), env.namespace());
    let pp = PostParams::default();
    let created = api.create(&pp, &config_map("plain", "fine")).await?;
    let data = created.data.unwrap_or_default();
    let (key, value) = DEFAULTED;
    assert_eq!(data.get(key).map(String::as_str), Some(value), "{data:?}");
    assert_eq!(data.get("fine").map(String::as_str), Some("x"), "{data:?}");
    assert_denied(
        api.create(&pp, &config_map("bad", "forbidden")).await,
        &vname,
    );

    // Deleting the guard deletes both configurations; the API server stops calling them.
    guard.delete().await?;
    let client = env.client().clone();
    assert!(
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .get_opt(&validating)
            .await?
            .is_none()
    );
    assert!(
        Api::<MutatingWebhookConfiguration>::all(client)
            .get_opt(&mutating)
            .await?
            .is_none()
    );
    wait_until_admitted(&api, &config_map("bad", "forbidden")).await?;
    let bad = api.get("bad").await?;
    assert!(
        !bad.data.unwrap_or_default().contains_key(key),
        "no longer defaulted"
    );
    server.stop().await;
    Ok(())
}
