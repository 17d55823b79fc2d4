//! The generated CustomResourceDefinitions: what the API server will enforce.

use apis::cloudnative::v1alpha1::{
    CPU_MESSAGE, CPU_RULE, MEMORY_MESSAGE, MEMORY_RULE, ROOT_DISK_MESSAGE, ROOT_DISK_RULE,
    VirtualMachine,
};
use apis::cloudnative::v1beta1;
use apis::samplecontroller::v1alpha1::{API_APPROVED_ANNOTATION_VALUE, Foo, foo_crd};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, JSONSchemaProps,
};
use kube::CustomResourceExt;
use serde_json::json;

/// The one version's openAPIV3Schema.
fn root_schema(crd: &CustomResourceDefinition) -> &JSONSchemaProps {
    assert_eq!(crd.spec.versions.len(), 1);
    crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("an openAPIV3Schema")
}

/// The property at `path` (e.g. `["spec", "replicas"]`).
fn property<'a>(schema: &'a JSONSchemaProps, path: &[&str]) -> &'a JSONSchemaProps {
    path.iter().fold(schema, |s, name| {
        s.properties
            .as_ref()
            .and_then(|p| p.get(*name))
            .unwrap_or_else(|| panic!("no property {name} in {path:?}"))
    })
}

fn required(schema: &JSONSchemaProps) -> Vec<&str> {
    schema
        .required
        .iter()
        .flatten()
        .map(String::as_str)
        .collect()
}

fn columns(crd: &CustomResourceDefinition) -> Vec<(String, String, String)> {
    crd.spec.versions[0]
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c: &CustomResourceColumnDefinition| {
            (c.name.clone(), c.type_.clone(), c.json_path.clone())
        })
        .collect()
}

#[test]
fn foo_names_scope_and_subresources() {
    let crd = foo_crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("foos.samplecontroller.k8s.io")
    );
    assert_eq!(crd.spec.group, "samplecontroller.k8s.io");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names.kind, "Foo");
    assert_eq!(crd.spec.names.plural, "foos");
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1alpha1");
    assert!(version.served && version.storage);
    let subresources = version.subresources.as_ref().expect("subresources");
    assert!(subresources.status.is_some(), "status subresource");
    assert!(subresources.scale.is_none());
    // *.k8s.io groups are protected: without this annotation the API server
    // refuses the CRD.
    let annotations = crd.metadata.annotations.as_ref().expect("annotations");
    assert_eq!(
        annotations
            .get("api-approved.kubernetes.io")
            .map(String::as_str),
        Some(API_APPROVED_ANNOTATION_VALUE)
    );
    // ... and only the CRD: objects do not carry it.
    let foo = Foo::new("f", apis::samplecontroller::v1alpha1::FooSpec::new("d", 1));
    assert_eq!(foo.metadata.annotations, None);
}

#[test]
fn foo_replicas_is_bounded_and_defaulted() {
    let crd = foo_crd();
    let root = root_schema(&crd);
    assert_eq!(required(root), ["spec"]);
    let spec = property(root, &["spec"]);
    assert_eq!(
        required(spec),
        ["deploymentName"],
        "replicas is defaulted, not required"
    );

    let replicas = property(root, &["spec", "replicas"]);
    assert_eq!(replicas.type_.as_deref(), Some("integer"));
    assert_eq!(replicas.format.as_deref(), Some("int32"));
    assert_eq!(replicas.minimum, Some(1.0));
    assert_eq!(replicas.maximum, Some(10.0));
    assert_eq!(replicas.default.as_ref().map(|d| &d.0), Some(&json!(1)));

    let name = property(root, &["spec", "deploymentName"]);
    assert_eq!(name.type_.as_deref(), Some("string"));
    assert_eq!(
        name.min_length, None,
        "empty names are reported by the controller"
    );

    let status = property(root, &["status"]);
    assert_eq!(required(status), ["availableReplicas"]);
    let available = property(root, &["status", "availableReplicas"]);
    assert_eq!(available.type_.as_deref(), Some("integer"));
}

