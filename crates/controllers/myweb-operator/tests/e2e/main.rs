//! The MyWeb operator end to end on the real control plane (etcd + kube-apiserver +
//! kube-controller-manager + kube-scheduler + kwok fake nodes, from crates/dev/testenv).
//!
//! Each test gets its own namespace and runs its own operator, in-process, watching
//! only that namespace, so tests running in parallel never act on each other's MyWebs.
//! They all share one API server, and node ports are cluster-wide: every test uses its
//! own ports from [`ports`].
//!
//! | module | what it pins down |
//! |---|---|
//! | [`reconcile`] | the tutorial's MyWeb gets its ConfigMap, Deployment and Service and becomes Ready; each spec field propagates |
//! | [`drift`] | an edited ConfigMap, a deleted ConfigMap, a deleted Service and a scaled Deployment are put back (the ConfigMap through a metadata-only watch) |
//! | [`conflicts`] | a foreign ConfigMap is never touched (ErrResourceExists); a taken node port is ApplyFailed, without a hot loop |
//! | (`crates/controllers/apis/tests/e2e_crds.rs`) | the CRD's schema refuses bad node ports and an empty image (422) |
//! | [`gc`] | deleting a MyWeb (background or foreground) garbage-collects its objects |
//! | [`shared_informer`] | the operator and the Foo controller on one factory: one Deployment watch, both working |
//! | [`rbac`] | the operator as the ServiceAccount of deploy/myweb-operator |
//! | [`tutorial`] | the tutorial's chapter 7 example, examples/tutorial_07_builder.rs |

mod conflicts;
mod drift;
mod gc;
mod rbac;
mod reconcile;
mod shared_informer;
mod tutorial;

#[allow(dead_code)] // `main` and its namespace helpers serve `cargo run` only
#[path = "../../examples/tutorial_07_builder.rs"]
mod tutorial_07;

use std::sync::Arc;
use std::time::Duration;

use apis::operator::v1::{MyWeb, MyWebSpec};
use cache::SharedInformerFactory;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use myweb_operator::{CONTROLLER_NAME, MyWebController, MyWebControllerOptions};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;

/// Generous: a loaded 2-core CI machine runs several test binaries at once, and a
/// MyWeb is Ready only once kube-controller-manager, the scheduler and kwok have
/// rolled out its Deployment.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// The informers' resync period, as in the binaries (a safety net: a MyWeb waiting on
/// something the operator does not watch, like a foreign object going away, is
/// retried at least this often).
pub const RESYNC: Duration = Duration::from_secs(30);

/// The node port of each test. Node ports are cluster-wide and every test binary's
/// tests share one API server, so each test has its own, all distinct. They lie in
/// the bottom of the range (the API server's "static" band), which the API server
/// avoids when it picks a node port for a Service that asks for none. (The tutorial
/// example, deploy/myweb-operator/myweb.yaml, keeps that file's port, 30080.)
pub mod ports {
    /// reconcile: spec changes, before.
    pub const CHANGES: i32 = 30010;
    /// reconcile: spec changes, after.
    pub const CHANGES_MOVED: i32 = 30011;
    /// drift: the edited ConfigMap.
    pub const DRIFT_CONFIG_MAP: i32 = 30012;
    /// drift: the deleted Service.
    pub const DRIFT_SERVICE: i32 = 30013;
    /// drift: the scaled Deployment.
    pub const DRIFT_DEPLOYMENT: i32 = 30014;
    /// conflicts: the foreign ConfigMap.
    pub const FOREIGN: i32 = 30015;
    /// conflicts: the node port a plain Service holds.
    pub const TAKEN: i32 = 30016;
    /// gc: deleted in the background.
    pub const GC_BACKGROUND: i32 = 30017;
    /// gc: deleted in the foreground.
    pub const GC_FOREGROUND: i32 = 30018;
    /// shared_informer.
    pub const SHARED: i32 = 30019;
    /// rbac.
    pub const RBAC: i32 = 30020;
    /// The tutorial's chapter 7 example (its `NODE_PORT`, checked by the test).
    pub const TUTORIAL: i32 = 30021;
    /// drift: the deleted ConfigMap.
    pub const DRIFT_CONFIG_MAP_DELETED: i32 = 30022;
}

/// Installs the CRDs (idempotent; every test may do it at the same time).
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    testenv::crd::install_crds(client, &apis::crds()).await?;
    Ok(())
}

