//! The controller's own complaints as an oracle: a Warning Event about one of the
//! workload's objects, or its `Ready` condition `False` in a settled state, on a spec
//! the API server accepted (issue 57).
//!
//! # Why
//!
//! A derived workload ([`crate::derive`]) only sends specs the CRD's schema accepts, and
//! the API server checked each one. If the controller then refuses one (a Warning Event,
//! `Ready=False` with a reason like `InvalidSpec`), the schema and the controller
//! disagree about what is valid: either the schema should refuse the spec up front (a
//! `minimum`, an `enum`, a CEL rule: the user learns at `kubectl apply`, not from an
//! Event), or the controller should honour it. Acto counts such disagreements among its
//! findings ("misoperation" and validation bugs, SOSP 2023). Every other oracle passes
//! them: the learning run refuses the spec too, the end states agree, nothing crashes.
//!
//! # Where it applies
//!
//! On runs without perturbation only (the learning run, the differential oracle's fresh
//! start): a crash or a withheld event may make a correct controller complain for a
//! while. Off for hand-written workloads unless asked for (`sieve test --complaints`): a
//! hand-written step may send a bad spec on purpose, to see the complaint. `kcr sieve`
//! turns it on: its workloads are derived.
//!
//! `Ready=False` counts in the settled states only (the state after the last update and
//! the end state: [`crate::runner::RunOutcome::snapshot`], `end_state`), where the
//! Deployments the controller owns have rolled out; during a step a controller reports
//! `Ready=False` while its Pods start, as it should.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A Warning Event about one of the workload's objects, first seen after a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// The step after which it was seen (0: before the first step).
    pub step: usize,
    /// The object's kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// The Event's reason.
    pub reason: String,
    /// The Event's message.
    pub message: String,
}

/// The Warning Events of a run, step by step: each Event counted once, when it first
/// appears or its count grows (a recorder aggregates repeats into one Event).
#[derive(Debug, Default)]
pub struct WarningLog {
    /// Event uid -> the count last seen.
    seen: HashMap<String, i64>,
    /// What was recorded, in order.
    pub warnings: Vec<Warning>,
}

