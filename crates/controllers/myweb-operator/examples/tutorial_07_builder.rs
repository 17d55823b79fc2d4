//! Tutorial chapter 7, the builder and MyWeb (docs/tutorial/07-builder-and-myweb.md).
//!
//! Builds the MyWeb operator's controller with the builder, as
//! `myweb_operator::new_controller` does: `For(MyWeb)`, `Owns(ConfigMap)`,
//! `Owns(Deployment)`, `Owns(Service)`, `Complete(reconciler)`. Then a MyWeb gets its
//! ConfigMap (the page), Deployment (nginx serving it) and NodePort Service, and
//! reports Ready; a Service deleted and a ConfigMap edited by hand are put back
//! (`Owns`: a change to an owned object requeues its owner); a new page reaches the
//! ConfigMap and rolls the Deployment (`For`).
//!
//! Mirrors controller-runtime's pkg/builder (`ControllerManagedBy`, `For`, `Owns`,
//! `Complete`), pkg/handler (`EnqueueRequestForObject`, `EnqueueRequestForOwner`),
//! pkg/reconcile, and the Operator101 tutorial's MyWeb operator (`Reconcile`,
//! `SetupWithManager`).
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p myweb-operator --example tutorial_07_builder
//! ```

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use apis::operator::v1::{MyWeb, MyWebSpec};
use builder::Builder;
use cache::SharedInformerFactory;
use controller::{ControllerOptions, LoopOptions, is_controlled_by};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Service};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use myweb_operator::objects::{INDEX_HTML, PAGE_CHECKSUM_ANNOTATION};
use myweb_operator::{CONTROLLER_NAME, Listers, MyWebReconciler};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::tutorial::{Example, Log};
use tokio_util::sync::CancellationToken;

/// The node port of the example's MyWeb. Node ports are cluster-wide: this one is
/// used by nothing else in this repository (the e2e tests keep 30010-30020, the
/// shipped example deploy/myweb-operator/myweb.yaml 30080).
pub const NODE_PORT: i32 = 30021;

/// How long any one wait may take before the example gives up. Generous: the MyWeb is
/// Ready only once kube-controller-manager, the scheduler and kwok have rolled out
/// its Deployment, and CI machines are busy.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Polls `check` every 100 ms until it returns `Some`, for at most [`TIMEOUT`].
async fn wait_until<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the object `name` exists and `check` accepts it.
async fn wait_for<K>(api: &Api<K>, name: &str, what: &str, check: impl Fn(&K) -> bool) -> Result<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_until(what, || async {
        let found = api.get_opt(name).await?;
        Ok(found.filter(|obj| check(obj)))
    })
    .await
}

/// The page in a ConfigMap.
fn page(cm: &ConfigMap) -> String {
    cm.data
        .as_ref()
        .and_then(|d| d.get(INDEX_HTML))
        .cloned()
        .unwrap_or_default()
}

/// The page checksum in a Deployment's pod template.
fn checksum(deployment: &Deployment) -> String {
    deployment
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.annotations.as_ref())
        .and_then(|a| a.get(PAGE_CHECKSUM_ANNOTATION))
        .cloned()
        .unwrap_or_default()
}

/// `Ready True (Available): <message>, observedGeneration 1`.
fn readiness(web: &MyWeb) -> String {
    match web.ready_condition() {
        Some(c) => format!(
            "Ready {} ({}): {}, observedGeneration {}",
            c.status,
            c.reason,
            c.message,
            c.observed_generation.unwrap_or_default()
        ),
        None => "no Ready condition".to_string(),
    }
}

/// How an object relates to the MyWeb.
fn owner(controlled: bool) -> &'static str {
    if controlled {
        "controlled by MyWeb hello"
    } else {
        "NOT controlled by MyWeb hello"
    }
}

/// Whether the MyWeb is Ready for its current generation.
fn ready_now(web: &MyWeb) -> bool {
    web.ready_condition()
        .is_some_and(|c| c.status == "True" && c.observed_generation == web.metadata.generation)
}

