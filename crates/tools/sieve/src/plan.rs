//! The planner: one test plan per point a learning run's [`Trace`] shows.
//!
//! Three perturbations, after Sieve (Sun et al., OSDI 2022), each turned on every point
//! where it can land rather than on random ones:
//!
//! - **intermediate state** ([`Perturbation::IntermediateState`]): for every write the
//!   server accepted, SIGKILL the controller right after the server answered it and
//!   start it again. The restarted controller finds the half-done work of its
//!   predecessor (a Deployment created, the status not yet written) and must finish it.
//!   Writes the server refused are no crash points: nothing changed there.
//! - **unobserved state** ([`Perturbation::UnobservedState`]): for every watch event of
//!   an object that has a later event for the same key, withhold it and deliver only the
//!   next one. The controller never sees that state; level-triggered code must not care.
//!   An object's last event has no next state to deliver instead, so it has no plan.
//! - **stale state** ([`Perturbation::StaleState`]): for every workload step after the
//!   first, once the step is quiescent, restart the controller and serve its initial
//!   lists at the resourceVersion it had seen at the end of the previous step
//!   (`resourceVersionMatch=Exact`), then watch from there: it sees, and replays,
//!   history it had already acted on, while its writes go to the live server.
//!
//! A [`Plan`]'s id is stable for a trace (`intermediate-3`, `unobserved-foos-ns/web-812`,
//! `stale-2`) and [`Plan::command`] is the one command line that replays it. Replays run
//! in a fresh namespace, where resourceVersions differ: the runner finds the point by
//! what does not change from run to run (the write's ordinal, the event's ordinal for its
//! key, the step), and the resourceVersions here say what the learning run saw.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::trace::{Event, Trace};

/// What a plan does to the controller's view, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Perturbation {
    /// SIGKILL the controller right after the server answered its `after_write`-th
    /// write (counting every write it sends, from 1), then start it again.
    #[serde(rename_all = "camelCase")]
    IntermediateState {
        /// The write's ordinal among all the controller's writes, from 1.
        after_write: usize,
    },
    /// Withhold one watch event of `resource` for `key`; deliver only the next one.
    #[serde(rename_all = "camelCase")]
    UnobservedState {
        /// The resource watched (its plural).
        resource: String,
        /// The object's `namespace/name` key in the learning run.
        key: String,
        /// The resourceVersion of the withheld event in the learning run.
        withheld_rv: String,
        /// The withheld event's ordinal among this key's events, from 1.
        occurrence: usize,
    },
    /// Once step `at_step` is quiescent, restart the controller and serve its initial
    /// lists at `list_rv` (the end of the previous step).
    #[serde(rename_all = "camelCase")]
    StaleState {
        /// The step (from 2) after which the controller restarts.
        at_step: usize,
        /// The resourceVersion it had seen at the end of step `at_step - 1`, in the
        /// learning run.
        list_rv: String,
    },
}

impl Perturbation {
    /// The plan's id: `intermediate-3`, `unobserved-foos-ns/web-812`, `stale-2`.
    pub fn id(&self) -> String {
        match self {
            Perturbation::IntermediateState { after_write } => {
                format!("intermediate-{after_write}")
            }
            Perturbation::UnobservedState {
                resource,
                key,
                withheld_rv,
                ..
            } => {
                format!("unobserved-{resource}-{key}-{withheld_rv}")
            }
            Perturbation::StaleState { at_step, .. } => format!("stale-{at_step}"),
        }
    }
}

/// One test: a perturbation at one point of the learning run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The stable id ([`Perturbation::id`]).
    pub id: String,
    /// What it does.
    pub perturbation: Perturbation,
    /// What the learning run did at that point, for people.
    pub point: String,
}

impl Plan {
    fn new(perturbation: Perturbation, point: String) -> Self {
        Self {
            id: perturbation.id(),
            perturbation,
            point,
        }
    }

    /// The command line that replays this plan.
    pub fn command(&self, workload: &str, controller: &str) -> String {
        format!(
            "sieve run --workload {} --controller {} --plan {}",
            shell_quote(workload),
            shell_quote(controller),
            shell_quote(&self.id)
        )
    }
}

/// How many plans of each perturbation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PlanCounts {
    /// Intermediate-state plans (crash points).
    pub intermediate: usize,
    /// Unobserved-state plans (withheld events).
    pub unobserved: usize,
    /// Stale-state plans (lagging lists).
    pub stale: usize,
}

impl PlanCounts {
    /// Counts `plans` by perturbation.
    pub fn of(plans: &[Plan]) -> Self {
        let mut counts = Self::default();
        for plan in plans {
            match plan.perturbation {
                Perturbation::IntermediateState { .. } => counts.intermediate += 1,
                Perturbation::UnobservedState { .. } => counts.unobserved += 1,
                Perturbation::StaleState { .. } => counts.stale += 1,
            }
        }
        counts
    }
}

impl std::fmt::Display for PlanCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} plans: {} intermediate-state, {} unobserved-state, {} stale-state",
            self.intermediate + self.unobserved + self.stale,
            self.intermediate,
            self.unobserved,
            self.stale
        )
    }
}

