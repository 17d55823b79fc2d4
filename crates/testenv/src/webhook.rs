//! Admission webhooks in e2e tests: controller-runtime envtest's `WebhookInstallOptions`.
//!
//! The real kube-apiserver of the test control plane calls a webhook server running in
//! the test process, over real TLS on 127.0.0.1:
//!
//! 1. [`WebhookCerts`](crate::webhook::WebhookCerts) makes a throw-away CA and a
//!    serving certificate for `127.0.0.1` and `localhost`, written as `tls.crt` /
//!    `tls.key` (what `crates/webhook` serves from its certificate directory), and can
//!    [`rotate`](crate::webhook::WebhookCerts::rotate) it on disk.
//! 2. The test starts its webhook server on `127.0.0.1:0` with that directory.
//! 3. [`install_webhooks`](crate::webhook::install_webhooks) (or
//!    [`TestEnv::install_webhooks`](crate::TestEnv::install_webhooks)) creates a
//!    `ValidatingWebhookConfiguration` and/or `MutatingWebhookConfiguration` whose
//!    webhooks point at `https://127.0.0.1:<port><path>` with the CA as `caBundle`, and
//!    returns once the API server **calls** them (see below). The
//!    [`WebhookGuard`](crate::webhook::WebhookGuard) it returns deletes both
//!    configurations when dropped.
//!
//! # Isolation
//!
//! The configurations are cluster-scoped and the control plane is shared by every test
//! of a binary, so each one is named `<namespace>-<random>` and every webhook has a
//! `namespaceSelector` matching only the test's namespace (by its
//! `kubernetes.io/metadata.name` label): parallel tests never call each other's
//! webhooks. A namespace selector does not apply to *cluster-scoped* resources; a test
//! with a webhook on one adds an
//! [`object_selector`](crate::webhook::Webhook::object_selector) to keep it to its own
//! objects.
//!
//! # Waiting until the API server calls the webhooks
//!
//! The API server learns about a new configuration through an informer, a moment after
//! the create returns; until then requests are admitted without a call, and a test that
//! asserted "this object is allowed" would prove nothing. So every configuration also
//! holds a *probe* webhook, `testenv-probe.<configuration>.kube-controllers-rs.test`,
//! that only matches ConfigMaps carrying a label unique to the configuration and points
//! at a closed port (`https://127.0.0.1:1`, failure policy `Fail`).
//! [`install_webhooks`](crate::webhook::install_webhooks) dry-runs the create of such a
//! ConfigMap until the API server refuses it naming the probe: the configuration is
//! loaded as one object, so from then on every webhook in it is called. Nothing is
//! persisted (dry run), the test's own webhooks never see the probe object (their object
//! selector excludes the label), and it works whether or not the test's webhook server
//! is up yet.
//!
//! ```no_run
//! # async fn example(env: &testenv::TestEnv) -> anyhow::Result<()> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use testenv::webhook::{Webhook, WebhookCerts, WebhookSpec};
//!
//! let certs = WebhookCerts::temporary()?; // tls.crt + tls.key for 127.0.0.1
//! # let addr: std::net::SocketAddr = "127.0.0.1:9443".parse()?;
//! // ... start a webhook::WebhookServer on 127.0.0.1:0 with `certs.dir()`, get its `addr` ...
//! let spec = WebhookSpec::new(env.namespace(), addr, certs.ca_pem()).webhook(
//!     Webhook::validating("/validate--v1-configmap")
//!         .for_resource::<ConfigMap>(&["CREATE", "UPDATE"]),
//! );
//! let guard = env.install_webhooks(&spec).await?; // returns once the API server calls it
//! // ... a denied create is now a kube::Error::Api whose message contains
//! // `admission webhook "<guard.webhook_name(path)>" denied the request: <message>`.
//! certs.rotate()?; // a new serving certificate from the same CA: the caBundle stays valid
//! # drop(guard);
//! # Ok(()) }
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, Config};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use crate::error::{Error, Result};
use crate::namespace::random_name;
use crate::wait::{Check, wait_for};

