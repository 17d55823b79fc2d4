//! The VirtualMachine conversion, v1alpha1 (hub) <-> v1beta1 (spoke): every field
//! survives a round trip either way (property tests), and the cases the
//! annotations exist for, one by one.

use std::collections::BTreeMap;

use apis::cloudnative::v1alpha1::{
    ResourceUsage, ServerStatus, VirtualMachinePhase, VirtualMachineResource, VirtualMachineStatus,
};
use apis::cloudnative::{v1alpha1, v1beta1};
use apis::conversion::{ConversionError, Convertible};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use proptest::prelude::*;

fn alpha(cpu: &str) -> v1alpha1::VirtualMachine {
    v1alpha1::VirtualMachine::new(
        "web",
        v1alpha1::VirtualMachineSpec {
            resource: VirtualMachineResource::new(cpu, "2Gi", "10Gi"),
        },
    )
}

#[test]
fn a_plain_cpu_count_needs_no_annotation() {
    let beta = v1beta1::VirtualMachine::convert_from(&alpha("2")).unwrap();
    assert_eq!(beta.spec.compute.cpus, 2);
    assert_eq!(beta.spec.compute.memory.0, "2Gi");
    assert_eq!(beta.spec.root_disk.size.0, "10Gi");
    assert_eq!(beta.spec.root_disk.image, None);
    assert_eq!(beta.metadata.annotations, None);
}

#[test]
fn a_fractional_cpu_rounds_up_and_is_kept_for_the_way_back() {
    let original = alpha("1500m");
    let beta = v1beta1::VirtualMachine::convert_from(&original).unwrap();
    assert_eq!(beta.spec.compute.cpus, 2);
    assert_eq!(
        beta.metadata.annotations.as_ref().unwrap()[v1beta1::CPU_ANNOTATION],
        "1500m"
    );
    let back: v1alpha1::VirtualMachine = beta.convert_to().unwrap();
    assert_eq!(
        back, original,
        "the annotation is gone again, the cpu is 1500m"
    );
}

#[test]
fn cpus_changed_in_v1beta1_win_over_a_stale_annotation() {
    let mut beta = v1beta1::VirtualMachine::convert_from(&alpha("1500m")).unwrap();
    beta.spec.compute.cpus = 4;
    let back: v1alpha1::VirtualMachine = beta.convert_to().unwrap();
    assert_eq!(back.spec.resource.cpu.0, "4");
    assert_eq!(back.metadata.annotations, None);
}

#[test]
fn the_image_travels_in_an_annotation_of_the_stored_version() {
    let mut beta =
        v1beta1::VirtualMachine::new("web", v1beta1::VirtualMachineSpec::new(2, "2Gi", "10Gi"));
    beta.spec.root_disk.image = Some("debian-13".into());
    let stored: v1alpha1::VirtualMachine = beta.convert_to().unwrap();
    assert_eq!(
        stored.metadata.annotations.as_ref().unwrap()[v1beta1::ROOT_DISK_IMAGE_ANNOTATION],
        "debian-13"
    );
    assert_eq!(
        stored.spec.resource,
        VirtualMachineResource::new("2", "2Gi", "10Gi")
    );
    assert_eq!(
        v1beta1::VirtualMachine::convert_from(&stored).unwrap(),
        beta
    );
}

#[test]
fn a_cpu_that_is_no_quantity_is_an_error_naming_the_field() {
    let err = v1beta1::VirtualMachine::convert_from(&alpha("lots")).unwrap_err();
    assert!(matches!(err, ConversionError::Resource(_)));
    assert!(
        err.to_string().starts_with("spec.resource.cpu: \"lots\""),
        "{err}"
    );
}

// --- properties --------------------------------------------------------------

/// Annotation or label maps as the API server returns them: absent, or not empty.
/// Keys never carry a dot, so they never collide with the conversion's
/// `conversion.cloudnative.tw/...` keys.
fn string_map() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    prop::collection::btree_map("[a-z]{1,8}(/[a-z]{1,8})?", "\\PC{0,12}", 0..4)
        .prop_map(|map| (!map.is_empty()).then_some(map))
}

fn metadata() -> impl Strategy<Value = ObjectMeta> {
    (
        "[a-z][a-z0-9-]{0,20}",
        prop::option::of("[a-z]{1,10}"),
        string_map(),
        string_map(),
        prop::option::of("[0-9]{1,8}"),
        prop::option::of(1i64..100),
    )
        .prop_map(
            |(name, namespace, labels, annotations, resource_version, generation)| ObjectMeta {
                name: Some(name),
                namespace,
                labels,
                annotations,
                resource_version,
                generation,
                uid: Some("3f1c2e9a-0000-4000-8000-000000000001".into()),
                ..ObjectMeta::default()
            },
        )
}

