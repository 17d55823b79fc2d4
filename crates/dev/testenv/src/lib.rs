//! `testenv`: this workspace's analogue of controller-runtime's envtest.
//!
//! It runs a *real* Kubernetes control plane on 127.0.0.1 for end-to-end tests:
//! etcd, kube-apiserver (RBAC on, default admission plugins),
//! kube-controller-manager (garbage collector, Deployment/ReplicaSet,
//! ServiceAccount token controllers), kube-scheduler and kwok with two fake
//! Nodes whose Pods become Running/Ready. The binaries are built from the Go
//! modules in `hack/tools/control-plane` by `hack/control-plane.sh build` and
//! cached under `~/.cache/kube-controllers-rs/k8s-<version>/bin`
//! (`KUBEBUILDER_ASSETS` overrides, as in envtest). The release is the newest one
//! pinned, or the one `K8S_VERSION` selects (`oldest` runs the oldest release we
//! support; [`selected_kubernetes_version`] tells which).
//!
//! One control plane is shared by all tests of a test binary
//! ([`ControlPlane::shared`]); each test gets a fresh namespace and client
//! ([`TestEnv::new`]). Every process dies with the test process, even on
//! panic or `SIGKILL` (process group + parent-death signal).
//!
//! Admission webhooks: [`webhook::WebhookCerts`] makes a serving certificate for
//! 127.0.0.1, [`TestEnv::install_webhooks`] registers a test's webhook server with the
//! API server for the test's namespace only (see [`webhook`]).
//!
//! Fault injection: [`inject::WatchLatency`] makes a client's informers lag (its watch
//! bodies on one resource are delayed, its writes are not), [`inject::ResponseLog`]
//! counts the responses it gets (409s, writes); both are layers for
//! `kube::client::ClientBuilder::with_layer` (see [`inject`] for why not a proxy).
//!
//! Environment variables: [`ENV_KUBECONFIG`] (reuse a running cluster),
//! [`ENV_SCRIPT`], [`ENV_START_TIMEOUT`], [`ENV_KUBECTL`], `KUBEBUILDER_ASSETS`,
//! `KUBE_CONTROLLERS_CACHE_DIR` (binary cache root), `K8S_VERSION` (release). See `docs/testing.md`.
//!
//! ```no_run
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use testenv::{Check, TestEnv, wait_for};
//!
//! #[tokio::test]
//! async fn creates_a_config_map() -> anyhow::Result<()> {
//!     let env = TestEnv::new().await?;
//!     let api = kube::Api::<ConfigMap>::namespaced(env.client().clone(), env.namespace());
//!     // ... create objects, then poll:
//!     wait_for("config map present", Duration::from_secs(30), || async {
//!         let cm = api.get_opt("demo").await?;
//!         Ok::<_, kube::Error>(Check::ready_if(cm.is_some(), (), "absent"))
//!     })
//!     .await?;
//!     Ok(())
//! }
//! # fn main() {}
//! ```

// `unsafe` only where an item allows it and says why: the parent-death signal set
// between fork and exec (process.rs).
#![deny(unsafe_code)]

mod control_plane;
/// Installing CRDs and waiting until they are served ([`crd::install_crds`]).
pub mod crd;
mod error;
pub mod inject;
mod namespace;
mod objects;
mod process;
mod rbac;
/// What the tutorial's examples share around the code they teach: their `main`
/// (client, CRDs, a namespace of their own) and their [`tutorial::Log`].
pub mod tutorial;
mod wait;
/// Admission webhooks called by the real API server: certificates, webhook
/// configurations isolated per test, and waiting until they are called
/// ([`webhook::install_webhooks`]).
pub mod webhook;

use std::path::Path;

use kube::{Client, Config};

pub use control_plane::{
    ControlPlane, ENV_KUBECONFIG, ENV_KUBECTL, ENV_SCRIPT, ENV_START_TIMEOUT,
    selected_kubernetes_version,
};
pub use error::{Error, Result};
pub use namespace::TestNamespace;
pub use objects::{wait_for_event, wait_for_object};
pub use rbac::service_account_token;
pub use wait::{Check, wait_for};

/// `GET` a raw API server path (e.g. `/readyz`, `/version`) as text.
pub async fn get_raw(client: &Client, path: &str) -> Result<String> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| Error::InvalidRequest(format!("GET {path}: {e}")))?;
    Ok(client.request_text(request).await?)
}

/// Everything one test needs: the shared control plane, a fresh admin client
/// and a fresh namespace (deleted when this is dropped).
pub struct TestEnv {
    control_plane: &'static ControlPlane,
    client: Client,
    config: Config,
    namespace: TestNamespace,
}

impl TestEnv {
    /// Start (once per process) or reuse the shared control plane, then create
    /// a client and a `testenv-<random>` namespace.
    pub async fn new() -> Result<Self> {
        Self::with_prefix("testenv").await
    }

    /// Like [`TestEnv::new`], naming the namespace `<prefix>-<random>`.
    pub async fn with_prefix(prefix: &str) -> Result<Self> {
        // Startup blocks (process start, maybe a build): keep it off the
        // async worker thread.
        let control_plane = tokio::task::spawn_blocking(ControlPlane::shared)
            .await
            .map_err(|e| Error::SharedStartFailed(format!("startup task failed: {e}")))??;
        Self::on(control_plane, prefix).await
    }

    /// A client and a `<prefix>-<random>` namespace on `control_plane` (a private one,
    /// e.g. [`ControlPlane::start_with_args`], leaked to live as long as the
    /// test binary).
    pub async fn on(control_plane: &'static ControlPlane, prefix: &str) -> Result<Self> {
        control_plane.check_running()?;
        let config = control_plane.config().await?;
        let client = Client::try_from(config.clone())?;
        let namespace = TestNamespace::create(&client, config.clone(), prefix).await?;
        Ok(Self {
            control_plane,
            client,
            config,
            namespace,
        })
    }

    /// The admin client (client certificate in `system:masters`).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The admin client's configuration (e.g. to build a client on another runtime).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// [`webhook::install_webhooks`] with the admin credentials: creates the webhook
    /// configurations of `spec` and returns once the API server calls them.
    pub async fn install_webhooks(
        &self,
        spec: &webhook::WebhookSpec,
    ) -> Result<webhook::WebhookGuard> {
        webhook::install_webhooks(&self.config, spec).await
    }

    /// This test's namespace.
    pub fn namespace(&self) -> &str {
        self.namespace.name()
    }

    /// The admin kubeconfig file.
    pub fn kubeconfig(&self) -> &Path {
        self.control_plane.kubeconfig_path()
    }

    /// The shared control plane (kubectl, token clients, timings).
    pub fn control_plane(&self) -> &'static ControlPlane {
        self.control_plane
    }
}

impl std::fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestEnv")
            .field("control_plane", &self.control_plane)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}
