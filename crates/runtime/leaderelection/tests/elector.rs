//! The election state machine against an in-memory lock, with paused tokio time:
//! every duration below is exact virtual time, so the timing rules are asserted, not
//! slept on. Defaults throughout: lease 15 s, renew deadline 10 s, retry 2 s.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use leaderelection::testing::{MemoryLease, MemoryLock, OpKind, OpOutcome};
use leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, ResourceLock,
};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, timeout};
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(15);
const RENEW: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);
/// The longest pause between acquisition attempts: retry * (1 + 1.2).
const MAX_JITTERED_RETRY: Duration = Duration::from_millis(4400);
/// Timer resolution slack (tokio timers are millisecond-granular).
const TICK: Duration = Duration::from_millis(5);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Started,
    /// The `on_started_leading` token fired.
    Ended,
    /// `on_stopped_leading` ran.
    Stopped,
    NewLeader(String),
}

#[derive(Debug, Clone)]
struct Event {
    who: String,
    kind: Kind,
    at: Instant,
}

/// Leadership intervals, recorded by every candidate of a test.
type Intervals = Arc<Mutex<Vec<(String, Instant, Option<Instant>)>>>;

struct Candidate {
    elector: Arc<LeaderElector>,
    lock: MemoryLock,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

struct Harness {
    lease: MemoryLease,
    events_tx: mpsc::UnboundedSender<Event>,
    events: mpsc::UnboundedReceiver<Event>,
    pending: Vec<Event>,
    intervals: Intervals,
}

impl Harness {
    fn new() -> Self {
        let (events_tx, events) = mpsc::unbounded_channel();
        Self {
            lease: MemoryLease::new("test"),
            events_tx,
            events,
            pending: Vec::new(),
            intervals: Intervals::default(),
        }
    }

    fn config(&self, lock: &MemoryLock, release_on_cancel: bool) -> LeaderElectionConfig {
        let mut config = LeaderElectionConfig::new(Arc::new(lock.clone()));
        config.release_on_cancel = release_on_cancel;
        config
    }

    fn elector(&self, lock: &MemoryLock, release_on_cancel: bool) -> Arc<LeaderElector> {
        let who = lock.identity().to_string();
        let (tx, intervals) = (self.events_tx.clone(), self.intervals.clone());
        let (stopped_tx, new_tx) = (tx.clone(), tx.clone());
        let (stopped_who, new_who) = (who.clone(), who.clone());
        let callbacks = LeaderCallbacks::new(
            move |token: CancellationToken| {
                let (tx, intervals, who) = (tx.clone(), intervals.clone(), who.clone());
                async move {
                    let index = {
                        let mut intervals = intervals.lock();
                        intervals.push((who.clone(), Instant::now(), None));
                        intervals.len() - 1
                    };
                    send(&tx, &who, Kind::Started);
                    token.cancelled().await;
                    intervals.lock()[index].2 = Some(Instant::now());
                    send(&tx, &who, Kind::Ended);
                }
            },
            move || send(&stopped_tx, &stopped_who, Kind::Stopped),
        )
        .on_new_leader(move |leader| send(&new_tx, &new_who, Kind::NewLeader(leader.into())));
        Arc::new(LeaderElector::new(self.config(lock, release_on_cancel), callbacks).unwrap())
    }

    fn start(&self, identity: &str, release_on_cancel: bool) -> Candidate {
        let lock = self.lease.lock(identity);
        let elector = self.elector(&lock, release_on_cancel);
        start_elector(elector, lock)
    }

