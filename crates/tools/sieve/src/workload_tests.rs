//! Tests of [`super`]: the shipped workloads parse, and each kind of mistake is refused
//! with the step and the field named.

use super::*;
use serde_json::json;

const CREATE: &str = "
  - create:
      apiVersion: samplecontroller.k8s.io/v1alpha1
      kind: Foo
      name: web
      spec: {deploymentName: web, replicas: 1}
";

fn workload(steps: &str) -> Result<Workload, WorkloadError> {
    Workload::parse(&format!("steps:{steps}"))
}

fn shipped(file: &str) -> Workload {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("workloads")
        .join(file);
    Workload::from_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The ops of a workload, in order.
fn ops(workload: &Workload) -> Vec<Op> {
    workload.steps.iter().map(Step::op).collect()
}

#[test]
fn the_ci_workloads_parse_and_are_prefixes_of_a_kind_of_the_full_ones() {
    for (file, ops_expected) in [
        ("ci/foo.yaml", &[Op::Create, Op::Update, Op::Recreate][..]),
        ("ci/vm.yaml", &[Op::Create, Op::Delete]),
        ("ci/myweb.yaml", &[Op::Create, Op::Update]),
    ] {
        let ci = shipped(file);
        let full = shipped(file.trim_start_matches("ci/"));
        assert_eq!(ops(&ci), ops_expected, "{file}");
        assert_eq!(
            ci.kinds(),
            full.kinds(),
            "{file}: the same kind as the full workload"
        );
    }
}

#[test]
fn the_shipped_workloads_parse_with_create_change_delete_and_recreate() {
    let expected = [
        (
            "foo.yaml",
            "samplecontroller.k8s.io/v1alpha1",
            "Foo",
            "sieve-foo",
        ),
        (
            "vm.yaml",
            "cloudnative.tw/v1alpha1",
            "VirtualMachine",
            "sieve-vm",
        ),
        (
            "myweb.yaml",
            "operator.k8s-summit.org/v1",
            "MyWeb",
            "sieve-web",
        ),
    ];
    for (file, api_version, kind, name) in expected {
        let workload = shipped(file);
        assert!(workload.description.is_some(), "{file}");
        assert_eq!(
            ops(&workload),
            [
                Op::Create,
                Op::Update,
                Op::Recreate,
                Op::Delete,
                Op::Recreate
            ],
            "{file}"
        );
        let target = Target {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
        };
        assert!(workload.steps.iter().all(|s| s.target == target), "{file}");
        assert_eq!(workload.kinds().len(), 1, "{file}");
        // The first recreate replaces a live object; the second one comes back after
        // the delete.
        let delete_first: Vec<bool> = workload
            .steps
            .iter()
            .filter_map(|s| match s.action {
                Action::Recreate { delete_first, .. } => Some(delete_first),
                _ => None,
            })
            .collect();
        assert_eq!(delete_first, [true, false], "{file}");
    }
}

#[test]
fn the_foo_workload_has_the_specs_the_controller_reads() {
    let foo = shipped("foo.yaml");
    assert_eq!(
        foo.steps[0].action,
        Action::Create {
            spec: json!({"deploymentName": "sieve-foo", "replicas": 1})
        }
    );
    assert_eq!(
        foo.steps[1].action,
        Action::Update {
            patch: json!({"replicas": 3})
        }
    );
    assert_eq!(
        foo.steps[2].manifest("sieve-7"),
        Some(json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "sieve-foo", "namespace": "sieve-7"},
            "spec": {"deploymentName": "sieve-foo-b", "replicas": 2},
        }))
    );
    assert_eq!(foo.steps[3].manifest("sieve-7"), None);
}

#[test]
fn update_delete_and_recreate_take_the_kind_of_the_create() {
    let w = workload(&format!(
        "{CREATE}  - update: {{name: web, patch: {{replicas: 2}}}}\n  - delete: {{name: web}}\n"
    ))
    .unwrap();
    assert_eq!(w.steps[2].number, 3);
    assert_eq!(w.steps[2].target.kind, "Foo");
    assert_eq!(w.steps[2].action, Action::Delete);
}

/// The error of a workload, as text.
fn refused(steps: &str) -> String {
    workload(steps).unwrap_err().to_string()
}

