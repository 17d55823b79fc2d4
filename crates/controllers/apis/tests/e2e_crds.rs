//! The shipped CRDs (`deploy/crds/*.yaml`, not the in-memory types) against a
//! real kube-apiserver: what it accepts, rejects, defaults, and how the status
//! subresource behaves.
//!
//! Each test installs the CRDs itself (`install_crds` is idempotent and safe to
//! run concurrently) and works in its own namespace.

use std::path::PathBuf;

use apis::cloudnative::v1alpha1::{
    CPU_MESSAGE, MEMORY_MESSAGE, ROOT_DISK_MESSAGE, VirtualMachine, VirtualMachineResource,
    VirtualMachineSpec,
};
use apis::operator::v1::{MAX_NODE_PORT, MIN_NODE_PORT, MyWeb};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec, FooStatus};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::{Api, Resource};
use serde_json::{Value, json};
use testenv::TestEnv;

/// The checked-in CRD files, parsed.
fn shipped_crds() -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../deploy/crds");
    let mut crds = Vec::new();
    for (name, _) in apis::crd_files()? {
        let text = std::fs::read_to_string(dir.join(&name))?;
        crds.push(serde_yaml::from_str(&text)?);
    }
    Ok(crds)
}

/// A test namespace with the shipped CRDs installed.
async fn env() -> anyhow::Result<TestEnv> {
    let env = TestEnv::with_prefix("apis").await?;
    testenv::crd::install_crds(env.client(), &shipped_crds()?).await?;
    Ok(env)
}

/// Create `kind` from raw JSON (so that invalid values can be sent at all).
async fn create_raw<K>(env: &TestEnv, name: &str, body: Value) -> kube::Result<DynamicObject>
where
    K: Resource<DynamicType = ()>,
{
    let resource = ApiResource::erase::<K>(&());
    let api =
        Api::<DynamicObject>::namespaced_with(env.client().clone(), env.namespace(), &resource);
    let mut object = DynamicObject::new(name, &resource);
    object.data = body;
    api.create(&PostParams::default(), &object).await
}

/// Assert a 422 Invalid whose message contains every one of `needles`.
fn assert_invalid(result: kube::Result<DynamicObject>, needles: &[&str], what: &str) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422, "{what}: {status:?}");
            for needle in needles {
                assert!(
                    status.message.contains(needle),
                    "{what}: message should contain {needle:?}: {}",
                    status.message
                );
            }
        }
        other => panic!("{what}: expected a 422, got {other:?}"),
    }
}

#[tokio::test]
async fn foo_replicas_out_of_range_or_not_an_integer_is_rejected() -> anyhow::Result<()> {
    let env = env().await?;
    for (i, (replicas, needle)) in [
        (json!(0), "should be greater than or equal to 1"),
        (json!(11), "should be less than or equal to 10"),
        (json!("3"), "must be of type integer"),
    ]
    .into_iter()
    .enumerate()
    {
        let body = json!({ "spec": { "deploymentName": "d", "replicas": replicas } });
        let result = create_raw::<Foo>(&env, &format!("bad-{i}"), body).await;
        assert_invalid(
            result,
            &["spec.replicas", needle],
            &format!("replicas {replicas}"),
        );
    }
    let result = create_raw::<Foo>(&env, "no-name", json!({ "spec": { "replicas": 1 } })).await;
    assert_invalid(
        result,
        &["spec.deploymentName", "Required"],
        "missing deploymentName",
    );
    Ok(())
}

#[tokio::test]
async fn foo_replicas_defaults_to_one_and_valid_foos_are_stored() -> anyhow::Result<()> {
    let env = env().await?;
    let defaulted = create_raw::<Foo>(
        &env,
        "defaulted",
        json!({ "spec": { "deploymentName": "defaulted-deploy" } }),
    )
    .await?;
    assert_eq!(defaulted.data["spec"]["replicas"], json!(1));

    let foos = Api::<Foo>::namespaced(env.client().clone(), env.namespace());
    let foo = Foo::new("valid", FooSpec::new("valid-deploy", 10));
    let created = foos.create(&PostParams::default(), &foo).await?;
    assert_eq!(created.spec, foo.spec);
    // An empty deploymentName is left for the controller to report.
    let empty = Foo::new("empty-name", FooSpec::new("", 1));
    foos.create(&PostParams::default(), &empty).await?;
    // The typed client reads the defaulted object back.
    assert_eq!(foos.get("defaulted").await?.spec.replicas, 1);
    Ok(())
}

