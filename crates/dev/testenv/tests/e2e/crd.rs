//! A CustomResourceDefinition becomes Established, serves its kind, and the
//! API server enforces its OpenAPI schema (422 Unprocessable Entity).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use testenv::{Check, TestEnv, wait_for};

use crate::{TIMEOUT, api_code};

#[tokio::test]
async fn crd_is_established_and_validates_its_schema() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("crd").await?;
    // CRDs are cluster-scoped: a group unique to this test run.
    let group = format!("{}.testenv.example.com", env.namespace());
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("widgets.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": { "plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList" },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["size"],
                            "properties": {
                                "size": { "type": "integer", "minimum": 1, "maximum": 10 },
                                "color": { "type": "string", "enum": ["red", "blue"] }
                            }
                        },
                        "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }
                    }
                }}
            }]
        }
    }))?;
    let crds = Api::<CustomResourceDefinition>::all(env.client().clone());
    let name = format!("widgets.{group}");
    crds.create(&PostParams::default(), &crd).await?;
    let result = check_widgets(&env, &group, &crds, &name).await;
    crds.delete(&name, &DeleteParams::default()).await?;
    result
}

async fn check_widgets(
    env: &TestEnv,
    group: &str,
    crds: &Api<CustomResourceDefinition>,
    name: &str,
) -> anyhow::Result<()> {
    wait_for(&format!("CRD {name} Established"), TIMEOUT, || async {
        let crd = crds.get(name).await?;
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        let established = conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        Ok::<_, kube::Error>(Check::ready_if(established, (), format!("{conditions:?}")))
    })
    .await?;

    // Discovery serves the new kind and the endpoint answers.
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", "Widget"), "widgets");
    let widgets =
        Api::<DynamicObject>::namespaced_with(env.client().clone(), env.namespace(), &resource);
    let client = env.client().clone();
    wait_for("widgets in discovery and listable", TIMEOUT, || async {
        let discovered = client
            .list_api_group_resources(&format!("{group}/v1"))
            .await?;
        let found = discovered
            .resources
            .iter()
            .any(|r| r.name == "widgets" && r.kind == "Widget");
        let listed = widgets.list(&ListParams::default()).await?;
        Ok::<_, kube::Error>(Check::ready_if(
            found,
            (),
            format!("found {found}, {} items", listed.items.len()),
        ))
    })
    .await?;

    let widget = |name: &str, spec: serde_json::Value| -> anyhow::Result<DynamicObject> {
        Ok(serde_json::from_value(serde_json::json!({
            "apiVersion": format!("{group}/v1"),
            "kind": "Widget",
            "metadata": { "name": name },
            "spec": spec,
        }))?)
    };
    let pp = PostParams::default();
    let ok = widgets
        .create(
            &pp,
            &widget("good", serde_json::json!({ "size": 3, "color": "red" }))?,
        )
        .await?;
    assert_eq!(ok.data["spec"]["size"], 3);

    for (bad, spec) in [
        ("too-small", serde_json::json!({ "size": 0 })),
        ("wrong-type", serde_json::json!({ "size": "big" })),
        (
            "bad-enum",
            serde_json::json!({ "size": 2, "color": "green" }),
        ),
        ("missing-size", serde_json::json!({ "color": "blue" })),
    ] {
        let result = widgets.create(&pp, &widget(bad, spec)?).await;
        assert_eq!(api_code(&result), Some(422), "{bad}: {result:?}");
    }
    assert_eq!(
        widgets.list(&ListParams::default()).await?.items.len(),
        1,
        "only the valid widget"
    );
    check_status_subresource(
        &widgets,
        widget("status-demo", serde_json::json!({ "size": 1 }))?,
    )
    .await
}

/// With the status subresource, the main resource ignores `.status` and
/// `/status` ignores everything but `.status`; only spec changes bump
/// `metadata.generation`.
async fn check_status_subresource(
    widgets: &Api<DynamicObject>,
    mut obj: DynamicObject,
) -> anyhow::Result<()> {
    let pp = PostParams::default();
    obj.data["status"] = serde_json::json!({ "phase": "ignored-on-create" });
    let created = widgets.create(&pp, &obj).await?;
    assert!(created.data.get("status").is_none(), "{:?}", created.data);
    let generation = created.metadata.generation;

    let mut with_status = created.clone();
    with_status.data["status"] = serde_json::json!({ "phase": "Ready" });
    with_status.data["spec"]["size"] = serde_json::json!(9); // ignored by /status
    let after_status = widgets
        .replace_status("status-demo", &pp, &with_status)
        .await?;
    assert_eq!(after_status.data["status"]["phase"], "Ready");
    assert_eq!(after_status.data["spec"]["size"], 1);
    assert_eq!(after_status.metadata.generation, generation);

    let mut spec_change = after_status.clone();
    spec_change.data["spec"]["size"] = serde_json::json!(2);
    spec_change.data["status"] = serde_json::json!({ "phase": "ignored-by-main-resource" });
    let after_spec = widgets.replace("status-demo", &pp, &spec_change).await?;
    assert_eq!(after_spec.data["spec"]["size"], 2);
    assert_eq!(after_spec.data["status"]["phase"], "Ready");
    assert_eq!(after_spec.metadata.generation, generation.map(|g| g + 1));
    Ok(())
}
