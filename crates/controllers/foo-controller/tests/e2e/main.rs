//! The Foo controller end to end on the real control plane (etcd + kube-apiserver +
//! kube-controller-manager + kwok fake nodes, from crates/dev/testenv).
//!
//! Each test gets its own namespace and runs its own controller, in-process, watching
//! only that namespace, so tests running in parallel never act on each other's Foos.

mod rbac;
mod staleness;
mod starvation;
mod sync;
mod tutorial;
mod webhook;

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../../examples/tutorial_04_controller.rs"]
mod tutorial_04;

use std::time::Duration;

use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use cache::SharedInformerFactory;
use controller::LoopOptions;
use foo_controller::{CONTROLLER_NAME, FooControllerOptions};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, PostParams};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;

/// Generous: a loaded 2-core CI machine runs several test binaries at once.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// Installs the Foo CRD (idempotent; every test binary sharing the control plane may
/// do it at the same time).
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    testenv::crd::install_crds(client, &apis::crds()).await?;
    Ok(())
}

/// A Foo controller running in the background until dropped.
pub struct RunningController {
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningController {
    /// Starts informers, the event broadcaster and the controller for `namespace`,
    /// talking to the API server as `client`.
    pub fn start(client: kube::Client, namespace: &str) -> Self {
        Self::start_with(client, namespace, &LoopOptions::default())
    }

    /// [`start`](Self::start), with the loop's staleness guard, queue order and
    /// backoff chosen by `options`.
    pub fn start_with(client: kube::Client, namespace: &str, options: &LoopOptions) -> Self {
        let cancel = CancellationToken::new();
        let factory = SharedInformerFactory::new(client.clone(), Duration::from_secs(30));
        let events = EventBroadcaster::new(BroadcasterOptions::default());
        events
            .start_recording_to_sink(client.clone())
            .expect("start the event broadcaster");
        let recorder = events.new_recorder(CONTROLLER_NAME, "e2e");
        let options = FooControllerOptions {
            namespace: Some(namespace.to_string()),
            loop_options: *options,
            // What the sample-controller binary runs: Deployments cached trimmed.
            trim_deployment_cache: true,
            shard: None,
        };
        let controller = foo_controller::new_controller(client, &factory, recorder, options);
        factory.start(&cancel);
        let task = tokio::spawn({
            let cancel = cancel.clone();
            async move {
                controller.run(2, cancel).await.expect("controller run");
                events.shutdown(Duration::from_secs(5)).await;
            }
        });
        Self {
            cancel,
            task: Some(task),
        }
    }

    /// Stops the controller and waits for it to finish.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.await.expect("controller task");
        }
    }
}

impl Drop for RunningController {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Creates a Foo.
pub async fn create_foo(
    env: &TestEnv,
    name: &str,
    deployment: &str,
    replicas: i32,
) -> anyhow::Result<Foo> {
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    Ok(foos
        .create(
            &PostParams::default(),
            &Foo::new(name, FooSpec::new(deployment, replicas)),
        )
        .await?)
}

/// Waits until the Deployment `name` exists and `check` holds for it.
pub async fn wait_for_deployment(
    env: &TestEnv,
    name: &str,
    what: &str,
    check: impl Fn(&Deployment) -> bool,
) -> anyhow::Result<Deployment> {
    let api: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    let seen = |d: &Deployment| {
        format!(
            "replicas={:?} available={:?} owners={:?}",
            d.spec.replicas,
            d.status.as_ref().and_then(|s| s.available_replicas),
            d.metadata.owner_references.as_ref().map(|o| o.len()),
        )
    };
    Ok(testenv::wait_for_object(&api, name, what, TIMEOUT, check, seen).await?)
}

/// Waits until the Foo's status reports `available` available replicas.
pub async fn wait_for_available(env: &TestEnv, name: &str, available: i32) -> anyhow::Result<()> {
    let api: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    wait_for(
        &format!("Foo {name} status.availableReplicas = {available}"),
        TIMEOUT,
        || async {
            let foo = api.get(name).await?;
            let seen = foo.status.as_ref().map(|s| s.available_replicas);
            Ok::<_, kube::Error>(Check::ready_if(
                seen == Some(available),
                (),
                format!("{seen:?}"),
            ))
        },
    )
    .await?;
    Ok(())
}

/// Waits for an Event with `reason` about the Foo `name`, and returns it.
pub async fn wait_for_event(env: &TestEnv, name: &str, reason: &str) -> anyhow::Result<Event> {
    let (client, ns) = (env.client(), env.namespace());
    Ok(testenv::wait_for_event(client, ns, "Foo", name, reason, TIMEOUT).await?)
}
