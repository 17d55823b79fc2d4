//! The correlator: client-go's `EventCorrelator`.
//!
//! Every event a recorder emits passes through three stages before it reaches the
//! API server, in client-go's order:
//!
//! 1. **aggregate** ([`EventAggregator`]): the 10th distinct message of a group of
//!    similar events within 10 minutes turns into an aggregate event
//!    "(combined from similar events): ...";
//! 2. **dedupe** ([`EventLogger`]): a repeat of an event (or of an aggregate) becomes
//!    a patch of the existing Event, `count + 1`, new `lastTimestamp`;
//! 3. **spam filter** ([`EventSourceObjectSpamFilter`]): at most 25 writes per
//!    (source, object) at once, then one per 5 minutes; the rest are dropped.
//!
//! The spam filter runs *last*, on what would be written, so a patch costs a
//! token just like a create: the filter bounds API writes, not distinct events.
//! (A dropped repeat still counted in the logger, so the next patch that gets
//! through jumps the count accordingly, as in client-go.)
//!
//! The correlator is plain, synchronous state (`&mut self`, no locks, no I/O):
//! the broadcaster's single task owns it, and tests drive it directly with a
//! [`TokioClock`](crate::TokioClock) under paused time.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;

use crate::aggregator::{
    DEFAULT_AGGREGATE_INTERVAL, DEFAULT_AGGREGATE_MAX_EVENTS, EventAggregator,
    EventAggregatorKeyFunc, EventAggregatorMessageFunc,
};
use crate::clock::{Clock, RealClock};
use crate::event::{
    event_aggregator_by_reason_func, event_aggregator_by_reason_message_func, get_spam_key,
};
use crate::event_logger::EventLogger;
use crate::spam_filter::{
    DEFAULT_SPAM_BURST, DEFAULT_SPAM_QPS, EventSourceObjectSpamFilter, EventSpamKeyFunc,
};

/// client-go's `maxLruCacheEntries`: the bound of each correlator cache.
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;

/// Tuning of the correlator: client-go's `CorrelatorOptions`. [`Default`] gives
/// client-go's defaults.
#[derive(Debug, Clone)]
pub struct CorrelatorOptions {
    /// Bound of each cache (spam buckets, aggregate groups, dedupe keys). 4096.
    pub lru_cache_size: usize,
    /// Spam filter: events allowed at once per source and object. 25.
    pub burst_size: u32,
    /// Spam filter: refill rate in events per second. 1/300.
    pub qps: f64,
    /// Aggregator grouping. [`event_aggregator_by_reason_func`].
    pub key_func: EventAggregatorKeyFunc,
    /// Aggregate message. [`event_aggregator_by_reason_message_func`].
    pub message_func: EventAggregatorMessageFunc,
    /// Distinct messages in the window before aggregation. 10.
    pub max_events: usize,
    /// Aggregation window, counted from a group's last event. 10 minutes.
    pub max_interval: Duration,
    /// The clock for windows and timestamps. [`RealClock`].
    pub clock: Arc<dyn Clock>,
    /// Spam filter key. [`get_spam_key`].
    pub spam_key_func: EventSpamKeyFunc,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        Self {
            lru_cache_size: MAX_LRU_CACHE_ENTRIES,
            burst_size: DEFAULT_SPAM_BURST,
            qps: DEFAULT_SPAM_QPS,
            key_func: event_aggregator_by_reason_func,
            message_func: event_aggregator_by_reason_message_func,
            max_events: DEFAULT_AGGREGATE_MAX_EVENTS,
            max_interval: DEFAULT_AGGREGATE_INTERVAL,
            clock: Arc::new(RealClock),
            spam_key_func: get_spam_key,
        }
    }
}

/// What to do with an event (client-go's `EventCorrelateResult`, with its
/// `Skip` flag and `Count > 1` test made explicit).
#[derive(Debug, Clone, PartialEq)]
pub enum EventCorrelateResult {
    /// Create this Event.
    Create(Event),
    /// Patch the existing Event `event.metadata.name` with `patch` (a strategic
    /// merge patch of `count`, `lastTimestamp`, `message`). `event` is the full
    /// Event, to create if the patch finds it gone (404).
    Patch {
        /// The Event as it should now be.
        event: Event,
        /// The patch body.
        patch: serde_json::Value,
    },
    /// Dropped by the spam filter.
    Skip,
}

/// Filters, aggregates, counts and de-duplicates events. See the
/// [module docs](self).
#[derive(Debug)]
pub struct EventCorrelator {
    spam_filter: EventSourceObjectSpamFilter,
    aggregator: EventAggregator,
    logger: EventLogger,
}

impl Default for EventCorrelator {
    fn default() -> Self {
        Self::new(CorrelatorOptions::default())
    }
}

impl EventCorrelator {
    /// A correlator with `options` (client-go's `NewEventCorrelatorWithOptions`).
    pub fn new(options: CorrelatorOptions) -> Self {
        let size = options.lru_cache_size;
        Self {
            spam_filter: EventSourceObjectSpamFilter::new(
                size,
                options.burst_size,
                options.qps,
                options.clock.clone(),
                options.spam_key_func,
            ),
            aggregator: EventAggregator::new(
                size,
                options.key_func,
                options.message_func,
                options.max_events,
                options.max_interval,
                options.clock,
            ),
            logger: EventLogger::new(size),
        }
    }

    /// client-go's `EventCorrelate`: aggregate, dedupe, spam-filter.
    pub fn event_correlate(&mut self, new_event: Event) -> EventCorrelateResult {
        let (aggregate, key) = self.aggregator.event_aggregate(new_event);
        let (observed, patch) = self.logger.event_observe(aggregate, &key);
        if self.spam_filter.filter(&observed) {
            return EventCorrelateResult::Skip;
        }
        match patch {
            Some(patch) => EventCorrelateResult::Patch {
                event: observed,
                patch,
            },
            None => EventCorrelateResult::Create(observed),
        }
    }

    /// client-go's `UpdateState`: remember what the server returned after a write.
    pub fn update_state(&mut self, event: &Event) {
        self.logger.update_state(event);
    }

    /// Entries in the (spam filter, aggregator, dedupe) caches; each is bounded by
    /// [`CorrelatorOptions::lru_cache_size`].
    pub fn cache_sizes(&self) -> (usize, usize, usize) {
        (
            self.spam_filter.len(),
            self.aggregator.len(),
            self.logger.len(),
        )
    }
}
