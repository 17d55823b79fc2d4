//! The fence between the coordinator and the workers: the ranges this replica may
//! sync right now, the syncs in flight (so a range is released only after its syncs
//! ended), and the deadline past which nothing may run (a replica that could not
//! renew its membership in time, or that wakes up from a freeze past it).
//!
//! [`ShardGate`] is what the controller loop asks ([`controller::SyncGate`]): it
//! hashes the key's object (the UID of the cached primary, or the last one known for
//! a key whose object left the cache) and admits the sync only if the hash is held. A
//! key it cannot place (never cached by this process, or departed more than
//! [`DEPARTED_TTL`] ago) is skipped: handing it to the sync would make it "not found"
//! on a replica that may not own it (the chaos soak caught exactly that: a key whose
//! object had moved to another replica, skipped once, then admitted as unknown).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use cache::shard::{RangeSet, ShardBy};
use controller::{Admission, Pass, SyncGate};
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The ranges this replica works on, and its syncs in flight.
pub(crate) struct Gate {
    state: Mutex<GateState>,
    /// Woken when a sync ends.
    ended: Notify,
    /// Nothing may run at or after this instant (renewals keep moving it).
    valid_until: watch::Sender<Instant>,
}

struct GateState {
    owned: RangeSet,
    /// Given up (no new syncs) but still announced: syncs of it may be in flight.
    releasing: RangeSet,
    /// When the current release began.
    releasing_since: Option<Instant>,
    in_flight: HashMap<u64, InFlight>,
    next_id: u64,
}

struct InFlight {
    /// The key's hash; `None` for a key whose object this replica never saw.
    hash: Option<u64>,
    cancel: CancellationToken,
}

impl Gate {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(GateState {
                owned: RangeSet::empty(),
                releasing: RangeSet::empty(),
                releasing_since: None,
                in_flight: HashMap::new(),
                next_id: 0,
            }),
            ended: Notify::new(),
            valid_until: watch::Sender::new(Instant::now()),
        }
    }

    /// The ranges syncs are admitted for.
    pub(crate) fn owned(&self) -> RangeSet {
        self.state.lock().owned.clone()
    }

    /// Whether this replica may work at `now` (its membership is renewed).
    pub(crate) fn is_valid(&self, now: Instant) -> bool {
        now < *self.valid_until.borrow()
    }

    /// A renewal succeeded: work may go on until `until` (when it started plus the
    /// renew deadline). If the deadline had passed before (renewals failing, a freeze,
    /// a renewal that took too long), the others may have taken this replica's ranges
    /// meanwhile: it owns nothing from now on and must claim again.
    pub(crate) fn renewed_until(&self, until: Instant) -> bool {
        let lapsed = Instant::now() >= *self.valid_until.borrow();
        if lapsed {
            self.drop_ownership();
        }
        self.valid_until.send_replace(until);
        lapsed
    }

    /// Owns nothing and releases nothing (the syncs in flight are revoked).
    fn drop_ownership(&self) {
        let mut state = self.state.lock();
        state.owned = RangeSet::empty();
        state.releasing = RangeSet::empty();
        state.releasing_since = None;
        for entry in state.in_flight.values() {
            entry.cancel.cancel();
        }
    }

    /// Stops everything at once: no sync is admitted, the ones in flight are
    /// abandoned (their passes are revoked), and nothing is owned.
    pub(crate) fn stop_all(&self) {
        self.valid_until.send_replace(Instant::now());
        self.drop_ownership();
    }

    /// Adds `gained` to the owned ranges.
    pub(crate) fn grow(&self, gained: &RangeSet) {
        let mut state = self.state.lock();
        state.owned = state.owned.union(gained);
        state.releasing = state.releasing.difference(gained);
    }

    /// What is being released: still to be announced until its syncs ended.
    pub(crate) fn releasing(&self) -> RangeSet {
        self.state.lock().releasing.clone()
    }

    /// Gives `lost` up: no new sync of its keys starts from now on. It stays
    /// [`releasing`](Self::releasing) until [`finish_release`](Self::finish_release)
    /// finds none of its syncs in flight.
    pub(crate) fn begin_release(&self, lost: &RangeSet) {
        let mut state = self.state.lock();
        state.owned = state.owned.difference(lost);
        state.releasing = state.releasing.union(lost);
        state.releasing_since.get_or_insert_with(Instant::now);
    }

    /// The ranges whose release is complete (no sync of theirs in flight, nor of a
    /// key of unknown hash), which may now stop being announced; `None` while syncs
    /// still run. Syncs still running `patience` after the release began are
    /// revoked (they end at their next poll).
    pub(crate) fn finish_release(&self, patience: Duration) -> Option<RangeSet> {
        let mut state = self.state.lock();
        if state.releasing.is_empty() {
            return None;
        }
        let releasing = state.releasing.clone();
        let running: Vec<&InFlight> = state
            .in_flight
            .values()
            .filter(|f| f.hash.is_none_or(|h| releasing.contains(h)))
            .collect();
        if running.is_empty() {
            state.releasing = RangeSet::empty();
            state.releasing_since = None;
            return Some(releasing);
        }
        if state
            .releasing_since
            .is_some_and(|since| since.elapsed() >= patience)
        {
            tracing::warn!(
                syncs = running.len(),
                ?patience,
                "syncs of a released range still running; abandoning them"
            );
            for f in running {
                f.cancel.cancel();
            }
        }
        None
    }

    /// [`begin_release`](Self::begin_release) of `lost`, then waits until its release
    /// is complete (revoking what still runs after `patience`).
    pub(crate) async fn shrink(&self, lost: &RangeSet, patience: Duration) {
        self.begin_release(lost);
        loop {
            let notified = self.ended.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.finish_release(patience).is_some() || self.releasing().is_empty() {
                return;
            }
            let since = self
                .state
                .lock()
                .releasing_since
                .unwrap_or_else(Instant::now);
            if Instant::now() >= since + patience {
                // Revoked by finish_release: they end at their next poll.
                notified.await;
            } else {
                tokio::select! {
                    _ = &mut notified => {}
                    _ = tokio::time::sleep_until(since + patience) => {}
                }
            }
        }
    }

    /// A pass for a sync of a key with `hash`, if the gate admits it now.
    pub(crate) fn enter(self: &Arc<Self>, hash: Option<u64>) -> Option<Pass> {
        let mut state = self.state.lock();
        let until = *self.valid_until.borrow();
        if Instant::now() >= until {
            return None;
        }
        let admitted = match hash {
            Some(h) => state.owned.contains(h),
            // A key nobody can place is nobody's here (see the module docs).
            None => false,
        };
        if !admitted {
            return None;
        }
        let id = state.next_id;
        state.next_id += 1;
        let cancel = CancellationToken::new();
        state.in_flight.insert(
            id,
            InFlight {
                hash,
                cancel: cancel.clone(),
            },
        );
        drop(state);
        let held = Held {
            gate: Arc::clone(self),
            id,
        };
        let pass = Pass::new(revocation(cancel, self.valid_until.subscribe()), held);
        Some(match hash {
            Some(h) => pass.for_object(h),
            None => pass,
        })
    }

    /// Syncs in flight now.
    pub(crate) fn in_flight(&self) -> usize {
        self.state.lock().in_flight.len()
    }
}

