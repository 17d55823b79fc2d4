//! The {{kind}} controller on a real API server: a {{kind}} gets the finalizer and
//! becomes Ready for its generation; deleting it waits for the controller to remove
//! the finalizer, then the object is gone.

use ::{{crate_name}}::api::{{api_module}}::{{{kind}}, {{kind}}Spec};
use ::{{crate_name}}::controller::{{kind_snake}}::{FINALIZER, setup};
use kube::api::{DeleteParams, PostParams};
use testenv::{Check, TestEnv};

use super::*;

#[tokio::test]
async fn a_{{kind_snake}}_becomes_ready_and_is_finalized_on_delete() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("{{kind_lower}}").await?;
    install_crds(&env).await?;
    let _manager = start_manager(&env, setup).await?;
    let {{plural}} = api::<{{kind}}>(&env);

    // TODO(user): a {{kind}} with the fields your controller acts on, e.g.
    // `{{kind}}Spec { title: Some("Hello".into()), ..Default::default() }`: the fields not
    // named keep their defaults, so a field added to the spec does not break this test.
    let spec = {{kind}}Spec::default();
    let created = {{plural}}
        .create(
            &PostParams::default(),
            &{{kind}}::new("{{kind_lower}}-sample", spec),
        )
        .await?;

    let ready = wait_for(
        &env,
        "{{kind_lower}}-sample",
        "{{kind}} Ready",
        |g: &{{kind}}| {
            let conditions = g.status.clone().unwrap_or_default().conditions;
            ready_for(&conditions, g.metadata.generation)
        },
    )
    .await?;
    assert_eq!(ready.metadata.generation, created.metadata.generation);
    assert!(
        ready
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER),
        "{:?}",
        ready.metadata.finalizers
    );
    let event = testenv::wait_for_event(
        env.client(),
        env.namespace(),
        "{{kind}}",
        "{{kind_lower}}-sample",
        "Ready",
        TIMEOUT,
    )
    .await?;
    assert_eq!(event.type_.as_deref(), Some("Normal"));

    // Deleting: the API server only sets deletionTimestamp; the controller removes its
    // finalizer, and then the {{kind}} is gone.
    {{plural}}
        .delete("{{kind_lower}}-sample", &DeleteParams::default())
        .await?;
    testenv::wait_for("the {{kind}} to be gone", TIMEOUT, || async {
        let left = {{plural}}.get_opt("{{kind_lower}}-sample").await?;
        Ok::<_, kube::Error>(Check::ready_if(left.is_none(), (), format!("{left:?}")))
    })
    .await?;
    Ok(())
}
