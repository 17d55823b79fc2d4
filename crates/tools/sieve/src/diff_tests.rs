//! Tests of [`super`]: what the comparison ignores, and what it catches.

use super::*;
use serde_json::json;

/// A Foo in `ns` as the API server returns it, with the run's own uid, rv and times.
fn foo(ns: &str, uid: &str, rv: &str, replicas: i64) -> Json {
    json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1",
        "kind": "Foo",
        "metadata": {
            "name": "web", "namespace": ns, "uid": uid, "resourceVersion": rv,
            "creationTimestamp": format!("2026-01-01T00:00:{rv}Z"), "generation": 2,
            "managedFields": [{"manager": "sieve", "time": "2026-01-01T00:00:00Z"}],
            "selfLink": format!("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/{ns}/foos/web"),
        },
        "spec": {"deploymentName": "web", "replicas": replicas},
        "status": {"availableReplicas": replicas},
    })
}

/// The Deployment `name` owned by the Foo `web` (uid `owner_uid`).
fn deployment(ns: &str, name: &str, owner_uid: &str, replicas: i64, since: &str) -> Json {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name, "namespace": ns, "uid": format!("{owner_uid}-d"),
            "labels": {"app.kubernetes.io/name": "nginx", "controller": "web"},
            "ownerReferences": [{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                                 "name": "web", "uid": owner_uid, "controller": true}],
        },
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "conditions": [{"type": "Available", "status": "True",
                            "lastTransitionTime": since, "lastUpdateTime": since}],
        },
    })
}

/// A Pod of the Deployment, its name generated.
fn pod(ns: &str, suffix: &str) -> Json {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("web-5d8f7-{suffix}"), "generateName": "web-5d8f7-", "namespace": ns},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    })
}

fn reference() -> Vec<Json> {
    vec![
        foo("sieve-ref", "u1", "10", 3),
        deployment("sieve-ref", "web", "u1", 3, "2026-01-01T00:00:10Z"),
        pod("sieve-ref", "abcde"),
    ]
}

fn compare_with_reference(actual: &[Json]) -> StateDiff {
    compare(
        &reference(),
        "sieve-ref",
        actual,
        "sieve-plan-4",
        &Options::default(),
    )
}

#[test]
fn uids_versions_timestamps_namespaces_and_generated_names_are_ignored() {
    let actual = [
        pod("sieve-plan-4", "xyz12"),
        deployment("sieve-plan-4", "web", "u9", 3, "2026-01-01T00:07:00Z"),
        foo("sieve-plan-4", "u9", "977", 3),
    ];
    let diff = compare_with_reference(&actual);
    assert!(diff.is_empty(), "{diff}");
    assert_eq!(diff.to_string(), "end states equal\n");
    let normalized = normalize(&actual[0], "sieve-plan-4", &Options::default());
    assert_eq!(normalized["metadata"]["name"], "web-5d8f7-*");
    assert_eq!(normalized["metadata"]["namespace"], NAMESPACE_PLACEHOLDER);
}

#[test]
fn a_changed_replicas_is_caught_with_its_path_and_both_values() {
    let actual = [
        foo("sieve-plan-4", "u9", "977", 3),
        deployment("sieve-plan-4", "web", "u9", 1, "2026-01-01T00:07:00Z"),
        pod("sieve-plan-4", "xyz12"),
    ];
    let diff = compare_with_reference(&actual);
    assert!(diff.missing.is_empty() && diff.extra.is_empty());
    assert_eq!(
        diff.changed,
        [Changed {
            id: ObjectId {
                kind: "Deployment".into(),
                name: "web".into()
            },
            differences: vec![
                Difference {
                    path: ".spec.replicas".into(),
                    reference: Some(json!(3)),
                    actual: Some(json!(1))
                },
                Difference {
                    path: ".status.replicas".into(),
                    reference: Some(json!(3)),
                    actual: Some(json!(1))
                },
            ],
        }]
    );
    assert_eq!(
        diff.to_string(),
        "changed: Deployment web\n  .spec.replicas: reference 3, actual 1\n  .status.replicas: reference 3, actual 1\n"
    );
}

