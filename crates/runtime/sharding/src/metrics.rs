//! What a sharded replica exports on `/metrics`:
//!
//! | metric | meaning |
//! |---|---|
//! | `sharding_members{group}` | live members this replica sees (itself included) |
//! | `sharding_target_fraction{group}` | share of the hash space it should hold |
//! | `sharding_held_fraction{group}` | share it holds now (syncs admitted) |
//! | `sharding_held_ranges{group,ranges}` | 1, with the held ranges as a label |
//! | `sharding_cached_objects{informer}` | objects in a sharded informer's cache |
//! | `sharding_server_side_filtering{informer}` | 1: the API server filters by `shardSelector`; 0: the informer filters alone; -1: not known yet or not possible (owned objects) |
//! | `sharding_ranges_gained_total`, `sharding_ranges_released_total` | handovers |
//! | `sharding_syncs_skipped_total` | keys skipped as another replica's |
//! | `sharding_revocations_total` | times it stopped all work at its deadline |
//!
//! Gauges that read a cache are refreshed on every turn of the coordinator.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use ::metrics::Registry;
use cache::shard::{RangeSet, ServerFiltering, ShardFilter};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabel {
    group: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RangesLabel {
    group: String,
    ranges: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct InformerLabel {
    informer: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;
type Reading = Box<dyn Fn() -> i64 + Send + Sync>;
/// A gauge of one informer, and how to read its value.
type Readings = Arc<Mutex<Vec<(Family<InformerLabel, Gauge>, String, Reading)>>>;

/// The sharding families, registered once per process. Clones share them.
#[derive(Clone)]
pub struct ShardMetrics {
    members: Family<GroupLabel, Gauge>,
    target: Family<GroupLabel, FloatGauge>,
    held: Family<GroupLabel, FloatGauge>,
    held_ranges: Family<RangesLabel, Gauge>,
    cached: Family<InformerLabel, Gauge>,
    server_side: Family<InformerLabel, Gauge>,
    gained: Counter,
    released: Counter,
    skipped: Counter,
    revocations: Counter,
    readings: Readings,
    last_ranges: Arc<Mutex<Option<RangesLabel>>>,
}

impl fmt::Debug for ShardMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardMetrics").finish_non_exhaustive()
    }
}

impl ShardMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn new(registry: &Registry) -> Self {
        let m = Self {
            members: Family::default(),
            target: Family::default(),
            held: Family::default(),
            held_ranges: Family::default(),
            cached: Family::default(),
            server_side: Family::default(),
            gained: Counter::default(),
            released: Counter::default(),
            skipped: Counter::default(),
            revocations: Counter::default(),
            readings: Arc::new(Mutex::new(Vec::new())),
            last_ranges: Arc::new(Mutex::new(None)),
        };
        registry.register(
            "sharding_members",
            "Live members of the shard group this replica sees, itself included.",
            m.members.clone(),
        );
        registry.register(
            "sharding_target_fraction",
            "Share of the hash space this replica should hold.",
            m.target.clone(),
        );
        registry.register(
            "sharding_held_fraction",
            "Share of the hash space this replica holds now (its syncs are admitted).",
            m.held.clone(),
        );
        registry.register(
            "sharding_held_ranges",
            "1, labelled with the hash ranges this replica holds.",
            m.held_ranges.clone(),
        );
        registry.register(
            "sharding_cached_objects",
            "Objects in a sharded informer's cache.",
            m.cached.clone(),
        );
        registry.register(
            "sharding_server_side_filtering",
            "1 if the API server filters this informer by shardSelector, 0 if the informer filters alone, -1 if unknown or not possible.",
            m.server_side.clone(),
        );
        registry.register(
            "sharding_ranges_gained",
            "Ranges this replica gained in handovers.",
            m.gained.clone(),
        );
        registry.register(
            "sharding_ranges_released",
            "Ranges this replica released in handovers.",
            m.released.clone(),
        );
        registry.register(
            "sharding_syncs_skipped",
            "Keys the loop skipped as another replica's.",
            m.skipped.clone(),
        );
        registry.register(
            "sharding_revocations",
            "Times this replica stopped all work at its renew deadline.",
            m.revocations.clone(),
        );
        m
    }

    /// Reports the size of a sharded cache as `sharding_cached_objects{informer}`.
    pub fn track_cache(&self, informer: &str, len: impl Fn() -> usize + Send + Sync + 'static) {
        self.readings.lock().push((
            self.cached.clone(),
            informer.to_string(),
            Box::new(move || i64::try_from(len()).unwrap_or(i64::MAX)),
        ));
    }

    /// Reports what the server does with an informer's selector.
    pub fn track_filter(&self, informer: &str, filter: ShardFilter) {
        self.readings.lock().push((
            self.server_side.clone(),
            informer.to_string(),
            Box::new(move || match filter.server_filtering() {
                ServerFiltering::Yes => 1,
                ServerFiltering::No => 0,
                ServerFiltering::Unknown | ServerFiltering::NotApplicable => -1,
            }),
        ));
    }

    pub(crate) fn members(&self, group: &str, members: usize, target: &RangeSet, held: &RangeSet) {
        let label = GroupLabel {
            group: group.to_string(),
        };
        self.members
            .get_or_create(&label)
            .set(i64::try_from(members).unwrap_or(i64::MAX));
        self.target.get_or_create(&label).set(target.fraction());
        self.held.get_or_create(&label).set(held.fraction());
        let ranges = RangesLabel {
            group: group.to_string(),
            ranges: held.to_string(),
        };
        let mut last = self.last_ranges.lock();
        if last.as_ref() != Some(&ranges) {
            if let Some(old) = last.take() {
                self.held_ranges.remove(&old);
            }
            self.held_ranges.get_or_create(&ranges).set(1);
            *last = Some(ranges);
        }
        for (family, informer, read) in self.readings.lock().iter() {
            family
                .get_or_create(&InformerLabel {
                    informer: informer.clone(),
                })
                .set(read());
        }
    }

    pub(crate) fn gained(&self) {
        self.gained.inc();
    }

    pub(crate) fn released(&self) {
        self.released.inc();
    }

    pub(crate) fn revoked(&self) {
        self.revocations.inc();
    }

    pub(crate) fn skipped(&self) -> Counter {
        self.skipped.clone()
    }
}