#[tokio::test]
async fn foo_status_is_written_only_through_the_status_subresource() -> anyhow::Result<()> {
    let env = env().await?;
    let foos = Api::<Foo>::namespaced(env.client().clone(), env.namespace());
    let mut foo = Foo::new("status", FooSpec::new("status-deploy", 2));
    foo.status = Some(FooStatus {
        available_replicas: 7,
    });
    let created = foos.create(&PostParams::default(), &foo).await?;
    assert_eq!(created.status, None, "status is ignored on create");

    // A status write that also changes the spec: the status sticks, the spec
    // change is dropped.
    let mut write = created.clone();
    write.spec.replicas = 5;
    write.status = Some(FooStatus {
        available_replicas: 2,
    });
    let written = foos
        .replace_status("status", &PostParams::default(), &write)
        .await?;
    assert_eq!(
        written.status,
        Some(FooStatus {
            available_replicas: 2
        })
    );
    assert_eq!(written.spec.replicas, 2);

    let stored = foos.get("status").await?;
    assert_eq!(stored.spec.replicas, 2);
    assert_eq!(
        stored.status,
        Some(FooStatus {
            available_replicas: 2
        })
    );

    // And a main-resource update cannot change the status.
    let mut update = stored.clone();
    update.spec.replicas = 3;
    update.status = Some(FooStatus {
        available_replicas: 9,
    });
    let updated = foos
        .replace("status", &PostParams::default(), &update)
        .await?;
    assert_eq!(updated.spec.replicas, 3);
    assert_eq!(
        updated.status,
        Some(FooStatus {
            available_replicas: 2
        })
    );
    Ok(())
}

#[tokio::test]
async fn virtual_machine_quantities_are_validated_by_the_api_server() -> anyhow::Result<()> {
    let env = env().await?;
    let cases = [
        ("0", "64Mi", "1Gi", "spec.resource.cpu", CPU_MESSAGE),
        ("500m", "64Mi", "1Gi", "spec.resource.cpu", CPU_MESSAGE),
        ("abc", "64Mi", "1Gi", "spec.resource.cpu", CPU_MESSAGE),
        ("1", "0", "1Gi", "spec.resource.memory", MEMORY_MESSAGE),
        (
            "1",
            "64Mi",
            "-1Gi",
            "spec.resource.rootDisk",
            ROOT_DISK_MESSAGE,
        ),
        (
            "1",
            "64Mi",
            "0Gi",
            "spec.resource.rootDisk",
            ROOT_DISK_MESSAGE,
        ),
    ];
    for (i, (cpu, memory, root_disk, field, message)) in cases.into_iter().enumerate() {
        let body = json!({ "spec": { "resource": { "cpu": cpu, "memory": memory, "rootDisk": root_disk } } });
        let result = create_raw::<VirtualMachine>(&env, &format!("bad-{i}"), body).await;
        let what = format!("cpu={cpu} memory={memory} rootDisk={root_disk}");
        assert_invalid(result, &[field, message], &what);
    }
    // Integers are quantities too (int-or-string), and are checked the same way.
    let body = json!({ "spec": { "resource": { "cpu": 0, "memory": "64Mi", "rootDisk": "1Gi" } } });
    let result = create_raw::<VirtualMachine>(&env, "bad-int", body).await;
    assert_invalid(
        result,
        &["spec.resource.cpu", CPU_MESSAGE],
        "cpu=0 (integer)",
    );
    // All three are required.
    let body = json!({ "spec": { "resource": { "cpu": "1", "memory": "64Mi" } } });
    let result = create_raw::<VirtualMachine>(&env, "no-disk", body).await;
    assert_invalid(
        result,
        &["spec.resource.rootDisk", "Required"],
        "missing rootDisk",
    );
    Ok(())
}

/// Every version accepts only what the other can hold: v1alpha1's `cpu` (a quantity)
/// at most v1beta1's `cpus` (a `uint32`), both refused past the edge, through each
/// version. (v1alpha1 is the storage version: what it accepts past the edge would be
/// stored, and every read through v1beta1 of its namespace would fail on it.)
#[tokio::test]
async fn virtual_machine_cpus_stop_at_the_edge_both_versions_share() -> anyhow::Result<()> {
    let env = env().await?;
    let alpha = |cpu: Value| json!({ "spec": { "resource": { "cpu": cpu, "memory": "64Mi", "rootDisk": "1Gi" } } });
    for (name, cpu) in [
        ("max-int", json!(4294967295u64)),
        ("max-str", json!("4294967295")),
    ] {
        create_raw::<VirtualMachine>(&env, name, alpha(cpu.clone())).await?;
    }
    for (i, cpu) in [
        json!(4294967296u64),
        json!("4294967296"),
        json!("5Gi"),
        json!("4294967295001m"),
    ]
    .into_iter()
    .enumerate()
    {
        let result =
            create_raw::<VirtualMachine>(&env, &format!("over-{i}"), alpha(cpu.clone())).await;
        assert_invalid(
            result,
            &["spec.resource.cpu", CPU_MESSAGE],
            &format!("v1alpha1 cpu={cpu}"),
        );
    }
    let beta = |cpus: Value| json!({ "spec": { "compute": { "cpus": cpus, "memory": "64Mi" }, "rootDisk": { "size": "1Gi" } } });
    for (i, (cpus, needle)) in [
        (json!(4294967296u64), "less than or equal to 4294967295"),
        (json!(0), "greater than or equal to 1"),
    ]
    .into_iter()
    .enumerate()
    {
        let result = create_raw::<apis::cloudnative::v1beta1::VirtualMachine>(
            &env,
            &format!("beta-over-{i}"),
            beta(cpus.clone()),
        )
        .await;
        assert_invalid(
            result,
            &["spec.compute.cpus", needle],
            &format!("v1beta1 cpus={cpus}"),
        );
    }
    Ok(())
}

