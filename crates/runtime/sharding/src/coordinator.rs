//! The coordinator: one loop per replica that keeps its membership Lease renewed,
//! works out which ranges it should hold, and hands ranges over **without two
//! replicas ever syncing the same key at once**. The rules (docs/architecture.md,
//! "Scaling out"):
//!
//! 0. **Join, then look.** In a group being formed (no live member holds anything),
//!    a replica's first turns only announce it (a Lease holding nothing) for
//!    [`ShardConfig::join_grace`] (two retry periods): replicas started together (a
//!    Deployment created) see each other before any of them caches or claims a range.
//!    Without it the first to start saw itself alone, listed every object and let
//!    most of them go a turn later (measured: the first of three replicas peaked at
//!    the memory of one replica caching everything). Joining a working group needs
//!    no wait (its members are there to be seen), so a scale-up adds no gap.
//! 1. **Live members.** Every `retry_period` the loop lists the group's Leases. A
//!    member is live while its record changed less than its `leaseDurationSeconds`
//!    ago, measured from when *this* replica saw the change (as leader election
//!    does: no clock comparison between machines).
//! 2. **Target.** The live members, sorted, split the hash space into equal ranges
//!    ([`crate::assign`]). The informers cache the target and what is still held,
//!    so a range being gained is already cached when it is handed over.
//! 3. **Release before announcing.** A range leaving the target is removed from the
//!    gate at once (no new sync of its keys starts); the Lease stops announcing it
//!    only once no sync of it is in flight (checked every turn, so renewals go on
//!    meanwhile; syncs still running after the renew deadline are revoked).
//! 4. **Claim, check, then start.** A range of the target that no live member
//!    announces is *claimed*: written into our announcement. Then the Leases are
//!    read again; any part another live member also announces is withdrawn (of two
//!    replicas claiming at once, at least the later one sees the earlier claim).
//!    What is left is ours: once the informers have listed it, the gate admits its
//!    keys and every cached key of it is queued.
//! 5. **Stop at the deadline.** A renewal that started at `t` lets the replica work
//!    until `t + renew_deadline`. Past it (renewals failing, or a process frozen and
//!    woken up late) the gate admits nothing and revokes the syncs in flight before
//!    their next request; the others take over only after `lease_duration`
//!    (`renew_deadline < lease_duration`) without seeing a renewal.
//! 6. **Leave.** On shutdown the replica releases everything (rule 3), then deletes
//!    its Lease, so the others rebalance at once instead of after a lease duration.
//!
//! Safety rests on timing exactly as leader election's does (clocks may be offset,
//! not run at very different rates); every write a controller makes is also
//! conditional on a resourceVersion, as always.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use cache::SharedIndexInformer;
use cache::shard::{RangeSet, ShardBy, ShardRanges};
use controller::SyncGate;
use kube::Resource;
use parking_lot::Mutex;
use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};
use workqueue::RateLimitingQueue;

use crate::assignment::ranges_for;
use crate::config::{ConfigError, ShardConfig, ShardStatus};
use crate::gate::{Departed, DepartedHandler, Gate, ShardGate};
use crate::member::{MemberRecord, MemberStore, StoreError};
use crate::metrics::ShardMetrics;

type GainedHook = Arc<dyn Fn(&RangeSet) + Send + Sync>;

/// One replica's membership in a shard group: the coordinator loop
/// ([`run`](Self::run)), the ranges its informers cache ([`ranges`](Self::ranges))
/// and the gates of its controllers ([`gate`](Self::gate)). Cheap to clone.
#[derive(Clone)]
pub struct Shard {
    inner: Arc<Inner>,
}

struct Inner {
    config: ShardConfig,
    store: Arc<dyn MemberStore>,
    ranges: ShardRanges,
    gate: Arc<Gate>,
    gained_hooks: Mutex<Vec<GainedHook>>,
    status: watch::Sender<ShardStatus>,
    metrics: Option<ShardMetrics>,
}

impl fmt::Debug for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shard")
            .field("config", &self.inner.config)
            .field("status", &*self.inner.status.borrow())
            .finish_non_exhaustive()
    }
}

