//! Dedupe: client-go's `eventLogger` (`eventObserve`, `updateState`).
//!
//! The cheapest way to report "this happened again" is not a new Event but a
//! higher `count` on the existing one. The logger remembers, per cache key, the
//! name, count and firstTimestamp of the Event it last wrote. When the same key
//! comes again it rewrites the event to **that** name and first timestamp with
//! `count + 1`, and produces a patch of exactly the fields that change:
//! `count`, `lastTimestamp` and `message` (client-go computes it as a two-way
//! strategic merge patch against a copy with those three fields blanked, which
//! yields the same three fields).
//!
//! The key is the full [`get_event_key`] for ordinary
//! events (so only identical events merge), and the group key for aggregate events
//! (so one aggregate Event absorbs its whole group).
//!
//! Like client-go, the logger has **no time window**: an entry lives until the LRU
//! evicts it. If the Event it names is gone from the server by then (Events expire,
//! one hour by default), the patch gets a 404 and the sink creates the Event anew.

use k8s_openapi::api::core::v1::Event;
use serde_json::json;

use crate::event::get_event_key;
use crate::lru::LruCache;

/// What the logger remembers about the last write of one key (client-go's
/// `eventLog`).
#[derive(Debug, Clone, Default)]
struct EventLog {
    count: i32,
    first_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

impl EventLog {
    fn of(event: &Event) -> Self {
        Self {
            count: event.count.unwrap_or(0),
            first_timestamp: event.first_timestamp.clone(),
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        }
    }
}

/// Counts occurrences of events and turns repeats into patches. See the
/// [module docs](self).
#[derive(Debug)]
pub struct EventLogger {
    cache: LruCache<EventLog>,
}

impl EventLogger {
    /// A logger remembering at most `lru_cache_size` keys.
    pub fn new(lru_cache_size: usize) -> Self {
        Self {
            cache: LruCache::new(lru_cache_size),
        }
    }

    /// client-go's `eventObserve`: records `event` under `key`. Returns the event to
    /// write and, for a repeat, the patch body (`count`, `lastTimestamp`,
    /// `message`) to apply to the existing Event instead of creating one.
    pub fn event_observe(
        &mut self,
        mut event: Event,
        key: &str,
    ) -> (Event, Option<serde_json::Value>) {
        let mut patch = None;
        if let Some(last) = self.cache.peek(key).filter(|l| l.count > 0) {
            event.metadata.name = last.name.clone();
            event.metadata.resource_version = last.resource_version.clone();
            event.first_timestamp = last.first_timestamp.clone();
            event.count = Some(last.count.saturating_add(1));
            patch = Some(json!({
                "count": event.count,
                "lastTimestamp": event.last_timestamp,
                "message": event.message,
            }));
        }
        self.cache.put(key.to_string(), EventLog::of(&event));
        (event, patch)
    }

    /// client-go's `updateState`: remembers what the server returned for `event`
    /// (its name and resourceVersion), under the event's full key.
    pub fn update_state(&mut self, event: &Event) {
        self.cache.put(get_event_key(event), EventLog::of(event));
    }

    /// How many keys the logger currently remembers.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the logger remembers no key.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }
}
