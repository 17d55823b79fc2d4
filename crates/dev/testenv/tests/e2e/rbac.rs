//! RBAC is enforced for ServiceAccount tokens from the TokenRequest API.

use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::{ListParams, PostParams};
use testenv::{Check, TestEnv, wait_for};

use crate::{TIMEOUT, api_code};

#[tokio::test]
async fn service_account_is_forbidden_until_bound_to_a_role() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("rbac").await?;
    let ns = env.namespace();
    let pp = PostParams::default();
    let sas = Api::<ServiceAccount>::namespaced(env.client().clone(), ns);
    let sa: ServiceAccount =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "reader" } }))?;
    sas.create(&pp, &sa).await?;

    let token = testenv::service_account_token(env.client(), ns, "reader").await?;
    assert!(!token.is_empty());

    let as_sa = env.control_plane().client_with_token(&token).await?;
    let config_maps = Api::<ConfigMap>::namespaced(as_sa.clone(), ns);
    let secrets = Api::<Secret>::namespaced(as_sa, ns);
    let lp = ListParams::default();

    // Authenticated (not 401), but no grants: 403.
    assert_eq!(api_code(&config_maps.list(&lp).await), Some(403));

    let role: Role = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "configmap-reader" },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"] }]
    }))?;
    Api::<Role>::namespaced(env.client().clone(), ns)
        .create(&pp, &role)
        .await?;
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "reader-reads-configmaps" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader" },
        "subjects": [{ "kind": "ServiceAccount", "name": "reader", "namespace": ns }]
    }))?;
    Api::<RoleBinding>::namespaced(env.client().clone(), ns)
        .create(&pp, &binding)
        .await?;

    // The RBAC authorizer's informer picks the binding up within moments.
    let listed = wait_for("reader may list configmaps", TIMEOUT, || async {
        let result = config_maps.list(&lp).await;
        let seen = format!("{:?}", result.as_ref().map(|l| l.items.len()));
        Ok::<_, String>(Check::ready_if(result.is_ok(), (), seen))
    })
    .await;
    listed?;
    // The grant is exactly what the Role says: Secrets stay forbidden.
    assert_eq!(api_code(&secrets.list(&lp).await), Some(403));
    Ok(())
}