impl Shard {
    /// A replica of `config.group` whose members are in `store`.
    pub fn new(config: ShardConfig, store: Arc<dyn MemberStore>) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                store,
                ranges: ShardRanges::new(),
                gate: Arc::new(Gate::new()),
                gained_hooks: Mutex::new(Vec::new()),
                status: watch::Sender::new(ShardStatus::default()),
                metrics: None,
            }),
        })
    }

    /// Reports into `metrics` (call before cloning).
    pub fn with_metrics(mut self, metrics: ShardMetrics) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            metrics.members(
                &inner.config.group,
                0,
                &RangeSet::empty(),
                &RangeSet::empty(),
            );
            inner.metrics = Some(metrics);
        }
        self
    }

    /// The metrics it reports into, if any.
    pub fn metrics(&self) -> Option<&ShardMetrics> {
        self.inner.metrics.as_ref()
    }

    /// The configuration.
    pub fn config(&self) -> &ShardConfig {
        &self.inner.config
    }

    /// The ranges this replica's informers cache: give them to the informer factory
    /// ([`cache::SharedInformerFactory::with_shard_ranges`]).
    pub fn ranges(&self) -> ShardRanges {
        self.inner.ranges.clone()
    }

    /// The ranges whose syncs this replica admits right now: what it holds while its
    /// membership is renewed, nothing past its deadline.
    pub fn held(&self) -> RangeSet {
        if self.inner.gate.is_valid(Instant::now()) {
            self.inner.gate.owned()
        } else {
            RangeSet::empty()
        }
    }

    /// A pass for one sync of an object whose hash is `hash`, if this replica may
    /// sync it now: what a [`gate`](Self::gate) gives a controller's key, for work
    /// that is not keyed by an informer's objects.
    pub fn try_sync(&self, hash: u64) -> Option<controller::Pass> {
        self.inner.gate.enter(Some(hash))
    }

    /// What the coordinator last saw; changes after every step.
    pub fn status(&self) -> watch::Receiver<ShardStatus> {
        self.inner.status.subscribe()
    }

    /// The gate for a controller whose keys are the objects of `informer` (sharded by
    /// UID) and whose queue is `queue`: give it to
    /// [`controller::Controller::with_gate`]. When this replica gains a range, every
    /// cached key of it is queued.
    pub fn gate<K>(
        &self,
        informer: &SharedIndexInformer<K>,
        queue: RateLimitingQueue<String>,
    ) -> Arc<dyn SyncGate>
    where
        K: Resource + Send + Sync + 'static,
    {
        let by = ShardBy::UID;
        let departed = Arc::new(Mutex::new(Departed::new()));
        // The registration lives as long as the informer.
        let _ = informer.add_event_handler(DepartedHandler {
            by,
            departed: Arc::clone(&departed),
        });
        let lookup_indexer = informer.indexer().clone();
        let lookup = Box::new(move |key: &str| {
            lookup_indexer
                .get_by_key(key)
                .and_then(|obj| by.hash(&*obj))
        });
        let indexer = informer.indexer().clone();
        self.inner
            .gained_hooks
            .lock()
            .push(Arc::new(move |gained: &RangeSet| {
                let mut queued = 0usize;
                for obj in indexer.list() {
                    if by.hash(&*obj).is_some_and(|h| gained.contains(h))
                        && let Ok(key) = cache::meta_namespace_key(&*obj)
                    {
                        queue.add(key);
                        queued += 1;
                    }
                }
                debug!(queued, "queued the keys of a gained range");
            }));
        let skipped = self.inner.metrics.as_ref().map(ShardMetrics::skipped);
        Arc::new(ShardGate::new(
            Arc::clone(&self.inner.gate),
            lookup,
            departed,
            skipped,
        ))
    }

    /// Runs the coordinator until `cancel` fires, then leaves the group (releasing
    /// everything first). See the [module docs](self).
    pub async fn run(&self, cancel: CancellationToken) {
        let config = &self.inner.config;
        info!(group = %config.group, identity = %config.identity, "joining shard group");
        let mut loop_state = LoopState::default();
        loop {
            if cancel.is_cancelled() {
                break;
            }
            self.step(&mut loop_state).await;
            let jitter = 1.0 + rand::rng().random::<f64>() * 0.2;
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(config.retry_period.mul_f64(jitter)) => {}
            }
        }
        self.leave(&mut loop_state).await;
    }

    /// One turn of the loop (rules 1 to 5).
    async fn step(&self, state: &mut LoopState) {
        let inner = &*self.inner;
        let config = &inner.config;
        let gate = &inner.gate;

        // Rule 5: past the deadline, stop everything before anything else.
        if !gate.is_valid(Instant::now()) && !gate.owned().is_empty() {
            error!(group = %config.group, "could not renew shard membership within the renew deadline; stopped all work");
            gate.stop_all();
            if let Some(m) = &inner.metrics {
                m.revoked();
            }
        }

        // Rule 1: who is live.
        let Some(view) = self.observe(state).await else {
            return;
        };
        let target = ranges_for(&view.members, &config.identity);

        // Rule 0: a replica that just joined a group being formed (nobody holds
        // anything yet) only announces itself for a while. Joining a working group
        // needs no wait: its members are all there to be seen.
        if state.joining() && !view.others_held.is_empty() {
            state.join_until = Some(Instant::now());
        }
        if state.joining() {
            if self.write(state, RangeSet::empty()).await && state.join_until.is_none() {
                state.join_until = Some(Instant::now() + config.join_grace());
                info!(group = %config.group, grace = ?config.join_grace(), "announced; waiting for replicas started together before claiming");
            }
            self.publish(state, &view.members, &target);
            return;
        }

        // Rule 2: what we should hold; cache it (and what we still hold).
        inner.ranges.set(target.union(&gate.owned()));

        // Rule 3: release what left the target: no new syncs at once; it stays
        // announced until its syncs in flight ended (checked again every turn, so
        // renewals never wait for a slow sync).
        let lost = gate.owned().difference(&target);
        if !lost.is_empty() {
            gate.begin_release(&lost);
            debug!(group = %config.group, releasing = %lost, "releasing ranges");
        }
        if let Some(released) = gate.finish_release(config.renew_deadline) {
            info!(group = %config.group, %released, "released ranges");
            state.released += 1;
            if let Some(m) = &inner.metrics {
                m.released();
            }
        }

        // Rule 4: claim what nobody announces; renew either way.
        let claim = target
            .difference(&gate.owned())
            .difference(&gate.releasing())
            .difference(&view.others_held);
        let announce = gate.owned().union(&gate.releasing()).union(&claim);
        if !self.write(state, announce).await {
            self.publish(state, &view.members, &target);
            return;
        }
        if claim.is_empty() {
            inner.ranges.set(target.union(&gate.owned()));
            self.publish(state, &view.members, &target);
            return;
        }
        let Some(check) = self.observe(state).await else {
            return;
        };
        let conflict = claim.intersection(&check.others_held);
        let confirmed = claim.difference(&conflict);
        if !conflict.is_empty() {
            info!(group = %config.group, withdrawn = %conflict, "another replica claimed the same ranges; withdrawing ours");
            if !self
                .write(
                    state,
                    gate.owned().union(&gate.releasing()).union(&confirmed),
                )
                .await
            {
                return;
            }
        }
        if confirmed.is_empty() {
            self.publish(state, &view.members, &target);
            return;
        }
        // Start only once the informers hold the range (bounded: a slow list makes
        // the first syncs see a partial cache, which they survive as any sync does).
        if !inner.ranges.wait_listed(config.renew_deadline).await {
            warn!(group = %config.group, "informers had not relisted the new ranges in time; starting anyway");
        }
        if !gate.is_valid(Instant::now()) {
            return;
        }
        gate.grow(&confirmed);
        state.gained += 1;
        if let Some(m) = &inner.metrics {
            m.gained();
        }
        info!(group = %config.group, gained = %confirmed, held = %gate.owned(), "gained ranges");
        let hooks: Vec<GainedHook> = inner.gained_hooks.lock().clone();
        for hook in hooks {
            hook(&confirmed);
        }
        self.publish(state, &view.members, &target);
    }

    /// Lists the members and updates when each was last seen changing; `None` if the
    /// list failed.
    async fn observe(&self, state: &mut LoopState) -> Option<View> {
        let config = &self.inner.config;
        let records = match self.inner.store.list().await {
            Ok(records) => records,
            Err(e) => {
                warn!(group = %config.group, error = %e, "listing shard members failed");
                return None;
            }
        };
        let now = Instant::now();
        state
            .seen
            .retain(|id, _| records.iter().any(|r| &r.identity == id));
        let mut members = vec![config.identity.clone()];
        let mut others_held = RangeSet::empty();
        for record in &records {
            if record.identity == config.identity {
                continue;
            }
            let seen = state
                .seen
                .entry(record.identity.clone())
                .or_insert_with(|| (record.version.clone(), now));
            if seen.0 != record.version {
                *seen = (record.version.clone(), now);
            }
            let quiet = now.duration_since(seen.1);
            if quiet < record.lease_duration {
                members.push(record.identity.clone());
                others_held = others_held.union(&record.held);
            } else if quiet > record.lease_duration * 3 {
                // Long dead: remove its Lease so dead replicas do not pile up.
                self.collect(record).await;
            }
        }
        members.sort();
        members.dedup();
        Some(View {
            members,
            others_held,
        })
    }

    async fn collect(&self, record: &MemberRecord) {
        match self
            .inner
            .store
            .delete(&record.identity, &record.version)
            .await
        {
            Ok(()) => {
                info!(group = %self.inner.config.group, member = %record.identity, "removed a dead member's Lease")
            }
            Err(e) => debug!(error = %e, "removing a dead member's Lease failed"),
        }
    }

    /// Writes our record announcing `held`; on success the gate may work until
    /// `renew_deadline` after the write started.
    async fn write(&self, state: &mut LoopState, held: RangeSet) -> bool {
        let config = &self.inner.config;
        let record = MemberRecord {
            identity: config.identity.clone(),
            held,
            lease_duration: config.lease_duration,
            version: state.version.clone(),
        };
        let started = Instant::now();
        match self.inner.store.write(&record).await {
            Ok(version) => {
                state.version = version;
                let owned = self.inner.gate.owned();
                if self
                    .inner
                    .gate
                    .renewed_until(started + config.renew_deadline)
                    && !owned.is_empty()
                {
                    // Rule 5: the deadline passed before this renewal landed.
                    error!(group = %config.group, dropped = %owned, "renewed only after the renew deadline; stopped all work and claiming again");
                    if let Some(m) = &self.inner.metrics {
                        m.revoked();
                    }
                }
                true
            }
            Err(StoreError::Conflict { name }) => {
                warn!(group = %config.group, lease = %name, "our shard Lease was changed by someone else; re-reading it");
                state.version.clear();
                false
            }
            Err(e) => {
                warn!(group = %config.group, error = %e, "renewing shard membership failed");
                false
            }
        }
    }

    fn publish(&self, state: &LoopState, members: &[String], target: &RangeSet) {
        let held = self.inner.gate.owned();
        if let Some(m) = &self.inner.metrics {
            m.members(&self.inner.config.group, members.len(), target, &held);
        }
        self.inner.status.send_replace(ShardStatus {
            members: members.to_vec(),
            target: target.clone(),
            held,
            gained: state.gained,
            released: state.released,
        });
    }

    /// Rule 6: release everything, then delete our Lease.
    async fn leave(&self, state: &mut LoopState) {
        let config = &self.inner.config;
        let held = self.inner.gate.owned().union(&self.inner.gate.releasing());
        self.inner
            .gate
            .shrink(&RangeSet::all(), config.renew_deadline)
            .await;
        if state.version.is_empty() {
            return;
        }
        if !held.is_empty() && !self.write(state, RangeSet::empty()).await {
            warn!(group = %config.group, "could not announce the release on shutdown; the others take over after the lease duration");
            return;
        }
        match self
            .inner
            .store
            .delete(&config.identity, &state.version)
            .await
        {
            Ok(()) => info!(group = %config.group, "left the shard group"),
            Err(e) => {
                warn!(group = %config.group, error = %e, "deleting our shard Lease failed; the others take over after the lease duration")
            }
        }
    }
}

/// What the loop keeps between turns.
#[derive(Default)]
struct LoopState {
    /// Per member: the record version last seen and when it was first seen.
    seen: HashMap<String, (String, Instant)>,
    /// Our record's version ("" before it exists).
    version: String,
    /// Until when rule 0 holds us back; `None` before our first announcement.
    join_until: Option<Instant>,
    gained: u64,
    released: u64,
}

impl LoopState {
    /// Whether rule 0 still holds: not yet announced, or announced too recently.
    fn joining(&self) -> bool {
        self.join_until.is_none_or(|until| Instant::now() < until)
    }
}

/// The members as one turn saw them.
struct View {
    members: Vec<String>,
    others_held: RangeSet,
}