/// A MyWeb operator running in the background until stopped or dropped, with the
/// factory, Event broadcaster and controller a binary would have.
pub struct RunningOperator {
    controller: Arc<MyWebController>,
    namespace: String,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningOperator {
    /// Starts informers, the Event broadcaster and the operator (two workers) for
    /// `namespace`, talking to the API server as `client`.
    pub fn start(client: kube::Client, namespace: &str) -> Self {
        let cancel = CancellationToken::new();
        let factory = SharedInformerFactory::new(client.clone(), RESYNC);
        let events = EventBroadcaster::new(BroadcasterOptions::default());
        events
            .start_recording_to_sink(client.clone())
            .expect("start the event broadcaster");
        let recorder = events.new_recorder(CONTROLLER_NAME, "e2e");
        let options = MyWebControllerOptions {
            namespace: Some(namespace.to_string()),
            workers: 2,
            ..MyWebControllerOptions::default()
        };
        let controller = Arc::new(myweb_operator::new_controller(
            client, &factory, recorder, options,
        ));
        factory.start(&cancel);
        let task = tokio::spawn({
            let (controller, cancel) = (Arc::clone(&controller), cancel.clone());
            async move {
                controller.run(cancel).await.expect("operator run");
                events.shutdown(Duration::from_secs(5)).await;
            }
        });
        Self {
            controller,
            namespace: namespace.to_string(),
            cancel,
            task: Some(task),
        }
    }

    /// How many times the MyWeb `name` has been requeued with backoff since its last
    /// successful reconcile (client-go's `NumRequeues`).
    pub fn num_requeues(&self, name: &str) -> u32 {
        self.controller
            .queue()
            .num_requeues(&format!("{}/{name}", self.namespace))
    }

    /// Stops the operator and waits for it to drain.
    pub async fn stop(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take() {
            task.await.expect("operator task");
        }
    }
}

impl Drop for RunningOperator {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The MyWebs of the test's namespace, as admin.
pub fn webs(env: &TestEnv) -> Api<MyWeb> {
    Api::namespaced(env.client().clone(), env.namespace())
}

/// A typed API of the test's namespace, as admin.
pub fn api<K>(env: &TestEnv) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    Api::namespaced(env.client().clone(), env.namespace())
}

/// Creates a MyWeb serving `page` with `image` on `node_port`.
pub async fn create_web(
    env: &TestEnv,
    name: &str,
    image: &str,
    node_port: i32,
    page: &str,
) -> anyhow::Result<MyWeb> {
    let web = MyWeb::new(name, MyWebSpec::new(image, node_port, page));
    Ok(webs(env).create(&PostParams::default(), &web).await?)
}

/// Merge-patches the MyWeb's spec with `spec` (JSON) and returns the new MyWeb.
pub async fn patch_spec(
    env: &TestEnv,
    name: &str,
    spec: serde_json::Value,
) -> anyhow::Result<MyWeb> {
    let patch = Patch::Merge(serde_json::json!({ "spec": spec }));
    Ok(webs(env)
        .patch(name, &PatchParams::default(), &patch)
        .await?)
}

/// The `Ready` condition's status, reason and observedGeneration, for messages.
fn describe_web(web: &MyWeb) -> String {
    let status = web.status.clone().unwrap_or_default();
    match web.ready_condition() {
        Some(c) => format!(
            "generation={:?} Ready={} reason={} message={:?} completed={} observedGeneration={:?}",
            web.metadata.generation,
            c.status,
            c.reason,
            c.message,
            status.completed,
            status.observed_generation
        ),
        None => format!(
            "generation={:?} no Ready condition",
            web.metadata.generation
        ),
    }
}

/// Waits until `check` holds for the MyWeb `name` and returns it.
pub async fn wait_for_web(
    env: &TestEnv,
    name: &str,
    what: &str,
    check: impl Fn(&MyWeb) -> bool,
) -> anyhow::Result<MyWeb> {
    Ok(testenv::wait_for_object(&webs(env), name, what, TIMEOUT, check, describe_web).await?)
}

/// Whether the MyWeb's `Ready` condition has `status` and `reason`.
pub fn ready_is(web: &MyWeb, status: &str, reason: &str) -> bool {
    web.ready_condition()
        .is_some_and(|c| c.status == status && c.reason == reason)
}

/// Waits until the MyWeb is Ready for its current generation: `Ready=True` reason
/// `Available`, `completed`, and both observedGenerations equal to the generation.
pub async fn wait_for_ready(env: &TestEnv, name: &str) -> anyhow::Result<MyWeb> {
    wait_for_web(
        env,
        name,
        &format!("MyWeb {name} Ready=True for its generation"),
        |web| {
            let status = web.status.clone().unwrap_or_default();
            ready_is(web, "True", "Available")
                && status.completed
                && status.observed_generation == web.metadata.generation
                && web
                    .ready_condition()
                    .is_some_and(|c| c.observed_generation == web.metadata.generation)
        },
    )
    .await
}

/// The MyWeb's `Ready` condition (panics when it has none).
pub fn ready_condition(web: &MyWeb) -> Condition {
    web.ready_condition()
        .cloned()
        .unwrap_or_else(|| panic!("no Ready condition: {}", describe_web(web)))
}

/// Waits until the object `name` exists and `check` holds for it.
pub async fn wait_for_object<K>(
    env: &TestEnv,
    name: &str,
    what: &str,
    check: impl Fn(&K) -> bool,
) -> anyhow::Result<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let seen = |obj: &K| {
        let meta = obj.meta();
        format!(
            "resourceVersion={:?} owners={:?}",
            meta.resource_version,
            meta.owner_references
                .iter()
                .flatten()
                .map(|o| (&o.kind, &o.name))
                .collect::<Vec<_>>()
        )
    };
    Ok(testenv::wait_for_object(&api::<K>(env), name, what, TIMEOUT, check, seen).await?)
}

