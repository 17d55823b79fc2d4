//! Tutorial chapter 4, sample-controller's loop: the Foo controller
//! (docs/tutorial/04-foo-controller.md).
//!
//! Builds the Foo controller the way `cmd/sample-controller` does (a shared informer
//! factory, an Event broadcaster, [`foo_controller::new_controller`]), runs it in a
//! namespace of the example's own, and drives it from the outside: a Foo gets its
//! Deployment, a change of `spec.replicas` is followed, a Deployment scaled by hand is
//! put back, the Foo's status copies the Deployment's available replicas, and a
//! Deployment the Foo does not own is left alone.
//!
//! Mirrors kubernetes/sample-controller's controller.go (`NewController`,
//! `enqueueFoo`, `handleObject`, `Run`, `runWorker`, `processNextWorkItem`,
//! `syncHandler`, `newDeployment`) and main.go.
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p foo-controller --example tutorial_04_controller
//! ```

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use cache::SharedInformerFactory;
use controller::is_controlled_by;
use foo_controller::{CONTROLLER_NAME, FooControllerOptions};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, Event, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use record::{BroadcasterOptions, EventBroadcaster};
use testenv::tutorial::{Example, Log};
use tokio_util::sync::CancellationToken;

/// How long any one wait may take before the example gives up. Generous: a
/// Deployment is available only once kube-controller-manager, the scheduler and kwok
/// have rolled it out, and CI machines are busy.
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

/// `replicas 3, controlled by Foo example`: what the example shows of a Deployment
/// (not its available replicas: how many Pods kwok has marked Ready at the moment
/// we look is a matter of timing).
fn describe_deployment(deployment: &Deployment, foos: &[&Foo]) -> String {
    let replicas = deployment.spec.replicas.unwrap_or(1);
    let owner = match foos.iter().find(|foo| is_controlled_by(deployment, **foo)) {
        Some(foo) => {
            let reference = controller::get_controller_of(deployment);
            let blocks = reference.and_then(|r| r.block_owner_deletion) == Some(true);
            format!(
                "controlled by Foo {} (ownerReference controller: true, blockOwnerDeletion: {blocks})",
                foo.name_any()
            )
        }
        None => "no controller".to_string(),
    };
    format!("replicas {replicas}, {owner}")
}

/// The `availableReplicas` in a Foo's status (`None`: no status yet).
fn available(foo: &Foo) -> Option<i32> {
    foo.status.as_ref().map(|s| s.available_replicas)
}

/// Waits for an Event of `reason` about the Foo `name` and returns
/// `Event <type> <reason>: <message>`.
async fn wait_for_event(events: &Api<Event>, name: &str, reason: &str) -> Result<String> {
    let selector = format!("involvedObject.kind=Foo,involvedObject.name={name},reason={reason}");
    wait_until(&format!("a {reason} Event about Foo {name}"), || async {
        let found = events
            .list(&ListParams::default().fields(&selector))
            .await
            .context("listing Events")?;
        Ok(found.items.first().map(|e| {
            format!(
                "Event {} {}: {}",
                e.type_.as_deref().unwrap_or_default(),
                e.reason.as_deref().unwrap_or_default(),
                e.message.as_deref().unwrap_or_default()
            )
        }))
    })
    .await
}

