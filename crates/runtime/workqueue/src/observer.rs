//! Watching what happens to each item: a hook for tracing tools (the live pipeline
//! view), where [`metrics`](crate::metrics) only counts.
//!
//! client-go's queue has no such hook; following one key through it means adding
//! log lines. An observer is told, for every add, *what the add did* - the one thing
//! the caller cannot see from outside, because deduplication is silent - and for
//! every delayed add, how long the item will wait. It is optional and set once per
//! queue ([`Queue::set_observer`](crate::Queue::set_observer)); a queue without one
//! pays a single pointer check per add.
//!
//! Observers are called with the queue's lock held (the item is only borrowed there):
//! keep them short, and never call back into the queue.

use std::time::Duration;

/// What one add did to the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// The item was not in the queue: it joined the line.
    Queued,
    /// The item was waiting at a lower priority: it moved to the end of the line of
    /// the new one.
    Raised,
    /// A worker holds the item: it is marked dirty and goes back in line when the
    /// worker is done with it.
    Dirty,
    /// The item was already waiting (or dirty) at this priority or a higher one: the
    /// add changed nothing. client-go's deduplication.
    Deduplicated,
}

impl AddOutcome {
    /// A short lowercase name: `queued`, `raised`, `dirty`, `deduped`.
    pub const fn name(self) -> &'static str {
        match self {
            AddOutcome::Queued => "queued",
            AddOutcome::Raised => "raised",
            AddOutcome::Dirty => "dirty",
            AddOutcome::Deduplicated => "deduped",
        }
    }
}

/// Told what happens to each item of one queue. See the [module docs](self).
pub trait QueueObserver<T>: Send + Sync {
    /// `item` was added at `priority` (after a delay, too, once it was due), with
    /// `outcome`.
    fn added(&self, item: &T, priority: i32, outcome: AddOutcome);

    /// `item` was added with a `delay` (`add_after`, `add_rate_limited`): it joins
    /// the queue when the delay is over, and [`added`](Self::added) is called then.
    fn delayed(&self, item: &T, delay: Duration, priority: i32) {
        let _ = (item, delay, priority);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::{AddOpts, DelayingQueue, RateLimitingQueue};

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);

    impl QueueObserver<&'static str> for Seen {
        fn added(&self, item: &&'static str, priority: i32, outcome: AddOutcome) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{item} {} p{priority}", outcome.name()));
        }
        fn delayed(&self, item: &&'static str, delay: Duration, priority: i32) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{item} delayed {delay:?} p{priority}"));
        }
    }

    #[tokio::test]
    async fn every_add_reports_what_it_did() {
        let queue = RateLimitingQueue::with_default_rate_limiter("observed");
        let seen = Arc::new(Seen::default());
        assert!(queue.set_observer(seen.clone()));
        assert!(!queue.set_observer(Arc::new(Seen::default())), "set once");

        queue.add("a");
        queue.add("a");
        let opts = AddOpts {
            priority: 10,
            ..AddOpts::default()
        };
        queue.add_with_opts("a", opts);
        let item = queue.get().await.unwrap();
        queue.add("a");
        drop(item);
        queue.add("b");

        assert_eq!(
            *seen.0.lock().unwrap(),
            [
                "a queued p0",
                "a deduped p0",
                "a raised p10",
                "a dirty p0",
                "b queued p0"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_delayed_add_reports_the_delay_then_the_add_when_due() {
        let queue: DelayingQueue<&'static str> = DelayingQueue::new();
        let seen = Arc::new(Seen::default());
        queue.set_observer(seen.clone());
        queue.add_after("a", Duration::from_millis(50));
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(queue.len(), 1);
        assert_eq!(
            *seen.0.lock().unwrap(),
            ["a delayed 50ms p0", "a queued p0"]
        );
    }
}
