//! The aggregator: client-go's `EventAggregator`.
//!
//! Dedupe (the [event logger](crate::event_logger)) only folds *identical* events.
//! A controller that puts a changing detail in its message ("pod x-7f2 failed",
//! "pod x-9c1 failed", ...) would still create one Event per message. The
//! aggregator groups events that are **similar**: equal in everything but the
//! message (source, involvedObject, type, reason, reporting controller and
//! instance). Within a 10-minute window it remembers the distinct messages of a
//! group; once it has seen 10 (client-go's `defaultAggregateMaxEvents`), every
//! further event of the group is replaced by **one** aggregate Event whose message
//! is `"(combined from similar events): <latest message>"`. That aggregate is then
//! deduplicated under the group's key, so the flood becomes one Event whose count
//! grows and whose message shows the latest detail.
//!
//! The window is measured from the group's *last* event: a group that keeps
//! firing stays aggregated; after 10 quiet minutes it starts afresh.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use tokio::time::Instant;

use crate::clock::Clock;
use crate::event::{get_event_key, unique_suffix};
use crate::lru::LruCache;

/// client-go's `defaultAggregateMaxEvents`.
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// client-go's `defaultAggregateIntervalInSeconds` (600 s).
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);

/// Groups events for aggregation (client-go's `EventAggregatorKeyFunc`): returns
/// (aggregate key, local key). Events with the same aggregate key are similar; the
/// local key tells them apart.
pub type EventAggregatorKeyFunc = fn(&Event) -> (String, String);

/// Produces the message of an aggregate event (client-go's
/// `EventAggregatorMessageFunc`).
pub type EventAggregatorMessageFunc = fn(&Event) -> String;

/// What the aggregator remembers about one group (client-go's `aggregateRecord`).
#[derive(Debug, Default)]
struct AggregateRecord {
    /// Distinct local keys (messages) seen in the current window.
    local_keys: BTreeSet<String>,
    /// When the group last fired; `None` for a fresh record.
    last_timestamp: Option<Instant>,
}

/// Identifies similar events and folds them into one. See the [module docs](self).
#[derive(Debug)]
pub struct EventAggregator {
    cache: LruCache<AggregateRecord>,
    key_func: EventAggregatorKeyFunc,
    message_func: EventAggregatorMessageFunc,
    max_events: usize,
    max_interval: Duration,
    clock: Arc<dyn Clock>,
}

impl EventAggregator {
    /// An aggregator remembering at most `lru_cache_size` groups.
    pub fn new(
        lru_cache_size: usize,
        key_func: EventAggregatorKeyFunc,
        message_func: EventAggregatorMessageFunc,
        max_events: usize,
        max_interval: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            cache: LruCache::new(lru_cache_size),
            key_func,
            message_func,
            max_events: max_events.max(1),
            max_interval,
            clock,
        }
    }

    /// client-go's `EventAggregate`: returns the event to go on with and its cache
    /// key for the dedupe logger. Below the threshold that is `new_event` itself
    /// and its full [`get_event_key`]; at or above it, a new aggregate event and
    /// the group's aggregate key (so later aggregates update the same Event).
    pub fn event_aggregate(&mut self, new_event: Event) -> (Event, String) {
        let now = self.clock.now();
        let event_key = get_event_key(&new_event);
        let (aggregate_key, local_key) = (self.key_func)(&new_event);

        let max_interval = self.max_interval;
        let record = self
            .cache
            .get_or_insert_with(&aggregate_key, AggregateRecord::default);
        // Too old (or fresh)? Start a new window.
        let expired = record
            .last_timestamp
            .is_none_or(|last| now.saturating_duration_since(last) > max_interval);
        if expired {
            record.local_keys.clear();
        }
        record.local_keys.insert(local_key);
        record.last_timestamp = Some(now);

        if record.local_keys.len() < self.max_events {
            return (new_event, event_key);
        }
        // Do not let the set grow beyond the threshold (client-go's `PopAny`).
        record.local_keys.pop_first();

        let wall = self.clock.wall_now();
        let object_name = new_event.involved_object.name.clone().unwrap_or_default();
        let aggregate = Event {
            metadata: ObjectMeta {
                name: Some(format!("{object_name}.{}", unique_suffix(wall))),
                namespace: new_event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(wall)),
            last_timestamp: Some(Time(wall)),
            message: Some((self.message_func)(&new_event)),
            // Deviation: client-go leaves reportingController/Instance empty on the
            // aggregate; we keep them so the aggregate shows who reported it.
            reporting_component: new_event.reporting_component.clone(),
            reporting_instance: new_event.reporting_instance.clone(),
            type_: new_event.type_.clone(),
            reason: new_event.reason.clone(),
            source: new_event.source.clone(),
            involved_object: new_event.involved_object,
            ..Event::default()
        };
        (aggregate, aggregate_key)
    }

    /// How many groups the aggregator currently remembers.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the aggregator remembers no group.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}
