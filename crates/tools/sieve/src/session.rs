//! A session: one target and one workload on one control plane, and what `sieve learn`,
//! `run` and `test` do with them. The library's entry point for callers other than the
//! `sieve` command (`kcr sieve` runs a session per sample of a kcr project).
//!
//! [`Session::test`] is the whole method: the learning run (the reference), every plan
//! of its trace ([`plan`]) each in a fresh namespace, up to [`Session::jobs`] at once,
//! and Acto's **differential oracle** ([`Session::differential`]): the state reached
//! through the workload's sequence of spec changes must equal the state a fresh object
//! created with the final spec reaches (Gu et al., "Acto: Automatic End-to-End Testing
//! for Operation Correctness of Cloud System Management", SOSP 2023). A controller that
//! forgets to undo what an earlier spec asked for (a field set then removed, a list
//! shrunk) passes every Sieve plan, since the learning run forgets it too, and fails
//! there.
//!
//! Plans run side by side: each has its namespace, its proxy and its controller
//! processes, and a plan's time is mostly the wait for quiescence, not CPU.

use std::path::{Path, PathBuf};
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

use crate::complaints;
use crate::derive::final_specs;
use crate::diff::{self, StateDiff};
use crate::plan::{self, Perturbation, Plan, PlanCounts};
use crate::report::{self, PlanResult, Verdict};
use crate::runner::{self, Environment, RunError, RunOutcome, Timing};
use crate::target::Target;
use crate::trace::{Trace, TraceError};
use crate::workload::{Action, Step, Workload};

/// Why a session could not be carried out (not a finding about the controller).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A run could not be carried out.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A learning run's trace could not be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not the JSON it should be.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: serde_json::Error,
    },
}

/// The differential oracle's verdict: the workload's end state against a fresh start at
/// its final specs.
#[derive(Debug, Clone, Serialize)]
pub struct DifferentialResult {
    /// Whether the end states are equal (and the fresh run was clean).
    pub verdict: Verdict,
    /// What differs, and the fresh run's own findings.
    pub findings: Vec<String>,
    /// The end-state difference (reference: the workload's; actual: the fresh start's).
    pub diff: StateDiff,
    /// How long the fresh run took, in seconds.
    pub seconds: f64,
}

/// One target, one workload, one control plane.
pub struct Session {
    /// The control plane and the binaries.
    pub env: Environment,
    /// The controller.
    pub target: Target,
    /// The workload.
    pub workload: Workload,
    /// The workload's name in traces, reports and replay commands (its path).
    pub workload_name: String,
    /// The runner's waits.
    pub timing: Timing,
    /// The flags a replay command needs beyond `--controller` (for a target that is not
    /// a preset: `--command`, `--capture`, `--ignore`, quoted for a shell).
    pub replay_flags: String,
    /// How many plans run at once.
    pub jobs: usize,
    /// How a plan is replayed, if not with `sieve run` (`kcr sieve --replay`): from the
    /// plan's id.
    pub replay_command: Option<ReplayCommand>,
    /// Whether the controller's complaints about a spec the API server accepted are
    /// findings ([`crate::complaints`]: on for derived workloads).
    pub complaints: bool,
    /// What each step exercises (a derived workload's notes: [`step_notes`](crate::derive::step_notes)),
    /// to name the field and the step of a finding.
    pub step_notes: Vec<(usize, String)>,
}