/// The example, in `namespace` (the CRDs must be installed); returns what it printed.
pub async fn run(client: Client, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let webs: Api<MyWeb> = Api::namespaced(client.clone(), namespace);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);

    log.say("1. the builder: For(MyWeb), Owns(ConfigMap), Owns(Deployment), Owns(Service)");
    let factory = SharedInformerFactory::new(client.clone(), Duration::from_secs(30));
    let broadcaster = EventBroadcaster::new(BroadcasterOptions::default());
    broadcaster
        .start_recording_to_sink(client.clone())
        .context("starting the Event broadcaster")?;
    let recorder = broadcaster.new_recorder(CONTROLLER_NAME, "tutorial");
    // myweb_operator::new_controller, written out. First what a manager's
    // mgr.controller_managed_by(CONTROLLER_NAME) hands over (ctrl.NewControllerManagedBy):
    // the process's settings, here this namespace, one worker, every fix of the loop on.
    let builder =
        Builder::new(CONTROLLER_NAME, client.clone(), &factory).with_options(ControllerOptions {
            namespace: Some(namespace.to_string()),
            workers: 1,
            loop_options: LoopOptions::default(),
            shard: None,
        });
    // The staleness guard those options made: the reconciler reports its writes to it.
    let freshness = builder.freshness_guard();
    // Then the operator's own part, kubebuilder's SetupWithManager.
    let builder = builder
        .for_::<MyWeb>()
        // The ConfigMap's metadata only (builder.OnlyMetadata): the reconciler never
        // reads its page from the cache, only whose it is (myweb_operator::setup says why).
        .owns_metadata::<ConfigMap>()
        .owns::<Deployment>()
        .owns::<Service>();
    // The reconciler reads the caches the watches fill (controller-runtime's cached
    // client).
    let listers = Listers {
        webs: builder.lister(),
        config_maps: builder.metadata_lister(),
        deployments: builder.lister(),
        services: builder.lister(),
    };
    let reconciler = MyWebReconciler::new(client.clone(), listers, recorder);
    let controller = builder.complete(reconciler.with_freshness(freshness));

    let stop = CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    factory.start(&stop);
    let mut synced: Vec<String> = factory
        .wait_for_cache_sync(&stop)
        .await
        .into_iter()
        .map(|(name, ok)| {
            let name = name.replace(namespace, "<namespace>");
            format!("{name}: {}", if ok { "synced" } else { "NOT synced" })
        })
        .collect();
    synced.sort();
    log.say(format!(
        "  one shared informer per kind: {}",
        synced.join(", ")
    ));
    let running = tokio::spawn({
        let stop = stop.clone();
        async move { controller.run(stop).await }
    });

    log.say("");
    log.say("2. a MyWeb: the reconciler creates its ConfigMap, Deployment and Service");
    let hello = "<h1>Hello</h1>";
    webs.create(
        &PostParams::default(),
        &MyWeb::new("hello", MyWebSpec::new("nginx:1.27", NODE_PORT, hello)),
    )
    .await
    .context("creating MyWeb hello")?;
    log.say(format!(
        "  created MyWeb hello: image nginx:1.27, nodePortNumber {NODE_PORT}, page {hello:?}"
    ));
    let web = wait_for(&webs, "hello", "MyWeb hello Ready", ready_now).await?;
    let cm = config_maps.get("hello").await.context("ConfigMap hello")?;
    log.say(format!(
        "  ConfigMap hello: {INDEX_HTML} {:?}, {}",
        page(&cm),
        owner(is_controlled_by(&cm, &web))
    ));
    let deployment = deployments.get("hello").await.context("Deployment hello")?;
    let image = deployment
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    log.say(format!(
        "  Deployment hello: image {image}, replicas {}, {}",
        deployment.spec.replicas.unwrap_or(1),
        owner(is_controlled_by(&deployment, &web))
    ));
    let service = services.get("hello").await.context("Service hello")?;
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .and_then(|p| p.first())
        .cloned()
        .unwrap_or_default();
    let kind = service
        .spec
        .as_ref()
        .and_then(|s| s.type_.clone())
        .unwrap_or_default();
    log.say(format!(
        "  Service hello: {kind}, nodePort {} -> port {}, {}",
        port.node_port.unwrap_or_default(),
        port.port,
        owner(is_controlled_by(&service, &web))
    ));
    log.say(format!("  MyWeb hello: {}", readiness(&web)));
    let ready_event = wait_until("the Ready Event", || async {
        let selector = "involvedObject.kind=MyWeb,involvedObject.name=hello,reason=Ready";
        let found = events.list(&ListParams::default().fields(selector)).await?;
        Ok(found.items.into_iter().next())
    })
    .await?;
    log.say(format!(
        "  Event {} {}: {}",
        ready_event.type_.unwrap_or_default(),
        ready_event.reason.unwrap_or_default(),
        ready_event.message.unwrap_or_default()
    ));

    log.say("");
    log.say("3. Owns: a change to an owned object requeues its owner");
    let old_uid = service.metadata.uid.clone();
    services
        .delete("hello", &DeleteParams::default())
        .await
        .context("deleting Service hello")?;
    log.say("  deleted Service hello by hand");
    let again = wait_for(&services, "hello", "Service hello again", |s| {
        s.metadata.uid != old_uid && is_controlled_by(s, &web)
    })
    .await?;
    let port = again
        .spec
        .and_then(|s| s.ports)
        .and_then(|p| p.into_iter().next())
        .and_then(|p| p.node_port)
        .unwrap_or_default();
    log.say(format!(
        "  Service hello: created again (a new UID), nodePort {port}"
    ));
    let defaced = serde_json::json!({ "data": { INDEX_HTML: "<h1>Defaced</h1>" } });
    config_maps
        .patch("hello", &PatchParams::default(), &Patch::Merge(&defaced))
        .await
        .context("editing ConfigMap hello")?;
    log.say(format!(
        "  edited ConfigMap hello: {INDEX_HTML} \"<h1>Defaced</h1>\""
    ));
    let restored = wait_for(&config_maps, "hello", "the page put back", |cm| {
        page(cm) == hello
    })
    .await?;
    log.say(format!(
        "  ConfigMap hello: {INDEX_HTML} {:?} again (server-side apply, forced)",
        page(&restored)
    ));

    log.say("");
    log.say("4. For: a change to the MyWeb reaches its objects");
    let before = checksum(&deployments.get("hello").await?);
    let hello_again = "<h1>Hello again</h1>";
    let change = serde_json::json!({ "spec": { "pageContentHtml": hello_again } });
    webs.patch("hello", &PatchParams::default(), &Patch::Merge(&change))
        .await
        .context("changing MyWeb hello's page")?;
    log.say(format!("  patched MyWeb hello: page {hello_again:?}"));
    let cm = wait_for(&config_maps, "hello", "the new page", |cm| {
        page(cm) == hello_again
    })
    .await?;
    log.say(format!("  ConfigMap hello: {INDEX_HTML} {:?}", page(&cm)));
    wait_for(&deployments, "hello", "a new pod template", |d| {
        checksum(d) != before
    })
    .await?;
    log.say(format!(
        "  Deployment hello: the pod template's {PAGE_CHECKSUM_ANNOTATION} changed, so its Pods roll"
    ));
    let web = wait_for(&webs, "hello", "MyWeb hello Ready again", ready_now).await?;
    log.say(format!("  MyWeb hello: {}", readiness(&web)));

    stop.cancel();
    running
        .await
        .context("the operator task")?
        .context("running the operator")?;
    // The node port is cluster-wide and the namespace goes away slowly: free it now,
    // so that running the example again can take it (the operator is stopped, so it
    // does not put the Service back).
    services
        .delete("hello", &DeleteParams::default())
        .await
        .context("deleting Service hello")?;
    broadcaster.shutdown(Duration::from_secs(5)).await;
    Ok(log.text())
}

/// Installs the CRDs, then runs the example in a namespace of its own, deleted at the
/// end whatever happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main(
        "tutorial-07",
        &apis::crds(),
        |example: Example| async move { run(example.client, &example.namespace).await },
    )
    .await
}