/// The certificate file in a [`WebhookCerts`] directory (`crates/webhook`'s default).
pub const CERT_FILE: &str = "tls.crt";
/// The key file in a [`WebhookCerts`] directory (PKCS#8 PEM).
pub const KEY_FILE: &str = "tls.key";
/// The CA certificate file in a [`WebhookCerts`] directory (as cert-manager writes it).
pub const CA_FILE: &str = "ca.crt";
/// The DNS suffix of every webhook name [`install_webhooks`] generates.
pub const WEBHOOK_NAME_SUFFIX: &str = "kube-controllers-rs.test";
/// The label that marks [`install_webhooks`]' probe objects; the test's own webhooks
/// never match objects carrying it.
pub const PROBE_LABEL: &str = "testenv.kube-controllers-rs.test/webhook-probe";
/// How long [`install_webhooks`] waits for the API server to call a new configuration.
pub const ACTIVATION_TIMEOUT: Duration = Duration::from_secs(60);
/// Where the probe webhook points: a closed port, so calling it always fails.
const PROBE_URL: &str = "https://127.0.0.1:1/testenv-webhook-probe";

// ------------------------------------------------------------------ certificates --

/// A CA that can sign serving certificates.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
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

fn cert_error(e: rcgen::Error) -> Error {
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
    dir: PathBuf,
    ca: Mutex<Ca>,
    remove_on_drop: bool,
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
fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
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

// ---------------------------------------------------------------- configurations --

/// Validating or mutating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    /// In a `ValidatingWebhookConfiguration`.
    Validating,
    /// In a `MutatingWebhookConfiguration`.
    Mutating,
}

/// What the API server does when it cannot call the webhook (or gets no valid answer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailurePolicy {
    /// Refuse the request (kubebuilder's and this crate's default).
    #[default]
    Fail,
    /// Admit the request as if the webhook did not exist.
    Ignore,
}

impl FailurePolicy {
    fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "Fail",
            Self::Ignore => "Ignore",
        }
    }
}

/// One webhook of a [`WebhookSpec`]: a path on the test's webhook server and the
/// requests routed to it. `sideEffects: None` and `admissionReviewVersions: ["v1"]`
/// always; failure policy `Fail` and a 5 s timeout unless set.
#[derive(Debug, Clone)]
pub struct Webhook {
    kind: WebhookKind,
    path: String,
    name: Option<String>,
    rules: Vec<RuleWithOperations>,
    failure_policy: FailurePolicy,
    timeout_seconds: i32,
    object_selector: Option<LabelSelector>,
}

impl Webhook {
    /// A validating webhook served at `path` (e.g. `webhook::validate_path::<K>()`).
    pub fn validating(path: impl Into<String>) -> Self {
        Self::new(WebhookKind::Validating, path.into())
    }

    /// A mutating webhook served at `path` (e.g. `webhook::mutate_path::<K>()`).
    pub fn mutating(path: impl Into<String>) -> Self {
        Self::new(WebhookKind::Mutating, path.into())
    }

    fn new(kind: WebhookKind, path: String) -> Self {
        Self {
            kind,
            path,
            name: None,
            rules: Vec::new(),
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 5,
            object_selector: None,
        }
    }

    /// Routes `operations` (`"CREATE"`, `"UPDATE"`, `"DELETE"`, `"CONNECT"` or `"*"`) on
    /// `resource` (plural, e.g. `"configmaps"`, `"foos/status"`) of `api_group`
    /// (`""` for core) / `api_version` to this webhook.
    pub fn rule(
        mut self,
        api_group: &str,
        api_version: &str,
        resource: &str,
        operations: &[&str],
    ) -> Self {
        let strings = |s: &[&str]| Some(s.iter().map(|s| s.to_string()).collect());
        self.rules.push(RuleWithOperations {
            api_groups: strings(&[api_group]),
            api_versions: strings(&[api_version]),
            resources: strings(&[resource]),
            operations: strings(operations),
            scope: None,
        });
        self
    }

    /// [`rule`](Self::rule) for `K`'s group, version and plural.
    pub fn for_resource<K: kube::Resource<DynamicType = ()>>(self, operations: &[&str]) -> Self {
        let (group, version, plural) = (K::group(&()), K::version(&()), K::plural(&()));
        self.rule(&group, &version, &plural, operations)
    }

    /// The first segment of the webhook's name (default: derived from the path), e.g.
    /// `vfoo` for `vfoo.<configuration>.kube-controllers-rs.test`. A DNS label.
    pub fn name(mut self, label: impl Into<String>) -> Self {
        self.name = Some(label.into());
        self
    }

