//! The series cache: client-go `tools/events`' `eventCache` with the
//! bookkeeping of `recordToSink`, `finishSeries` and
//! `refreshExistingEventSeries`, plus the **dirty** flag that makes our writes
//! prompt.
//!
//! The cache maps each [isomorphic key](super::event::get_key) to the Event
//! created for it:
//!
//! * the **first** occurrence is stored and must be created;
//! * the **second** adds `series: {count: 2, lastObservedTime}`;
//! * **later** ones increment `count` and move `lastObservedTime`.
//!
//! A repeat only changes the cache and marks the entry dirty. The broadcaster
//! writes dirty entries at the **flush deadline**: the first repeat after a
//! flush sets it `flush_delay` (1 s) ahead, and repeats before it only change the
//! count, so a burst of any size costs one PATCH per series, and a series
//! repeating forever at most one PATCH per `flush_delay`.
//!
//! Deviation: client-go writes a repeat only in two cases: the second occurrence
//! (which patches `count: 2`), and the 30-minute heartbeat or the end of the
//! series for every later one. 20 identical events therefore read `count: 2` on
//! the server for up to 30 minutes (`kubectl events` lags that much); here they
//! read `count: 20` about a second after the burst.
//!
//! A series **finishes** when it was not observed for `finish_time` (6 minutes):
//! it leaves the cache, and the next identical occurrence creates a new Event.
//! client-go checks that every 6 minutes (so a series ends 6 to 12 minutes after
//! its last occurrence); here an occurrence after 6 silent minutes always starts
//! a new Event, and the periodic sweep ([`SeriesCache::finish`]) only frees the
//! memory and writes any unwritten count. The cache is otherwise unbounded, as
//! client-go's: it holds the keys seen in the last 6 to 12 minutes.
//!
//! Plain synchronous state (no I/O, no locks): the broadcaster's single task owns
//! it, and the instants come from its [`Clock`](crate::Clock).

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::event::{EventKey, get_key};

/// client-go's `finishTime`: a series silent this long is over.
pub const FINISH_TIME: Duration = Duration::from_secs(6 * 60);
/// client-go's `refreshTime`: the heartbeat that rewrites every series.
pub const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);
/// How long a repeat may wait before its series is written (ours; client-go
/// waits for the heartbeat).
pub const DEFAULT_FLUSH_DELAY: Duration = Duration::from_secs(1);

/// What an occurrence means for the API server.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// A new Event: create `event`. `finished` is the previous series under the
    /// same key, silent for `finish_time`, if it still had an unwritten count
    /// (write it first).
    Create {
        /// The Event to create.
        event: Box<Event>,
        /// A finished series' last state to write, if unwritten.
        finished: Option<Box<Event>>,
    },
    /// A repeat: the series now has `count` occurrences and will be written at
    /// the flush deadline.
    Repeat {
        /// The series' count after this occurrence.
        count: i32,
    },
}

#[derive(Debug)]
struct Entry {
    /// The Event as created, with the current series.
    event: Event,
    /// When it was last observed (monotonic).
    last_observed: Instant,
    /// The series changed since it was last written.
    dirty: bool,
}

/// Events by isomorphic key, their series and what is still to be written. See
/// the [module docs](self).
#[derive(Debug)]
pub struct SeriesCache {
    entries: HashMap<EventKey, Entry>,
    flush_at: Option<Instant>,
    flush_delay: Duration,
    finish_time: Duration,
}

impl SeriesCache {
    /// An empty cache writing repeats after `flush_delay` and finishing series
    /// silent for `finish_time`.
    pub fn new(flush_delay: Duration, finish_time: Duration) -> Self {
        Self {
            entries: HashMap::new(),
            flush_at: None,
            flush_delay,
            finish_time,
        }
    }

    /// client-go's `recordToSink` bookkeeping: records one occurrence, observed
    /// at `now`. The series' `lastObservedTime` is the occurrence's own
    /// `eventTime` (when it was recorded, however long it queued).
    pub fn observe(&mut self, event: Event, now: Instant) -> Observation {
        let key = get_key(&event);
        let mut finished = None;
        if let Some(entry) = self.entries.get_mut(&key) {
            if now.saturating_duration_since(entry.last_observed) < self.finish_time {
                let observed = event
                    .event_time
                    .clone()
                    .unwrap_or(MicroTime(Timestamp::UNIX_EPOCH));
                let series = entry.event.series.get_or_insert(EventSeries {
                    count: 1,
                    last_observed_time: observed.clone(),
                });
                series.count = series.count.saturating_add(1);
                series.last_observed_time = observed;
                let count = series.count;
                entry.last_observed = now;
                entry.dirty = true;
                self.flush_at.get_or_insert(now + self.flush_delay);
                return Observation::Repeat { count };
            }
            // Silent for `finish_time`: that series is over.
            finished = self
                .entries
                .remove(&key)
                .filter(|old| old.dirty)
                .map(|old| Box::new(old.event));
        }
        self.entries.insert(
            key,
            Entry {
                event: event.clone(),
                last_observed: now,
                dirty: false,
            },
        );
        Observation::Create {
            event: Box::new(event),
            finished,
        }
    }