#[test]
fn a_missing_deployment_and_an_extra_duplicate_are_caught() {
    let missing = compare_with_reference(&[
        foo("sieve-plan-4", "u9", "977", 3),
        pod("sieve-plan-4", "xyz12"),
    ]);
    assert_eq!(
        missing.missing,
        [ObjectId {
            kind: "Deployment".into(),
            name: "web".into()
        }]
    );
    assert!(missing.extra.is_empty() && missing.changed.is_empty());
    assert_eq!(missing.to_string(), "missing: Deployment web\n");

    // Two Pods where the reference has one: the equal one pairs, the other is extra.
    let mut duplicate = reference();
    duplicate.push(pod("sieve-ref", "fghij"));
    let diff = compare(
        &reference(),
        "sieve-ref",
        &duplicate,
        "sieve-ref",
        &Options::default(),
    );
    assert_eq!(
        diff.extra,
        [ObjectId {
            kind: "Pod".into(),
            name: "web-5d8f7-*".into()
        }]
    );
    assert!(diff.missing.is_empty() && diff.changed.is_empty(), "{diff}");

    // A second Deployment under another name is extra too.
    let mut other = reference();
    other.push(deployment("sieve-ref", "web-2", "u1", 3, "x"));
    let diff = compare(
        &reference(),
        "sieve-ref",
        &other,
        "sieve-ref",
        &Options::default(),
    );
    assert_eq!(diff.to_string(), "extra: Deployment web-2\n");
}

#[test]
fn observed_generation_a_deletion_and_labels_are_compared() {
    let mut actual = reference();
    actual[1]["status"]["observedGeneration"] = json!(2);
    actual[1]["metadata"]["labels"]["app.kubernetes.io/name"] = json!("apache");
    actual[0]["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:09:00Z");
    let diff = compare(
        &reference(),
        "sieve-ref",
        &actual,
        "sieve-ref",
        &Options::default(),
    );
    let paths: Vec<(&str, &str)> = diff
        .changed
        .iter()
        .flat_map(|c| {
            c.differences
                .iter()
                .map(move |d| (c.id.kind.as_str(), d.path.as_str()))
        })
        .collect();
    assert_eq!(
        paths,
        [
            (
                "Deployment",
                r#".metadata.labels["app.kubernetes.io/name"]"#
            ),
            ("Deployment", ".status.observedGeneration"),
            ("Foo", ".metadata.deletionTimestamp"),
        ]
    );
    let deletion = &diff.changed[1].differences[0];
    assert_eq!(
        (deletion.reference.clone(), deletion.actual.clone()),
        (None, Some(json!("<set>")))
    );
}

#[test]
fn another_namespace_is_not_mapped_and_extra_paths_can_be_ignored() {
    let mut actual = reference();
    actual[0]["metadata"]["namespace"] = json!("kube-system");
    actual[1]["status"]["conditions"][0]["status"] = json!("False");
    let diff = compare(
        &reference(),
        "sieve-ref",
        &actual,
        "sieve-ref",
        &Options::default(),
    );
    // Objects match by kind and name: the Foo is there, in another namespace.
    let foo = diff.changed.iter().find(|c| c.id.kind == "Foo").unwrap();
    assert_eq!(foo.differences[0].path, ".metadata.namespace");
    assert_eq!(foo.differences[0].actual, Some(json!("kube-system")));

    let options = Options {
        ignore: vec![
            IgnoreRule::parse(".metadata.namespace").unwrap(),
            IgnoreRule::parse(".status.conditions[*].status").unwrap(),
        ],
        ..Options::default()
    };
    assert!(compare(&reference(), "sieve-ref", &actual, "sieve-ref", &options).is_empty());
}

#[test]
fn arrays_compare_element_by_element() {
    let a =
        json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "a"}]}});
    let b = json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"image": "b"}, {"image": "c"}]}});
    let diff = compare(&[a], "x", &[b], "y", &Options::default());
    let differences = &diff.changed[0].differences;
    assert_eq!(differences[0].path, ".spec.containers[0].image");
    assert_eq!(differences[1].path, ".spec.containers[1]");
    assert_eq!(differences[1].reference, None);
}

/// A Deployment made with a generated name, as a controller from outside makes them
/// (issue 57, A2): its status names its ReplicaSet, generated too.
fn generated_deployment(namespace: &str, suffix: &str, conditions: &[(&str, &str)]) -> Json {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": format!("web-{suffix}"), "generateName": "web-", "namespace": namespace},
        "spec": {"replicas": 2},
        "status": {
            "conditions": conditions.iter().map(|(ty, reason)| json!({
                "type": ty,
                "status": "True",
                "reason": reason,
                "message": format!("ReplicaSet \"web-{suffix}-5d4f8b\" has successfully progressed."),
            })).collect::<Vec<_>>()
        }
    })
}

