//! e2e: leader election on a real Lease in a real kube-apiserver (crates/dev/testenv).
//!
//! Short durations keep it fast (lease 3 s, renew deadline 2 s, retry 500 ms); the
//! bounds are generous for a loaded 2-core CI machine. The invariant checked over the
//! whole run is that leadership intervals (from `on_started_leading` to its token
//! firing) never overlap.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{Patch, PatchParams};
use leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, LeaseLock,
    ResourceLock, default_identity,
};
use parking_lot::Mutex;
use testenv::{Check, TestEnv, wait_for};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(3);
const RENEW: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(500);
/// Scheduling and API latency on a busy machine.
const SLACK: Duration = Duration::from_secs(10);
const LEASE_NAME: &str = "e2e-election";

/// (identity, started, ended) for every term of every candidate.
type Intervals = Arc<Mutex<Vec<(String, Instant, Option<Instant>)>>>;

struct Candidate {
    identity: String,
    elector: Arc<LeaderElector>,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

fn start(env: &TestEnv, intervals: &Intervals) -> Candidate {
    let identity = default_identity();
    let lock = LeaseLock::new(env.client().clone(), env.namespace(), LEASE_NAME, &identity);
    let mut config = LeaderElectionConfig::new(Arc::new(lock));
    config.lease_duration = LEASE;
    config.renew_deadline = RENEW;
    config.retry_period = RETRY;
    config.release_on_cancel = true;
    let (who, intervals) = (identity.clone(), intervals.clone());
    let callbacks = LeaderCallbacks::new(
        move |token: CancellationToken| {
            let (who, intervals) = (who.clone(), intervals.clone());
            async move {
                let index = {
                    let mut intervals = intervals.lock();
                    intervals.push((who, Instant::now(), None));
                    intervals.len() - 1
                };
                token.cancelled().await;
                intervals.lock()[index].2 = Some(Instant::now());
            }
        },
        || {},
    );
    let elector = Arc::new(LeaderElector::new(config, callbacks).expect("valid config"));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, stop) = (elector.clone(), stop.clone());
        async move { elector.run(stop).await.expect("not already running") }
    });
    Candidate {
        identity,
        elector,
        stop,
        task,
    }
}

/// Identities leading now (open intervals).
fn leaders(intervals: &Intervals) -> Vec<String> {
    intervals
        .lock()
        .iter()
        .filter(|(_, _, end)| end.is_none())
        .map(|(who, _, _)| who.clone())
        .collect()
}

/// When `who` last started leading.
fn started(intervals: &Intervals, who: &str) -> Option<Instant> {
    intervals
        .lock()
        .iter()
        .rev()
        .find(|(w, _, _)| w == who)
        .map(|(_, start, _)| *start)
}

async fn wait_for_leader(intervals: &Intervals, among: &[&Candidate]) -> anyhow::Result<String> {
    let names: Vec<String> = among.iter().map(|c| c.identity.clone()).collect();
    let leader = wait_for("a leader", SLACK + LEASE, || async {
        let now = leaders(intervals);
        let leader = now.iter().find(|l| names.contains(l)).cloned();
        Ok::<_, Infallible>(match leader {
            Some(leader) => Check::Ready(leader),
            None => Check::Pending(format!("leaders: {now:?}")),
        })
    })
    .await?;
    Ok(leader)
}

fn assert_one_leader_at_a_time(intervals: &Intervals) {
    let intervals = intervals.lock().clone();
    for (i, (a, a_start, a_end)) in intervals.iter().enumerate() {
        for (b, b_start, b_end) in intervals.iter().skip(i + 1) {
            let apart = a_end.is_some_and(|end| end <= *b_start)
                || b_end.is_some_and(|end| end <= *a_start);
            assert!(apart, "{a} and {b} led at the same time: {intervals:#?}");
        }
    }
}

