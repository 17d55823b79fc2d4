//! Tests of [`super`] on hand-written traces of the Foo workload's recreate step: a
//! correct controller, and broken ones the invariants must catch.

use super::*;
use crate::testing::{begin, end, owned, status_write, trace, watch, write};
use crate::trace::EventType::{Added, Deleted, Modified};
use crate::trace::Method::{Delete, Patch, Post, Put};
use serde_json::json;

/// The Foo controller of the repository: it watches its Deployments, so it sees the
/// garbage collector delete the old one before it creates the new one.
fn correct_recreate() -> Trace {
    trace([
        begin(1, "create", "web"),
        watch("foos", Added, "ns/web", "10", "u1"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("11")),
            "Foo",
            "web",
            "u1",
        ),
        watch("deployments", Added, "ns/web", "11", "d1"),
        // Its cache is late: the create is refused, nothing is created twice.
        owned(
            write(Post, "deployments", "ns/web", 409, None),
            "Foo",
            "web",
            "u1",
        ),
        status_write("foos", "ns/web", 200, Some("12")),
        end(1),
        begin(2, "recreate", "web"),
        watch("foos", Deleted, "ns/web", "13", "u1"),
        watch("deployments", Deleted, "ns/web", "14", "d1"),
        watch("foos", Added, "ns/web", "15", "u2"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("16")),
            "Foo",
            "web",
            "u2",
        ),
        end(2),
    ])
}

/// A broken Foo controller that creates the Deployment on every Foo event without
/// checking a cache (it has no Deployment informer): after the recreate, its second
/// create succeeds with no delete it could have seen.
fn creates_without_checking_its_cache() -> Trace {
    trace([
        begin(1, "create", "web"),
        watch("foos", Added, "ns/web", "10", "u1"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("11")),
            "Foo",
            "web",
            "u1",
        ),
        status_write("foos", "ns/web", 200, Some("12")),
        watch("foos", Modified, "ns/web", "12", "u1"),
        owned(
            write(Post, "deployments", "ns/web", 409, None),
            "Foo",
            "web",
            "u1",
        ),
        end(1),
        begin(2, "recreate", "web"),
        watch("foos", Deleted, "ns/web", "13", "u1"),
        watch("foos", Added, "ns/web", "15", "u2"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("16")),
            "Foo",
            "web",
            "u2",
        ),
        end(2),
    ])
}

#[test]
fn a_correct_controllers_trace_holds_every_invariant() {
    assert_eq!(check_trace(&correct_recreate()), []);
}

#[test]
fn a_controller_that_creates_without_checking_its_cache_is_caught() {
    let violations = check_trace(&creates_without_checking_its_cache());
    assert_eq!(
        violations,
        [Violation::CreatedTwice {
            resource: "deployments".into(),
            key: "ns/web".into(),
            first: 3,
            second: 11,
        }]
    );
    assert_eq!(
        violations[0].to_string(),
        "created twice: deployments ns/web (records 3 and 11, no delete between)"
    );
}

#[test]
fn a_delete_the_controller_sent_separates_two_creates() {
    let run = trace([
        write(Post, "configmaps", "ns/page", 201, Some("1")),
        write(Delete, "configmaps", "ns/page", 200, Some("2")),
        write(Post, "configmaps", "ns/page", 201, Some("3")),
        // A refused delete deletes nothing.
        write(Delete, "configmaps", "ns/page", 500, None),
        write(Post, "configmaps", "ns/page", 201, Some("4")),
    ]);
    let violations = check_trace(&run);
    assert!(
        matches!(
            violations.as_slice(),
            [Violation::CreatedTwice {
                first: 3,
                second: 5,
                ..
            }]
        ),
        "{violations:?}"
    );
}

#[test]
fn a_write_for_an_owner_seen_deleted_is_caught_but_cleanup_is_not() {
    let run = trace([
        watch("foos", Added, "ns/web", "10", "u1"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("11")),
            "Foo",
            "web",
            "u1",
        ),
        watch("foos", Deleted, "ns/web", "12", "u1"),
        // Acting on the deleted Foo: a violation.
        owned(
            write(Put, "deployments", "ns/web", 200, Some("13")),
            "Foo",
            "web",
            "u1",
        ),
        // Cleaning up after it: deleting what it owned, removing a finalizer.
        owned(
            write(Delete, "deployments", "ns/web", 200, Some("14")),
            "Foo",
            "web",
            "u1",
        ),
        {
            let mut event = owned(
                write(Patch, "deployments", "ns/web", 200, Some("15")),
                "Foo",
                "web",
                "u1",
            );
            if let Event::Write(w) = &mut event {
                w.removes_finalizer = true;
            }
            event
        },
        // Refused writes change nothing; a new Foo with the same name is another owner.
        owned(
            write(Put, "deployments", "ns/web", 404, None),
            "Foo",
            "web",
            "u1",
        ),
        watch("foos", Added, "ns/web", "16", "u2"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("17")),
            "Foo",
            "web",
            "u2",
        ),
    ]);
    let violations = check_trace(&run);
    assert_eq!(
        violations,
        [Violation::WriteForDeletedOwner {
            seq: 4,
            write: "PUT deployments ns/web -> 200".into(),
            owner_kind: "Foo".into(),
            owner_name: "web".into(),
            owner_uid: "u1".into(),
            deleted_at: 3,
        }]
    );
    assert_eq!(
        violations[0].to_string(),
        "write for a deleted owner: record 4: PUT deployments ns/web -> 200, on behalf of Foo web (uid u1), seen deleted at record 3"
    );
}