/// Makes a plan's replay command from its id.
pub type ReplayCommand = Box<dyn Fn(&str) -> String + Send + Sync>;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("target", &self.target.name)
            .field("workload", &self.workload_name)
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The learning run into `out`; whether it is clean enough to be a reference.
    pub async fn learn(&self, out: &Path) -> Result<(RunOutcome, bool), SessionError> {
        self.learn_with(out, differential_point(&self.workload))
            .await
    }

    /// [`learn`](Self::learn), keeping the state after step `snapshot_after` too (each
    /// plan is judged on it as well: [`differential_point`]).
    async fn learn_with(
        &self,
        out: &Path,
        snapshot_after: Option<usize>,
    ) -> Result<(RunOutcome, bool), SessionError> {
        let outcome = runner::run(
            &self.env,
            &self.target,
            (&self.workload, &self.workload_name),
            None,
            None,
            self.timing,
            out,
            snapshot_after,
        )
        .await?;
        write_json(&out.join("outcome.json"), &outcome)?;
        let findings = report::check_reference(&outcome);
        let plans = plan::plans(&outcome.trace);
        eprintln!(
            "sieve: learned {} with {}: {} writes, {} watch events, {}; {} objects in the end state",
            self.workload_name,
            self.target.name,
            outcome.trace.writes().count(),
            outcome.trace.watch_events().count(),
            PlanCounts::of(&plans),
            outcome.end_state.len()
        );
        for refused in &outcome.refused {
            eprintln!("sieve: {refused} (every plan must see the same)");
        }
        for f in &findings {
            eprintln!("sieve: the learning run is not clean: {f}");
        }
        Ok((outcome, findings.is_empty()))
    }

    /// The learning run `sieve learn` wrote into `dir`.
    pub fn read_learned(dir: &Path) -> Result<RunOutcome, SessionError> {
        let path = dir.join("outcome.json");
        let text = std::fs::read_to_string(&path).map_err(|source| SessionError::Io {
            path: path.clone(),
            source,
        })?;
        let mut outcome: RunOutcome =
            serde_json::from_str(&text).map_err(|source| SessionError::Json { path, source })?;
        outcome.trace = Trace::from_file(&dir.join("trace.jsonl"))?;
        Ok(outcome)
    }

    /// Runs `plan` into `out` and judges it against `reference` (learned into
    /// `learned`).
    pub async fn run_plan(
        &self,
        plan: &Plan,
        reference: &RunOutcome,
        learned: &Path,
        out: &Path,
    ) -> Result<PlanResult, SessionError> {
        let started = Instant::now();
        let outcome = runner::run(
            &self.env,
            &self.target,
            (&self.workload, &self.workload_name),
            Some(plan),
            Some(&reference.namespace),
            self.timing,
            out,
            differential_point(&self.workload),
        )
        .await?;
        write_json(&out.join("outcome.json"), &outcome)?;
        let command = match &self.replay_command {
            Some(replay) => replay(&plan.id),
            None => format!(
                "{}{} --learned {}",
                plan.command(&self.workload_name, &self.target.name),
                self.replay_flags,
                learned.display()
            ),
        };
        let result = report::judge(
            plan,
            &outcome,
            reference,
            &self.options(matches!(
                plan.perturbation,
                Perturbation::UnobservedState { .. }
            )),
            command,
            started.elapsed().as_secs_f64(),
        );
        write_json(&out.join("verdict.json"), &result)?;
        Ok(result)
    }

    /// The [`crate::complaints`] of an unperturbed run (none unless
    /// [`complaints`](Self::complaints) is on), each naming its step.
    pub fn complaints_of(&self, outcome: &RunOutcome) -> Vec<String> {
        if !self.complaints {
            return Vec::new();
        }
        let kinds: Vec<&str> = outcome.full_kinds.iter().map(String::as_str).collect();
        let snapshot = differential_point(&self.workload).zip(outcome.snapshot.as_deref());
        let about_the_spec = complaints::about_the_spec(&outcome.warnings, |step, name| {
            spec_after(&self.workload, step, name)
        });
        complaints::findings(
            &about_the_spec,
            snapshot,
            &outcome.end_state,
            &kinds,
            &|number| self.describe_step(number),
        )
    }

    /// `step N (what it exercises)`, from the step notes or the step itself.
    fn describe_step(&self, number: usize) -> String {
        if let Some((_, note)) = self.step_notes.iter().find(|(n, _)| *n == number) {
            return format!("step {number} ({note})");
        }
        match self.workload.steps.iter().find(|s| s.number == number) {
            Some(step) => format!(
                "step {number} ({} {} {})",
                step.op(),
                step.target.kind,
                step.target.name
            ),
            None => "the controller started".to_owned(),
        }
    }

    /// What the end-state comparison drops; `shorter_history` where the run skipped
    /// states (an unobserved-state plan, a fresh start at the final specs).
    fn options(&self, shorter_history: bool) -> diff::Options {
        diff::Options {
            ignore: self.target.ignore.clone(),
            shorter_history,
        }
    }

    /// Learn, then run every plan (those whose id starts with one of `only`, if any),
    /// [`jobs`](Self::jobs) at a time, then the differential oracle (`differential`);
    /// writes `report.md` and `report.json` into `out`. Whether everything passed.
    /// `stop`: start no plan after one failed (those running finish).
    pub async fn test(
        &self,
        only: &[String],
        stop: bool,
        differential: bool,
        out: &Path,
    ) -> Result<bool, SessionError> {
        let learned = out.join("learn");
        let (reference, clean) = self
            .learn_with(&learned, differential_point(&self.workload))
            .await?;
        if !clean {
            return Ok(false);
        }
        let complaints = self.complaints_of(&reference);
        for c in &complaints {
            eprintln!("sieve: the learning run: {c}");
        }
        let plans: Vec<_> = plan::plans(&reference.trace)
            .into_iter()
            .filter(|p| only.is_empty() || only.iter().any(|o| p.id.starts_with(o.as_str())))
            .collect();
        let mut results: Vec<(usize, PlanResult)> = Vec::new();
        let mut running = FuturesUnordered::new();
        let mut next = 0;
        let mut stopped = false;
        loop {
            while !stopped && next < plans.len() && running.len() < self.jobs.max(1) {
                let (index, plan) = (next, &plans[next]);
                let dir = out.join(format!("plan-{:03}", index + 1));
                let (reference, learned) = (&reference, &learned);
                running.push(async move {
                    (index, self.run_plan(plan, reference, learned, &dir).await)
                });
                next += 1;
            }
            let Some((index, result)) = running.next().await else {
                break;
            };
            let result = result?;
            eprintln!(
                "sieve: [{}/{}] {} {:?} ({:.1} s){}",
                index + 1,
                plans.len(),
                result.id,
                result.verdict,
                result.seconds,
                result
                    .findings
                    .first()
                    .map(|f| format!(": {}", f.lines().next().unwrap_or_default()))
                    .unwrap_or_default()
            );
            if stop && result.verdict == Verdict::Fail && !stopped && next < plans.len() {
                stopped = true;
                eprintln!(
                    "sieve: stopping at the first failed plan (--stop-at-first-failure): {} plans not run",
                    plans.len() - next
                );
            }
            results.push((index, result));
        }
        results.sort_by_key(|(index, _)| *index);
        let results: Vec<PlanResult> = results.into_iter().map(|(_, r)| r).collect();
        let differential = if differential {
            Some(
                self.differential(&reference, &out.join("differential"))
                    .await?,
            )
        } else {
            None
        };
        let mut text = report::markdown(&self.target.name, &self.workload_name, &results);
        if self.complaints {
            text.push_str(&complaints_markdown(&complaints));
        }
        if let Some(d) = &differential {
            text.push_str(&differential_markdown(d));
        }
        std::fs::write(out.join("report.md"), &text).map_err(|source| SessionError::Io {
            path: out.join("report.md"),
            source,
        })?;
        write_json(&out.join("report.json"), &results)?;
        if let Some(d) = &differential {
            write_json(&out.join("differential.json"), d)?;
        }
        println!("{text}");
        Ok(results.iter().all(|r| r.verdict != Verdict::Fail)
            && complaints.is_empty()
            && differential.is_none_or(|d| d.verdict != Verdict::Fail))
    }

    /// Acto's differential oracle: a fresh run that creates each object of the workload,
    /// at its spec after the [last update](differential_point), in one step; its end
    /// state must equal the learning run's (`reference`) at that step (its snapshot; the
    /// end state for a workload without updates). Not at the workload's end: a derived
    /// workload ends by deleting the object and creating it again with the sample's spec,
    /// which a controller that ignores spec changes gets right.
    pub async fn differential(
        &self,
        reference: &RunOutcome,
        out: &Path,
    ) -> Result<DifferentialResult, SessionError> {
        let started = Instant::now();
        let point = differential_point(&self.workload);
        let (expected, prefix) = match (&reference.snapshot, point) {
            (Some(snapshot), Some(step)) => (
                snapshot,
                Workload {
                    description: self.workload.description.clone(),
                    steps: self.workload.steps[..step].to_vec(),
                },
            ),
            _ => (&reference.end_state, self.workload.clone()),
        };
        let fresh = fresh_start(&prefix);
        let name = format!("{} (final specs, created fresh)", self.workload_name);
        let outcome = runner::run(
            &self.env,
            &self.target,
            (&fresh, &name),
            None,
            None,
            self.timing,
            out,
            None,
        )
        .await?;
        write_json(&out.join("outcome.json"), &outcome)?;
        let diff = diff::compare(
            expected,
            &reference.namespace,
            &outcome.end_state,
            &outcome.namespace,
            // A fresh start skips every state before the last: fewer rollouts.
            &self.options(true),
        );
        let mut findings = report::check_reference(&outcome);
        findings.extend(self.complaints_of(&outcome));
        if !diff.is_empty() {
            findings.insert(
                0,
                format!(
                    "the state after step {} differs from a fresh start at the specs it had then:\n{diff}",
                    point.filter(|_| reference.snapshot.is_some()).unwrap_or(self.workload.steps.len())
                ),
            );
        }
        Ok(DifferentialResult {
            verdict: if findings.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            findings,
            diff,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

/// The step whose state the differential oracle compares, and every plan is judged on
/// besides its end state: the workload's last `update` (numbered from 1), if it has one.
pub fn differential_point(workload: &Workload) -> Option<usize> {
    workload
        .steps
        .iter()
        .rev()
        .find(|step| matches!(step.action, Action::Update { .. }))
        .map(|step| step.number)
}

/// The spec object `name` has after step `step` of `workload` (none: not there then).
fn spec_after(workload: &Workload, step: usize, name: &str) -> Option<serde_json::Value> {
    let prefix = Workload {
        description: None,
        steps: workload
            .steps
            .iter()
            .take_while(|s| s.number <= step)
            .cloned()
            .collect(),
    };
    final_specs(&prefix)
        .into_iter()
        .find(|(target, _)| target.name == name)
        .map(|(_, spec)| spec)
}

/// The workload that creates each object `workload` leaves behind, at its final spec:
/// one `create` step each (the workload's own kinds, in the order they first appear).
pub fn fresh_start(workload: &Workload) -> Workload {
    let steps = final_specs(workload)
        .into_iter()
        .enumerate()
        .map(|(i, (target, spec))| Step {
            number: i + 1,
            target,
            action: Action::Create { spec },
        })
        .collect();
    Workload {
        description: Some(format!(
            "the final specs of: {}",
            workload.description.as_deref().unwrap_or("a workload")
        )),
        steps,
    }
}

/// The report's section for the differential oracle.
pub fn differential_markdown(result: &DifferentialResult) -> String {
    let mut text = format!(
        "\n## differential ({:?}, {:.1} s)\n\nthe state after the last spec change against a fresh start at those specs (Acto's differential oracle)\n",
        result.verdict, result.seconds
    );
    for f in &result.findings {
        text.push_str(&format!("\n- {}", f.trim_end().replace('\n', "\n  ")));
    }
    text.push('\n');
    text
}

/// The report's section for the [complaints](crate::complaints) of the learning run.
pub fn complaints_markdown(complaints: &[String]) -> String {
    let verdict = if complaints.is_empty() {
        "Pass"
    } else {
        "Fail"
    };
    let mut text = format!(
        "\n## complaints ({verdict})\n\nthe controller's Warning Events and `Ready=False` in the learning run, on specs the API server accepted\n"
    );
    for c in complaints {
        text.push_str(&format!("\n- {c}"));
    }
    text.push('\n');
    text
}

/// Writes `value` as pretty JSON to `path`.
pub fn write_json(path: &Path, value: &impl Serialize) -> Result<(), SessionError> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|source| SessionError::Json {
        path: path.to_owned(),
        source,
    })?;
    std::fs::write(path, bytes).map_err(|source| SessionError::Io {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_start_creates_what_the_workload_leaves_at_its_final_specs() {
        let workload = Workload::parse(
            r"
steps:
  - create:
      apiVersion: samplecontroller.k8s.io/v1alpha1
      kind: Foo
      name: a
      spec: {deploymentName: a, replicas: 1, extra: x}
  - create:
      apiVersion: samplecontroller.k8s.io/v1alpha1
      kind: Foo
      name: gone
      spec: {deploymentName: g, replicas: 1}
  - update:
      name: a
      patch: {replicas: 3, extra: null}
  - delete:
      name: gone
",
        )
        .expect("a workload");
        assert_eq!(differential_point(&workload), Some(3));
        let fresh = fresh_start(&workload);
        assert_eq!(fresh.steps.len(), 1, "{fresh:?}");
        assert_eq!(fresh.steps[0].number, 1);
        assert_eq!(fresh.steps[0].target.name, "a");
        assert_eq!(
            fresh.steps[0].action,
            Action::Create {
                spec: serde_json::json!({"deploymentName": "a", "replicas": 3})
            }
        );
        let markdown = differential_markdown(&DifferentialResult {
            verdict: Verdict::Fail,
            findings: vec!["the workload's end state differs:\nmissing: Deployment a".into()],
            diff: StateDiff::default(),
            seconds: 9.0,
        });
        assert!(
            markdown.contains("## differential (Fail, 9.0 s)"),
            "{markdown}"
        );
        assert!(markdown.contains("\n  missing: Deployment a"), "{markdown}");
    }
}