#[test]
fn a_deployments_status_naming_its_replica_set_is_no_difference() {
    let reference = [generated_deployment(
        "a",
        "x7k2p",
        &[
            ("Available", "MinimumReplicasAvailable"),
            ("Progressing", "NewReplicaSetAvailable"),
        ],
    )];
    // Another run: other generated names, the conditions set in another order.
    let actual = [generated_deployment(
        "b",
        "q9zz1",
        &[
            ("Progressing", "NewReplicaSetAvailable"),
            ("Available", "MinimumReplicasAvailable"),
        ],
    )];
    let diff = compare(&reference, "a", &actual, "b", &Options::default());
    assert!(diff.is_empty(), "{diff}");
    // A reason is still compared, and the messages of other kinds are kept.
    let stuck = [generated_deployment(
        "b",
        "q9zz1",
        &[
            ("Available", "MinimumReplicasAvailable"),
            ("Progressing", "ProgressDeadlineExceeded"),
        ],
    )];
    let diff = compare(&reference, "a", &stuck, "b", &Options::default());
    assert_eq!(diff.changed[0].differences.len(), 1, "{diff}");
    assert_eq!(
        diff.changed[0].differences[0].path,
        ".status.conditions[1].reason"
    );
    let mut foo = generated_deployment("b", "q9zz1", &[("Ready", "Synced")]);
    foo["kind"] = json!("Foo");
    let normalized = normalize(&foo, "b", &Options::default());
    assert!(normalized.pointer("/status/conditions/0/message").is_some());
}

#[test]
fn a_kind_scoped_rule_drops_only_that_kinds_path() {
    let mut a = generated_deployment("a", "x7k2p", &[]);
    a["status"]["observedGeneration"] = json!(1);
    let mut foo = a.clone();
    foo["kind"] = json!("Foo");
    let options = Options {
        ignore: vec![IgnoreRule::parse("Deployment:.status.observedGeneration").unwrap()],
        ..Options::default()
    };
    assert!(
        normalize(&a, "a", &options)
            .pointer("/status/observedGeneration")
            .is_none()
    );
    assert!(
        normalize(&foo, "a", &options)
            .pointer("/status/observedGeneration")
            .is_some()
    );
}

#[test]
fn a_shorter_history_is_no_difference_where_states_were_skipped_and_a_longer_one_always_is() {
    let deployment = |revision: &str, observed: u64| {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "a",
                "annotations": {"deployment.kubernetes.io/revision": revision}},
            "spec": {"replicas": 2},
            "status": {"observedGeneration": observed}
        })
    };
    let reference = [deployment("2", 2)];
    assert!(is_history_counter(
        ".status.conditions[0].observedGeneration"
    ));
    assert!(!is_history_counter(
        ".spec.conditions[0].observedGeneration"
    ));
    assert!(!is_history_counter(".status.conditions[0].reason"));
    let skipped = Options {
        shorter_history: true,
        ..Options::default()
    };
    // Created at its final spec (a withheld first state): one rollout fewer.
    let shorter = [deployment("1", 1)];
    assert!(compare(&reference, "a", &shorter, "a", &skipped).is_empty());
    let diff = compare(&reference, "a", &shorter, "a", &Options::default());
    assert_eq!(diff.changed[0].differences.len(), 2, "{diff}");
    // Needless rollouts are a difference under every perturbation.
    let longer = [deployment("4", 4)];
    let diff = compare(&reference, "a", &longer, "a", &skipped);
    assert_eq!(diff.changed[0].differences.len(), 2, "{diff}");
    // Only the counters: another difference beside them stays.
    let mut scaled = deployment("1", 1);
    scaled["spec"]["replicas"] = json!(3);
    let diff = compare(&reference, "a", &[scaled], "a", &skipped);
    assert_eq!(diff.changed[0].differences.len(), 1, "{diff}");
    assert_eq!(diff.changed[0].differences[0].path, ".spec.replicas");
}

#[test]
fn the_clusters_own_objects_in_the_namespace_are_not_compared() {
    let ca = |pem: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "kube-root-ca.crt", "namespace": "a"}, "data": {"ca.crt": pem}})
    };
    // A replay on another control plane: another CA.
    assert!(compare(&[ca("one")], "a", &[ca("two")], "a", &Options::default()).is_empty());
    let mut page = ca("one");
    page["metadata"]["name"] = json!("web");
    let mut other = page.clone();
    other["data"]["ca.crt"] = json!("two");
    assert!(!compare(&[page], "a", &[other], "a", &Options::default()).is_empty());
}