/// Completes when the sync must stop: its pass was revoked, or the deadline passed
/// without a renewal. Checked first on every poll of the sync (the pass's select is
/// biased), so a process that wakes past its deadline stops before another request.
///
/// The clock and the cancellation are read on *every* poll, not only when a timer or
/// the channel wakes this future: after a freeze (SIGSTOP, a VM paused) the task is
/// often woken by the sync's own I/O before the runtime has fired the deadline's timer,
/// and the coordinator may not have run yet either. Found by the sharding e2e test in a
/// cold run: a replica frozen mid-sync past its lease finished the sync as "synced"
/// while its successor had synced the same key (docs/reliability.md, finding 11).
fn revocation(
    cancel: CancellationToken,
    valid_until: watch::Receiver<Instant>,
) -> impl std::future::Future<Output = ()> + Send {
    let (now_cancel, now_until) = (cancel.clone(), valid_until.clone());
    let mut wait = Box::pin(wait_revoked(cancel, valid_until));
    std::future::poll_fn(move |cx| {
        if now_cancel.is_cancelled() || Instant::now() >= *now_until.borrow() {
            return std::task::Poll::Ready(());
        }
        wait.as_mut().poll(cx)
    })
}

/// Waits (registering the wake-ups) until the pass is cancelled or its deadline passes.
async fn wait_revoked(cancel: CancellationToken, mut valid_until: watch::Receiver<Instant>) {
    loop {
        let until = *valid_until.borrow_and_update();
        if Instant::now() >= until {
            return;
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep_until(until) => {}
            changed = valid_until.changed() => if changed.is_err() { return },
        }
    }
}

/// The in-flight record of one sync; removed when the sync ends.
struct Held {
    gate: Arc<Gate>,
    id: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.gate.state.lock().in_flight.remove(&self.id);
        self.gate.ended.notify_waiters();
    }
}