    /// What the API server does when the call fails (default [`FailurePolicy::Fail`]).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.failure_policy = policy;
        self
    }

    /// How long the API server waits for an answer, 1 to 30 s (default 5).
    pub fn timeout_seconds(mut self, seconds: i32) -> Self {
        self.timeout_seconds = seconds;
        self
    }

    /// Only objects matching `selector` are sent (needed to isolate webhooks on
    /// cluster-scoped resources, which the namespace selector does not filter).
    pub fn object_selector(mut self, selector: LabelSelector) -> Self {
        self.object_selector = Some(selector);
        self
    }

    /// Validating or mutating.
    pub fn kind(&self) -> WebhookKind {
        self.kind
    }

    /// The path on the webhook server.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// The webhooks one test installs: where its webhook server listens, the CA that signed
/// its certificate, the one namespace whose requests go to it, and the webhooks.
#[derive(Debug, Clone)]
pub struct WebhookSpec {
    namespace: String,
    address: SocketAddr,
    ca_pem: String,
    webhooks: Vec<Webhook>,
}

impl WebhookSpec {
    /// Webhooks for requests in `namespace`, served at `https://<address><path>` with a
    /// certificate `ca_pem` signed (e.g. [`WebhookCerts::ca_pem`]).
    pub fn new(
        namespace: impl Into<String>,
        address: SocketAddr,
        ca_pem: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            address,
            ca_pem: ca_pem.into(),
            webhooks: Vec::new(),
        }
    }

    /// Adds `webhook` (validating ones go to the ValidatingWebhookConfiguration, in
    /// order, mutating ones to the MutatingWebhookConfiguration).
    pub fn webhook(mut self, webhook: Webhook) -> Self {
        self.webhooks.push(webhook);
        self
    }

    /// The namespace whose requests are sent to the webhooks.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// `https://<address><path>`: the URL the API server calls for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.address)
    }
}

/// The webhook configurations [`install_webhooks`] created. Dropping it deletes them
/// (best effort, from a helper thread, like [`TestNamespace`](crate::TestNamespace));
/// the API server stops calling them a moment later.
pub struct WebhookGuard {
    config: Config,
    namespace: String,
    validating: Option<String>,
    mutating: Option<String>,
    /// (path, full webhook name), in the spec's order.
    names: Vec<(String, String)>,
    /// Bumped by every [`set_ca_bundle`](WebhookGuard::set_ca_bundle): the probe label
    /// value of the configuration version to wait for.
    generation: u32,
    delete_on_drop: bool,
}

