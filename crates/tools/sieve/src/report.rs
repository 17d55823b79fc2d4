//! The verdict on one plan's run against the learning run, and the report of many.
//!
//! A plan **passes** when its perturbation happened, its end state equals the
//! reference after normalization ([`diff`]), every step was quiescent
//! within the bound, no invariant broke ([`invariants`]), and the
//! controller neither panicked nor exited on its own. A plan whose point never came
//! (the controller took another path this time: fewer writes, no such event) is **not
//! reached**: neither a pass nor a failure, and listed as such.

use std::fmt::Write as _;

use serde::Serialize;

use crate::diff::{self, StateDiff};
use crate::invariants::{self, Violation};
use crate::plan::Plan;
use crate::runner::RunOutcome;

/// One plan's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Everything held.
    Pass,
    /// Something did not (the findings say what).
    Fail,
    /// The perturbation never happened.
    NotReached,
}

/// One plan's result.
#[derive(Debug, Clone, Serialize)]
pub struct PlanResult {
    /// The plan's id.
    pub id: String,
    /// `intermediate`, `unobserved` or `stale`.
    pub perturbation: String,
    /// What the learning run did at that point.
    pub point: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What went wrong, one line each.
    pub findings: Vec<String>,
    /// The end-state difference from the reference.
    pub diff: StateDiff,
    /// The broken invariants.
    pub violations: Vec<Violation>,
    /// The command that replays the plan.
    pub command: String,
    /// How long the run took, in seconds.
    pub seconds: f64,
}

/// Judges `outcome` (of `plan`) against the learning run's `reference`.
pub fn judge(
    plan: &Plan,
    outcome: &RunOutcome,
    reference: &RunOutcome,
    options: &diff::Options,
    command: String,
    seconds: f64,
) -> PlanResult {
    let diff = diff::compare(
        &reference.end_state,
        &reference.namespace,
        &outcome.end_state,
        &outcome.namespace,
        options,
    );
    let full: Vec<&str> = outcome.full_kinds.iter().map(String::as_str).collect();
    let violations = invariants::check(&outcome.trace, &outcome.end_state, &full);
    let mut findings: Vec<String> = Vec::new();
    if !diff.is_empty() {
        findings.push(format!("end state differs from the reference:\n{diff}"));
    }
    // The state after the last spec change too: a workload that ends by deleting and
    // creating its object again hides at its end what went wrong before (a Deployment
    // never made for the object's first version, then made for its second).
    if let (Some(expected), Some(actual)) = (&reference.snapshot, &outcome.snapshot) {
        let before = diff::compare(
            expected,
            &reference.namespace,
            actual,
            &outcome.namespace,
            options,
        );
        if !before.is_empty() {
            findings.push(format!(
                "the state after the last spec change differs from the reference's:\n{before}"
            ));
        }
    }
    findings.extend(violations.iter().map(ToString::to_string));
    findings.extend(outcome.liveness.iter().cloned());
    findings.extend(outcome.exits.iter().cloned());
    findings.extend(outcome.panics.iter().map(|p| format!("panic: {p}")));
    findings.extend(
        outcome
            .not_cleaned_up
            .iter()
            .map(|o| format!("not deleted after the run (a finalizer left): {o}")),
    );
    // The steps the API server refused are the same in every run: admission that
    // answers a user's request by the state a perturbation changed is a finding.
    let steps = |refused: &[String]| -> Vec<String> {
        refused
            .iter()
            .map(|r| {
                r.split_once(':')
                    .map_or(r.as_str(), |(step, _)| step)
                    .to_owned()
            })
            .collect()
    };
    if steps(&outcome.refused) != steps(&reference.refused) {
        findings.push(format!(
            "the API server refused other steps than in the reference: {:?} (reference {:?})",
            outcome.refused, reference.refused
        ));
    }
    let verdict = if !outcome.reached {
        Verdict::NotReached
    } else if findings.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    PlanResult {
        id: plan.id.clone(),
        perturbation: plan.id.split('-').next().unwrap_or_default().to_owned(),
        point: plan.point.clone(),
        verdict,
        findings,
        diff,
        violations,
        command,
        seconds,
    }
}

/// The findings of the learning run itself (it must be clean to be a reference).
pub fn check_reference(reference: &RunOutcome) -> Vec<String> {
    let full: Vec<&str> = reference.full_kinds.iter().map(String::as_str).collect();
    let mut findings: Vec<String> =
        invariants::check(&reference.trace, &reference.end_state, &full)
            .iter()
            .map(ToString::to_string)
            .collect();
    findings.extend(reference.liveness.iter().cloned());
    findings.extend(reference.exits.iter().cloned());
    findings.extend(reference.panics.iter().map(|p| format!("panic: {p}")));
    findings
}

/// Per perturbation: plans, passed, failed, not reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Plans run.
    pub plans: usize,
    /// Passed.
    pub passed: usize,
    /// Failed.
    pub failed: usize,
    /// Not reached.
    pub not_reached: usize,
}

/// The tally of `results` per perturbation, in the order intermediate, unobserved,
/// stale, then the total.
pub fn tally(results: &[PlanResult]) -> Vec<(&'static str, Tally)> {
    let mut rows = Vec::new();
    for name in ["intermediate", "unobserved", "stale", "total"] {
        let mut t = Tally::default();
        for r in results
            .iter()
            .filter(|r| name == "total" || r.perturbation == name)
        {
            t.plans += 1;
            match r.verdict {
                Verdict::Pass => t.passed += 1,
                Verdict::Fail => t.failed += 1,
                Verdict::NotReached => t.not_reached += 1,
            }
        }
        rows.push((name, t));
    }
    rows
}