/// Every plan for `trace`: the intermediate-state plans in write order, then the
/// unobserved-state plans in event order, then the stale-state plans in step order.
pub fn plans(trace: &Trace) -> Vec<Plan> {
    let mut plans = intermediate(trace);
    plans.extend(unobserved(trace));
    plans.extend(stale(trace));
    plans
}

/// The plan with this id, if `plans` has it.
pub fn find<'a>(plans: &'a [Plan], id: &str) -> Option<&'a Plan> {
    plans.iter().find(|plan| plan.id == id)
}

fn intermediate(trace: &Trace) -> Vec<Plan> {
    trace
        .writes()
        .enumerate()
        .filter(|(_, (_, write))| write.succeeded())
        .map(|(i, (seq, write))| {
            Plan::new(
                Perturbation::IntermediateState { after_write: i + 1 },
                format!("write {} (record {seq}): {}", i + 1, write.summary()),
            )
        })
        .collect()
}

fn unobserved(trace: &Trace) -> Vec<Plan> {
    // Each (resource, key)'s events, in order.
    let mut by_object: HashMap<(&str, &str), Vec<(u64, &crate::trace::WatchEvent)>> =
        HashMap::new();
    for (seq, event) in trace.watch_events() {
        by_object
            .entry((event.resource.as_str(), event.key.as_str()))
            .or_default()
            .push((seq, event));
    }
    let mut found = Vec::new();
    for events in by_object.values() {
        for (i, pair) in events.windows(2).enumerate() {
            let [(seq, withheld), (_, next)] = pair else {
                continue;
            };
            let perturbation = Perturbation::UnobservedState {
                resource: withheld.resource.clone(),
                key: withheld.key.clone(),
                withheld_rv: withheld.resource_version.clone(),
                occurrence: i + 1,
            };
            let point = format!(
                "{} {} {} rv {} (record {seq}, event {} of {}); delivered instead: {} rv {}",
                withheld.resource,
                withheld.event,
                withheld.key,
                withheld.resource_version,
                i + 1,
                events.len(),
                next.event,
                next.resource_version
            );
            found.push((*seq, Plan::new(perturbation, point)));
        }
    }
    found.sort_by_key(|(seq, _)| *seq);
    // The same event received twice (two watches of one resource) is one point.
    let mut seen = HashSet::new();
    found
        .into_iter()
        .map(|(_, plan)| plan)
        .filter(|plan| seen.insert(plan.id.clone()))
        .collect()
}

/// The newest resourceVersion the controller had seen by the end of each step (in its
/// watch events and the answers to its accepted writes), in the trace's order: where a
/// stale-state plan of the next step serves its lists. The runner of a stale-state
/// replay reads it from that run's own trace (the learning run's versions differ).
pub fn versions_at_step_ends(trace: &Trace) -> Vec<(usize, Option<String>)> {
    let mut seen = SeenVersions::default();
    let mut at_end = Vec::new();
    for record in &trace.records {
        match &record.event {
            Event::Watch(event) => seen.saw(&event.resource_version),
            Event::Write(write) if write.succeeded() => {
                if let Some(rv) = &write.resource_version {
                    seen.saw(rv);
                }
            }
            Event::StepEnd { step } => at_end.push((*step, seen.newest())),
            _ => {}
        }
    }
    at_end
}

fn stale(trace: &Trace) -> Vec<Plan> {
    let at_end = versions_at_step_ends(trace);
    let ended: HashMap<usize, Option<String>> = at_end.iter().cloned().collect();
    let mut plans: Vec<Plan> = at_end
        .iter()
        .filter(|(step, _)| *step >= 2)
        .filter_map(|(step, _)| {
            let list_rv = ended.get(&(step - 1))?.clone()?;
            let point = format!(
                "after step {step}: lists at rv {list_rv}, what the controller had seen at the end of step {}",
                step - 1
            );
            Some(Plan::new(Perturbation::StaleState { at_step: *step, list_rv }, point))
        })
        .collect();
    plans.dedup_by(|a, b| a.id == b.id);
    plans
}

/// The newest resourceVersion seen: the greatest when all are numbers (as etcd's
/// revisions are), else the last (resourceVersions are opaque to clients).
#[derive(Default)]
struct SeenVersions {
    greatest: Option<u64>,
    last: Option<String>,
    all_numeric: bool,
    any: bool,
}

impl SeenVersions {
    fn saw(&mut self, rv: &str) {
        if !self.any {
            self.any = true;
            self.all_numeric = true;
        }
        match rv.parse::<u64>() {
            Ok(n) => self.greatest = Some(self.greatest.map_or(n, |g| g.max(n))),
            Err(_) => self.all_numeric = false,
        }
        self.last = Some(rv.to_string());
    }

    fn newest(&self) -> Option<String> {
        if self.all_numeric {
            self.greatest.map(|n| n.to_string())
        } else {
            self.last.clone()
        }
    }
}

/// `text` as one POSIX shell word.
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
