//! The handover rules of `sharding::coordinator`, each on paused time with an
//! in-memory member store: no two replicas ever admit the same hash at once; a
//! released range is announced only after its syncs end; a dead replica's ranges
//! move only after its lease expires; a replica that cannot renew (or is frozen)
//! stops at its deadline and does not take back what it lost.

use std::sync::Arc;
use std::time::Duration;

use cache::shard::RangeSet;
use sharding::testing::{MemberClient, MemoryMembers};
use sharding::{Shard, ShardConfig};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const LEASE: Duration = Duration::from_secs(15);
const RENEW: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);
/// A first replica holds its ranges after the join grace (two retry periods) and one
/// more jittered turn.
const FIRST_TURNS: Duration = Duration::from_secs(7);

struct Replica {
    shard: Shard,
    client: Arc<MemberClient>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn start(members: &MemoryMembers, identity: &str) -> Replica {
    let client = members.client();
    let config = ShardConfig {
        group: "g".into(),
        identity: identity.into(),
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
    };
    let shard = Shard::new(config, client.clone()).expect("valid config");
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (shard, cancel) = (shard.clone(), cancel.clone());
        async move { shard.run(cancel).await }
    });
    Replica {
        shard,
        client,
        cancel,
        task,
    }
}

/// Advances paused time by `d` in steps of 100 ms, checking after each step that no
/// two replicas admit the same hash.
async fn run_checked(replicas: &[&Replica], d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_disjoint(replicas);
    }
}

fn assert_disjoint(replicas: &[&Replica]) {
    let held: Vec<RangeSet> = replicas.iter().map(|r| r.shard.held()).collect();
    for i in 0..held.len() {
        for j in i + 1..held.len() {
            assert!(
                !held[i].overlaps(&held[j]),
                "two replicas admit the same hashes: {} and {}",
                held[i],
                held[j]
            );
        }
    }
}

fn half(upper: bool) -> RangeSet {
    let mid = 1u64 << 63;
    let r = if upper {
        cache::shard::HashRange::new(mid, u64::MAX)
    } else {
        cache::shard::HashRange::new(0, mid - 1)
    };
    RangeSet::from_ranges(r)
}

#[tokio::test(start_paused = true)]
async fn one_replica_holds_everything() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    run_checked(&[&a], FIRST_TURNS).await;
    assert_eq!(a.shard.held(), RangeSet::all());
    assert!(a.shard.try_sync(42).is_some());
}

