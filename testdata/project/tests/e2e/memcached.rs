//! The Memcached controller on a real API server: a Memcached gets a Deployment it
//! controls, running the image with its size and port; kwok runs the pods and the
//! Memcached becomes Ready.

use ::guestbook::api::memcached_v1alpha1::{Memcached, MemcachedSpec};
use ::guestbook::controller::memcached::{DEFAULT_IMAGE, setup};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::PostParams;
use testenv::TestEnv;

use super::*;

#[tokio::test]
async fn a_memcached_gets_its_deployment_and_becomes_ready() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("memcached").await?;
    install_crds(&env).await?;
    let _manager = start_manager(&env, setup).await?;

    // The spec as a user writes it: the fields not named take their defaults.
    let spec: MemcachedSpec = serde_json::from_value(serde_json::json!({ "size": 2 }))?;
    let memcached = api::<Memcached>(&env)
        .create(
            &PostParams::default(),
            &Memcached::new("memcached-sample", spec),
        )
        .await?;

    let deployment = wait_for(
        &env,
        "memcached-sample",
        "a Deployment controlled by the Memcached",
        |d: &Deployment| controller::is_controlled_by(d, &memcached),
    )
    .await?;
    assert_eq!(deployment.spec.replicas, Some(2));
    let pod = deployment.spec.template.spec.expect("a pod template");
    assert_eq!(pod.containers[0].image.as_deref(), Some(DEFAULT_IMAGE));
    let port = pod.containers[0]
        .ports
        .iter()
        .flatten()
        .next()
        .expect("a port");
    assert_eq!(port.container_port, 11211);

    wait_for(
        &env,
        "memcached-sample",
        "Memcached Ready",
        |m: &Memcached| {
            let conditions = m.status.clone().unwrap_or_default().conditions;
            ready_for(&conditions, m.metadata.generation)
        },
    )
    .await?;
    Ok(())
}