/// Waits until the ConfigMap, Deployment and Service of `web` exist, all controlled
/// by it, and returns them.
pub async fn wait_for_objects(
    env: &TestEnv,
    web: &MyWeb,
) -> anyhow::Result<(ConfigMap, Deployment, Service)> {
    let name = web.metadata.name.as_deref().unwrap_or_default();
    let owned = |what: &str| format!("{what} {name} controlled by MyWeb {name}");
    let cm = wait_for_object::<ConfigMap>(env, name, &owned("ConfigMap"), |o| {
        controller::is_controlled_by(o, web)
    })
    .await?;
    let deployment = wait_for_object::<Deployment>(env, name, &owned("Deployment"), |o| {
        controller::is_controlled_by(o, web)
    })
    .await?;
    let service = wait_for_object::<Service>(env, name, &owned("Service"), |o| {
        controller::is_controlled_by(o, web)
    })
    .await?;
    Ok((cm, deployment, service))
}

/// Waits up to `timeout` until the object `name` of kind `K` is gone.
pub async fn wait_for_gone<K>(
    env: &TestEnv,
    name: &str,
    what: &str,
    timeout: Duration,
) -> anyhow::Result<()>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api = api::<K>(env);
    wait_for(what, timeout, || async {
        let obj = api.get_opt(name).await?;
        Ok::<_, kube::Error>(Check::ready_if(
            obj.is_none(),
            (),
            if obj.is_some() { "present" } else { "gone" },
        ))
    })
    .await?;
    Ok(())
}

/// Waits for an Event with `reason` about the MyWeb `name`, and returns it.
pub async fn wait_for_event(env: &TestEnv, name: &str, reason: &str) -> anyhow::Result<Event> {
    let (client, ns) = (env.client(), env.namespace());
    Ok(testenv::wait_for_event(client, ns, "MyWeb", name, reason, TIMEOUT).await?)
}

/// The Deployment's pod template annotation `key`.
pub fn template_annotation(deployment: &Deployment, key: &str) -> Option<String> {
    deployment
        .spec
        .template
        .metadata
        .as_ref()?
        .annotations
        .as_ref()?
        .get(key)
        .cloned()
}

/// The image of the Deployment's first container.
pub fn image_of(deployment: &Deployment) -> Option<String> {
    deployment
        .spec
        .template
        .spec
        .as_ref()?
        .containers
        .first()?
        .image
        .clone()
}

/// The node port of the Service's first port.
pub fn node_port_of(service: &Service) -> Option<i32> {
    service.spec.as_ref()?.ports.as_ref()?.first()?.node_port
}

/// The `index.html` of the ConfigMap.
pub fn page_of(cm: &ConfigMap) -> Option<String> {
    cm.data.as_ref()?.get("index.html").cloned()
}

/// The field managers recorded in an object's managedFields.
pub fn managers(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Vec<String> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect()
}