impl fmt::Debug for WebhookGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebhookGuard")
            .field("validating", &self.validating)
            .field("mutating", &self.mutating)
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// Creates the ValidatingWebhookConfiguration and/or MutatingWebhookConfiguration of
/// `spec` with the cluster admin credentials of `config`, and waits (up to
/// [`ACTIVATION_TIMEOUT`] each) until the API server calls them (see the
/// [module docs](self)). Returns the guard that deletes them.
///
/// Each webhook gets: name `<label>.<configuration>.kube-controllers-rs.test`,
/// `clientConfig.url = https://<address><path>` with `caBundle` = the spec's CA, its
/// rules, `namespaceSelector` = the spec's namespace only, failure policy, timeout,
/// `sideEffects: None`, `admissionReviewVersions: ["v1"]`, and an object selector
/// excluding [`PROBE_LABEL`] (plus its own, if set).
///
/// Takes the [`Config`] rather than a client because the guard needs one to delete the
/// configurations from its own thread on drop (a client is tied to the runtime it was
/// made on); [`TestEnv::install_webhooks`](crate::TestEnv::install_webhooks) passes it.
///
/// Errors: [`Error::InvalidRequest`] for a spec without webhooks or with a name that is
/// not a DNS label, [`Error::Kube`] when the API server refuses a configuration (the
/// message names the field), [`Error::Timeout`] when it never calls them.
pub async fn install_webhooks(config: &Config, spec: &WebhookSpec) -> Result<WebhookGuard> {
    if spec.webhooks.is_empty() {
        return Err(Error::InvalidRequest(
            "install_webhooks: the spec has no webhooks".into(),
        ));
    }
    let client = Client::try_from(config.clone())?;
    // At most 40 + 9 characters: the probe label value below must stay within 63.
    let prefix: String = spec.namespace.chars().take(40).collect();
    let configuration = random_name(&prefix);
    let domain = format!("{configuration}.{WEBHOOK_NAME_SUFFIX}");

    let mut names: Vec<(String, String)> = Vec::new();
    let mut validating = Vec::new();
    let mut mutating = Vec::new();
    for webhook in &spec.webhooks {
        let label = match &webhook.name {
            Some(label) => {
                if !is_dns_label(label) {
                    return Err(Error::InvalidRequest(format!(
                        "webhook name {label:?} is not a DNS label (lower-case alphanumerics and '-', at most 63)"
                    )));
                }
                label.clone()
            }
            None => label_from_path(&webhook.path),
        };
        let mut name = format!("{label}.{domain}");
        // Unique within the configuration (two webhooks on one path, say).
        let mut n = 1;
        while names.iter().any(|(_, taken)| *taken == name) || name.starts_with("testenv-probe.") {
            n += 1;
            name = format!("{label}-{n}.{domain}");
        }
        names.push((webhook.path.clone(), name.clone()));
        let common = Common {
            name,
            client_config: WebhookClientConfig {
                url: Some(spec.url(&webhook.path)),
                ca_bundle: Some(ByteString(spec.ca_pem.clone().into_bytes())),
                service: None,
            },
            rules: webhook.rules.clone(),
            failure_policy: webhook.failure_policy,
            timeout_seconds: webhook.timeout_seconds,
            namespace_selector: namespace_selector(&spec.namespace),
            object_selector: without_probe(webhook.object_selector.clone()),
        };
        match webhook.kind {
            WebhookKind::Validating => validating.push(common.validating()),
            WebhookKind::Mutating => mutating.push(common.mutating()),
        }
    }

    let mut guard = WebhookGuard {
        config: config.clone(),
        namespace: spec.namespace.clone(),
        validating: None,
        mutating: None,
        names,
        generation: 0,
        delete_on_drop: true,
    };
    let probe = probe_webhook(&spec.namespace, &configuration, &spec.ca_pem, 0);
    let pp = PostParams::default();
    if !validating.is_empty() {
        validating.push(probe.validating());
        let object = ValidatingWebhookConfiguration {
            metadata: meta(&configuration),
            webhooks: Some(validating),
        };
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .create(&pp, &object)
            .await?;
        guard.validating = Some(configuration.clone());
    }
    if !mutating.is_empty() {
        mutating.push(probe.mutating());
        let object = MutatingWebhookConfiguration {
            metadata: meta(&configuration),
            webhooks: Some(mutating),
        };
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .create(&pp, &object)
            .await?;
        guard.mutating = Some(configuration.clone());
    }
    guard.wait_until_called(&client).await?;
    Ok(guard)
}

impl WebhookGuard {
    /// The ValidatingWebhookConfiguration's name, if the spec had validating webhooks.
    pub fn validating_configuration(&self) -> Option<&str> {
        self.validating.as_deref()
    }

    /// The MutatingWebhookConfiguration's name, if the spec had mutating webhooks.
    pub fn mutating_configuration(&self) -> Option<&str> {
        self.mutating.as_deref()
    }

    /// The full names of the webhooks, in the spec's order (the API server's messages
    /// quote them: `admission webhook "<name>" denied the request: ...`).
    pub fn webhook_names(&self) -> Vec<&str> {
        self.names.iter().map(|(_, name)| name.as_str()).collect()
    }

