//! API semantics the cache/informer and controllers rely on: optimistic
//! concurrency (409 Conflict on a stale resourceVersion).

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use testenv::TestEnv;

use crate::api_code;

fn config_map(name: &str, value: &str) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "data": { "k": value }
    }))?)
}

#[tokio::test]
async fn stale_resource_version_update_conflicts() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("conflict").await?;
    let api = Api::<ConfigMap>::namespaced(env.client().clone(), env.namespace());
    let pp = PostParams::default();
    let original = api.create(&pp, &config_map("cm", "1")?).await?;

    let mut first = original.clone();
    first.data = Some([("k".to_string(), "2".to_string())].into());
    let updated = api.replace("cm", &pp, &first).await?;
    assert_ne!(
        updated.metadata.resource_version,
        original.metadata.resource_version
    );

    // A writer still holding the original resourceVersion loses.
    let mut stale = original;
    stale.data = Some([("k".to_string(), "3".to_string())].into());
    assert_eq!(api_code(&api.replace("cm", &pp, &stale).await), Some(409));
    assert_eq!(api.get("cm").await?.data.unwrap_or_default()["k"], "2");
    Ok(())
}
