//! The broadcaster's one task: client-go `tools/events`' `recordToSink`,
//! `recordingWorker`, `attemptRecording`, `recordEvent` and the two periodic
//! loops (`finishSeries` every 6 minutes, `refreshExistingEventSeries` every 30)
//! in a single `select!` loop. See the [broadcaster](super::broadcaster) for
//! what is written when.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::events::v1::Event;
use rand::Rng;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};

use super::series::{Observation, SeriesCache};
use super::sink::EventSink;
use crate::clock::Clock;
use crate::queue::shut_down;
use crate::sink::SinkError;

/// client-go's `wait.Jitter(sleepDuration, 0.25)` factor.
const JITTER: f64 = 0.25;

pub(crate) struct Worker<S> {
    pub(crate) sink: S,
    pub(crate) cache: SeriesCache,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) max_tries: u32,
    pub(crate) sleep: Duration,
    pub(crate) finish_time: Duration,
    pub(crate) refresh_time: Duration,
    pub(crate) shutdown: watch::Receiver<bool>,
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether a write is finished (written or given up) or worth another try.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Done,
    Retry,
}

impl<S: EventSink> Worker<S> {
    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<Event>) {
        let start = Instant::now();
        let periodic = |period: Duration| {
            let period = period.max(Duration::from_millis(1));
            let mut interval = tokio::time::interval_at(start + period, period);
            interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
            interval
        };
        let mut finish = periodic(self.finish_time);
        let mut refresh = periodic(self.refresh_time);
        let mut accepting = true;
        loop {
            let flush_at = self.cache.flush_deadline();
            tokio::select! {
                biased;
                () = shut_down(&mut self.shutdown), if accepting => {
                    // Stop accepting; what is already queued is still received.
                    rx.close();
                    accepting = false;
                }
                // Before new events, so a flood cannot postpone the writes.
                () = sleep_until(flush_at) => self.flush().await,
                _ = finish.tick() => self.finish_series().await,
                _ = refresh.tick() => self.refresh_series().await,
                event = rx.recv() => match event {
                    Some(event) => self.observe(event).await,
                    None => break,
                },
            }
        }
        // The queue is drained: write the counts still unwritten.
        self.flush().await;
        tracing::debug!("events.k8s.io event broadcaster stopped");
    }

    fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    async fn observe(&mut self, event: Event) {
        tracing::debug!(
            object = ?event.regarding.as_ref().and_then(|r| r.name.as_deref()),
            namespace = ?event.regarding.as_ref().and_then(|r| r.namespace.as_deref()),
            kind = ?event.regarding.as_ref().and_then(|r| r.kind.as_deref()),
            r#type = ?event.type_,
            reason = ?event.reason,
            action = ?event.action,
            note = ?event.note,
            "event occurred"
        );
        match self.cache.observe(event, self.clock.now()) {
            Observation::Create { event, finished } => {
                if let Some(finished) = finished {
                    self.attempt_recording(*finished).await;
                }
                self.attempt_recording(*event).await;
            }
            Observation::Repeat { count } => {
                tracing::trace!(count, "event series grew; written at the next flush");
            }
        }
    }

    /// Writes every dirty series (ours: client-go waits for the heartbeat).
    async fn flush(&mut self) {
        for event in self.cache.take_dirty() {
            self.attempt_recording(event).await;
        }
    }

    /// client-go's `finishSeries`.
    async fn finish_series(&mut self) {
        for event in self.cache.finish(self.clock.now()) {
            self.attempt_recording(event).await;
        }
    }

    /// client-go's `refreshExistingEventSeries` (the heartbeat).
    async fn refresh_series(&mut self) {
        for event in self.cache.take_all_series() {
            self.attempt_recording(event).await;
        }
    }

    /// client-go's `attemptRecording`: tries until done, at most `max_tries`
    /// times, pausing `sleep` plus jitter between tries; after shutdown, once.
    async fn attempt_recording(&mut self, event: Event) {
        let mut tries = 0;
        loop {
            if self.record_event(&event).await == Outcome::Done {
                return;
            }
            tries += 1;
            if tries >= self.max_tries {
                tracing::error!(
                    tries,
                    name = ?event.metadata.name,
                    "unable to write event (retry limit exceeded)"
                );
                return;
            }
            if self.shutting_down() {
                tracing::error!("unable to write event (broadcaster is shut down)");
                return;
            }
            let delay = self
                .sleep
                .mul_f64(1.0 + JITTER * rand::rng().random::<f64>());
            tokio::select! {
                () = shut_down(&mut self.shutdown) => {
                    tracing::error!("unable to write event (broadcaster is shut down)");
                    return;
                }
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// client-go's `recordEvent`: a series is patched (404: created again with
    /// its series), a singleton created.
    async fn record_event(&self, event: &Event) -> Outcome {
        let is_series = event.series.is_some();
        let written = match &event.series {
            Some(series) => {
                let patch = serde_json::json!({ "series": series });
                match self.sink.patch(event, &patch).await {
                    // Expired or deleted: create it again under the same name.
                    Err(SinkError::NotFound) => self.create(event).await,
                    other => other,
                }
            }
            None => self.create(event).await,
        };
        match written {
            Ok(_) => Outcome::Done,
            Err(SinkError::Transient(err)) => {
                tracing::error!(%err, "unable to write event (may retry after sleeping)");
                Outcome::Retry
            }
            // The patch found nothing and the create found it there: someone
            // created it in between; the next try patches it (as client-go).
            Err(SinkError::Rejected { code: 409, .. }) if is_series => Outcome::Retry,
            Err(err) if err.is_expected_rejection() => {
                tracing::debug!(%err, "server rejected event (will not retry)");
                Outcome::Done
            }
            Err(err) => {
                tracing::error!(%err, name = ?event.metadata.name, "server rejected event (will not retry)");
                Outcome::Done
            }
        }
    }

    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        let mut event = event.clone();
        // As client-go: a create never carries a resourceVersion.
        event.metadata.resource_version = None;
        self.sink.create(&event).await
    }
}
