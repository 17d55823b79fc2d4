//! The nemesis: a seeded random schedule of overlapping faults, and running it.
//!
//! [`plan`] is a pure function of the seed and the options, so a seed replays the same
//! schedule (which fault, when, for how long, against which binary); what the system does
//! in response is timing-dependent and is not replayed exactly. Every fault is recorded
//! with its real start and end ([`FaultRecord`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use tokio::time::Instant;
use vm_driver::{FileDriver, FileFaults};

use crate::cluster::ControlPlane;
use crate::processes::{Binary, Fleet};
use crate::proxy::Proxy;

/// Every kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// The proxy closes every connection (every watch) at once.
    ProxyCut,
    /// The proxy closes new connections at once for a while.
    ProxyRefuse,
    /// The proxy holds requests and response bodies for a while.
    ProxyStall,
    /// The proxy delays every request and body frame for a while.
    ProxySlow,
    /// The proxy answers a fraction of requests 429 for a while.
    Proxy429,
    /// The proxy answers a fraction of requests 500 for a while.
    Proxy500,
    /// The proxy answers a fraction of requests 503 for a while.
    Proxy503,
    /// kube-apiserver is stopped and started again.
    ApiserverRestart,
    /// etcd is stopped and started again.
    EtcdRestart,
    /// etcd is compacted, then kube-apiserver restarted: its new watch cache cannot
    /// serve the controllers' last resource versions, so their watches get a real 410.
    Compact410,
    /// The leader of one binary is SIGKILLed (restarted like a kubelet would).
    LeaderKill,
    /// The leader of one binary is SIGSTOPped, then SIGCONTed.
    LeaderStop,
    /// The VM driver fails (and loses responses of) a fraction of calls for a while.
    DriverFailures,
    /// Sharded runs: a member joins one binary's shard group for a while, then
    /// leaves on SIGTERM (ranges rebalance twice).
    MemberAdd,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 13] = [
        Self::ProxyCut,
        Self::ProxyRefuse,
        Self::ProxyStall,
        Self::ProxySlow,
        Self::Proxy429,
        Self::Proxy500,
        Self::Proxy503,
        Self::ApiserverRestart,
        Self::EtcdRestart,
        Self::Compact410,
        Self::LeaderKill,
        Self::LeaderStop,
        Self::DriverFailures,
    ];

    /// The kinds a sharded run draws from by default: every kind plus a join.
    pub fn sharded() -> Vec<FaultKind> {
        let mut kinds = Self::ALL.to_vec();
        kinds.push(Self::MemberAdd);
        kinds
    }

    /// Whether the fault targets one controller binary.
    fn targets_a_binary(self) -> bool {
        matches!(self, Self::LeaderKill | Self::LeaderStop | Self::MemberAdd)
    }

    /// The range of its duration, in seconds (0: instantaneous).
    fn duration_range(self) -> (f64, f64) {
        match self {
            Self::ProxyCut | Self::LeaderKill => (0.0, 0.0),
            Self::ApiserverRestart | Self::EtcdRestart | Self::Compact410 => (0.0, 0.0),
            Self::ProxyRefuse => (2.0, 6.0),
            Self::ProxyStall => (2.0, 8.0),
            Self::ProxySlow => (4.0, 12.0),
            Self::Proxy429 | Self::Proxy500 | Self::Proxy503 => (4.0, 15.0),
            Self::LeaderStop => (2.0, 12.0),
            Self::DriverFailures => (5.0, 20.0),
            Self::MemberAdd => (10.0, 30.0),
        }
    }
}

/// One fault of the schedule.
#[derive(Debug, Clone, Serialize)]
pub struct PlannedFault {
    /// Seconds after the fault phase starts.
    pub at_s: f64,
    /// The kind.
    pub kind: FaultKind,
    /// The binary, for leader faults.
    pub target: Option<Binary>,
    /// How long the fault lasts (0: instantaneous), seconds.
    pub duration_s: f64,
    /// The fraction of requests or calls failed (error and driver faults) or the delay
    /// in seconds (slow).
    pub param: f64,
}