/// Finds the hash of the object behind a key in the controller's primary cache.
pub(crate) type Lookup = Box<dyn Fn(&str) -> Option<u64> + Send + Sync>;

/// The [`SyncGate`] of one controller: see the [module docs](self).
pub struct ShardGate {
    gate: Arc<Gate>,
    lookup: Lookup,
    /// The last hash of keys whose objects left the cache (deleted, or moved to
    /// another replica's range).
    departed: Arc<Mutex<Departed>>,
    skipped: Option<prometheus_client::metrics::counter::Counter>,
}

impl std::fmt::Debug for ShardGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardGate")
            .field("owned", &self.gate.owned())
            .field("in_flight", &self.gate.in_flight())
            .finish_non_exhaustive()
    }
}

impl ShardGate {
    pub(crate) fn new(
        gate: Arc<Gate>,
        lookup: Lookup,
        departed: Arc<Mutex<Departed>>,
        skipped: Option<prometheus_client::metrics::counter::Counter>,
    ) -> Self {
        Self {
            gate,
            lookup,
            departed,
            skipped,
        }
    }
}

impl SyncGate for ShardGate {
    fn admit(&self, key: &str) -> Admission {
        // The cached object's hash, else the last one seen. The departed entry stays
        // until the object is back in the cache or the entry expires: a key is often
        // queued again (a retry, another event), and every time it must be placed.
        let hash = (self.lookup)(key).or_else(|| self.departed.lock().get(key));
        match self.gate.enter(hash) {
            Some(pass) => Admission::Admit(pass),
            None => {
                if let Some(skipped) = &self.skipped {
                    skipped.inc();
                }
                Admission::Skip
            }
        }
    }
}

/// How long the hash of a key whose object left the cache is remembered: longer than
/// any requeue delay of the default rate limiter (client-go's caps at 1,000 s), so a
/// retried key is still placed. After it, the key is skipped as unknown; the objects
/// are gone from this replica's view, and their owned objects are garbage collected
/// through owner references, not by a sync on "not found".
pub const DEPARTED_TTL: Duration = Duration::from_secs(3600);

/// The last hashes of keys whose objects left the cache, each for [`DEPARTED_TTL`]:
/// one entry per object that left, pruned as new ones arrive.
#[derive(Debug)]
pub(crate) struct Departed {
    entries: HashMap<String, (u64, Instant)>,
    pruned: Instant,
}

impl Departed {
    pub(crate) fn new() -> Self {
        Self {
            entries: HashMap::new(),
            pruned: Instant::now(),
        }
    }

    fn get(&self, key: &str) -> Option<u64> {
        let (hash, at) = self.entries.get(key)?;
        (at.elapsed() < DEPARTED_TTL).then_some(*hash)
    }

    fn insert(&mut self, key: String, hash: u64) {
        let now = Instant::now();
        if now.duration_since(self.pruned) > DEPARTED_TTL / 4 {
            self.entries
                .retain(|_, (_, at)| now.duration_since(*at) < DEPARTED_TTL);
            self.pruned = now;
        }
        self.entries.insert(key, (hash, now));
    }

    fn remove(&mut self, key: &str) {
        self.entries.remove(key);
    }
}

/// The primary informer's handler that remembers the hash of objects leaving the
/// cache, so the gate can still place their keys.
pub(crate) struct DepartedHandler {
    pub(crate) by: ShardBy,
    pub(crate) departed: Arc<Mutex<Departed>>,
}