/// A Deployment nobody controls, as someone else might have made it.
fn foreign_deployment(name: &str) -> Deployment {
    let labels = std::collections::BTreeMap::from([("app".to_string(), name.to_string())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some("nginx:1.27".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The example, in `namespace` (the Foo CRD must be installed); returns what it
/// printed.
pub async fn run(client: Client, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let foos: Api<Foo> = Api::namespaced(client.clone(), namespace);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let post = PostParams::default();

    log.say("1. the controller: informers, handlers, a queue, workers");
    // What cmd/sample-controller (through manager::Manager) sets up around it: one
    // informer factory per process, an Event broadcaster writing to the API server.
    let factory = SharedInformerFactory::new(client.clone(), Duration::from_secs(30));
    let broadcaster = EventBroadcaster::new(BroadcasterOptions::default());
    broadcaster
        .start_recording_to_sink(client.clone())
        .context("starting the Event broadcaster")?;
    let recorder = broadcaster.new_recorder(CONTROLLER_NAME, "tutorial");
    let options = FooControllerOptions {
        namespace: Some(namespace.to_string()),
        ..FooControllerOptions::default()
    };
    // sample-controller's NewController: Foo and Deployment informers, their
    // handlers, the queue and the sync handler, assembled.
    let controller = foo_controller::new_controller(client.clone(), &factory, recorder, options);
    let stop = CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    factory.start(&stop);
    let running = tokio::spawn({
        let (controller, stop) = (controller.clone(), stop.clone());
        async move { controller.run(2, stop).await }
    });
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
    log.say(format!("  the factory started {}", synced.join(", ")));
    wait_until(
        "the controller's handlers to see the initial lists",
        || async { Ok(controller.has_synced().then_some(())) },
    )
    .await?;
    log.say("  has_synced() = true: both handlers have seen their initial list; 2 workers run");

    log.say("");
    log.say("2. a Foo: the controller creates its Deployment");
    let foo = foos
        .create(&post, &Foo::new("example", FooSpec::new("example-foo", 1)))
        .await
        .context("creating Foo example")?;
    log.say("  created Foo example: deploymentName example-foo, replicas 1");
    let deployment = wait_until("Deployment example-foo", || async {
        Ok(deployments.get_opt("example-foo").await?)
    })
    .await?;
    log.say(format!(
        "  Deployment example-foo: {}",
        describe_deployment(&deployment, &[&foo])
    ));
    let seen = wait_until("Foo example's status to say 1 available", || async {
        let foo = foos.get("example").await?;
        Ok((available(&foo) == Some(1)).then_some(foo))
    })
    .await?;
    log.say(format!(
        "  Foo example: status.availableReplicas {} (copied from the Deployment once kwok ran its Pod)",
        available(&seen).unwrap_or_default()
    ));
    log.say(format!(
        "  {}",
        wait_for_event(&events, "example", "Synced").await?
    ));

    log.say("");
    log.say("3. change the Foo: the Deployment and the status follow");
    let scale = serde_json::json!({ "spec": { "replicas": 3 } });
    foos.patch("example", &PatchParams::default(), &Patch::Merge(&scale))
        .await
        .context("scaling Foo example")?;
    log.say("  patched Foo example: replicas 1 -> 3");
    let deployment = wait_until("Deployment example-foo with 3 replicas", || async {
        let d = deployments.get("example-foo").await?;
        Ok((d.spec.replicas == Some(3)).then_some(d))
    })
    .await?;
    log.say(format!(
        "  Deployment example-foo: replicas {}",
        deployment.spec.replicas.unwrap_or_default()
    ));
    wait_until("Foo example's status to say 3 available", || async {
        let foo = foos.get("example").await?;
        Ok((available(&foo) == Some(3)).then_some(()))
    })
    .await?;
    log.say("  Foo example: status.availableReplicas 3");

    log.say("");
    log.say("4. scale the Deployment by hand: the controller puts it back");
    let by_hand = serde_json::json!({ "spec": { "replicas": 5 } });
    let scaled = deployments
        .patch(
            "example-foo",
            &PatchParams::default(),
            &Patch::Merge(&by_hand),
        )
        .await
        .context("scaling Deployment example-foo")?;
    log.say("  scaled Deployment example-foo to 5 (what `kubectl scale` does)");
    let generation = scaled.metadata.generation.unwrap_or_default();
    wait_until("Deployment example-foo put back to 3 replicas", || async {
        let d = deployments.get("example-foo").await?;
        let put_back =
            d.metadata.generation.unwrap_or_default() > generation && d.spec.replicas == Some(3);
        Ok(put_back.then_some(()))
    })
    .await?;
    log.say("  Deployment example-foo: replicas 3 again (the Foo says 3)");

    log.say("");
    log.say("5. a Deployment the Foo does not own is left alone");
    deployments
        .create(&post, &foreign_deployment("taken"))
        .await
        .context("creating Deployment taken")?;
    let intruder = foos
        .create(&post, &Foo::new("intruder", FooSpec::new("taken", 4)))
        .await
        .context("creating Foo intruder")?;
    log.say("  created Deployment taken (replicas 1, no owner), then Foo intruder naming it, replicas 4");
    log.say(format!(
        "  {}",
        wait_for_event(&events, "intruder", foo_controller::ERR_RESOURCE_EXISTS).await?
    ));
    let taken = deployments.get("taken").await?;
    log.say(format!(
        "  Deployment taken: {}",
        describe_deployment(&taken, &[&foo, &intruder])
    ));

    // Shut down as the binary does on SIGTERM: drain the workers, flush the Events.
    stop.cancel();
    running
        .await
        .context("the controller task")?
        .context("running the controller")?;
    broadcaster.shutdown(Duration::from_secs(5)).await;
    Ok(log.text())
}

/// Installs the CRDs, then runs the example in a namespace of its own, deleted at the
/// end whatever happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main(
        "tutorial-04",
        &apis::crds(),
        |example: Example| async move { run(example.client, &example.namespace).await },
    )
    .await
}
