//! The garbage collector deletes dependents whose owner is gone.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Resource};
use testenv::{Check, TestEnv, wait_for};

use crate::TIMEOUT;

fn config_map(name: &str, owner: Option<&ConfigMap>) -> anyhow::Result<ConfigMap> {
    let mut cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "data": { "k": "v" }
    }))?;
    if let Some(owner) = owner {
        let mut reference = owner
            .controller_owner_ref(&())
            .expect("owner has name and uid");
        reference.block_owner_deletion = Some(true);
        cm.metadata.owner_references = Some(vec![reference]);
    }
    Ok(cm)
}

/// Create owner, dependent and an unrelated bystander; delete the owner with
/// `params`; wait until owner and dependent are gone; the bystander stays.
async fn owner_deletion_collects_dependent(
    prefix: &str,
    params: DeleteParams,
) -> anyhow::Result<()> {
    let env = TestEnv::with_prefix(prefix).await?;
    let api = Api::<ConfigMap>::namespaced(env.client().clone(), env.namespace());
    let pp = PostParams::default();
    let owner = api.create(&pp, &config_map("owner", None)?).await?;
    api.create(&pp, &config_map("dependent", Some(&owner))?)
        .await?;
    api.create(&pp, &config_map("bystander", None)?).await?;

    api.delete("owner", &params).await?;
    wait_for("owner and dependent garbage-collected", TIMEOUT, || async {
        let owner = api.get_opt("owner").await?;
        let dependent = api.get_opt("dependent").await?;
        let seen = format!(
            "owner present: {} (finalizers {:?}), dependent present: {}",
            owner.is_some(),
            owner.as_ref().map(|o| o.metadata.finalizers.clone()),
            dependent.is_some()
        );
        Ok::<_, kube::Error>(Check::ready_if(
            owner.is_none() && dependent.is_none(),
            (),
            seen,
        ))
    })
    .await?;
    assert!(
        api.get_opt("bystander").await?.is_some(),
        "GC must not touch unowned objects"
    );
    Ok(())
}

#[tokio::test]
async fn background_deletion_collects_dependents() -> anyhow::Result<()> {
    owner_deletion_collects_dependent("gc-background", DeleteParams::background()).await
}

#[tokio::test]
async fn foreground_deletion_collects_dependents() -> anyhow::Result<()> {
    owner_deletion_collects_dependent("gc-foreground", DeleteParams::foreground()).await
}