    /// The first not yet consumed event of `who` matching `kind`, waiting up to
    /// `within` for it. Events that do not match stay available for later calls.
    async fn next(&mut self, who: &str, kind: Kind, within: Duration) -> Event {
        let wanted = |e: &Event| e.who == who && e.kind == kind;
        if let Some(i) = self.pending.iter().position(wanted) {
            return self.pending.remove(i);
        }
        let (events, pending) = (&mut self.events, &mut self.pending);
        timeout(within, async {
            loop {
                let event = events.recv().await.expect("senders alive");
                if wanted(&event) {
                    return event;
                }
                pending.push(event);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {kind:?} from {who} within {within:?}"))
    }

    /// Every event so far that no `next` consumed.
    fn unconsumed(&mut self) -> Vec<Event> {
        while let Ok(event) = self.events.try_recv() {
            self.pending.push(event);
        }
        self.pending.clone()
    }

    /// Leadership intervals never overlap.
    fn assert_one_leader_at_a_time(&self) {
        let intervals = self.intervals.lock().clone();
        for (i, (a, a_start, a_end)) in intervals.iter().enumerate() {
            for (b, b_start, b_end) in intervals.iter().skip(i + 1) {
                let a_before_b = a_end.is_some_and(|end| end <= *b_start);
                let b_before_a = b_end.is_some_and(|end| end <= *a_start);
                assert!(
                    a_before_b || b_before_a,
                    "{a} ({a_start:?}..{a_end:?}) and {b} ({b_start:?}..{b_end:?}) led at the same time"
                );
            }
        }
    }

    /// Successful writes by `who`.
    fn writes_by(&self, who: &str) -> Vec<(Instant, LeaderElectionRecord)> {
        self.lease
            .operations()
            .into_iter()
            .filter(|op| op.identity == who && op.outcome == OpOutcome::Ok)
            .filter_map(|op| op.written.map(|record| (op.at, record)))
            .collect()
    }
}

fn start_elector(elector: Arc<LeaderElector>, lock: MemoryLock) -> Candidate {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, stop) = (elector.clone(), stop.clone());
        async move { elector.run(stop).await.expect("not already running") }
    });
    Candidate {
        elector,
        lock,
        stop,
        task,
    }
}

fn send(tx: &mpsc::UnboundedSender<Event>, who: &str, kind: Kind) {
    let _ = tx.send(Event {
        who: who.to_string(),
        kind,
        at: Instant::now(),
    });
}

fn held_by(holder: &str, transitions: i32) -> LeaderElectionRecord {
    let long_ago = leaderelection::record::now_micros()
        .checked_sub(k8s_openapi::jiff::SignedDuration::from_hours(1))
        .unwrap();
    LeaderElectionRecord {
        holder_identity: holder.into(),
        lease_duration_seconds: 15,
        acquire_time: Some(long_ago),
        renew_time: Some(long_ago),
        leader_transitions: transitions,
    }
}

fn assert_within(what: &str, got: Duration, low: Duration, high: Duration) {
    assert!(
        got + TICK >= low && got <= high + TICK,
        "{what}: {got:?} not in [{low:?}, {high:?}]"
    );
}

#[tokio::test(start_paused = true)]
async fn acquires_a_free_lock_at_once_and_keeps_renewing_it() {
    let mut h = Harness::new();
    let t0 = Instant::now();
    let a = h.start("a", false);
    let started = h.next("a", Kind::Started, Duration::from_secs(1)).await;
    assert_eq!(started.at, t0, "a free lock is taken by the first attempt");
    assert!(a.elector.is_leader());
    assert_eq!(a.elector.get_leader(), "a");

    sleep(Duration::from_secs(59)).await;
    let record = h.lease.get().expect("created").record;
    assert_eq!(record.holder_identity, "a");
    assert_eq!(record.lease_duration_seconds, 15);
    assert_eq!(record.leader_transitions, 0);
    let writes = h.writes_by("a");
    // A create, an immediate first renewal (client-go's renew loop starts with an
    // attempt), then one every retry period.
    assert_eq!(writes.len(), 1 + 1 + 29, "{writes:?}");
    assert_eq!(writes[1].0, writes[0].0);
    for pair in writes[1..].windows(2) {
        assert_eq!(pair[1].0 - pair[0].0, RETRY);
        assert!(
            pair[1].1.renew_time > pair[0].1.renew_time,
            "every renewal changes the record"
        );
        assert_eq!(pair[1].1.acquire_time, pair[0].1.acquire_time);
    }
    assert!(a.elector.is_leader());
    a.task.abort();
}

#[tokio::test(start_paused = true)]
async fn does_not_take_a_lock_whose_holder_keeps_renewing() {
    let mut h = Harness::new();
    h.lease.set(held_by("other", 0));
    let b = h.start("b", false);
    // "other" renews every 2 s for a minute, then dies.
    let mut record = held_by("other", 0);
    let mut last_renewal = Instant::now();
    for _ in 0..30 {
        sleep(RETRY).await;
        record.renew_time = Some(record.renew_time.unwrap() + Duration::from_secs(2));
        h.lease.set(record.clone());
        last_renewal = Instant::now();
        assert!(!b.elector.is_leader());
    }
    assert!(
        h.intervals.lock().is_empty(),
        "b never led while the lease was renewed"
    );
    assert_eq!(b.elector.get_leader(), "other");

    let started = h.next("b", Kind::Started, Duration::from_secs(60)).await;
    let waited = started.at - last_renewal;
    assert_within(
        "takeover after the last renewal",
        waited,
        LEASE,
        LEASE + 2 * MAX_JITTERED_RETRY,
    );
    assert_eq!(h.lease.get().unwrap().record.leader_transitions, 1);
    b.task.abort();
}

#[tokio::test(start_paused = true)]
async fn expiry_is_measured_from_local_observation_not_the_servers_renew_time() {
    let mut h = Harness::new();
    // The record says it was renewed an hour ago; a new candidate still waits a
    // full lease from when it first saw the record.
    h.lease.set(held_by("old", 7));
    let t0 = Instant::now();
    let b = h.start("b", false);
    let seen = h
        .next("b", Kind::NewLeader("old".into()), Duration::from_secs(1))
        .await;
    assert_eq!(seen.at, t0);
    let started = h.next("b", Kind::Started, Duration::from_secs(60)).await;
    assert_within(
        "takeover",
        started.at - t0,
        LEASE,
        LEASE + MAX_JITTERED_RETRY,
    );
    h.next("b", Kind::NewLeader("b".into()), Duration::ZERO)
        .await;
    let record = h.lease.get().unwrap().record;
    assert_eq!(record.holder_identity, "b");
    assert_eq!(
        record.leader_transitions, 8,
        "a takeover increments the count"
    );
    b.task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_leader_whose_renewals_fail_stops_at_the_renew_deadline_before_anyone_takes_over() {
    for hanging in [false, true] {
        let mut h = Harness::new();
        let a = h.start("a", true);
        h.next("a", Kind::Started, Duration::from_secs(1)).await;
        let b = h.start("b", false);
        sleep(Duration::from_secs(21)).await;
        assert_eq!(a.elector.check(Duration::ZERO), Ok(()));
        assert_eq!(
            b.elector.check(Duration::ZERO),
            Ok(()),
            "a follower is healthy"
        );

        // The API server becomes unreachable for "a" only.
        if hanging {
            a.lock.set_hanging(true);
        } else {
            a.lock.set_failing(true);
        }
        let last_renewal = h.writes_by("a").last().unwrap().0;
        let ended = h.next("a", Kind::Ended, Duration::from_secs(60)).await;
        // The round after the last success starts one retry period later, and its
        // deadline passes renew_deadline after that: the token fires right then,
        // even while a request hangs and before the (failing) release.
        assert_within(
            &format!("stopped leading (hanging: {hanging})"),
            ended.at - last_renewal,
            RETRY + RENEW,
            RETRY + RENEW,
        );
        let stopped = h.next("a", Kind::Stopped, Duration::from_secs(60)).await;
        assert!(stopped.at >= ended.at);

        let started = h.next("b", Kind::Started, Duration::from_secs(60)).await;
        assert!(started.at - last_renewal >= LEASE, "b waited a full lease");
        h.assert_one_leader_at_a_time();
        assert_eq!(h.lease.get().unwrap().record.holder_identity, "b");
        a.task.await.unwrap(); // run returned on its own
        // Still the observed holder, long after the lease: the health check fails.
        let since = Instant::now() - last_renewal;
        assert!(a.elector.check(since - LEASE - TICK).is_err());
        assert!(a.elector.check(since - LEASE).is_ok());
        b.task.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn racing_candidates_conflict_and_only_one_leads() {
    let h = Harness::new();
    h.lease.set(held_by("old", 0));
    // Writes take 5 s to land, reads are instant, attempts come at most 4.4 s apart:
    // whoever writes second read the lock before the first write landed, so both
    // try to take over and the resourceVersion precondition must settle it.
    let a = h.start("a", false);
    let b = h.start("b", false);
    a.lock.set_write_latency(Duration::from_secs(5));
    b.lock.set_write_latency(Duration::from_secs(5));
    sleep(Duration::from_secs(120)).await;

    assert!(
        h.lease.conflicts() >= 1,
        "the race happened: {:#?}",
        h.lease.operations()
    );
    h.assert_one_leader_at_a_time();
    let intervals = h.intervals.lock().clone();
    assert_eq!(intervals.len(), 1, "exactly one leader: {intervals:?}");
    let leader = &intervals[0].0;
    assert_eq!(&h.lease.get().unwrap().record.holder_identity, leader);
    assert_eq!(h.lease.get().unwrap().record.leader_transitions, 1);
    assert_eq!(a.elector.is_leader(), leader == "a");
    assert_eq!(b.elector.is_leader(), leader == "b");
    a.task.abort();
    b.task.abort();
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_lets_the_next_candidate_in_within_a_retry_period() {
    let mut h = Harness::new();
    let a = h.start("a", true);
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    let b = h.start("b", false);
    sleep(Duration::from_secs(30)).await;

    let cancelled_at = Instant::now();
    a.stop.cancel();
    let ended = h.next("a", Kind::Ended, Duration::from_secs(1)).await;
    assert_eq!(ended.at, cancelled_at);
    a.task.await.unwrap();
    let released = h.writes_by("a").last().unwrap().1.clone();
    assert_eq!(released.holder_identity, "");
    assert_eq!(released.lease_duration_seconds, 1);
    assert_eq!(
        released.leader_transitions, 0,
        "a release is not a transition"
    );
    assert!(!a.elector.is_leader());

    let started = h.next("b", Kind::Started, Duration::from_secs(60)).await;
    assert_within(
        "takeover after release",
        started.at - cancelled_at,
        Duration::ZERO,
        MAX_JITTERED_RETRY,
    );
    assert_eq!(h.lease.get().unwrap().record.leader_transitions, 1);
    h.assert_one_leader_at_a_time();
    b.task.abort();
}

#[tokio::test(start_paused = true)]
async fn release_after_a_renewal_cancelled_in_flight_still_releases() {
    // The renewal reaches the lease, but its answer (the new resourceVersion) is
    // still on its way when the leader is shut down: the release, based on the
    // version before, conflicts with our own write. Found by the e2e suite under load.
    let mut h = Harness::new();
    let a = h.start("a", true);
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    sleep(Duration::from_secs(5)).await;
    a.lock.set_answer_latency(Duration::from_secs(1));
    let renewals = h.writes_by("a").len();
    while h.writes_by("a").len() == renewals {
        sleep(Duration::from_millis(10)).await;
    }
    a.stop.cancel();
    a.task.await.unwrap();
    assert!(
        h.lease.conflicts() >= 1,
        "the first release attempt conflicts"
    );
    let released = h.writes_by("a").last().unwrap().1.clone();
    assert_eq!(released.holder_identity, "", "released after all");
    assert_eq!(h.lease.get().unwrap().record.holder_identity, "");
}

#[tokio::test(start_paused = true)]
async fn without_release_the_next_candidate_waits_a_full_lease() {
    let mut h = Harness::new();
    let a = h.start("a", false);
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    let b = h.start("b", false);
    sleep(Duration::from_secs(30)).await;
    a.stop.cancel();
    h.next("a", Kind::Stopped, Duration::from_secs(1)).await;
    a.task.await.unwrap();
    assert_eq!(h.lease.get().unwrap().record.holder_identity, "a");
    let last_renewal = h.writes_by("a").last().unwrap().0;

    let started = h.next("b", Kind::Started, Duration::from_secs(60)).await;
    assert_within(
        "takeover without release",
        started.at - last_renewal,
        LEASE,
        LEASE + 2 * MAX_JITTERED_RETRY,
    );
    b.task.abort();
}

#[tokio::test(start_paused = true)]
async fn leader_transitions_count_changes_of_holder_only() {
    let mut h = Harness::new();
    let a = h.start("a", false);
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    let b = h.start("b", true);
    sleep(Duration::from_secs(20)).await;
    // a dies without release; b takes over; b is shut down with release; a comes back.
    a.task.abort();
    h.next("a", Kind::Ended, Duration::from_secs(1)).await;
    h.next("b", Kind::Started, Duration::from_secs(60)).await;
    sleep(Duration::from_secs(20)).await;
    b.stop.cancel();
    b.task.await.unwrap();
    let a_again = start_elector(a.elector.clone(), a.lock.clone());
    h.next("a", Kind::Started, Duration::from_secs(60)).await;
    sleep(Duration::from_secs(20)).await;

    // Every successful write, in the order the lease took them.
    let writes: Vec<LeaderElectionRecord> = h
        .lease
        .operations()
        .into_iter()
        .filter_map(|op| op.written)
        .collect();
    let mut previous: Option<LeaderElectionRecord> = None;
    let mut holders = Vec::new();
    for record in &writes {
        let expected = match &previous {
            None => 0,
            Some(p)
                if p.holder_identity == record.holder_identity
                    || record.holder_identity.is_empty() =>
            {
                p.leader_transitions
            }
            Some(p) => p.leader_transitions + 1,
        };
        assert_eq!(
            record.leader_transitions, expected,
            "{record:?} after {previous:?}"
        );
        if holders.last() != Some(&record.holder_identity) {
            holders.push(record.holder_identity.clone());
        }
        previous = Some(record.clone());
    }
    assert_eq!(holders, ["a", "b", "", "a"]);
    assert_eq!(h.lease.get().unwrap().record.leader_transitions, 2);
    h.assert_one_leader_at_a_time();
    a_again.task.abort();
}

#[tokio::test(start_paused = true)]
async fn dropping_run_cancels_the_leaders_token_without_release_or_stopped_callback() {
    let mut h = Harness::new();
    let a = h.start("a", true);
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    let aborted_at = Instant::now();
    a.task.abort();
    let ended = h.next("a", Kind::Ended, Duration::from_secs(1)).await;
    assert_eq!(ended.at, aborted_at);
    sleep(Duration::from_secs(30)).await;
    assert_eq!(
        h.lease.get().unwrap().record.holder_identity,
        "a",
        "no release"
    );
    for event in h.unconsumed() {
        assert_ne!(
            event.kind,
            Kind::Stopped,
            "on_stopped_leading is not called on drop"
        );
    }
    // The elector can run again once the dropped run is gone.
    let again = start_elector(a.elector.clone(), a.lock.clone());
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    again.task.abort();
}

#[tokio::test(start_paused = true)]
async fn on_stopped_leading_runs_even_if_never_leading_and_run_is_exclusive() {
    let mut h = Harness::new();
    h.lease.set(held_by("other", 0));
    let b = h.start("b", false);
    sleep(Duration::from_secs(1)).await;
    let second = b.elector.run(CancellationToken::new()).await;
    assert!(second.is_err(), "a second concurrent run is refused");
    b.stop.cancel();
    h.next("b", Kind::Stopped, Duration::from_secs(1)).await;
    b.task.await.unwrap();
    assert!(h.intervals.lock().is_empty());
    // No write ever happened: a waiting candidate only reads.
    assert!(h.lease.operations().iter().all(|op| op.kind == OpKind::Get));
}

/// A candidate on `lease` whose work takes `stopping` to stop after its token fires.
fn start_slow_to_stop(lease: &MemoryLease, identity: &str, stopping: Duration) -> Candidate {
    let lock = lease.lock(identity);
    let mut config = LeaderElectionConfig::new(Arc::new(lock.clone()));
    config.release_on_cancel = true;
    let callbacks = LeaderCallbacks::new(
        move |token: CancellationToken| async move {
            token.cancelled().await;
            sleep(stopping).await; // draining the controllers
        },
        || {},
    );
    start_elector(
        Arc::new(LeaderElector::new(config, callbacks).unwrap()),
        lock,
    )
}

#[tokio::test(start_paused = true)]
async fn release_waits_for_the_leaders_work_to_stop_and_work_that_will_not_stop_keeps_the_lock() {
    // Work that stops 3 s after cancellation: released then, not before.
    let lease = MemoryLease::new("slow");
    let a = start_slow_to_stop(&lease, "a", Duration::from_secs(3));
    sleep(Duration::from_secs(5)).await;
    assert!(a.elector.is_leader());
    let cancelled_at = Instant::now();
    a.stop.cancel();
    a.task.await.unwrap();
    let (released_at, released) = lease
        .operations()
        .into_iter()
        .filter_map(|op| op.written.map(|record| (op.at, record)))
        .next_back()
        .unwrap();
    assert_eq!(released.holder_identity, "", "released");
    assert_within(
        "release after the work stopped",
        released_at - cancelled_at,
        Duration::from_secs(3),
        Duration::from_secs(3),
    );

    // Work that does not stop within the renew deadline: no release; the lock stays
    // ours until it expires, as if the process had died.
    let lease = MemoryLease::new("stuck");
    let b = start_slow_to_stop(&lease, "b", Duration::from_secs(3600));
    sleep(Duration::from_secs(5)).await;
    let cancelled_at = Instant::now();
    b.stop.cancel();
    b.task.await.unwrap();
    assert_within(
        "run returns after the renew deadline",
        Instant::now() - cancelled_at,
        RENEW,
        RENEW,
    );
    assert_eq!(
        lease.get().unwrap().record.holder_identity,
        "b",
        "not released"
    );
}

/// A leader frozen longer than its renew deadline (SIGSTOP, a stopped VM, a long
/// pause) stops leading the moment it runs again, before any renewal attempt: while it
/// was frozen its lease may have run out and another candidate may have taken over.
/// Found by the chaos soak: a SIGSTOPped leader, SIGCONTed after its successor had
/// taken the Lease, renewed "from now" and went on syncing for a whole renew deadline
/// next to its successor (client-go behaves the same way).
#[tokio::test(start_paused = true)]
async fn a_leader_frozen_past_its_renew_deadline_stops_as_soon_as_it_runs_again() {
    let mut h = Harness::new();
    let a = h.start("a", false);
    h.next("a", Kind::Started, Duration::from_secs(1)).await;
    sleep(Duration::from_secs(7)).await; // leading and renewing normally
    let renewals = h.writes_by("a").len();
    assert!(renewals >= 3, "{renewals} writes");

    // Frozen: the clock moves past the lease while the elector does not run.
    tokio::time::advance(LEASE + RETRY).await;
    let thawed = Instant::now();
    let ended = h.next("a", Kind::Ended, Duration::from_secs(1)).await;
    assert_within(
        "stopped leading after the thaw",
        ended.at - thawed,
        Duration::ZERO,
        TICK,
    );
    assert_eq!(
        h.writes_by("a").len(),
        renewals,
        "no renewal after the thaw: it stopped first"
    );
    a.task.await.unwrap();
}
