//! The bounded, never-blocking queue between recorders and a broadcaster's task, and
//! that task's lifecycle ([`Pipeline`]), shared by both Event pipelines (core/v1 and
//! events.k8s.io/v1).
//!
//! Recording runs inside sync handlers, so it must never wait: an event is
//! offered with `try_send`, and when the queue is full (the API server is down,
//! something is spamming) it is dropped, counted, and a warning is logged at most
//! once every 10 seconds. client-go makes the same choice (`ActionOrDrop` with
//! `DropIfChannelFull`).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::broadcaster::BroadcasterError;

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

/// The queue plus the one task that drains it: what both broadcasters are made of.
/// The task is spawned once ([`start`](Self::start)), told to stop through a watch
/// channel, and given at most a timeout to drain on [`shutdown`](Self::shutdown);
/// dropping the pipeline aborts it, so no task outlives its broadcaster.
#[derive(Debug)]
pub(crate) struct Pipeline<T> {
    pub(crate) queue: Arc<EventQueue<T>>,
    rx: Mutex<Option<mpsc::Receiver<T>>>,
    shutdown_tx: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl<T> Pipeline<T> {
    /// A queue of `size` events (at least 1); no task yet.
    pub(crate) fn new(size: usize) -> Self {
        let (tx, rx) = mpsc::channel(size.max(1));
        Self {
            queue: Arc::new(EventQueue::new(tx)),
            rx: Mutex::new(Some(rx)),
            shutdown_tx: watch::Sender::new(false),
            task: Mutex::new(None),
        }
    }

    /// Spawns the draining task, built from the receiving end and a shutdown signal;
    /// [`BroadcasterError::AlreadyStarted`] the second time (or after shutdown).
    pub(crate) fn start<F>(
        &self,
        task: impl FnOnce(mpsc::Receiver<T>, watch::Receiver<bool>) -> F,
    ) -> Result<(), BroadcasterError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let rx = self
            .rx
            .lock()
            .take()
            .ok_or(BroadcasterError::AlreadyStarted)?;
        let run = task(rx, self.shutdown_tx.subscribe());
        *self.task.lock() = Some(tokio::spawn(run));
        Ok(())
    }

    /// Events the recorders dropped (queue full or shut down).
    pub(crate) fn dropped(&self) -> u64 {
        self.queue.dropped()
    }

    /// Signals shutdown and waits at most `timeout` for the task to drain; `false`
    /// if the timeout cut it short (the task is then aborted). Idempotent.
    pub(crate) async fn shutdown(&self, timeout: Duration) -> bool {
        self.shutdown_tx.send_replace(true);
        // Never started: nothing will be written; close the queue.
        drop(self.rx.lock().take());
        let task = self.task.lock().take();
        let Some(mut task) = task else {
            return true;
        };
        match tokio::time::timeout(timeout, &mut task).await {
            Ok(_) => true,
            Err(_) => {
                task.abort();
                tracing::warn!(
                    ?timeout,
                    "event broadcaster shutdown timed out; queued events dropped"
                );
                false
            }
        }
    }
}

impl<T> Drop for Pipeline<T> {
    fn drop(&mut self) {
        // Dropped without `shutdown`: the task must not be left behind.
        self.shutdown_tx.send_replace(true);
        if let Some(task) = self.task.get_mut().take() {
            task.abort();
        }
    }
}

/// Resolves once the pipeline's shutdown was signalled (or the pipeline is gone).
pub(crate) async fn shut_down(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|down| *down).await;
}
