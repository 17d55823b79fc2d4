//! Admission webhooks in e2e tests: controller-runtime envtest's `WebhookInstallOptions`.
//!
//! The real kube-apiserver of the test control plane calls a webhook server running in
//! the test process, over real TLS on 127.0.0.1:
//!
//! 1. [`WebhookCerts`](crate::webhook::WebhookCerts) makes a throw-away CA and a
//!    serving certificate for `127.0.0.1` and `localhost`, written as `tls.crt` /
//!    `tls.key` (what `crates/runtime/webhook` serves from its certificate directory), and can
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

mod certs;
mod install;
mod spec;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use certs::WebhookCerts;
pub use install::{WebhookGuard, install_webhooks};
pub use spec::{FailurePolicy, Webhook, WebhookKind, WebhookSpec};

/// The certificate file in a [`WebhookCerts`] directory (`crates/runtime/webhook`'s default).
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
pub(crate) const PROBE_URL: &str = "https://127.0.0.1:1/testenv-webhook-probe";