/// Any CPU quantity v1alpha1 accepts: plain, with leading zeros, milli, decimal,
/// with an exponent.
fn cpu_quantity() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..256).prop_map(|n| n.to_string()),
        (1u32..256).prop_map(|n| format!("0{n}")),
        (1u32..256_000).prop_map(|n| format!("{n}m")),
        (1u32..256, 0u32..10).prop_map(|(n, f)| format!("{n}.{f}")),
        (1u32..9).prop_map(|n| format!("{n}e1")),
    ]
}

fn size_quantity() -> impl Strategy<Value = String> {
    "[1-9][0-9]{0,4}(Ki|Mi|Gi|Ti|M|G)?"
}

fn status() -> impl Strategy<Value = Option<VirtualMachineStatus>> {
    let phase = prop::sample::select(vec![
        VirtualMachinePhase::Creating,
        VirtualMachinePhase::Active,
        VirtualMachinePhase::Failed,
        VirtualMachinePhase::Terminating,
        VirtualMachinePhase::Unknown,
    ]);
    let server = ("[a-z0-9]{1,12}", "[a-z]{1,10}", 0u32..10_000, 0u32..10_000).prop_map(
        |(id, state, cpu, memory)| ServerStatus {
            id,
            state,
            usage: ResourceUsage {
                cpu: f64::from(cpu) / 100.0,
                memory: f64::from(memory) / 100.0,
            },
        },
    );
    let time = (0i64..4_000_000_000).prop_map(|seconds| {
        Time(k8s_openapi::jiff::Timestamp::from_second(seconds).expect("in range"))
    });
    prop::option::of(
        (
            phase,
            prop::option::of("\\PC{0,20}"),
            prop::option::of(server),
            prop::option::of(time),
        )
            .prop_map(
                |(phase, reason, server, last_update_time)| VirtualMachineStatus {
                    phase,
                    reason,
                    server,
                    last_update_time,
                },
            ),
    )
}

fn v1alpha1_vm() -> impl Strategy<Value = v1alpha1::VirtualMachine> {
    (
        metadata(),
        cpu_quantity(),
        size_quantity(),
        size_quantity(),
        status(),
    )
        .prop_map(
            |(metadata, cpu, memory, root_disk, status)| v1alpha1::VirtualMachine {
                metadata,
                spec: v1alpha1::VirtualMachineSpec {
                    resource: VirtualMachineResource::new(cpu, memory, root_disk),
                },
                status,
            },
        )
}

fn v1beta1_vm() -> impl Strategy<Value = v1beta1::VirtualMachine> {
    (
        metadata(),
        1u32..512,
        size_quantity(),
        size_quantity(),
        prop::option::of("[a-z0-9][a-z0-9.-]{0,20}"),
        status(),
    )
        .prop_map(|(metadata, cpus, memory, size, image, status)| {
            let mut spec = v1beta1::VirtualMachineSpec::new(cpus, memory, size);
            spec.root_disk.image = image;
            v1beta1::VirtualMachine {
                metadata,
                spec,
                status,
            }
        })
}

proptest! {
    #[test]
    fn v1alpha1_to_v1beta1_and_back_keeps_every_field(original in v1alpha1_vm()) {
        let beta = v1beta1::VirtualMachine::convert_from(&original).unwrap();
        prop_assert_eq!(
            u64::from(beta.spec.compute.cpus),
            apis::quantity::parse_ceil(&original.spec.resource.cpu.0).unwrap()
        );
        let back: v1alpha1::VirtualMachine = beta.convert_to().unwrap();
        prop_assert_eq!(back, original);
    }

    #[test]
    fn v1beta1_to_v1alpha1_and_back_keeps_every_field(original in v1beta1_vm()) {
        let stored: v1alpha1::VirtualMachine = original.convert_to().unwrap();
        prop_assert_eq!(stored.spec.resource.cpu.0.clone(), original.spec.compute.cpus.to_string());
        let back = v1beta1::VirtualMachine::convert_from(&stored).unwrap();
        prop_assert_eq!(back, original);
    }

    /// What the webhook does: JSON in, JSON out; the JSON round trip changes nothing.
    #[test]
    fn round_trips_through_json_too(original in v1alpha1_vm()) {
        let json = serde_json::to_value(v1beta1::VirtualMachine::convert_from(&original).unwrap()).unwrap();
        let beta: v1beta1::VirtualMachine = serde_json::from_value(json).unwrap();
        let json = serde_json::to_value(beta.convert_to().unwrap()).unwrap();
        let back: v1alpha1::VirtualMachine = serde_json::from_value(json).unwrap();
        prop_assert_eq!(back, original);
    }
}
