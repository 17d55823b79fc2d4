//! The bounded store of steps: one ring per stage.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;

use crate::stage::Stage;
use crate::step::Step;

/// Steps kept per stage by default: enough for the trip of every key touched in the
/// last few seconds of a busy controller, about 4 MB in all.
pub const DEFAULT_CAPACITY: usize = 4096;

/// The steps of every stage, each stage in a ring of its own.
///
/// One ring per stage, not one for all, so that a flood at one stage (a 50,000-object
/// initial list filling the FIFO ring) does not push the rarer, later steps of a trip
/// (its sync and writes) out of memory. Each ring has its own lock, so the informer's
/// thread, the handler threads and the workers rarely meet on one.
#[derive(Debug)]
pub struct Trace {
    enabled: AtomicBool,
    capacity: usize,
    seq: AtomicU64,
    counts: [AtomicU64; Stage::ALL.len()],
    rings: [Mutex<VecDeque<Step>>; Stage::ALL.len()],
}

/// How many steps each stage has recorded since the start, for rates on the page.
#[derive(Debug, Clone, Serialize)]
pub struct StageCount {
    /// The stage.
    pub stage: Stage,
    /// Steps recorded at this stage since the process started.
    pub count: u64,
}

impl Trace {
    /// An enabled trace keeping `capacity` steps per stage.
    pub fn new(capacity: usize) -> Self {
        Self {
            enabled: AtomicBool::new(true),
            capacity: capacity.max(1),
            seq: AtomicU64::new(0),
            counts: Default::default(),
            rings: Default::default(),
        }
    }

    /// Whether steps are being recorded.
    pub fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns recording on or off (off: [`record`](Self::record) is one atomic load).
    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    /// Steps kept per stage.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Records the step `make` builds, stamped with its order and the time; `make` is
    /// not called when recording is off. The oldest step of that stage is dropped
    /// when its ring is full.
    pub fn record(&self, make: impl FnOnce() -> Step) {
        if !self.is_enabled() {
            return;
        }
        let mut step = make();
        let i = step.stage.index();
        step.at_us = now_us();
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        let mut ring = self.rings[i].lock();
        // Numbered under the ring's lock, so each ring is in seq order.
        step.seq = self.seq.fetch_add(1, Ordering::Relaxed);
        if ring.len() == self.capacity {
            ring.pop_front();
        }
        ring.push_back(step);
    }

    /// Every step still kept for `key`, in the order they were recorded: the key's
    /// trip through the pipeline.
    pub fn trip(&self, key: &str) -> Vec<Step> {
        let mut steps: Vec<Step> = self
            .rings
            .iter()
            .flat_map(|ring| {
                ring.lock()
                    .iter()
                    .filter(|s| &*s.key == key)
                    .cloned()
                    .collect::<Vec<_>>()
            })
            .collect();
        steps.sort_by_key(|s| s.seq);
        steps
    }

    /// The last `limit` steps of `stage`, oldest first.
    pub fn recent(&self, stage: Stage, limit: usize) -> Vec<Step> {
        let ring = self.rings[stage.index()].lock();
        let skip = ring.len().saturating_sub(limit);
        ring.iter().skip(skip).cloned().collect()
    }

    /// The distinct keys of the last `limit` steps of every stage, most recent first:
    /// suggestions for what to follow.
    pub fn recent_keys(&self, limit: usize) -> Vec<String> {
        let mut steps: Vec<(u64, std::sync::Arc<str>)> = self
            .rings
            .iter()
            .flat_map(|ring| {
                let ring = ring.lock();
                let skip = ring.len().saturating_sub(limit);
                ring.iter()
                    .skip(skip)
                    .map(|s| (s.seq, s.key.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        steps.sort_by_key(|s| std::cmp::Reverse(s.0));
        let mut keys: Vec<String> = Vec::new();
        for (_, key) in steps {
            if keys.len() == limit {
                break;
            }
            if !keys.iter().any(|k| **k == *key) {
                keys.push(key.to_string());
            }
        }
        keys
    }

    /// Steps recorded per stage since the start, in pipeline order.
    pub fn counts(&self) -> Vec<StageCount> {
        Stage::ALL
            .iter()
            .map(|&stage| StageCount {
                stage,
                count: self.counts[stage.index()].load(Ordering::Relaxed),
            })
            .collect()
    }
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn step(stage: Stage, key: &str, what: &'static str) -> Step {
        Step::new(stage, Arc::from("test"), Arc::from(key), what)
    }

    #[test]
    fn a_trip_is_every_stage_of_one_key_in_recording_order() {
        let trace = Trace::new(16);
        trace.record(|| step(Stage::Fifo, "ns/a", "Added"));
        trace.record(|| step(Stage::Fifo, "ns/b", "Added"));
        trace.record(|| step(Stage::Indexer, "ns/a", "add"));
        trace.record(|| step(Stage::Queue, "ns/a", "queued"));
        trace.record(|| step(Stage::Sync, "ns/a", "started"));
        let whats: Vec<_> = trace.trip("ns/a").iter().map(|s| s.what).collect();
        assert_eq!(whats, ["Added", "add", "queued", "started"]);
        assert_eq!(trace.trip("ns/b").len(), 1);
        assert!(trace.trip("ns/c").is_empty());
    }

    #[test]
    fn each_stage_keeps_only_its_capacity_and_a_flood_at_one_stage_spares_the_others() {
        let trace = Trace::new(3);
        trace.record(|| step(Stage::Sync, "ns/a", "started"));
        for i in 0..10 {
            trace.record(|| step(Stage::Fifo, &format!("ns/{i}"), "Added"));
        }
        let fifo: Vec<_> = trace
            .recent(Stage::Fifo, 10)
            .iter()
            .map(|s| s.key.to_string())
            .collect();
        assert_eq!(fifo, ["ns/7", "ns/8", "ns/9"]);
        assert_eq!(
            trace.trip("ns/a").len(),
            1,
            "the sync step survived the FIFO flood"
        );
        let counts = trace.counts();
        assert_eq!(
            counts[Stage::Fifo.index()].count,
            10,
            "counts are not capped"
        );
        assert_eq!(counts[Stage::Sync.index()].count, 1);
    }

    #[test]
    fn off_records_nothing_and_does_not_build_the_step() {
        let trace = Trace::new(4);
        trace.set_enabled(false);
        trace.record(|| unreachable!("built while off"));
        assert!(trace.counts().iter().all(|c| c.count == 0));
        trace.set_enabled(true);
        trace.record(|| step(Stage::Worker, "ns/a", "took"));
        assert_eq!(trace.trip("ns/a").len(), 1);
    }

    #[test]
    fn recent_keys_are_distinct_and_newest_first() {
        let trace = Trace::new(8);
        for key in ["ns/a", "ns/b", "ns/a", "ns/c"] {
            trace.record(|| step(Stage::Queue, key, "queued"));
        }
        assert_eq!(trace.recent_keys(2), ["ns/c", "ns/a"]);
        assert_eq!(trace.recent_keys(10), ["ns/c", "ns/a", "ns/b"]);
    }

    #[test]
    fn steps_are_stamped_with_time_and_increasing_order() {
        let trace = Trace::new(8);
        trace.record(|| step(Stage::Fifo, "ns/a", "Added"));
        trace.record(|| step(Stage::Write, "ns/a", "POST"));
        let trip = trace.trip("ns/a");
        assert!(trip[0].seq < trip[1].seq);
        assert!(trip[0].at_us > 0 && trip[0].at_us <= trip[1].at_us);
    }
}