    /// When the dirty series must be written, if any is.
    pub fn flush_deadline(&self) -> Option<Instant> {
        self.flush_at
    }

    /// The dirty series (each with its current count), now marked written.
    pub fn take_dirty(&mut self) -> Vec<Event> {
        self.flush_at = None;
        self.entries
            .values_mut()
            .filter(|e| e.dirty)
            .map(|e| {
                e.dirty = false;
                e.event.clone()
            })
            .collect()
    }

    /// client-go's `refreshExistingEventSeries`: every Event that has a series,
    /// to be written again (the heartbeat), now marked written.
    pub fn take_all_series(&mut self) -> Vec<Event> {
        self.flush_at = None;
        self.entries
            .values_mut()
            .filter(|e| e.event.series.is_some())
            .map(|e| {
                e.dirty = false;
                e.event.clone()
            })
            .collect()
    }

    /// client-go's `finishSeries`: forgets every Event not observed for
    /// `finish_time` before `now`, returning those whose series still has an
    /// unwritten count (to be written one last time).
    pub fn finish(&mut self, now: Instant) -> Vec<Event> {
        let finish_time = self.finish_time;
        let mut unwritten = Vec::new();
        self.entries.retain(|_, e| {
            let over = now.saturating_duration_since(e.last_observed) >= finish_time;
            if over && e.dirty {
                unwritten.push(e.event.clone());
            }
            !over
        });
        if !self.entries.values().any(|e| e.dirty) {
            self.flush_at = None;
        }
        unwritten
    }

    /// How many Events (singletons and series) the cache tracks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache tracks no Event.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn event(name: &str, second: i64) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(Timestamp::from_second(second).unwrap())),
            reason: Some("R".into()),
            regarding: Some(ObjectReference {
                name: Some("cm".into()),
                ..ObjectReference::default()
            }),
            ..Event::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn repeats_count_up_and_are_written_once_per_flush() {
        let mut cache = SeriesCache::new(Duration::from_secs(1), FINISH_TIME);
        let t0 = Instant::now();
        let Observation::Create { event: e, finished } = cache.observe(event("a", 100), t0) else {
            panic!("first occurrence")
        };
        assert_eq!((e.metadata.name.as_deref(), finished), (Some("a"), None));
        assert_eq!(cache.flush_deadline(), None);
        // Repeats carry their own (unique) names; the series keeps the first.
        assert_eq!(
            cache.observe(event("b", 101), t0),
            Observation::Repeat { count: 2 }
        );
        assert_eq!(
            cache.observe(event("c", 102), t0 + Duration::from_millis(500)),
            Observation::Repeat { count: 3 }
        );
        // The deadline is set by the first unwritten repeat, not pushed back.
        assert_eq!(cache.flush_deadline(), Some(t0 + Duration::from_secs(1)));
        let dirty = cache.take_dirty();
        assert_eq!(dirty.len(), 1);
        assert_eq!(dirty[0].metadata.name.as_deref(), Some("a"));
        let series = dirty[0].series.clone().unwrap();
        assert_eq!(series.count, 3);
        assert_eq!(series.last_observed_time.0.as_second(), 102);
        assert_eq!(
            (cache.flush_deadline(), cache.take_dirty().len()),
            (None, 0)
        );
        // The heartbeat takes every series, dirty or not.
        assert_eq!(cache.take_all_series().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_series_finishes_lazily_or_by_the_sweep() {
        let mut cache = SeriesCache::new(Duration::from_secs(1), FINISH_TIME);
        let t0 = Instant::now();
        cache.observe(event("a", 0), t0);
        cache.observe(event("b", 1), t0);
        // Unwritten when the next occurrence comes 6 minutes later: the old
        // series' count is handed back to be written before the new create.
        let Observation::Create { event: e, finished } =
            cache.observe(event("c", 360), t0 + FINISH_TIME)
        else {
            panic!("a new series")
        };
        assert_eq!(e.metadata.name.as_deref(), Some("c"));
        let finished = finished.expect("unwritten count");
        assert_eq!(finished.metadata.name.as_deref(), Some("a"));
        assert_eq!(finished.series.as_ref().map(|s| s.count), Some(2));
        assert_eq!(cache.len(), 1);
        // The sweep forgets what was silent long enough, returning unwritten counts.
        let t1 = t0 + FINISH_TIME;
        cache.observe(event("d", 361), t1);
        assert_eq!(cache.finish(t1 + FINISH_TIME - Duration::from_secs(1)), []);
        assert_eq!(cache.len(), 1);
        let unwritten = cache.finish(t1 + FINISH_TIME);
        assert_eq!(unwritten.len(), 1);
        assert!(cache.is_empty());
        assert_eq!(cache.flush_deadline(), None);
    }
}