    /// The full name of the (first) webhook serving `path`.
    pub fn webhook_name(&self, path: &str) -> Option<&str> {
        self.names
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, name)| name.as_str())
    }

    /// Replaces every webhook's `caBundle` with `ca_pem` (after
    /// [`WebhookCerts::rotate_with_new_ca`]) and waits until the API server uses the
    /// updated configurations.
    pub async fn set_ca_bundle(&mut self, ca_pem: &str) -> Result<()> {
        let client = Client::try_from(self.config.clone())?;
        self.generation += 1;
        let bundle = ByteString(ca_pem.as_bytes().to_vec());
        let configuration = self.validating.clone().or_else(|| self.mutating.clone());
        let probe = probe_webhook(
            &self.namespace,
            configuration.as_deref().unwrap_or_default(),
            ca_pem,
            self.generation,
        );
        let pp = PostParams::default();
        if let Some(name) = &self.validating {
            let api = Api::<ValidatingWebhookConfiguration>::all(client.clone());
            let mut object = api.get(name).await?;
            let mut webhooks = object.webhooks.take().unwrap_or_default();
            webhooks.retain(|w| !is_probe(&w.name));
            for webhook in &mut webhooks {
                webhook.client_config.ca_bundle = Some(bundle.clone());
            }
            webhooks.push(probe.validating());
            object.webhooks = Some(webhooks);
            api.replace(name, &pp, &object).await?;
        }
        if let Some(name) = &self.mutating {
            let api = Api::<MutatingWebhookConfiguration>::all(client.clone());
            let mut object = api.get(name).await?;
            let mut webhooks = object.webhooks.take().unwrap_or_default();
            webhooks.retain(|w| !is_probe(&w.name));
            for webhook in &mut webhooks {
                webhook.client_config.ca_bundle = Some(bundle.clone());
            }
            webhooks.push(probe.mutating());
            object.webhooks = Some(webhooks);
            api.replace(name, &pp, &object).await?;
        }
        self.wait_until_called(&client).await
    }

    /// Deletes the configurations now (instead of on drop) and reports errors.
    pub async fn delete(mut self) -> Result<()> {
        self.delete_on_drop = false;
        let client = Client::try_from(self.config.clone())?;
        delete_configurations(&client, self.validating.take(), self.mutating.take()).await
    }

    /// Keeps the configurations after the test (for debugging).
    pub fn keep(mut self) {
        self.delete_on_drop = false;
    }

    /// Dry-runs the create of each configuration's probe ConfigMap until the API server
    /// refuses it naming the current probe webhook.
    async fn wait_until_called(&self, client: &Client) -> Result<()> {
        let config_maps = Api::<ConfigMap>::namespaced(client.clone(), &self.namespace);
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        for (kind, name) in [
            ("validating", &self.validating),
            ("mutating", &self.mutating),
        ] {
            let Some(name) = name else { continue };
            let probe = probe_name(name);
            let value = probe_value(name, kind, self.generation);
            let object = ConfigMap {
                metadata: ObjectMeta {
                    name: Some("testenv-webhook-probe".into()),
                    labels: Some([(PROBE_LABEL.to_string(), value)].into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            };
            wait_for(
                &format!("the API server to call the {kind} webhook configuration {name}"),
                ACTIVATION_TIMEOUT,
                || async {
                    Ok::<_, String>(match config_maps.create(&dry_run, &object).await {
                        Err(kube::Error::Api(status)) if status.message.contains(&probe) => {
                            Check::Ready(())
                        }
                        Ok(_) => {
                            Check::Pending("a probe object was admitted without a call".into())
                        }
                        Err(e) => Check::Pending(format!("probe refused otherwise: {e}")),
                    })
                },
            )
            .await?;
        }
        Ok(())
    }
}

impl Drop for WebhookGuard {
    fn drop(&mut self) {
        if !self.delete_on_drop || (self.validating.is_none() && self.mutating.is_none()) {
            return;
        }
        let (validating, mutating) = (self.validating.take(), self.mutating.take());
        let config = self.config.clone();
        // Own thread + runtime: we may be inside (and blocking) a runtime.
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            rt.block_on(async {
                let client = Client::try_from(config).ok()?;
                let names = format!("{validating:?}/{mutating:?}");
                let delete = delete_configurations(&client, validating, mutating);
                match tokio::time::timeout(Duration::from_secs(10), delete).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(configurations = %names, error = %e, "deleting webhook configurations")
                    }
                    Err(_) => {
                        tracing::warn!(configurations = %names, "timed out deleting webhook configurations")
                    }
                }
                Some(())
            })
        });
        let _ = handle.join();
    }
}

async fn delete_configurations(
    client: &Client,
    validating: Option<String>,
    mutating: Option<String>,
) -> Result<()> {
    let dp = DeleteParams::default();
    if let Some(name) = validating {
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .delete(&name, &dp)
            .await?;
    }
    if let Some(name) = mutating {
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .delete(&name, &dp)
            .await?;
    }
    Ok(())
}

/// The fields validating and mutating webhooks share.
struct Common {
    name: String,
    client_config: WebhookClientConfig,
    rules: Vec<RuleWithOperations>,
    failure_policy: FailurePolicy,
    timeout_seconds: i32,
    namespace_selector: LabelSelector,
    object_selector: LabelSelector,
}

