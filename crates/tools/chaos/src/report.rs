//! The soak's summary: `summary.json` (everything) and `summary.txt` (for people), with
//! the seed to replay the run and two verdicts kept apart: violations (the controllers
//! are wrong) and environment failures (the control plane, kwok or the machine broke).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::check::Findings;
use crate::load::LoadStats;
use crate::logs::LogFindings;
use crate::nemesis::{FaultKind, FaultRecord};
use crate::observe::Monitor;
use crate::processes::{Binary, ExitRecord};
use crate::proxy::ProxyStats;

/// Everything a run found.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The seed (replay: `--seed`).
    pub seed: u64,
    /// The command line options, as given.
    pub options: serde_json::Value,
    /// Seconds of the fault phase.
    pub fault_phase_s: f64,
    /// Faults by kind.
    pub faults_by_kind: BTreeMap<FaultKind, usize>,
    /// Every fault.
    pub faults: Vec<FaultRecord>,
    /// Load.
    pub load: LoadStats,
    /// Live objects at the end: Foos, VirtualMachines, MyWebs.
    pub live_objects: (usize, usize, usize),
    /// Seconds from the start to the first convergence before any fault.
    pub initial_convergence_s: Option<f64>,
    /// Seconds from the end of the last fault (and of the load) to convergence.
    pub convergence_after_last_fault_s: Option<f64>,
    /// The bound it had to converge within.
    pub convergence_bound_s: f64,
    /// The bound the initial convergence had.
    pub initial_convergence_bound_s: f64,
    /// The proxy's counters.
    pub proxy: ProxyStats,
    /// The logs.
    pub logs: LogFindings,
    /// The monitor.
    pub monitor: MonitorSummary,
    /// Owner/kind pairs of owned objects seen during the run.
    pub owners_seen: usize,
    /// Owned objects created again for an owner the load had just deleted (a stale
    /// cache; the garbage collector removes them): not a violation, see
    /// `observe::Ownership::duplicates`.
    pub creates_for_deleted_owners: usize,
    /// Events in the namespace at the end, and the bound.
    pub events: (usize, usize),
    /// Replica exits during the run.
    pub exits_during_run: Vec<ExitRecord>,
    /// How each replica ended on SIGTERM.
    pub final_exits: Vec<ExitRecord>,
    /// Resident set per binary (MiB), 95th percentile of the samples: first half and
    /// second half of the fault phase.
    pub peak_rss_mib: BTreeMap<Binary, (f64, f64)>,
    /// The controllers are wrong: must be empty.
    pub violations: Vec<String>,
    /// The environment broke: the run says nothing about the controllers then.
    pub environment_failures: Vec<String>,
    /// Repairs of the environment after the faults (a component restarted), so the
    /// controllers' convergence could be judged.
    pub environment_repairs: Vec<String>,
}

/// The monitor, without the raw memory samples.
#[derive(Debug, Clone, Serialize)]
pub struct MonitorSummary {
    /// Samples.
    pub samples: u64,
    /// Most replicas of one binary claiming the lead at once.
    pub max_leaders: BTreeMap<Binary, usize>,
    /// Samples without a leader.
    pub no_leader_samples: BTreeMap<Binary, u64>,
}

impl MonitorSummary {
    /// From the monitor.
    pub fn from(monitor: &Monitor) -> Self {
        Self {
            samples: monitor.samples,
            max_leaders: monitor.max_leaders.clone(),
            no_leader_samples: monitor.no_leader_samples.clone(),
        }
    }
}

impl Summary {
    /// 0: no violation and a healthy environment; 1: violations; 2: only the
    /// environment broke.
    pub fn exit_code(&self) -> i32 {
        if !self.violations.is_empty() {
            1
        } else if !self.environment_failures.is_empty() {
            2
        } else {
            0
        }
    }