/// The schedule for `duration`: a fault every `mean_gap` on average (uniform between
/// 0.3 and 1.7 times it), kinds drawn from `kinds` (each at least once when there is
/// room), all of them starting by 85 % of `duration` so they end before it.
pub fn plan(
    seed: u64,
    duration: Duration,
    mean_gap: Duration,
    kinds: &[FaultKind],
) -> Vec<PlannedFault> {
    let mut rng = StdRng::seed_from_u64(seed);
    let last_start = duration.as_secs_f64() * 0.85;
    let mut times = Vec::new();
    let mut t = rng.random_range(1.0..3.0);
    while t < last_start {
        times.push(t);
        t += mean_gap.as_secs_f64() * rng.random_range(0.3..1.7);
    }
    let mut order: Vec<FaultKind> = kinds.to_vec();
    order.shuffle(&mut rng);
    let mut faults = Vec::new();
    for (i, at_s) in times.into_iter().enumerate() {
        if kinds.is_empty() {
            break;
        }
        let kind = match order.get(i) {
            Some(&kind) => kind,
            None => kinds[rng.random_range(0..kinds.len())],
        };
        let (lo, hi) = kind.duration_range();
        let mut duration_s = if hi > lo {
            rng.random_range(lo..hi)
        } else {
            lo
        };
        duration_s = duration_s.min((duration.as_secs_f64() - at_s - 1.0).max(0.0));
        let target = kind
            .targets_a_binary()
            .then(|| Binary::ALL[rng.random_range(0..Binary::ALL.len())]);
        let param = match kind {
            FaultKind::ProxySlow => rng.random_range(0.05..0.5),
            FaultKind::Proxy429 | FaultKind::Proxy500 | FaultKind::Proxy503 => {
                rng.random_range(0.1..0.5)
            }
            FaultKind::DriverFailures => rng.random_range(0.1..0.5),
            _ => 0.0,
        };
        faults.push(PlannedFault {
            at_s,
            kind,
            target,
            duration_s,
            param,
        });
    }
    faults
}

/// What happened to one planned fault.
#[derive(Debug, Clone, Serialize)]
pub struct FaultRecord {
    /// The plan.
    pub planned: PlannedFault,
    /// When it really started, seconds after the fault phase started.
    pub started_s: f64,
    /// When it ended.
    pub ended_s: f64,
    /// What it did ("cut 7 connections", "no leader to kill", an error).
    pub detail: String,
}

/// What the nemesis acts on.
#[derive(Debug, Clone)]
pub struct Targets {
    /// The proxy between the controllers and the API server.
    pub proxy: Arc<Proxy>,
    /// The control plane.
    pub control_plane: ControlPlane,
    /// The controllers.
    pub fleet: Arc<Fleet>,
    /// The VM driver's shared directory.
    pub driver: FileDriver,
}

/// Runs `faults` (each at its time, overlapping) and returns their records once all
/// ended. Control-plane restarts never run at the same time as each other (one
/// apiserver, one etcd), so one waits for the other.
pub async fn run(faults: Vec<PlannedFault>, targets: Targets) -> Vec<FaultRecord> {
    let start = Instant::now();
    let restarts = Arc::new(tokio::sync::Mutex::new(()));
    let driver_windows = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for fault in faults {
        let (targets, restarts, driver_windows) = (
            targets.clone(),
            Arc::clone(&restarts),
            Arc::clone(&driver_windows),
        );
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep_until(start + Duration::from_secs_f64(fault.at_s)).await;
            let started_s = start.elapsed().as_secs_f64();
            tracing::info!(kind = ?fault.kind, target = ?fault.target, duration_s = fault.duration_s, "fault starts");
            let detail = inject(&fault, &targets, &restarts, &driver_windows).await;
            let ended_s = start.elapsed().as_secs_f64();
            tracing::info!(kind = ?fault.kind, %detail, "fault ends");
            FaultRecord { planned: fault, started_s, ended_s, detail }
        }));
    }
    let mut records = Vec::new();
    for task in tasks {
        if let Ok(record) = task.await {
            records.push(record);
        }
    }
    records.sort_by(|a, b| a.started_s.total_cmp(&b.started_s));
    records
}

