//! The bounded, never-blocking queue between recorders and a broadcaster's task,
//! shared by both Event pipelines (core/v1 and events.k8s.io/v1).
//!
//! Recording runs inside sync handlers, so it must never wait: an event is
//! offered with `try_send`, and when the queue is full (the API server is down,
//! something is spamming) it is dropped, counted, and a warning is logged at most
//! once every 10 seconds. client-go makes the same choice (`ActionOrDrop` with
//! `DropIfChannelFull`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How often at most the "dropped events" warning is logged.
const DROP_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The sending side of a broadcaster's queue, shared by all its recorders. `T`
/// is the Event type of the pipeline (core/v1 or events.k8s.io/v1).
pub(crate) struct EventQueue<T> {
    pub(crate) tx: mpsc::Sender<T>,
    dropped: AtomicU64,
    last_drop_log: Mutex<Option<Instant>>,
}

impl<T> EventQueue<T> {
    pub(crate) fn new(tx: mpsc::Sender<T>) -> Self {
        Self {
            tx,
            dropped: AtomicU64::new(0),
            last_drop_log: Mutex::new(None),
        }
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues `event` or drops it; never waits.
    pub(crate) fn offer(&self, event: T) {
        let Err(err) = self.tx.try_send(event) else {
            return;
        };
        let total = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        let why = match err {
            mpsc::error::TrySendError::Full(_) => "too many queued events",
            mpsc::error::TrySendError::Closed(_) => "the event broadcaster is shut down",
        };
        // Rate-limited log; `try_lock` so that even logging never waits.
        if let Some(mut last) = self.last_drop_log.try_lock() {
            let now = Instant::now();
            if last.is_none_or(|t| now.saturating_duration_since(t) >= DROP_LOG_INTERVAL) {
                *last = Some(now);
                tracing::warn!(
                    dropped_total = total,
                    "unable to record event: {why}, dropped"
                );
            }
        }
    }
}

impl<T> std::fmt::Debug for EventQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventQueue")
            .field("queued", &(self.tx.max_capacity() - self.tx.capacity()))
            .field("dropped", &self.dropped())
            .finish()
    }
}
