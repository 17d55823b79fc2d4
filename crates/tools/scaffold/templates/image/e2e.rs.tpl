//! The {{kind}} controller on a real API server: a {{kind}} gets a Deployment it
//! controls, running the image with its size and port; kwok runs the pods and the
//! {{kind}} becomes Ready.

use ::{{crate_name}}::api::{{api_module}}::{{{kind}}, {{kind}}Spec};
use ::{{crate_name}}::controller::{{kind_snake}}::{DEFAULT_IMAGE, setup};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::PostParams;
use testenv::TestEnv;

use super::*;

#[tokio::test]
async fn a_{{kind_snake}}_gets_its_deployment_and_becomes_ready() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("{{kind_lower}}").await?;
    install_crds(&env).await?;
    let _manager = start_manager(&env, setup).await?;

    // The spec as a user writes it: the fields not named take their defaults.
    let spec: {{kind}}Spec = serde_json::from_value(serde_json::json!({ "size": 2 }))?;
    let {{kind_snake}} = api::<{{kind}}>(&env)
        .create(
            &PostParams::default(),
            &{{kind}}::new("{{kind_lower}}-sample", spec),
        )
        .await?;

    let deployment = wait_for(
        &env,
        "{{kind_lower}}-sample",
        "a Deployment controlled by the {{kind}}",
        |d: &Deployment| controller::is_controlled_by(d, &{{kind_snake}}),
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
    assert_eq!(port.container_port, {{container_port}});

    wait_for(
        &env,
        "{{kind_lower}}-sample",
        "{{kind}} Ready",
        |m: &{{kind}}| {
            let conditions = m.status.clone().unwrap_or_default().conditions;
            ready_for(&conditions, m.metadata.generation)
        },
    )
    .await?;
    Ok(())
}