#[test]
fn foo_printer_columns() {
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        columns(&foo_crd()),
        [
            s("Deployment", "string", ".spec.deploymentName"),
            s("Desired", "integer", ".spec.replicas"),
            s("Available", "integer", ".status.availableReplicas"),
            s("Age", "date", ".metadata.creationTimestamp"),
        ]
    );
}

#[test]
fn virtual_machine_names_scope_and_subresources() {
    let crd = VirtualMachine::crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("virtualmachines.cloudnative.tw")
    );
    assert_eq!(crd.spec.group, "cloudnative.tw");
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(crd.spec.names.kind, "VirtualMachine");
    assert_eq!(crd.spec.names.plural, "virtualmachines");
    assert_eq!(crd.spec.names.short_names, Some(vec!["vm".to_string()]));
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1alpha1");
    let subresources = version.subresources.as_ref().expect("subresources");
    assert!(subresources.status.is_some(), "status subresource");
}

#[test]
fn virtual_machine_quantities_are_required_and_checked_by_cel() {
    let crd = VirtualMachine::crd();
    let root = root_schema(&crd);
    assert_eq!(required(property(root, &["spec"])), ["resource"]);
    let resource = property(root, &["spec", "resource"]);
    assert_eq!(required(resource), ["cpu", "memory", "rootDisk"]);
    assert!(
        property(root, &["spec"])
            .properties
            .as_ref()
            .unwrap()
            .get("action")
            .is_none(),
        "no imperative action field"
    );

    for (field, rule, message) in [
        ("cpu", CPU_RULE, CPU_MESSAGE),
        ("memory", MEMORY_RULE, MEMORY_MESSAGE),
        ("rootDisk", ROOT_DISK_RULE, ROOT_DISK_MESSAGE),
    ] {
        let schema = property(resource, &[field]);
        assert_eq!(schema.x_kubernetes_int_or_string, Some(true), "{field}");
        assert_eq!(schema.type_, None, "{field}: int-or-string has no type");
        let validations = schema.x_kubernetes_validations.as_ref().expect(field);
        assert_eq!(validations.len(), 1, "{field}");
        assert_eq!(validations[0].rule, rule, "{field}");
        assert_eq!(validations[0].message.as_deref(), Some(message), "{field}");
        assert!(
            message.starts_with(field),
            "{field}: the message names the field"
        );
        // Every rule guards `quantity()` with `isQuantity()`, and stringifies
        // `self` first (int-or-string).
        assert!(rule.starts_with("isQuantity(string(self)) && "), "{rule}");
    }
}

#[test]
fn virtual_machine_status_schema() {
    let crd = VirtualMachine::crd();
    let root = root_schema(&crd);
    let status = property(root, &["status"]);
    assert_eq!(required(status), ["phase"]);
    let phase = property(status, &["phase"]);
    assert_eq!(phase.type_.as_deref(), Some("string"));
    let values: Vec<_> = phase.enum_.iter().flatten().map(|v| v.0.clone()).collect();
    assert_eq!(
        values,
        [
            json!("Creating"),
            json!("Active"),
            json!("Failed"),
            json!("Terminating"),
            json!("Unknown")
        ]
    );
    assert_eq!(
        required(property(status, &["server"])),
        ["id", "state", "usage"]
    );
    let usage = property(status, &["server", "usage"]);
    assert_eq!(required(usage), ["cpu", "memory"]);
    assert_eq!(property(usage, &["cpu"]).type_.as_deref(), Some("number"));
    let time = property(status, &["lastUpdateTime"]);
    assert_eq!(
        (time.type_.as_deref(), time.format.as_deref()),
        (Some("string"), Some("date-time"))
    );
}

#[test]
fn virtual_machine_printer_columns() {
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        columns(&VirtualMachine::crd()),
        [
            s("Phase", "string", ".status.phase"),
            s("CPU", "string", ".spec.resource.cpu"),
            s("Memory", "string", ".spec.resource.memory"),
            s("State", "string", ".status.server.state"),
            s("Age", "date", ".metadata.creationTimestamp"),
        ]
    );
}