async fn inject(
    fault: &PlannedFault,
    t: &Targets,
    restarts: &tokio::sync::Mutex<()>,
    driver_windows: &AtomicUsize,
) -> String {
    let d = Duration::from_secs_f64(fault.duration_s);
    let window = |what: String| async move {
        tokio::time::sleep(d).await;
        what
    };
    match fault.kind {
        FaultKind::ProxyCut => format!("cut {} connections", t.proxy.cut_all()),
        FaultKind::ProxyRefuse => {
            t.proxy.refuse_for(d);
            t.proxy.cut_all();
            window("refused new connections".into()).await
        }
        FaultKind::ProxyStall => {
            t.proxy.stall_for(d);
            window("stalled".into()).await
        }
        FaultKind::ProxySlow => {
            t.proxy.slow_for(d, Duration::from_secs_f64(fault.param));
            window(format!("slowed by {:.0} ms", fault.param * 1000.0)).await
        }
        FaultKind::Proxy429 | FaultKind::Proxy500 | FaultKind::Proxy503 => {
            let code = match fault.kind {
                FaultKind::Proxy429 => 429,
                FaultKind::Proxy500 => 500,
                _ => 503,
            };
            t.proxy.errors_for(d, fault.param, code);
            window(format!("{code} to {:.0}% of requests", fault.param * 100.0)).await
        }
        FaultKind::ApiserverRestart => {
            let _one = restarts.lock().await;
            match t.control_plane.restart_apiserver().await {
                Ok(took) => format!("kube-apiserver back after {:.1}s", took.as_secs_f64()),
                Err(e) => format!("error: {e}"),
            }
        }
        FaultKind::EtcdRestart => {
            let _one = restarts.lock().await;
            match t.control_plane.restart_etcd().await {
                Ok(took) => format!("etcd back after {:.1}s", took.as_secs_f64()),
                Err(e) => format!("error: {e}"),
            }
        }
        FaultKind::Compact410 => {
            let _one = restarts.lock().await;
            let compacted = match t.control_plane.compact_etcd().await {
                Ok(revision) => revision,
                Err(e) => return format!("error: compaction: {e}"),
            };
            match t.control_plane.restart_apiserver().await {
                Ok(took) => format!(
                    "compacted at revision {compacted}; kube-apiserver back after {:.1}s",
                    took.as_secs_f64()
                ),
                Err(e) => format!("error: {e}"),
            }
        }
        FaultKind::LeaderKill => {
            let binary = fault.target.unwrap_or(Binary::SampleController);
            match t.fleet.signal_leader(binary, libc::SIGKILL).await {
                Some((replica, pid)) => {
                    format!("SIGKILL {} replica {replica} (pid {pid})", binary.name())
                }
                None => format!("no {} leader to kill", binary.name()),
            }
        }
        FaultKind::LeaderStop => {
            let binary = fault.target.unwrap_or(Binary::SampleController);
            match t.fleet.signal_leader(binary, libc::SIGSTOP).await {
                Some((replica, pid)) => {
                    tokio::time::sleep(d).await;
                    t.fleet.resume(pid).await;
                    format!(
                        "SIGSTOP {} replica {replica} (pid {pid}), SIGCONT after {:.1}s",
                        binary.name(),
                        d.as_secs_f64()
                    )
                }
                None => format!("no {} leader to stop", binary.name()),
            }
        }
        FaultKind::MemberAdd => {
            let binary = fault.target.unwrap_or(Binary::SampleController);
            match t.fleet.add_member(binary).await {
                Ok(Some((replica, pid))) => {
                    tokio::time::sleep(d).await;
                    t.fleet.retire(pid).await;
                    format!(
                        "{} member {replica} (pid {pid}) joined, left on SIGTERM after {:.1}s",
                        binary.name(),
                        d.as_secs_f64()
                    )
                }
                Ok(None) => format!("the added {} member is still there", binary.name()),
                Err(e) => format!("error: {e}"),
            }
        }
        FaultKind::DriverFailures => {
            driver_windows.fetch_add(1, Ordering::SeqCst);
            let faults = FileFaults {
                fail_rate: fault.param,
                lose_rate: fault.param / 2.0,
            };
            let set = t.driver.set_faults(faults);
            tokio::time::sleep(d).await;
            if driver_windows.fetch_sub(1, Ordering::SeqCst) == 1 {
                let _ = t.driver.set_faults(FileFaults::default());
            }
            match set {
                Ok(()) => format!("driver fails {:.0}% of calls", fault.param * 100.0),
                Err(e) => format!("error: {e}"),
            }
        }
    }
}

/// How many faults of each kind a run injected.
pub fn count_by_kind(records: &[FaultRecord]) -> BTreeMap<FaultKind, usize> {
    let mut counts = BTreeMap::new();
    for record in records {
        *counts.entry(record.planned.kind).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_the_same_schedule_and_every_kind_appears() {
        let d = Duration::from_secs(120);
        let gap = Duration::from_secs(4);
        let a = plan(42, d, gap, &FaultKind::ALL);
        let b = plan(42, d, gap, &FaultKind::ALL);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        let c = plan(43, d, gap, &FaultKind::ALL);
        assert_ne!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&c).unwrap()
        );
        for kind in FaultKind::ALL {
            assert!(a.iter().any(|f| f.kind == kind), "{kind:?} missing");
        }
        assert!(a.iter().all(|f| f.at_s + f.duration_s <= 119.0), "{a:?}");
        // They overlap: some fault starts before the previous one ended.
        assert!(
            a.windows(2)
                .any(|w| w[1].at_s < w[0].at_s + w[0].duration_s)
        );
    }

    #[test]
    fn only_the_kinds_asked_for() {
        let a = plan(
            7,
            Duration::from_secs(60),
            Duration::from_secs(2),
            &[FaultKind::ProxyCut],
        );
        assert!(!a.is_empty());
        assert!(a.iter().all(|f| f.kind == FaultKind::ProxyCut));
    }
}
