//! [`QueueConfig`]: a queue's name and metrics provider.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;

use crate::metrics::MetricsProvider;

/// How a queue is named and instrumented: client-go's `TypedQueueConfig`.
///
/// A queue reports metrics only when it has a non-empty [`name`](Self::name) and a
/// metrics provider (its own, or the process-wide one set with
/// [`set_global_metrics_provider`](crate::set_global_metrics_provider)), exactly like
/// client-go, where an unnamed queue gets no metrics.
#[derive(Clone)]
pub struct QueueConfig {
    /// The queue's name, the `name` label on every metric. Empty means no metrics.
    pub name: String,
    /// The provider for this queue's metrics; `None` uses the global provider.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// Ignore priorities: every add counts as priority 0, whatever it asks for, so the
    /// queue is client-go's single FIFO even for code written for priorities (the
    /// controllers' `--fifo-queue` switch). Off by default; a queue nobody passes a
    /// priority to is client-go's FIFO either way (see [`crate::priority`]).
    pub fifo: bool,
    /// How many hand-outs in a row may pass over a queued item of a lower priority
    /// before the longest-waiting such item gets the next one (see
    /// [`priority`](crate::priority), "Starvation"): lower priorities keep at least
    /// one hand-out in N + 1 however busy the higher ones are. `None`: strictly
    /// highest first, as controller-runtime's queue, where a steady stream of
    /// default-priority events can hold initial-list items back for ever. Default
    /// [`priority::STARVATION_BOUND`](crate::priority::STARVATION_BOUND).
    pub starvation_bound: Option<NonZeroU32>,
}

impl Default for QueueConfig {
    /// Unnamed, the global metrics provider, priorities honoured with the default
    /// starvation bound.
    fn default() -> Self {
        Self {
            name: String::new(),
            metrics_provider: None,
            fifo: false,
            starvation_bound: NonZeroU32::new(crate::priority::STARVATION_BOUND),
        }
    }
}

impl QueueConfig {
    /// A config with the given name and the global metrics provider.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Ignore priorities (`true`: every add counts as priority 0, see
    /// [`fifo`](Self::fifo)) or honour them (`false`, the default).
    pub fn with_fifo(mut self, fifo: bool) -> Self {
        self.fifo = fifo;
        self
    }

    /// Sets the [starvation bound](Self::starvation_bound) (`None`: strictly highest
    /// priority first).
    pub fn with_starvation_bound(mut self, bound: Option<NonZeroU32>) -> Self {
        self.starvation_bound = bound;
        self
    }

    /// Use `provider` for this queue's metrics instead of the global provider.
    pub fn with_metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider.is_some())
            .field("fifo", &self.fifo)
            .field("starvation_bound", &self.starvation_bound)
            .finish()
    }
}
