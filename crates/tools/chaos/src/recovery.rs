//! Waiting for convergence ([`converge`]), and after the last fault with the one repair
//! of the environment the soak allows itself: restarting kube-controller-manager when
//! its garbage collector is stuck ([`converge_after_faults`]).
//!
//! kube-controller-manager's garbage collector can lose track of owners deleted around
//! API server restarts (its discovery-driven monitor resync; kubernetes issues 60037,
//! 101740) and then never collects their dependents: the environment broke, not the
//! controllers. A dependent of a deleted owner is the collector's alone, whatever the
//! controllers are still doing, so the rule looks at those findings only: when the same
//! one has been reported for [`STUCK_AFTER`] in a row, kube-controller-manager is
//! restarted once (a fresh graph) and the repair is reported.
//!
//! The rule used to wait for *only* such findings to be left a minute after the last
//! fault; in a CI run whose controllers were still catching up at that minute (on two
//! cores shared with three other control planes), it never fired, and 13 Deployments of
//! deleted Foos were still there four minutes later.

use std::collections::HashMap;
use std::time::Duration;

use kube::Client;
use tokio::time::Instant;
use vm_driver::FileDriver;

use crate::check::{self, Findings};
use crate::cluster::ControlPlane;

/// How long one dependent of a deleted owner may be reported before the garbage
/// collector counts as stuck. A working collector removes one within seconds of its
/// owner's delete event, and relists within seconds of the API server's return.
pub const STUCK_AFTER: Duration = Duration::from_secs(60);

/// Whether a finding is a dependent of a deleted owner (the garbage collector's to remove).
pub fn is_uncollected(finding: &str) -> bool {
    finding.ends_with(check::UNCOLLECTED)
}

/// Remembers since when each uncollected dependent has been reported without a break.
#[derive(Debug, Default)]
pub struct StuckCollector {
    first_seen: HashMap<String, Instant>,
}

impl StuckCollector {
    /// Takes one check's findings at `now`; returns how many uncollected dependents have
    /// been reported for at least [`STUCK_AFTER`] in a row. A dependent missing from a
    /// check starts again from zero.
    pub fn observe(&mut self, findings: &Findings, now: Instant) -> usize {
        let current: Vec<&String> = findings
            .environment
            .iter()
            .filter(|f| is_uncollected(f))
            .collect();
        self.first_seen
            .retain(|finding, _| current.contains(&finding));
        for finding in current {
            self.first_seen.entry(finding.clone()).or_insert(now);
        }
        self.first_seen
            .values()
            .filter(|since| now.saturating_duration_since(**since) >= STUCK_AFTER)
            .count()
    }
}

/// Polls [`check::check`] every 3 s until it finds nothing or `bound` passes; returns
/// the time it took (`None`: not within the bound) and the last findings. Each check
/// that finds something is handed to `on_pending` before the next one.
pub async fn converge(
    client: &Client,
    namespace: &str,
    driver: &FileDriver,
    bound: Duration,
    mut on_pending: impl AsyncFnMut(&Findings),
) -> (Option<Duration>, Findings) {
    let start = Instant::now();
    let mut last = Findings::default();
    loop {
        match check::check(client, namespace, driver).await {
            Ok(findings) if findings.converged() => return (Some(start.elapsed()), findings),
            Ok(findings) => {
                on_pending(&findings).await;
                last = findings;
            }
            Err(e) => tracing::info!(error = %e, "convergence check failed; retrying"),
        }
        if start.elapsed() > bound {
            return (None, last);
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

/// [`converge`], restarting kube-controller-manager once when its garbage collector is
/// stuck (see the module docs). Returns how long convergence took (`None`: not within
/// `bound`), the last findings and the repairs made.
pub async fn converge_after_faults(
    client: &Client,
    namespace: &str,
    driver: &FileDriver,
    control_plane: &ControlPlane,
    bound: Duration,
) -> (Option<Duration>, Findings, Vec<String>) {
    let start = Instant::now();
    let mut repairs = Vec::new();
    let mut collector = StuckCollector::default();
    let (after, findings) = converge(client, namespace, driver, bound, async |findings| {
        let stuck = collector.observe(findings, Instant::now());
        if stuck > 0 && repairs.is_empty() {
            let what = format!(
                "kube-controller-manager restarted: {stuck} objects of deleted Foos and MyWebs not garbage collected for {}s, {}s after the last fault",
                STUCK_AFTER.as_secs(),
                start.elapsed().as_secs()
            );
            tracing::warn!("{what}");
            match control_plane.restart_controller_manager().await {
                Ok(_) => repairs.push(what),
                Err(e) => repairs.push(format!("{what}: restart failed: {e}")),
            }
        }
    })
    .await;
    (after, findings, repairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(controller: &[&str], environment: &[&str]) -> Findings {
        Findings {
            controller: controller.iter().map(|s| s.to_string()).collect(),
            environment: environment.iter().map(|s| s.to_string()).collect(),
            ..Findings::default()
        }
    }

    const GC_A: &str =
        "Deployment foo-1: still owned by a deleted Foo foo-1 (uid a); not yet garbage collected";
    const GC_B: &str =
        "Deployment foo-2: still owned by a deleted Foo foo-2 (uid b); not yet garbage collected";

    #[test]
    fn a_dependent_reported_for_a_minute_is_stuck_whatever_the_controllers_still_do() {
        let mut collector = StuckCollector::default();
        let t0 = Instant::now();
        // The controllers are still catching up: that must not hold the repair back.
        let busy = findings(&["Foo foo-3: status.availableReplicas 0, want 1"], &[GC_A]);
        assert_eq!(collector.observe(&busy, t0), 0);
        assert_eq!(collector.observe(&busy, t0 + Duration::from_secs(59)), 0);
        assert_eq!(collector.observe(&busy, t0 + STUCK_AFTER), 1);
    }

    #[test]
    fn a_dependent_collected_in_between_starts_again() {
        let mut collector = StuckCollector::default();
        let t0 = Instant::now();
        assert_eq!(collector.observe(&findings(&[], &[GC_A]), t0), 0);
        // Collected (gone from one check), then another owner's dependent appears.
        let later = t0 + Duration::from_secs(30);
        assert_eq!(collector.observe(&findings(&[], &[GC_B]), later), 0);
        assert_eq!(
            collector.observe(&findings(&[], &[GC_A, GC_B]), t0 + STUCK_AFTER),
            0,
            "GC_A was gone in between; GC_B is only 30 s old"
        );
        assert_eq!(
            collector.observe(&findings(&[], &[GC_A, GC_B]), later + STUCK_AFTER),
            1
        );
    }

    #[test]
    fn other_environment_findings_never_count() {
        let mut collector = StuckCollector::default();
        let t0 = Instant::now();
        let pods = findings(&[], &["Deployment foo-1: 0 of 1 Pods available"]);
        assert_eq!(collector.observe(&pods, t0), 0);
        assert_eq!(collector.observe(&pods, t0 + 10 * STUCK_AFTER), 0);
    }
}