async fn record(api: &Api<Lease>) -> anyhow::Result<LeaderElectionRecord> {
    let lease = api.get(LEASE_NAME).await?;
    Ok(leaderelection::lease_spec_to_leader_election_record(
        lease.spec.as_ref().context("a Lease spec")?,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_lock_creates_reads_and_updates_with_optimistic_concurrency() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("lease-lock").await?;
    let lock = LeaseLock::new(env.client().clone(), env.namespace(), LEASE_NAME, "me");
    assert_eq!(lock.describe(), format!("{}/{LEASE_NAME}", env.namespace()));
    assert_eq!(lock.get().await?, None, "no Lease yet");

    let now = leaderelection::record::now_micros();
    let mut written = LeaderElectionRecord {
        holder_identity: "me".into(),
        lease_duration_seconds: 15,
        acquire_time: Some(now),
        renew_time: Some(now),
        leader_transitions: 0,
    };
    let created = lock.create(written.clone()).await?;
    let again = lock.create(written.clone()).await.expect_err("exists");
    assert!(again.is_already_exists(), "{again}");

    let read = lock.get().await?.context("the Lease")?;
    assert_eq!(read.record, written, "what is read is what was written");
    assert_eq!(read.resource_version, created);

    // Someone labels the Lease: the next update is based on an old version.
    let api: Api<Lease> = Api::namespaced(env.client().clone(), env.namespace());
    let labels = serde_json::json!({ "metadata": { "labels": { "team": "e2e" } } });
    let labelled = api
        .patch(LEASE_NAME, &PatchParams::default(), &Patch::Merge(&labels))
        .await?;
    written.renew_time = Some(leaderelection::record::now_micros());
    let conflict = lock
        .update(written.clone(), created.clone())
        .await
        .expect_err("stale resourceVersion");
    assert!(
        conflict.is_conflict(),
        "a 409 is a typed conflict: {conflict}"
    );

    let current = labelled.metadata.resource_version.context("a version")?;
    let updated = lock.update(written.clone(), current.clone()).await?;
    assert_ne!(updated, current);
    let lease = api.get(LEASE_NAME).await?;
    assert_eq!(record(&api).await?, written);
    assert_eq!(
        lease
            .metadata
            .labels
            .unwrap_or_default()
            .get("team")
            .map(String::as_str),
        Some("e2e"),
        "the update leaves the rest of the Lease alone"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_electors_one_leader_release_hands_over_fast_and_a_killed_leader_expires()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("leader-election").await?;
    let api: Api<Lease> = Api::namespaced(env.client().clone(), env.namespace());
    let intervals = Intervals::default();

    // Two candidates: one leads, the other waits.
    let a = start(&env, &intervals);
    let b = start(&env, &intervals);
    let first = wait_for_leader(&intervals, &[&a, &b]).await?;
    let (leader, follower) = if first == a.identity { (a, b) } else { (b, a) };
    // The leader keeps renewing and the follower keeps waiting for a few leases.
    let before = record(&api).await?;
    wait_for("several renewals", SLACK + 3 * LEASE, || async {
        let now = record(&api).await?;
        let renewed = now.renew_time > before.renew_time && now.holder_identity == leader.identity;
        let leading = leaders(&intervals);
        let long_enough =
            started(&intervals, &leader.identity).is_some_and(|start| start.elapsed() > 2 * LEASE);
        Ok::<_, anyhow::Error>(Check::ready_if(
            renewed && long_enough,
            (),
            format!("{now:?}, leading: {leading:?}"),
        ))
    })
    .await?;
    assert_eq!(leaders(&intervals), std::slice::from_ref(&leader.identity));
    assert!(leader.elector.is_leader());
    assert!(!follower.elector.is_leader());
    assert_eq!(follower.elector.get_leader(), leader.identity);

    // 1. Shut the leader down with release: the follower takes over within about a
    // retry period, not a lease duration.
    let released_at = Instant::now();
    leader.stop.cancel();
    leader.task.await?;
    let after_release = record(&api).await?;
    assert!(
        after_release.holder_identity.is_empty()
            || after_release.holder_identity == follower.identity,
        "released: {after_release:?}"
    );
    let second = wait_for_leader(&intervals, &[&follower]).await?;
    let handover = started(&intervals, &second).context("a start")? - released_at;
    assert!(
        handover <= RETRY.mul_f64(2.2) + SLACK,
        "handover after release took {handover:?}"
    );
    eprintln!("handover after release: {handover:?}");
    let transitions = record(&api).await?.leader_transitions;
    assert_eq!(transitions, 1, "one change of holder");

    // 2. A third candidate joins; the leader is killed (its run dropped, no release):
    // the newcomer waits out the lease, then takes over.
    let c = start(&env, &intervals);
    wait_for("the newcomer observed the leader", SLACK, || async {
        let leader = c.elector.get_leader();
        Ok::<_, Infallible>(Check::ready_if(leader == second, (), leader))
    })
    .await?;
    let killed_at = Instant::now();
    follower.task.abort();
    let _ = follower.task.await;
    assert_eq!(
        record(&api).await?.holder_identity,
        second,
        "no release on kill"
    );
    let third = wait_for_leader(&intervals, &[&c]).await?;
    let takeover = started(&intervals, &third).context("a start")? - killed_at;
    assert!(
        takeover <= LEASE + RETRY.mul_f64(2.2) + SLACK,
        "takeover after kill took {takeover:?}"
    );
    assert!(
        takeover >= LEASE - RETRY - RENEW,
        "took over a live-looking lease after only {takeover:?}"
    );
    eprintln!("takeover after kill: {takeover:?}");
    let now = record(&api).await?;
    assert_eq!(now.holder_identity, c.identity);
    assert_eq!(now.leader_transitions, 2);
    assert!(c.elector.is_leader());

    c.stop.cancel();
    c.task.await?;
    assert_one_leader_at_a_time(&intervals);
    assert!(leaders(&intervals).is_empty());
    assert_eq!(intervals.lock().len(), 3, "{:#?}", intervals.lock());
    Ok(())
}
