//! The generated MyWeb CustomResourceDefinition: what the API server will enforce for
//! the Operator101 tutorial's kind.

use apis::operator::v1::{MAX_NODE_PORT, MIN_NODE_PORT, MyWeb};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use kube::CustomResourceExt;
use serde_json::json;

fn root() -> JSONSchemaProps {
    MyWeb::crd().spec.versions[0]
        .schema
        .clone()
        .and_then(|s| s.open_api_v3_schema)
        .expect("an openAPIV3Schema")
}

fn property(schema: &JSONSchemaProps, path: &[&str]) -> JSONSchemaProps {
    path.iter().fold(schema.clone(), |s, name| {
        s.properties
            .as_ref()
            .and_then(|p| p.get(*name))
            .cloned()
            .unwrap_or_else(|| panic!("no property {name} in {path:?}"))
    })
}

#[test]
fn names_scope_categories_and_subresources() {
    let crd = MyWeb::crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("mywebs.operator.k8s-summit.org")
    );
    assert_eq!(crd.spec.scope, "Namespaced");
    let names = &crd.spec.names;
    assert_eq!(
        (names.kind.as_str(), names.plural.as_str()),
        ("MyWeb", "mywebs")
    );
    assert_eq!(names.short_names.as_deref(), Some(&["web".to_string()][..]));
    assert_eq!(names.categories.as_deref(), Some(&["all".to_string()][..]));
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1");
    assert!(version.subresources.as_ref().unwrap().status.is_some());
    // Not a protected *.k8s.io group: no approval annotation needed.
    assert_eq!(crd.metadata.annotations, None);
}

#[test]
fn image_and_node_port_are_required_and_bounded() {
    let root = root();
    let spec = property(&root, &["spec"]);
    assert_eq!(
        spec.required.as_deref(),
        Some(&["image".to_string(), "nodePortNumber".to_string()][..])
    );
    let image = property(&root, &["spec", "image"]);
    assert_eq!(image.min_length, Some(1));
    let port = property(&root, &["spec", "nodePortNumber"]);
    assert_eq!(port.type_.as_deref(), Some("integer"));
    assert_eq!(port.minimum, Some(f64::from(MIN_NODE_PORT)));
    assert_eq!(port.maximum, Some(f64::from(MAX_NODE_PORT)));
    let page = property(&root, &["spec", "pageContentHtml"]);
    assert_eq!(page.default.map(|d| d.0), Some(json!("")));
}

#[test]
fn conditions_merge_by_type() {
    let conditions = property(&root(), &["status", "conditions"]);
    assert_eq!(conditions.x_kubernetes_list_type.as_deref(), Some("map"));
    assert_eq!(
        conditions.x_kubernetes_list_map_keys.as_deref(),
        Some(&["type".to_string()][..])
    );
    let item = conditions.items.expect("items");
    let k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaPropsOrArray::Schema(item) = item else {
        panic!("one item schema");
    };
    let required = item.required.unwrap_or_default();
    for field in ["type", "status", "reason", "message", "lastTransitionTime"] {
        assert!(required.iter().any(|r| r == field), "{field} required");
    }
}

#[test]
fn printer_columns() {
    let crd = MyWeb::crd();
    let columns: Vec<(String, String)> = crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| (c.name.clone(), c.json_path.clone()))
        .collect();
    let s = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        columns,
        [
            s("Image", ".spec.image"),
            s("NodePort", ".spec.nodePortNumber"),
            s("Ready", ".status.conditions[?(@.type==\"Ready\")].status"),
            s("Age", ".metadata.creationTimestamp"),
        ]
    );
}