#[tokio::test]
async fn valid_virtual_machines_are_stored() -> anyhow::Result<()> {
    let env = env().await?;
    let vms = Api::<VirtualMachine>::namespaced(env.client().clone(), env.namespace());
    let vm = VirtualMachine::new(
        "test-vm",
        VirtualMachineSpec {
            resource: VirtualMachineResource::new("1", "64Mi", "1Gi"),
        },
    );
    let created = vms.create(&PostParams::default(), &vm).await?;
    assert_eq!(created.spec, vm.spec);
    assert_eq!(created.spec.resource.parse()?.memory_bytes, 64 << 20);

    // 1500m is at least one CPU; integers are accepted and read back.
    let body = json!({ "spec": { "resource": { "cpu": "1500m", "memory": 1073741824u64, "rootDisk": "1e10" } } });
    create_raw::<VirtualMachine>(&env, "fractional", body).await?;
    let fractional = vms.get("fractional").await?;
    let parsed = fractional.spec.resource.parse()?;
    assert_eq!(
        (
            parsed.cpu_cores,
            parsed.memory_bytes,
            parsed.root_disk_bytes
        ),
        (2, 1 << 30, 10_000_000_000)
    );
    Ok(())
}

#[tokio::test]
async fn my_web_node_ports_out_of_range_and_empty_images_are_rejected() -> anyhow::Result<()> {
    let env = env().await?;
    let too_low = "should be greater than or equal to 30000";
    let too_high = "should be less than or equal to 32767";
    let cases: [(&str, Value, &[&str]); 7] = [
        (
            "nodePortNumber 0",
            json!({"image": "nginx", "nodePortNumber": 0}),
            &["spec.nodePortNumber", too_low],
        ),
        (
            "nodePortNumber 29999",
            json!({"image": "nginx", "nodePortNumber": 29999}),
            &["spec.nodePortNumber", too_low],
        ),
        (
            "nodePortNumber 32768",
            json!({"image": "nginx", "nodePortNumber": 32768}),
            &["spec.nodePortNumber", too_high],
        ),
        (
            "nodePortNumber as a string",
            json!({"image": "nginx", "nodePortNumber": "30080"}),
            &["spec.nodePortNumber", "must be of type integer"],
        ),
        (
            "no nodePortNumber",
            json!({"image": "nginx"}),
            &["spec.nodePortNumber", "Required value"],
        ),
        (
            "empty image",
            json!({"image": "", "nodePortNumber": 30080}),
            &["spec.image", "should be at least 1 chars long"],
        ),
        (
            "no image",
            json!({"nodePortNumber": 30080}),
            &["spec.image", "Required value"],
        ),
    ];
    for (i, (what, spec, needles)) in cases.into_iter().enumerate() {
        let result = create_raw::<MyWeb>(&env, &format!("bad-{i}"), json!({ "spec": spec })).await;
        assert_invalid(result, needles, what);
    }
    let webs: Api<MyWeb> = Api::namespaced(env.client().clone(), env.namespace());
    assert!(
        webs.list(&Default::default()).await?.items.is_empty(),
        "a rejected MyWeb was stored"
    );

    // The bounds themselves are valid, and pageContentHtml defaults to "".
    for port in [MIN_NODE_PORT, MAX_NODE_PORT] {
        let body = json!({ "spec": {"image": "nginx", "nodePortNumber": port} });
        let stored = create_raw::<MyWeb>(&env, &format!("edge-{port}"), body).await?;
        assert_eq!(stored.data["spec"]["nodePortNumber"], json!(port));
        assert_eq!(stored.data["spec"]["pageContentHtml"], json!(""));
    }
    Ok(())
}
