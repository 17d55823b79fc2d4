//! End-to-end tests on a real control plane (etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler and kwok fake nodes, from `kcr-testenv`):
//! controller-runtime's envtest suite, `internal/controller/suite_test.go`.
//!
//! Each test gets its own namespace and runs its own manager, in this process, with
//! the same `setup` functions `src/main.rs` calls, watching only that namespace: tests
//! run in parallel without seeing each other's objects. The first test to start
//! starts the control plane (about 10 s); the others share it.
//!
//! Each kind's tests are a module next to this file (`kcr create api` adds them).
//!
//! (Inside these tests `::guestbook` is the project's library: a test module may
//! have the same name as the crate.)

mod guestbook;
mod guestbook_webhook;
mod memcached;
// +kcr:scaffold:e2e-modules

use std::fmt::Debug;
use std::time::Duration;

use clap::Parser;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Api;
use manager::{Manager, ManagerArgs, ManagerError};
use serde::de::DeserializeOwned;
use testenv::TestEnv;
use tokio_util::sync::CancellationToken;

/// How long a test waits for something to happen. Generous: a Deployment is available
/// only once kube-controller-manager, the scheduler and kwok have done their part, on
/// a machine that may run several test binaries at once.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// Installs the project's CRDs and waits until they are served (idempotent: tests
/// running at the same time may all do it).
pub async fn install_crds(env: &TestEnv) -> anyhow::Result<()> {
    testenv::crd::install_crds(env.client(), &::guestbook::crds()).await?;
    Ok(())
}

/// The manager's flags, parsed as the binary parses them.
#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    manager: ManagerArgs,
}

/// A manager running in the background until dropped.
pub struct RunningManager {
    cancel: CancellationToken,
}

impl Drop for RunningManager {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Starts a manager on the test's control plane, for the test's namespace only, with
/// what `setup` adds (e.g. `::guestbook::controller::<kind>::setup`). No metrics or
/// health servers: tests run in parallel and would fight for the ports.
pub async fn start_manager(
    env: &TestEnv,
    setup: impl FnOnce(&mut Manager) -> Result<(), ManagerError>,
) -> anyhow::Result<RunningManager> {
    let kubeconfig = env.kubeconfig().display().to_string();
    let flags = Flags::try_parse_from([
        "guestbook",
        "--kubeconfig",
        &kubeconfig,
        "--namespace",
        env.namespace(),
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
    ])?;
    let mut mgr = Manager::new("guestbook", flags.manager).await?;
    setup(&mut mgr)?;
    let cancel = CancellationToken::new();
    let shutdown = cancel.clone();
    tokio::spawn(async move {
        if let Err(err) = mgr.run(shutdown).await {
            panic!("the manager failed: {err}");
        }
    });
    Ok(RunningManager { cancel })
}

/// A typed API for the test's namespace, as the admin.
pub fn api<K>(env: &TestEnv) -> Api<K>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(env.client().clone(), env.namespace())
}

/// Waits until the object `name` exists and `check` holds for it; returns it.
pub async fn wait_for<K>(
    env: &TestEnv,
    name: &str,
    what: &str,
    check: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let seen = |obj: &K| format!("{obj:?}");
    Ok(testenv::wait_for_object(&api::<K>(env), name, what, TIMEOUT, check, seen).await?)
}

/// Whether `conditions` hold `Ready=True` for `generation`.
pub fn ready_for(conditions: &[Condition], generation: Option<i64>) -> bool {
    ::guestbook::controller::find_status_condition(conditions, "Ready")
        .is_some_and(|c| c.status == "True" && c.observed_generation == generation)
}