impl WarningLog {
    /// Records the Warning Events among `events` (core/v1 Events as JSON) about objects
    /// of `kinds` that are new since the last call, as seen after `step`.
    pub fn record(&mut self, events: &[Json], step: usize, kinds: &[&str]) {
        for event in events {
            let text = |pointer: &str| {
                event
                    .pointer(pointer)
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let kind = text("/involvedObject/kind");
            if text("/type") != "Warning" || !kinds.contains(&kind.as_str()) {
                continue;
            }
            let uid = text("/metadata/uid");
            let count = event.get("count").and_then(Json::as_i64).unwrap_or(1);
            let before = self.seen.insert(uid, count);
            if before.is_some_and(|before| before >= count) {
                continue;
            }
            self.warnings.push(Warning {
                step,
                kind,
                name: text("/involvedObject/name"),
                reason: text("/reason"),
                message: text("/message"),
            });
        }
    }
}

/// The warnings that are about a spec: each but those about a spec the same object had
/// after an earlier step without a warning (`spec_after(step, name)`: its spec then).
/// A controller that reconciled a spec quietly once does not refuse it for its content
/// when it complains about it later: the workload recreated the object while the
/// garbage collector still held the old one's Deployment ("already exists and is not
/// controlled by this object" until it is gone), a transient the settled states judge.
pub fn about_the_spec(
    warnings: &[Warning],
    spec_after: impl Fn(usize, &str) -> Option<Json>,
) -> Vec<Warning> {
    warnings
        .iter()
        .filter(|w| {
            let Some(spec) = spec_after(w.step, &w.name) else {
                return true;
            };
            let quiet_before = (1..w.step).any(|earlier| {
                spec_after(earlier, &w.name).as_ref() == Some(&spec)
                    && !warnings
                        .iter()
                        .any(|o| o.step == earlier && o.name == w.name && o.kind == w.kind)
            });
            !quiet_before
        })
        .cloned()
        .collect()
}

/// The objects of `kinds` in `state` whose `Ready` condition is `False`:
/// `Kind name: Ready=False (Reason): message`.
pub fn not_ready(state: &[Json], kinds: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for object in state {
        let kind = object["kind"].as_str().unwrap_or_default();
        if !kinds.contains(&kind) {
            continue;
        }
        let conditions = object
            .pointer("/status/conditions")
            .and_then(Json::as_array)
            .into_iter()
            .flatten();
        for condition in conditions {
            if condition["type"] == "Ready" && condition["status"] == "False" {
                found.push(format!(
                    "{kind} {}: Ready=False ({}): {}",
                    object
                        .pointer("/metadata/name")
                        .and_then(Json::as_str)
                        .unwrap_or("?"),
                    condition["reason"].as_str().unwrap_or("no reason"),
                    condition["message"].as_str().unwrap_or("no message"),
                ));
            }
        }
    }
    found
}

/// The findings: each Warning (named by its step: `what` says what a step did, e.g.
/// from the derived workload's notes) and each object not `Ready` in the state after
/// step `snapshot_step` (`snapshot`) and in the end state.
pub fn findings(
    warnings: &[Warning],
    snapshot: Option<(usize, &[Json])>,
    end_state: &[Json],
    kinds: &[&str],
    what: &dyn Fn(usize) -> String,
) -> Vec<String> {
    let mut findings: Vec<String> = warnings
        .iter()
        .map(|w| {
            format!(
                "a Warning Event after {} on a spec the API server accepted: {} {}: {}: {}",
                what(w.step),
                w.kind,
                w.name,
                w.reason,
                w.message
            )
        })
        .collect();
    if let Some((step, state)) = snapshot {
        for object in not_ready(state, kinds) {
            findings.push(format!(
                "not Ready once settled after {}, on a spec the API server accepted: {object}",
                what(step)
            ));
        }
    }
    for object in not_ready(end_state, kinds) {
        findings.push(format!(
            "not Ready in the end state, on a spec the API server accepted: {object}"
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(uid: &str, kind: &str, type_: &str, count: i64) -> Json {
        json!({
            "metadata": {"uid": uid},
            "type": type_,
            "reason": "InvalidSpec",
            "message": "spec.size must be 0 or more, not -1",
            "count": count,
            "involvedObject": {"kind": kind, "name": "memcached-sample"},
        })
    }

    #[test]
    fn a_warning_is_counted_once_when_it_appears_and_again_when_it_repeats() {
        let mut log = WarningLog::default();
        let kinds = ["Memcached"];
        log.record(&[event("a", "Memcached", "Normal", 1)], 1, &kinds);
        assert!(log.warnings.is_empty(), "a Normal Event is no complaint");
        log.record(&[event("b", "Deployment", "Warning", 1)], 1, &kinds);
        assert!(
            log.warnings.is_empty(),
            "about an object the workload does not own"
        );
        log.record(&[event("c", "Memcached", "Warning", 1)], 2, &kinds);
        log.record(&[event("c", "Memcached", "Warning", 1)], 3, &kinds);
        log.record(&[event("c", "Memcached", "Warning", 2)], 4, &kinds);
        let steps: Vec<usize> = log.warnings.iter().map(|w| w.step).collect();
        assert_eq!(steps, [2, 4]);
        assert_eq!(log.warnings[0].reason, "InvalidSpec");
    }

    #[test]
    fn a_warning_about_a_spec_reconciled_quietly_before_is_no_complaint() {
        let warning = |step: usize| Warning {
            step,
            kind: "Memcached".into(),
            name: "memcached-sample".into(),
            reason: "ErrResourceExists".into(),
            message: "Deployment \"memcached-sample\" already exists".into(),
        };
        // Steps: 1 create {size: 1}, 2 update {size: -1}, 3 delete, 4 recreate {size: 1}.
        let spec_after = |step: usize, _: &str| match step {
            1 | 4 => Some(json!({"size": 1})),
            2 => Some(json!({"size": -1})),
            _ => None,
        };
        let kept = about_the_spec(&[warning(2), warning(4)], spec_after);
        assert_eq!(
            kept,
            [warning(2)],
            "the recreate's spec was quiet at step 1"
        );
        // Had step 1 complained too, the recreate's complaint would count.
        let kept = about_the_spec(&[warning(1), warning(4)], spec_after);
        assert_eq!(kept, [warning(1), warning(4)]);
    }

    #[test]
    fn ready_false_is_found_in_a_settled_state_and_named_by_its_step() {
        let object = |status: &str| {
            json!({
                "kind": "Memcached",
                "metadata": {"name": "memcached-sample"},
                "status": {"conditions": [
                    {"type": "Ready", "status": status, "reason": "InvalidSpec", "message": "size -1"}
                ]},
            })
        };
        let kinds = ["Memcached"];
        assert!(not_ready(&[object("True")], &kinds).is_empty());
        assert!(not_ready(&[object("False")], &["Guestbook"]).is_empty());
        let snapshot = [object("False")];
        let findings = findings(
            &[],
            Some((3, &snapshot)),
            &[object("True")],
            &kinds,
            &|step| format!("step {step} (spec.size: negative -> -1)"),
        );
        assert_eq!(
            findings,
            [
                "not Ready once settled after step 3 (spec.size: negative -> -1), on a spec the \
                 API server accepted: Memcached memcached-sample: Ready=False (InvalidSpec): size -1"
            ]
        );
    }
}