impl Common {
    fn validating(&self) -> ValidatingWebhook {
        ValidatingWebhook {
            name: self.name.clone(),
            client_config: self.client_config.clone(),
            rules: Some(self.rules.clone()),
            failure_policy: Some(self.failure_policy.as_str().into()),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            timeout_seconds: Some(self.timeout_seconds),
            namespace_selector: Some(self.namespace_selector.clone()),
            object_selector: Some(self.object_selector.clone()),
            ..ValidatingWebhook::default()
        }
    }

    fn mutating(&self) -> MutatingWebhook {
        MutatingWebhook {
            name: self.name.clone(),
            client_config: self.client_config.clone(),
            rules: Some(self.rules.clone()),
            failure_policy: Some(self.failure_policy.as_str().into()),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            timeout_seconds: Some(self.timeout_seconds),
            namespace_selector: Some(self.namespace_selector.clone()),
            object_selector: Some(self.object_selector.clone()),
            ..MutatingWebhook::default()
        }
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        labels: Some([("testenv".to_string(), "true".to_string())].into()),
        ..ObjectMeta::default()
    }
}

/// Matches only `namespace`, by the label the API server sets on every namespace.
fn namespace_selector(namespace: &str) -> LabelSelector {
    LabelSelector {
        match_labels: Some(
            [(
                "kubernetes.io/metadata.name".to_string(),
                namespace.to_string(),
            )]
            .into(),
        ),
        match_expressions: None,
    }
}

/// `selector` (or everything) minus the objects carrying [`PROBE_LABEL`].
fn without_probe(selector: Option<LabelSelector>) -> LabelSelector {
    let mut selector = selector.unwrap_or_default();
    selector
        .match_expressions
        .get_or_insert_with(Vec::new)
        .push(LabelSelectorRequirement {
            key: PROBE_LABEL.to_string(),
            operator: "DoesNotExist".to_string(),
            values: None,
        });
    selector
}

fn probe_name(configuration: &str) -> String {
    format!("testenv-probe.{configuration}.{WEBHOOK_NAME_SUFFIX}")
}

fn is_probe(name: &str) -> bool {
    name.starts_with("testenv-probe.")
}

/// The probe label value of one configuration version (at most 63 characters: the
/// configuration name is at most 49).
fn probe_value(configuration: &str, kind: &str, generation: u32) -> String {
    format!("{configuration}-{}{generation}", &kind[..1])
}

/// The probe webhook of `configuration` (at `generation`): ConfigMap creates carrying
/// its label, sent to a closed port, failure policy Fail. The label value differs per
/// kind, so the mutating and the validating probe are waited for separately.
struct Probe {
    common: Common,
    configuration: String,
    generation: u32,
}

impl Probe {
    fn validating(&self) -> ValidatingWebhook {
        let mut webhook = self.common.validating();
        webhook.object_selector = Some(self.selector("validating"));
        webhook
    }

    fn mutating(&self) -> MutatingWebhook {
        let mut webhook = self.common.mutating();
        webhook.object_selector = Some(self.selector("mutating"));
        webhook
    }

    fn selector(&self, kind: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(
                [(
                    PROBE_LABEL.to_string(),
                    probe_value(&self.configuration, kind, self.generation),
                )]
                .into(),
            ),
            match_expressions: None,
        }
    }
}

fn probe_webhook(namespace: &str, configuration: &str, ca_pem: &str, generation: u32) -> Probe {
    Probe {
        common: Common {
            name: probe_name(configuration),
            client_config: WebhookClientConfig {
                url: Some(PROBE_URL.to_string()),
                ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
                service: None,
            },
            rules: vec![RuleWithOperations {
                api_groups: Some(vec![String::new()]),
                api_versions: Some(vec!["v1".into()]),
                resources: Some(vec!["configmaps".into()]),
                operations: Some(vec!["CREATE".into()]),
                scope: None,
            }],
            failure_policy: FailurePolicy::Fail,
            timeout_seconds: 2,
            namespace_selector: namespace_selector(namespace),
            // Replaced by the kind's selector.
            object_selector: LabelSelector::default(),
        },
        configuration: configuration.to_string(),
        generation,
    }
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS label from a webhook path: `/validate--v1-configmap` -> `validate--v1-configmap`.
fn label_from_path(path: &str) -> String {
    let mut label: String = path
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    label.truncate(63);
    let label = label.trim_matches('-');
    if label.is_empty() {
        "webhook".to_string()
    } else {
        label.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

    use super::*;

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

        // crates/webhook loads the pair (parses both, and the key is the certificate's).
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
}