fn object(kind: &str, name: &str, uid: &str, owner: Option<(&str, &str, &str)>) -> Json {
    let mut object =
        json!({"kind": kind, "metadata": {"name": name, "namespace": "ns", "uid": uid}});
    if let Some((kind, name, uid)) = owner {
        object["metadata"]["ownerReferences"] =
            json!([{"kind": kind, "name": name, "uid": uid, "controller": true}]);
    }
    object
}

#[test]
fn objects_left_for_a_deleted_owner_are_caught() {
    let end_state = [
        object("Foo", "web", "u2", None),
        // The live Foo's Deployment: fine.
        object("Deployment", "web", "d2", Some(("Foo", "web", "u2"))),
        // The first incarnation's: its owner, u1, is gone although a Foo web exists.
        object("Deployment", "web-b", "d1", Some(("Foo", "web", "u1"))),
        // A Foo that is not there at all.
        object("Deployment", "old", "d0", Some(("Foo", "old", "u0"))),
        // Owned by a kind the end state did not capture: not checked.
        object(
            "Pod",
            "web-abc",
            "p1",
            Some(("ReplicaSet", "web-5d8f7", "r1")),
        ),
    ];
    let violations = check_end_state(&end_state, &["Foo", "Deployment"]);
    assert_eq!(
        violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [
            "left for a deleted owner: Deployment ns/web-b (its owner Foo web in the end state is another object, uid u2)",
            "left for a deleted owner: Deployment ns/old (its owner Foo old is not in the end state)",
        ]
    );
    assert!(check(&correct_recreate(), &end_state[..2], &["Foo", "Deployment"]).is_empty());
    assert_eq!(
        check(&creates_without_checking_its_cache(), &end_state, &["Foo"]).len(),
        3
    );
}

/// Found by a crash-point plan of the MyWeb operator: restarted while the garbage
/// collector removed the old MyWeb's ConfigMap, it never received that `DELETED` event;
/// its relist showed the ConfigMap gone, and its create for the new MyWeb was right.
#[test]
fn a_list_of_the_resource_separates_two_creates() {
    let relisted = trace([
        write(Post, "configmaps", "ns/page", 201, Some("1")),
        Event::List {
            resource: "deployments".into(),
        },
        Event::List {
            resource: "configmaps".into(),
        },
        write(Post, "configmaps", "ns/page", 201, Some("3")),
    ]);
    assert_eq!(check_trace(&relisted), []);
    // A list of another resource says nothing about this one.
    let other = trace([
        write(Post, "configmaps", "ns/page", 201, Some("1")),
        Event::List {
            resource: "deployments".into(),
        },
        write(Post, "configmaps", "ns/page", 201, Some("3")),
    ]);
    assert_eq!(check_trace(&other).len(), 1);
}

/// Found on the Go sample-controller's crash-point plans: a create whose answer came
/// after the owner's `DELETED` event, but which the controller had sent before it. Only
/// a write sent after the event counts.
#[test]
fn a_write_sent_before_the_owners_deletion_arrived_is_not_for_a_deleted_owner() {
    let sent_at = |event: Event, after: u64| match event {
        Event::Write(mut w) => {
            w.sent_after = Some(after);
            Event::Write(w)
        }
        other => other,
    };
    let run = |sent_after: u64| {
        trace([
            watch("foos", Added, "ns/web", "10", "u1"),
            watch("foos", Deleted, "ns/web", "12", "u1"),
            sent_at(
                owned(
                    write(Post, "deployments", "ns/web", 201, Some("13")),
                    "Foo",
                    "web",
                    "u1",
                ),
                sent_after,
            ),
        ])
    };
    // Sent when only record 1 (the ADDED) was in: in flight as the DELETED came.
    assert_eq!(check_trace(&run(1)), []);
    // Sent after record 2 (the DELETED): acting on what it had seen deleted.
    assert!(matches!(
        check_trace(&run(2)).as_slice(),
        [Violation::WriteForDeletedOwner { deleted_at: 2, .. }]
    ));
}

#[test]
fn a_deployment_is_rolling_out_until_every_replica_is_updated_available_and_the_only_one() {
    let deployment = |generation: i64, status: serde_json::Value| {
        serde_json::json!({
            "kind": "Deployment",
            "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": 1},
            "status": status,
        })
    };
    let done = serde_json::json!({"observedGeneration": 2, "replicas": 1, "updatedReplicas": 1, "availableReplicas": 1});
    assert!(rolling_out(&[deployment(2, done.clone())]).is_empty());
    // The old ReplicaSet's Pod still there (the MyWeb plan taken mid-rollout in CI).
    let old_pod = serde_json::json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1, "availableReplicas": 1});
    assert_eq!(rolling_out(&[deployment(2, old_pod)]), ["Deployment web"]);
    // The new spec not observed yet.
    assert_eq!(rolling_out(&[deployment(3, done)]), ["Deployment web"]);
    // No status at all yet; other kinds are never waited for.
    assert_eq!(
        rolling_out(&[deployment(1, serde_json::json!({}))]),
        ["Deployment web"]
    );
    assert!(
        rolling_out(&[serde_json::json!({"kind": "Service", "metadata": {"name": "web"}})])
            .is_empty()
    );
}