#[tokio::test(start_paused = true)]
async fn a_join_splits_the_space_without_overlap() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    run_checked(&[&a], FIRST_TURNS).await;
    let b = start(&members, "b");
    run_checked(&[&a, &b], Duration::from_secs(12)).await;
    assert_eq!(a.shard.held(), half(false));
    assert_eq!(b.shard.held(), half(true));
    let c = start(&members, "c");
    run_checked(&[&a, &b, &c], Duration::from_secs(15)).await;
    for r in [&a, &b, &c] {
        assert!(
            (r.shard.held().fraction() - 1.0 / 3.0).abs() < 1e-9,
            "{}",
            r.shard.held()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_lost_range_is_released_only_after_its_syncs_end() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    run_checked(&[&a], FIRST_TURNS).await;
    // A sync of a key in the upper half (which "b" will get) is in flight.
    let pass = a.shard.try_sync(u64::MAX).expect("a holds everything");
    let b = start(&members, "b");
    run_checked(&[&a, &b], Duration::from_secs(6)).await;
    assert!(
        members.record("a").unwrap().held.contains(u64::MAX),
        "a still announces the range while its sync runs"
    );
    assert!(
        a.shard.try_sync(u64::MAX - 1).is_none(),
        "no new sync of a range being released"
    );
    assert!(!b.shard.held().contains(u64::MAX));
    drop(pass);
    run_checked(&[&a, &b], Duration::from_secs(6)).await;
    assert!(!members.record("a").unwrap().held.contains(u64::MAX));
    assert_eq!(b.shard.held(), half(true));
}

#[tokio::test(start_paused = true)]
async fn a_dead_replicas_ranges_move_after_its_lease_expires() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    let b = start(&members, "b");
    run_checked(&[&a, &b], Duration::from_secs(12)).await;
    assert_eq!(b.shard.held(), half(true));
    // SIGKILL: the loop stops without leaving.
    a.task.abort();
    let killed = Instant::now();
    while b.shard.held() != RangeSet::all() {
        run_checked(&[&b], Duration::from_millis(100)).await;
        assert!(killed.elapsed() < LEASE + RETRY * 4, "b never took over");
    }
    // b cannot know before a's lease ran out (counted from b's last sight of a change).
    assert!(
        killed.elapsed() >= LEASE - RETRY,
        "took over after {:?}",
        killed.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_graceful_leave_hands_over_at_once() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    let b = start(&members, "b");
    run_checked(&[&a, &b], Duration::from_secs(12)).await;
    a.cancel.cancel();
    let left = Instant::now();
    a.task.await.unwrap();
    assert!(members.record("a").is_none(), "a deleted its Lease");
    while b.shard.held() != RangeSet::all() {
        run_checked(&[&b], Duration::from_millis(100)).await;
    }
    assert!(left.elapsed() < LEASE / 2, "took {:?}", left.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_cannot_renew_stops_at_its_deadline() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    let b = start(&members, "b");
    run_checked(&[&a, &b], Duration::from_secs(12)).await;
    let mine = a.shard.held();
    let pass = a.shard.try_sync(0).expect("a holds the lower half");
    let sync = tokio::spawn(pass.run(std::future::pending::<()>()));
    a.client.set_failing(true);
    let cut = Instant::now();
    // Within the renew deadline (from the last renewal, at most one retry before the cut).
    run_checked(&[&a, &b], RENEW + Duration::from_millis(200)).await;
    assert_eq!(
        a.shard.held(),
        RangeSet::empty(),
        "a stopped at its deadline"
    );
    assert_eq!(
        sync.await.unwrap(),
        None,
        "its sync in flight was abandoned"
    );
    assert!(b.shard.held().overlaps(&half(true)));
    assert!(
        !b.shard.held().overlaps(&mine),
        "b has not taken a's range yet"
    );
    // b takes over once a's lease ran out.
    while !b.shard.held().contains(0) {
        run_checked(&[&a, &b], Duration::from_millis(100)).await;
        assert!(cut.elapsed() < LEASE + RETRY * 4);
    }
}

#[tokio::test(start_paused = true)]
async fn a_frozen_replica_does_not_take_back_what_it_lost() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    let b = start(&members, "b");
    run_checked(&[&a, &b], Duration::from_secs(12)).await;
    // Frozen: nothing a sends arrives until it thaws (its calls hang, then land late).
    a.client.set_hung(true);
    run_checked(&[&a, &b], LEASE + RETRY * 4).await;
    assert_eq!(a.shard.held(), RangeSet::empty());
    assert_eq!(
        b.shard.held(),
        RangeSet::all(),
        "b took over the frozen replica's range"
    );
    // Thaw: a's late write lands (announcing its old range); a must not sync it, and
    // the two settle on halves again without ever overlapping.
    a.client.set_hung(false);
    run_checked(&[&a, &b], Duration::from_secs(30)).await;
    assert_eq!(a.shard.held(), half(false));
    assert_eq!(b.shard.held(), half(true));
}

#[tokio::test(start_paused = true)]
async fn three_replicas_starting_at_once_never_overlap() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    let b = start(&members, "b");
    let c = start(&members, "c");
    run_checked(&[&a, &b, &c], Duration::from_secs(30)).await;
    let all = [&a, &b, &c]
        .iter()
        .fold(RangeSet::empty(), |acc, r| acc.union(&r.shard.held()));
    assert_eq!(all, RangeSet::all());
}

#[tokio::test(start_paused = true)]
async fn replicas_starting_together_never_cache_more_than_their_share() {
    // Rule 0: none of them saw itself alone and listed everything.
    let members = MemoryMembers::new();
    let replicas = [
        start(&members, "a"),
        start(&members, "b"),
        start(&members, "c"),
    ];
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for r in &replicas {
            let cached = r.shard.ranges().get().map_or(0.0, |set| set.fraction());
            assert!(
                cached < 1.0 / 3.0 + 1e-9,
                "a replica cached {cached} of the space"
            );
        }
    }
    for r in &replicas {
        assert!((r.shard.held().fraction() - 1.0 / 3.0).abs() < 1e-9);
    }
}

#[tokio::test(start_paused = true)]
async fn joining_a_working_group_needs_no_grace() {
    let members = MemoryMembers::new();
    let a = start(&members, "a");
    run_checked(&[&a], FIRST_TURNS).await;
    let b = start(&members, "b");
    // b's first turn already caches its target (rule 0 would wait two retry periods).
    run_checked(&[&a, &b], Duration::from_millis(200)).await;
    assert_eq!(b.shard.ranges().get().as_deref(), Some(&half(true)));
    // a releases the upper half within a turn; b claims it by its third turn.
    run_checked(&[&a, &b], RETRY * 3).await;
    assert_eq!(b.shard.held(), half(true));
}