/// The report as Markdown: the tally, then every plan that did not pass with its
/// findings and replay command.
pub fn markdown(controller: &str, workload: &str, results: &[PlanResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# sieve: {controller}, {workload}\n");
    let _ = writeln!(
        out,
        "| perturbation | plans | passed | failed | not reached |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|");
    for (name, t) in tally(results) {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} |",
            t.plans, t.passed, t.failed, t.not_reached
        );
    }
    for r in results.iter().filter(|r| r.verdict != Verdict::Pass) {
        let _ = writeln!(out, "\n## {} ({:?})\n\n{}\n", r.id, r.verdict, r.point);
        for f in &r.findings {
            let _ = writeln!(out, "- {}", f.trim_end().replace('\n', "\n  "));
        }
        let _ = writeln!(out, "\nreplay: `{}`", r.command);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Perturbation;
    use crate::trace::Trace;
    use serde_json::json;

    fn outcome(namespace: &str, replicas: u64, reached: bool) -> RunOutcome {
        RunOutcome {
            namespace: namespace.into(),
            trace: Trace::default(),
            end_state: vec![json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": namespace, "uid": namespace},
                "spec": {"replicas": replicas}
            })],
            full_kinds: vec!["Foo".into()],
            reached,
            liveness: Vec::new(),
            exits: Vec::new(),
            panics: Vec::new(),
            incarnations: 1,
            logs: Vec::new(),
            not_cleaned_up: Vec::new(),
            refused: Vec::new(),
            snapshot: None,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn verdicts() {
        let plan = Plan {
            id: "intermediate-2".into(),
            perturbation: Perturbation::IntermediateState { after_write: 2 },
            point: "PUT foos/status".into(),
        };
        let reference = outcome("learn", 3, true);
        let opts = diff::Options::default();
        let judged = |o: &RunOutcome| judge(&plan, o, &reference, &opts, "replay".into(), 1.0);
        assert_eq!(judged(&outcome("a", 3, true)).verdict, Verdict::Pass);
        let failed = judged(&outcome("b", 2, true));
        assert_eq!(failed.verdict, Verdict::Fail);
        assert!(
            failed.findings[0].contains(".spec.replicas"),
            "{:?}",
            failed.findings
        );
        assert_eq!(judged(&outcome("c", 2, false)).verdict, Verdict::NotReached);
        let mut panicked = outcome("d", 3, true);
        panicked.panics.push("controller-1.log: panicked at".into());
        assert_eq!(judged(&panicked).verdict, Verdict::Fail);
        // A refused step is an outcome: the same refusal passes, another one fails.
        let refusal = |step: &str| {
            format!("step {step} (update Foo web): refused (422): spec.replicas: Invalid value")
        };
        let mut refused_reference = outcome("learn", 3, true);
        refused_reference.refused.push(refusal("2"));
        let mut same = outcome("e", 3, true);
        same.refused
            .push(refusal("2").replace("Invalid value", "Invalid value: 0"));
        let refused_judged =
            |o: &RunOutcome| judge(&plan, o, &refused_reference, &opts, "replay".into(), 1.0);
        assert_eq!(refused_judged(&same).verdict, Verdict::Pass);
        let mut other = outcome("f", 3, true);
        other.refused.push(refusal("3"));
        let judged_other = refused_judged(&other);
        assert_eq!(judged_other.verdict, Verdict::Fail);
        assert!(
            judged_other.findings[0].contains("refused other steps"),
            "{:?}",
            judged_other.findings
        );
        // The state after the last spec change is judged too: equal end states do not
        // hide a Deployment missing before (an edge-triggered create, then a recreate).
        let mut with_snapshot = outcome("learn", 3, true);
        with_snapshot.snapshot = Some(with_snapshot.end_state.clone());
        let snapshot_judged =
            |o: &RunOutcome| judge(&plan, o, &with_snapshot, &opts, "replay".into(), 1.0);
        let mut missing_before = outcome("g", 3, true);
        missing_before.snapshot = Some(Vec::new());
        let judged_missing = snapshot_judged(&missing_before);
        assert_eq!(judged_missing.verdict, Verdict::Fail);
        assert!(
            judged_missing.findings[0].contains("after the last spec change")
                && judged_missing.findings[0].contains("missing: Deployment web"),
            "{:?}",
            judged_missing.findings
        );
        // No snapshot (an event still withheld then): only the end state counts.
        assert_eq!(
            snapshot_judged(&outcome("h", 3, true)).verdict,
            Verdict::Pass
        );
        let results = vec![judged(&outcome("a", 3, true)), failed];
        let rows = tally(&results);
        assert_eq!(
            rows[0],
            (
                "intermediate",
                Tally {
                    plans: 2,
                    passed: 1,
                    failed: 1,
                    not_reached: 0
                }
            )
        );
        assert_eq!(rows[3].1.plans, 2);
        let text = markdown("foo", "foo.yaml", &results);
        assert!(text.contains("| intermediate | 2 | 1 | 1 | 0 |"), "{text}");
        assert!(text.contains("replay: `replay`"));
    }
}
