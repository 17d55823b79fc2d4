//! Tests of [`super`] on the repository's own CRDs and samples: every workload derived
//! from them parses, and exercises the bounds their schemas have.

use std::path::Path;

use serde_json::{Value as Json, json};

use super::tests::updates;
use super::*;

/// The repository's CRDs and samples, as the CLI reads them.
fn repository_pair(crd: &str, sample: &str) -> (Json, Json) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../..");
    let read = |file: &str| -> Json {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        serde_yaml::from_str(&text).unwrap()
    };
    (read(crd), read(sample))
}

#[test]
fn every_workload_derived_from_the_repositorys_crds_parses_and_exercises_the_bounds() {
    let (crd, sample) = repository_pair(
        "deploy/crds/samplecontroller.k8s.io_foos.yaml",
        "deploy/examples/foo.yaml",
    );
    for depth in [Depth::Short, Depth::Full] {
        let derived = derive(
            &crd,
            &sample,
            &DeriveOptions {
                depth,
                max_steps: None,
            },
        )
        .unwrap();
        Workload::parse(&derived.text).unwrap();
        assert!(updates(&derived).contains(&(
            "spec.replicas".into(),
            ValueClass::Maximum,
            json!(10)
        )));
    }
    let (crd, sample) = repository_pair(
        "deploy/crds/operator.k8s-summit.org_mywebs.yaml",
        "deploy/myweb-operator/myweb.yaml",
    );
    let full = derive(
        &crd,
        &sample,
        &DeriveOptions {
            depth: Depth::Full,
            max_steps: None,
        },
    )
    .unwrap();
    let updates = updates(&full);
    for port in [30000, 30001, 32766, 32767] {
        assert!(
            updates
                .iter()
                .any(|(f, _, v)| f == "spec.nodePortNumber" && *v == json!(port)),
            "{port}"
        );
    }
    // image has minLength 1 and is required: never emptied, never removed.
    assert!(
        updates
            .iter()
            .all(|(f, _, v)| f != "spec.image" || (*v != json!("") && !v.is_null()))
    );
}
