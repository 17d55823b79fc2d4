//! The wire format: camelCase JSON that round-trips, and the defaults a client
//! sees for fields the API server would fill in.

use apis::cloudnative::v1alpha1::{
    ResourceUsage, ServerStatus, VirtualMachine, VirtualMachinePhase, VirtualMachineResource,
    VirtualMachineSpec, VirtualMachineStatus,
};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec, FooStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

#[test]
fn foo_round_trips_in_camel_case() {
    let mut foo = Foo::new("example-foo", FooSpec::new("example-foo-deploy", 3));
    foo.metadata.namespace = Some("default".into());
    foo.status = Some(FooStatus {
        available_replicas: 2,
    });
    let value = serde_json::to_value(&foo).unwrap();
    assert_eq!(
        value,
        json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": { "name": "example-foo", "namespace": "default" },
            "spec": { "deploymentName": "example-foo-deploy", "replicas": 3 },
            "status": { "availableReplicas": 2 },
        })
    );
    let back: Foo = serde_json::from_value(value).unwrap();
    assert_eq!(back, foo);
}

#[test]
fn foo_without_replicas_decodes_as_one() {
    let foo: Foo = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": { "name": "f" },
        "spec": { "deploymentName": "d" },
    }))
    .unwrap();
    assert_eq!(foo.spec.replicas, 1);
    assert_eq!(foo.status, None);
}

#[test]
fn virtual_machine_round_trips_in_camel_case() {
    let mut vm = VirtualMachine::new(
        "test-vm",
        VirtualMachineSpec {
            resource: VirtualMachineResource::new("2", "64Mi", "1Gi"),
        },
    );
    let time = "2025-01-02T03:04:05Z".parse().unwrap();
    vm.status = Some(VirtualMachineStatus {
        phase: VirtualMachinePhase::Active,
        reason: None,
        server: Some(ServerStatus {
            id: "srv-1".into(),
            state: "running".into(),
            usage: ResourceUsage {
                cpu: 12.5,
                memory: 40.0,
            },
        }),
        last_update_time: Some(Time(time)),
    });
    let value = serde_json::to_value(&vm).unwrap();
    assert_eq!(
        value,
        json!({
            "apiVersion": "cloudnative.tw/v1alpha1",
            "kind": "VirtualMachine",
            "metadata": { "name": "test-vm" },
            "spec": { "resource": { "cpu": "2", "memory": "64Mi", "rootDisk": "1Gi" } },
            "status": {
                "phase": "Active",
                "server": { "id": "srv-1", "state": "running", "usage": { "cpu": 12.5, "memory": 40.0 } },
                "lastUpdateTime": "2025-01-02T03:04:05Z",
            },
        })
    );
    let back: VirtualMachine = serde_json::from_value(value).unwrap();
    assert_eq!(back, vm);
}

#[test]
fn integer_quantities_decode_as_strings() {
    // int-or-string: the API server stores `cpu: 2` as a JSON number.
    let spec: VirtualMachineSpec = serde_json::from_value(json!({
        "resource": { "cpu": 2, "memory": "64Mi", "rootDisk": 1073741824u64 }
    }))
    .unwrap();
    assert_eq!(
        spec.resource,
        VirtualMachineResource::new("2", "64Mi", "1073741824")
    );
}

#[test]
fn every_phase_has_its_go_spelling() {
    for (phase, text) in [
        (VirtualMachinePhase::Creating, "Creating"),
        (VirtualMachinePhase::Active, "Active"),
        (VirtualMachinePhase::Failed, "Failed"),
        (VirtualMachinePhase::Terminating, "Terminating"),
        (VirtualMachinePhase::Unknown, "Unknown"),
    ] {
        assert_eq!(serde_json::to_value(phase).unwrap(), json!(text));
        assert_eq!(
            serde_json::from_value::<VirtualMachinePhase>(json!(text)).unwrap(),
            phase
        );
    }
    assert!(serde_json::from_value::<VirtualMachinePhase>(json!("Running")).is_err());
}