#[test]
fn a_missing_or_unknown_field_names_the_step_and_the_field() {
    assert_eq!(
        refused(&format!("{CREATE}  - update: {{name: web}}\n")),
        "step 2 (update): field `patch`: missing"
    );
    assert_eq!(
        refused(&format!("{CREATE}  - delete: {{name: web, grace: 0}}\n")),
        "step 2 (delete): field `grace`: unknown field (this operation takes name)"
    );
    let err = workload("\n  - create: {apiVersion: a/v1, kind: Foo, name: web}\n").unwrap_err();
    assert!(matches!(
        err,
        WorkloadError::Field { step: 1, op: Op::Create, ref field, problem: Problem::Missing } if field == "spec"
    ));
}

#[test]
fn wrong_types_and_invalid_values_are_refused() {
    assert_eq!(
        refused(&format!("{CREATE}  - update: {{name: web, patch: 3}}\n")),
        "step 2 (update): field `patch`: expected a mapping"
    );
    assert_eq!(
        refused(&format!("{CREATE}  - update: {{name: web, patch: {{}}}}\n")),
        "step 2 (update): field `patch`: an empty patch changes nothing"
    );
    assert_eq!(
        refused("\n  - create: {apiVersion: v1, kind: Foo, name: web, spec: {}}\n"),
        "step 1 (create): field `apiVersion`: `v1` is not group/version (a custom resource has a group)"
    );
    assert_eq!(
        refused("\n  - create: {apiVersion: a/v1, kind: foo, name: web, spec: {}}\n"),
        "step 1 (create): field `kind`: `foo` is not a kind (e.g. `Foo`)"
    );
    assert!(
        refused("\n  - create: {apiVersion: a/v1, kind: Foo, name: Web_1, spec: {}}\n")
            .starts_with("step 1 (create): field `name`: `Web_1` is not a DNS-1123 subdomain")
    );
    assert_eq!(
        refused("\n  - create: {apiVersion: a/v1, kind: Foo, name: 7, spec: {}}\n"),
        "step 1 (create): field `name`: expected a string"
    );
}

#[test]
fn the_objects_named_must_exist_at_their_step() {
    assert_eq!(
        refused("\n  - delete: {name: web}\n"),
        "step 1 (delete): field `name`: no object named `web` was created before this step"
    );
    assert_eq!(
        refused(&format!(
            "{CREATE}  - delete: {{name: web}}\n  - update: {{name: web, patch: {{replicas: 2}}}}\n"
        )),
        "step 3 (update): field `name`: `web` does not exist at this step (deleted at step 2)"
    );
    assert_eq!(
        refused(&format!("{CREATE}{CREATE}")),
        "step 2 (create): field `name`: `web` already exists (created at step 1)"
    );
    // Created again after its delete: allowed, and so is a recreate of a deleted object.
    let again = workload(&format!("{CREATE}  - delete: {{name: web}}\n{CREATE}  - delete: {{name: web}}\n  - recreate: {{name: web, spec: {{replicas: 4}}}}\n")).unwrap();
    assert_eq!(
        again.steps[4].action,
        Action::Recreate {
            spec: json!({"replicas": 4}),
            delete_first: false
        }
    );
}

#[test]
fn a_step_must_be_one_known_operation() {
    assert_eq!(
        refused("\n  - crete: {name: web}\n"),
        "step 1: unknown operation `crete` (expected one of create, update, delete, recreate)"
    );
    assert_eq!(
        refused(&format!(
            "{CREATE}  - {{delete: {{name: web}}, update: {{name: web}}}}\n"
        )),
        "step 2: expected exactly one operation (create, update, delete, recreate)"
    );
    assert_eq!(
        refused("\n  - delete\n"),
        "step 1: expected a mapping with one operation (create, update, delete, recreate)"
    );
}

#[test]
fn the_document_must_be_a_mapping_with_steps() {
    assert_eq!(
        Workload::parse("- create: {}").unwrap_err().to_string(),
        "workload: expected a mapping with `steps` (and optionally `description`)"
    );
    assert_eq!(
        Workload::parse("description: x").unwrap_err().to_string(),
        "workload: missing `steps`"
    );
    assert_eq!(
        Workload::parse("steps: []").unwrap_err().to_string(),
        "workload: `steps` is empty"
    );
    assert_eq!(
        Workload::parse("stepz: []").unwrap_err().to_string(),
        "workload: unknown field `stepz` (a workload has `description` and `steps`)"
    );
    assert!(matches!(
        Workload::parse("steps: [").unwrap_err(),
        WorkloadError::Yaml(_)
    ));
    let missing = Workload::from_file(Path::new("/nonexistent/sieve.yaml")).unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("reading workload /nonexistent/sieve.yaml: ")
    );
}