impl<K: kube::Resource + Send + Sync + 'static> cache::EventHandler<K> for DepartedHandler {
    fn on_add(&self, obj: &Arc<K>, _: bool) {
        if let Ok(key) = cache::meta_namespace_key(&**obj) {
            self.departed.lock().remove(&key);
        }
    }

    fn on_delete(&self, obj: &cache::DeletedObject<K>) {
        let Some(last) = obj.object() else { return };
        if let (Ok(key), Some(hash)) = (cache::meta_namespace_key(&**last), self.by.hash(&**last)) {
            self.departed.lock().insert(key, hash);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cache::shard::HashRange;

    fn half() -> RangeSet {
        RangeSet::from_ranges([HashRange::new(0, u64::MAX / 2).unwrap()])
    }

    #[tokio::test(start_paused = true)]
    async fn admits_only_owned_hashes_while_valid() {
        let gate = Arc::new(Gate::new());
        assert!(gate.enter(Some(1)).is_none(), "nothing owned, not valid");
        gate.renewed_until(Instant::now() + Duration::from_secs(10));
        assert!(gate.enter(Some(1)).is_none(), "valid but owning nothing");
        gate.grow(&half());
        let pass = gate.enter(Some(1)).expect("an owned hash");
        assert_eq!(
            pass.object(),
            Some(1),
            "the pass names the object it is for"
        );
        drop(pass);
        assert!(
            gate.enter(Some(u64::MAX)).is_none(),
            "another replica's hash"
        );
        assert!(
            gate.enter(None).is_none(),
            "a key nobody can place: never admitted"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(
            gate.enter(Some(1)).is_none(),
            "the deadline passed without a renewal"
        );
        // A late renewal does not give the ranges back: they may be another's now.
        assert!(gate.renewed_until(Instant::now() + Duration::from_secs(10)));
        assert!(gate.enter(Some(1)).is_none());
        assert_eq!(gate.owned(), RangeSet::empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_departed_key_is_placed_by_its_last_hash_every_time_until_it_expires() {
        let gate = Arc::new(Gate::new());
        gate.renewed_until(Instant::now() + Duration::from_secs(100_000));
        gate.grow(&half());
        let departed = Arc::new(Mutex::new(Departed::new()));
        let shard_gate = ShardGate::new(gate.clone(), Box::new(|_| None), departed.clone(), None);
        let admitted = |key: &str| matches!(shard_gate.admit(key), Admission::Admit(_));
        // Moved to another replica's range: skipped however often it is queued.
        departed.lock().insert("ns/moved".into(), u64::MAX);
        // Deleted in ours: admitted (the sync sees "not found"), again on a retry.
        departed.lock().insert("ns/deleted".into(), 1);
        for _ in 0..3 {
            assert!(!admitted("ns/moved"));
            assert!(admitted("ns/deleted"));
        }
        assert!(!admitted("ns/never-cached"));
        tokio::time::advance(DEPARTED_TTL).await;
        assert!(!admitted("ns/deleted"), "expired: unknown, skipped");
        departed.lock().insert("ns/new".into(), 2);
        assert!(
            departed.lock().entries.len() == 1,
            "the expired entries were pruned"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn shrink_waits_for_the_syncs_of_the_lost_range_only() {
        let gate = Arc::new(Gate::new());
        gate.renewed_until(Instant::now() + Duration::from_secs(100));
        gate.grow(&RangeSet::all());
        let lost_pass = gate.enter(Some(1)).unwrap();
        let kept_pass = gate.enter(Some(u64::MAX)).unwrap();
        let shrink = tokio::spawn({
            let gate = gate.clone();
            async move { gate.shrink(&half(), Duration::from_secs(30)).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            !shrink.is_finished(),
            "a sync of the lost range is in flight"
        );
        assert!(
            gate.enter(Some(2)).is_none(),
            "no new sync of the lost range"
        );
        drop(lost_pass);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(shrink.is_finished(), "released once that sync ended");
        drop(kept_pass);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sync_that_outlives_the_patience_is_revoked_before_release() {
        let gate = Arc::new(Gate::new());
        gate.renewed_until(Instant::now() + Duration::from_secs(1000));
        gate.grow(&RangeSet::all());
        let pass = gate.enter(Some(1)).unwrap();
        let sync = tokio::spawn(pass.run(std::future::pending::<()>()));
        let started = Instant::now();
        gate.shrink(&half(), Duration::from_secs(5)).await;
        assert!(started.elapsed() >= Duration::from_secs(5));
        assert_eq!(sync.await.unwrap(), None, "abandoned, not finished");
        assert_eq!(gate.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_parked_pass_is_revoked_on_its_first_poll_after_a_freeze() {
        let cancel = CancellationToken::new();
        let (_valid, until) = watch::channel(Instant::now() + Duration::from_millis(50));
        let mut revoked = Box::pin(revocation(cancel, until));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(revoked.as_mut().poll(&mut cx).is_pending());
        // A freeze: the clock moves past the deadline while the runtime does not run, so
        // no timer has fired when the task is polled again (woken by its sync's I/O).
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            revoked.as_mut().poll(&mut cx).is_ready(),
            "a pass past its deadline must stop the sync on the first poll"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_is_revoked_when_the_deadline_passes() {
        let gate = Arc::new(Gate::new());
        gate.renewed_until(Instant::now() + Duration::from_secs(3));
        gate.grow(&RangeSet::all());
        let pass = gate.enter(Some(1)).unwrap();
        let sync = tokio::spawn(pass.run(std::future::pending::<()>()));
        tokio::time::sleep(Duration::from_secs(2)).await;
        // A renewal moves the deadline: the sync goes on.
        gate.renewed_until(Instant::now() + Duration::from_secs(3));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(!sync.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(sync.await.unwrap(), None);
    }
}