#[test]
fn crds_lists_every_kind_once() {
    let names: Vec<_> = apis::crds()
        .into_iter()
        .map(|crd| crd.metadata.name.unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "foos.samplecontroller.k8s.io",
            "virtualmachines.cloudnative.tw",
            "mywebs.operator.k8s-summit.org"
        ]
    );
}

#[test]
fn files_are_kubebuilder_named_deterministic_and_parse_back() {
    let files = apis::crd_files().unwrap();
    let names: Vec<_> = files.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "samplecontroller.k8s.io_foos.yaml",
            "cloudnative.tw_virtualmachines.yaml",
            "operator.k8s-summit.org_mywebs.yaml"
        ]
    );
    assert_eq!(files, apis::crd_files().unwrap(), "same bytes every time");
    for ((_, yaml), crd) in files.iter().zip(apis::crds()) {
        assert!(yaml.starts_with(apis::crds::GENERATED_HEADER), "{yaml}");
        assert!(yaml.contains("DO NOT EDIT") && yaml.contains("hack/update-crds.sh"));
        let parsed: CustomResourceDefinition = serde_yaml::from_str(yaml).unwrap();
        assert_eq!(parsed, crd);
    }
}

#[test]
fn virtual_machine_serves_both_versions_and_stores_v1alpha1() {
    let crd = apis::crds::virtual_machine_crd();
    let versions: Vec<_> = crd
        .spec
        .versions
        .iter()
        .map(|v| (v.name.as_str(), v.served, v.storage))
        .collect();
    assert_eq!(
        versions,
        [("v1alpha1", true, true), ("v1beta1", true, false)]
    );
    // Each version as its own type generates it (columns included, so `kubectl get vm`
    // prints either right).
    let alpha = VirtualMachine::crd();
    let beta = v1beta1::VirtualMachine::crd();
    assert_eq!(crd.spec.versions[0], alpha.spec.versions[0]);
    assert_eq!(crd.spec.versions[1].name, beta.spec.versions[0].name);
    assert_eq!(crd.spec.versions[1].schema, beta.spec.versions[0].schema);
    assert_eq!(
        crd.spec.versions[1].additional_printer_columns,
        beta.spec.versions[0].additional_printer_columns
    );
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        columns(&beta),
        [
            s("Phase", "string", ".status.phase"),
            s("CPUs", "integer", ".spec.compute.cpus"),
            s("Memory", "string", ".spec.compute.memory"),
            s("State", "string", ".status.server.state"),
            s("Age", "date", ".metadata.creationTimestamp"),
        ]
    );
    let conversion = crd.spec.conversion.as_ref().expect("a conversion");
    assert_eq!(conversion.strategy, "Webhook");
}

#[test]
fn virtual_machine_v1beta1_schema() {
    let crd = v1beta1::VirtualMachine::crd();
    let root = root_schema(&crd);
    assert_eq!(required(property(root, &["spec"])), ["compute", "rootDisk"]);
    assert_eq!(
        required(property(root, &["spec", "compute"])),
        ["cpus", "memory"]
    );
    let cpus = property(root, &["spec", "compute", "cpus"]);
    assert_eq!(cpus.type_.as_deref(), Some("integer"));
    assert_eq!(cpus.minimum, Some(1.0));
    let memory = property(root, &["spec", "compute", "memory"]);
    assert_eq!(memory.x_kubernetes_int_or_string, Some(true));
    let rules = memory.x_kubernetes_validations.as_ref().unwrap();
    assert_eq!(rules[0].rule, MEMORY_RULE);
    assert_eq!(required(property(root, &["spec", "rootDisk"])), ["size"]);
    let size = property(root, &["spec", "rootDisk", "size"]);
    assert_eq!(
        size.x_kubernetes_validations.as_ref().unwrap()[0].rule,
        ROOT_DISK_RULE
    );
    let image = property(root, &["spec", "rootDisk", "image"]);
    assert_eq!(image.type_.as_deref(), Some("string"));
    // The same status as v1alpha1.
    assert_eq!(
        property(root, &["status"]),
        property(root_schema(&VirtualMachine::crd()), &["status"])
    );
}