    /// Writes `summary.json` and `summary.txt` into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join("summary.json"), json)?;
        std::fs::write(dir.join("summary.txt"), self.text())
    }

    /// The human summary.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let verdict = match self.exit_code() {
            0 => "PASS: no violation, environment healthy",
            1 => "FAIL: invariant violations (the controllers are wrong)",
            _ => {
                "ENVIRONMENT BROKE: no controller violation, but the environment failed (see below)"
            }
        };
        let _ = writeln!(t, "chaos soak: {verdict}");
        let _ = writeln!(
            t,
            "seed: {} (replay: hack/chaos.sh with SEED={} and the same sizes)",
            self.seed, self.seed
        );
        let _ = writeln!(t, "options: {}", self.options);
        let _ = writeln!(
            t,
            "fault phase: {:.0}s, {} faults",
            self.fault_phase_s,
            self.faults.len()
        );
        for (kind, n) in &self.faults_by_kind {
            let _ = writeln!(
                t,
                "  {n:>4} {}",
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(t, "load: {:?}", self.load);
        let _ = writeln!(
            t,
            "live objects at the end (Foos, VMs, MyWebs): {:?}",
            self.live_objects
        );
        let fmt = |s: Option<f64>| s.map_or("never".to_string(), |s| format!("{s:.1}s"));
        let _ = writeln!(
            t,
            "initial convergence: {} (bound {:.0}s)",
            fmt(self.initial_convergence_s),
            self.initial_convergence_bound_s
        );
        let _ = writeln!(
            t,
            "convergence after the last fault: {} (bound {:.0}s)",
            fmt(self.convergence_after_last_fault_s),
            self.convergence_bound_s
        );
        let _ = writeln!(t, "proxy: {:?}", self.proxy);
        let _ = writeln!(
            t,
            "syncs logged: {}, sync errors: {}, relists after a real 410: {}, leadership acquired {} times, lost {} times",
            self.logs.syncs,
            self.logs.sync_errors,
            self.logs.relists_after_410,
            self.logs.leadership_acquired,
            self.logs.leadership_lost
        );
        let _ = writeln!(
            t,
            "leaders: max at once {:?}, samples without {:?}",
            self.monitor.max_leaders, self.monitor.no_leader_samples
        );
        let _ = writeln!(
            t,
            "overlapping syncs of a replica frozen mid-sync by SIGSTOP (not violations): {}",
            self.logs.frozen_overlaps
        );
        let _ = writeln!(
            t,
            "overlapping syncs of one name for two objects (deleted and created again in another replica's range; not violations): {}",
            self.logs.name_reused_overlaps
        );
        let _ = writeln!(
            t,
            "owned objects created again for an owner already deleted (stale cache, garbage collected): {}",
            self.creates_for_deleted_owners
        );
        let _ = writeln!(
            t,
            "events at the end: {} (bound {})",
            self.events.0, self.events.1
        );
        let _ = writeln!(
            t,
            "RSS MiB, 95th percentile (first half, second half of the fault phase): {:?}",
            self.peak_rss_mib
        );
        let _ = writeln!(
            t,
            "replica exits during the run: {} ({} SIGKILLed by the nemesis, {} lost the lease)",
            self.exits_during_run.len(),
            self.exits_during_run
                .iter()
                .filter(|e| e.killed_by_nemesis)
                .count(),
            self.exits_during_run
                .iter()
                .filter(|e| e.lost_leadership)
                .count()
        );
        let _ = writeln!(t, "violations: {}", self.violations.len());
        for v in &self.violations {
            let _ = writeln!(t, "  - {v}");
        }
        let _ = writeln!(t, "environment repairs: {}", self.environment_repairs.len());
        for r in &self.environment_repairs {
            let _ = writeln!(t, "  - {r}");
        }
        let _ = writeln!(
            t,
            "environment failures: {}",
            self.environment_failures.len()
        );
        for v in &self.environment_failures {
            let _ = writeln!(t, "  - {v}");
        }
        let _ = writeln!(t, "faults:");
        for f in &self.faults {
            let _ = writeln!(
                t,
                "  {:>7.1}s-{:>7.1}s {:?}{} {}",
                f.started_s,
                f.ended_s,
                f.planned.kind,
                f.planned
                    .target
                    .map(|b| format!(" {}", b.name()))
                    .unwrap_or_default(),
                f.detail
            );
        }
        t
    }
}

/// Violations and environment failures from a final convergence check.
pub fn classify(findings: &Findings, violations: &mut Vec<String>, environment: &mut Vec<String>) {
    const SHOWN: usize = 20;
    for v in findings.controller.iter().take(SHOWN) {
        violations.push(format!("not converged: {v}"));
    }
    if findings.controller.len() > SHOWN {
        violations.push(format!(
            "... and {} more not converged",
            findings.controller.len() - SHOWN
        ));
    }
    for v in findings.environment.iter().take(SHOWN) {
        environment.push(v.clone());
    }
    if findings.environment.len() > SHOWN {
        environment.push(format!(
            "... and {} more",
            findings.environment.len() - SHOWN
        ));
    }
}
