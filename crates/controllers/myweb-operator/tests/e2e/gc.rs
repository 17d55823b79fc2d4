//! Deleting a MyWeb: the operator does nothing (no finalizer), kube-controller-manager's
//! garbage collector follows the controller ownerReferences and deletes the ConfigMap,
//! the Deployment and the Service, whichever propagation policy the user picks.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::DeleteParams;
use testenv::TestEnv;

use super::*;

/// How long the garbage collector may take. It learns about a new kind (the MyWeb CRD,
/// installed moments ago on a fresh control plane) only at its next discovery sync,
/// every 30 s, and until then cannot resolve the MyWeb owner references: allow for
/// that on top of [`TIMEOUT`].
const GC_TIMEOUT: Duration = Duration::from_secs(180);

/// Waits until the MyWeb `name` and its three objects are all gone.
async fn wait_for_all_gone(env: &TestEnv, name: &str) -> anyhow::Result<()> {
    let gone = |kind: &str, what: &str| format!("{kind} {name} {what}");
    wait_for_gone::<ConfigMap>(
        env,
        name,
        &gone("ConfigMap", "garbage-collected"),
        GC_TIMEOUT,
    )
    .await?;
    wait_for_gone::<Deployment>(
        env,
        name,
        &gone("Deployment", "garbage-collected"),
        GC_TIMEOUT,
    )
    .await?;
    wait_for_gone::<Service>(env, name, &gone("Service", "garbage-collected"), GC_TIMEOUT).await?;
    wait_for_gone::<MyWeb>(env, name, &gone("MyWeb", "deleted"), GC_TIMEOUT).await?;
    Ok(())
}

#[tokio::test]
async fn deleting_a_web_garbage_collects_its_objects() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let _operator = RunningOperator::start(env.client().clone(), env.namespace());

    let background = create_web(
        &env,
        "background",
        "nginx",
        ports::GC_BACKGROUND,
        "<p>bg</p>",
    )
    .await?;
    let foreground = create_web(
        &env,
        "foreground",
        "nginx",
        ports::GC_FOREGROUND,
        "<p>fg</p>",
    )
    .await?;
    wait_for_objects(&env, &background).await?;
    wait_for_objects(&env, &foreground).await?;
    // Served first, so pods and ReplicaSets hang off the Deployments too.
    wait_for_ready(&env, "background").await?;
    wait_for_ready(&env, "foreground").await?;

    // Background: the MyWeb goes at once, the collector deletes its dependents after.
    webs(&env)
        .delete("background", &DeleteParams::background())
        .await?;
    // Foreground: the MyWeb stays (deletionTimestamp, foregroundDeletion finalizer)
    // until the collector has deleted every dependent that blocks its deletion.
    webs(&env)
        .delete("foreground", &DeleteParams::foreground())
        .await?;

    wait_for_all_gone(&env, "background").await?;
    wait_for_all_gone(&env, "foreground").await?;
    Ok(())
}
