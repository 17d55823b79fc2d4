//! Tests of [`super`]: the points found for a hand-written learning run of the Foo
//! controller (create, scale, delete).

use super::*;
use crate::testing::{begin, end, owned, status_write, trace, watch, write};
use crate::trace::EventType::{Added, Deleted, Modified};
use crate::trace::Method::{Post, Put};

/// Create `web` (its Deployment, a status conflict then the status), scale it, delete it.
fn foo_run() -> Trace {
    trace([
        Event::Run {
            workload: "workloads/foo.yaml".into(),
            controller: "sample-controller".into(),
        },
        begin(1, "create", "web"),
        watch("foos", Added, "ns/web", "100", "u1"),
        owned(
            write(Post, "deployments", "ns/web", 201, Some("101")),
            "Foo",
            "web",
            "u1",
        ),
        watch("deployments", Added, "ns/web", "101", "d1"),
        status_write("foos", "ns/web", 409, None),
        status_write("foos", "ns/web", 200, Some("102")),
        watch("foos", Modified, "ns/web", "102", "u1"),
        watch("deployments", Modified, "ns/web", "103", "d1"),
        end(1),
        begin(2, "update", "web"),
        watch("foos", Modified, "ns/web", "104", "u1"),
        owned(
            write(Put, "deployments", "ns/web", 200, Some("105")),
            "Foo",
            "web",
            "u1",
        ),
        watch("deployments", Modified, "ns/web", "105", "d1"),
        end(2),
        begin(3, "delete", "web"),
        watch("foos", Deleted, "ns/web", "106", "u1"),
        watch("deployments", Deleted, "ns/web", "107", "d1"),
        end(3),
    ])
}

fn ids(plans: &[Plan]) -> Vec<&str> {
    plans.iter().map(|p| p.id.as_str()).collect()
}

#[test]
fn the_points_of_a_learning_run() {
    let plans = plans(&foo_run());
    assert_eq!(
        PlanCounts::of(&plans),
        PlanCounts {
            intermediate: 3,
            unobserved: 6,
            stale: 2
        }
    );
    assert_eq!(
        ids(&plans),
        [
            "intermediate-1",
            "intermediate-3",
            "intermediate-4",
            "unobserved-foos-ns/web-100",
            "unobserved-deployments-ns/web-101",
            "unobserved-foos-ns/web-102",
            "unobserved-deployments-ns/web-103",
            "unobserved-foos-ns/web-104",
            "unobserved-deployments-ns/web-105",
            "stale-2",
            "stale-3",
        ]
    );
    assert_eq!(
        PlanCounts::of(&plans).to_string(),
        "11 plans: 3 intermediate-state, 6 unobserved-state, 2 stale-state"
    );
}

#[test]
fn a_refused_write_is_no_crash_point_but_counts_in_the_ordinals() {
    let plans = plans(&foo_run());
    // Write 2 is the status update answered 409: nothing changed there.
    assert!(find(&plans, "intermediate-2").is_none());
    let third = find(&plans, "intermediate-3").unwrap();
    assert_eq!(
        third.perturbation,
        Perturbation::IntermediateState { after_write: 3 }
    );
    assert_eq!(
        third.point,
        "write 3 (record 7): PUT foos/status ns/web -> 200"
    );
}

#[test]
fn an_objects_last_event_is_never_withheld() {
    let plans = plans(&foo_run());
    assert!(find(&plans, "unobserved-foos-ns/web-106").is_none());
    assert!(find(&plans, "unobserved-deployments-ns/web-107").is_none());
    let third = find(&plans, "unobserved-foos-ns/web-104").unwrap();
    assert_eq!(
        third.perturbation,
        Perturbation::UnobservedState {
            resource: "foos".into(),
            key: "ns/web".into(),
            withheld_rv: "104".into(),
            occurrence: 3,
        }
    );
    assert_eq!(
        third.point,
        "foos MODIFIED ns/web rv 104 (record 12, event 3 of 4); delivered instead: DELETED rv 106"
    );
}

#[test]
fn a_stale_plan_lists_at_the_end_of_the_previous_step() {
    let plans = plans(&foo_run());
    let stale: Vec<&Perturbation> = plans
        .iter()
        .map(|p| &p.perturbation)
        .filter(|p| matches!(p, Perturbation::StaleState { .. }))
        .collect();
    assert_eq!(
        stale,
        [
            &Perturbation::StaleState {
                at_step: 2,
                list_rv: "103".into()
            },
            &Perturbation::StaleState {
                at_step: 3,
                list_rv: "105".into()
            },
        ]
    );
}

#[test]
fn the_newest_version_is_the_greatest_number_not_the_last_received() {
    // Two watches interleave: the Deployment's event (rv 12) arrives after the Foo's (rv 13).
    let run = trace([
        begin(1, "create", "web"),
        watch("foos", Added, "ns/web", "13", "u1"),
        watch("deployments", Added, "ns/web", "12", "d1"),
        end(1),
        begin(2, "delete", "web"),
        end(2),
    ]);
    let plans = plans(&run);
    assert_eq!(
        find(&plans, "stale-2").unwrap().perturbation,
        Perturbation::StaleState {
            at_step: 2,
            list_rv: "13".into()
        }
    );
    // Opaque resourceVersions: the last one seen.
    let opaque = trace([
        watch("foos", Added, "ns/web", "b", "u1"),
        watch("foos", Modified, "ns/web", "a", "u1"),
        end(1),
        end(2),
    ]);
    assert_eq!(
        find(&super::plans(&opaque), "stale-2")
            .unwrap()
            .perturbation,
        Perturbation::StaleState {
            at_step: 2,
            list_rv: "a".into()
        }
    );
}

#[test]
fn no_stale_plan_for_the_first_step_or_before_anything_was_seen() {
    let run = trace([
        end(1),
        watch("foos", Added, "ns/web", "5", "u1"),
        end(2),
        end(3),
    ]);
    assert_eq!(ids(&plans(&run)), ["stale-3"]);
}

#[test]
fn an_event_received_by_two_watches_is_one_point() {
    let run = trace([
        watch("foos", Added, "ns/web", "5", "u1"),
        watch("foos", Added, "ns/web", "5", "u1"),
        watch("foos", Modified, "ns/web", "6", "u1"),
    ]);
    assert_eq!(ids(&plans(&run)), ["unobserved-foos-ns/web-5"]);
}

#[test]
fn a_plan_renders_the_command_that_replays_it() {
    let plans = plans(&foo_run());
    let plan = find(&plans, "unobserved-foos-ns/web-100").unwrap();
    assert_eq!(
        plan.command("crates/tools/sieve/workloads/foo.yaml", "sample-controller"),
        "sieve run --workload crates/tools/sieve/workloads/foo.yaml --controller sample-controller --plan unobserved-foos-ns/web-100"
    );
    assert_eq!(
        plan.command("my workloads/it's.yaml", "go sample"),
        r#"sieve run --workload 'my workloads/it'\''s.yaml' --controller 'go sample' --plan unobserved-foos-ns/web-100"#
    );
}
