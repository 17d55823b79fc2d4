//! The broadcaster: client-go's `EventBroadcaster` (`NewBroadcaster`,
//! `NewRecorder`, `StartRecordingToSink`, `recordToSink`, `Shutdown`).
//!
//! The broadcaster owns the queue between recorders and the API server. Recorders
//! ([`EventBroadcaster::new_recorder`]) put events in; one task
//! ([`EventBroadcaster::start_recording_to_sink`]) takes them out one by one, runs
//! them through the [`EventCorrelator`] and writes the result to an
//! [`EventSink`]. One task means the correlator needs no locks and events about an
//! object are written in the order they were recorded.
//!
//! # Retries
//!
//! A write that fails transiently is retried up to 12 times in total (client-go's
//! `maxTriesPerEvent`), 10 seconds apart; the first pause is a random fraction of
//! that so that many controllers do not hammer an API server that just came back
//! at the same instant. The task works on one event at a time, so while the API
//! server is down new events wait in the queue, and once it is full they are
//! dropped by the recorders, which never wait. A patch that finds its Event gone
//! (404) becomes a create.
//!
//! # Shutdown
//!
//! [`EventBroadcaster::shutdown`] stops accepting events, then lets the task write
//! what is already queued, each with **one** attempt and no retry pauses (like
//! client-go after `Shutdown`), and waits for that at most the given timeout.
//! Deviation: client-go's `Shutdown` does not flush; events still queued are lost.
//! Dropping the broadcaster without `shutdown` aborts the task at once (no
//! background task outlives its owner); queued events are then lost.
//!
//! Deviation: events recorded before `start_recording_to_sink` wait in the queue
//! (client-go's broadcaster drops them when nobody watches yet), and there is one
//! sink per broadcaster (client-go lets any number of watchers subscribe; a log
//! line per event is written at debug level instead of `StartStructuredLogging`).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource};
use rand::Rng;
use tokio::sync::{mpsc, watch};

use crate::correlator::{CorrelatorOptions, EventCorrelateResult, EventCorrelator};
use crate::queue::{Pipeline, shut_down};
use crate::recorder::{BroadcastRecorder, EventRecorder};
use crate::sink::{EventSink, SinkError};

/// client-go's `maxQueuedEvents`.
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// client-go's `maxTriesPerEvent`.
pub const MAX_TRIES_PER_EVENT: u32 = 12;
/// client-go's `defaultSleepDuration` between tries.
pub const DEFAULT_SLEEP_DURATION: Duration = Duration::from_secs(10);

/// Settings of an [`EventBroadcaster`]; [`Default`] is client-go's.
#[derive(Debug, Clone)]
pub struct BroadcasterOptions {
    /// Events queued before recorders start dropping. 1000.
    pub queue_size: usize,
    /// Tries per event, the first included. 12.
    pub max_tries_per_event: u32,
    /// Pause between tries (the first one is a random fraction). 10 s.
    pub sleep_duration: Duration,
    /// The correlator's settings, including the clock (also used for the
    /// recorders' timestamps).
    pub correlator: CorrelatorOptions,
}

impl Default for BroadcasterOptions {
    fn default() -> Self {
        Self {
            queue_size: MAX_QUEUED_EVENTS,
            max_tries_per_event: MAX_TRIES_PER_EVENT,
            sleep_duration: DEFAULT_SLEEP_DURATION,
            correlator: CorrelatorOptions::default(),
        }
    }
}

/// Errors of the broadcaster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BroadcasterError {
    /// `start_recording_to_sink` was already called (or the broadcaster is shut
    /// down).
    #[error("the event broadcaster is already recording or shut down")]
    AlreadyStarted,
}

/// Receives events from recorders and writes them to a sink. See the
/// [module docs](self).
#[derive(Debug)]
pub struct EventBroadcaster {
    options: BroadcasterOptions,
    pipeline: Pipeline<Event>,
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        Self::new(BroadcasterOptions::default())
    }
}

impl EventBroadcaster {
    /// A broadcaster with `options` (client-go's `NewBroadcaster` /
    /// `NewBroadcasterWithCorrelatorOptions`). Needs no runtime until
    /// [`start_recording_to_sink`](Self::start_recording_to_sink).
    pub fn new(options: BroadcasterOptions) -> Self {
        Self {
            pipeline: Pipeline::new(options.queue_size),
            options,
        }
    }

    /// A recorder whose events carry `source.component = reportingController =
    /// component` and `source.host = reportingInstance = host` (client-go's
    /// `NewRecorder` with a `v1.EventSource`). An empty `host` is left unset.
    pub fn new_recorder(
        &self,
        component: impl Into<String>,
        host: impl Into<String>,
    ) -> EventRecorder {
        let host = host.into();
        EventRecorder::broadcast(BroadcastRecorder {
            source: EventSource {
                component: Some(component.into()),
                host: (!host.is_empty()).then_some(host),
            },
            queue: self.pipeline.queue.clone(),
            clock: self.options.correlator.clock.clone(),
        })
    }

    /// Spawns the task that correlates queued events and writes them to `sink`
    /// (client-go's `StartRecordingToSink`). A [`kube::Client`] is a sink. Must be
    /// called within a tokio runtime, once.
    pub fn start_recording_to_sink<S: EventSink>(&self, sink: S) -> Result<(), BroadcasterError> {
        self.pipeline.start(|rx, shutdown| {
            Worker {
                sink,
                correlator: EventCorrelator::new(self.options.correlator.clone()),
                max_tries: self.options.max_tries_per_event.max(1),
                sleep: self.options.sleep_duration,
                shutdown,
            }
            .run(rx)
        })
    }

    /// Events the recorders dropped (queue full or shut down); for a metric.
    pub fn dropped_events(&self) -> u64 {
        self.pipeline.dropped()
    }

    /// Stops accepting events and writes what is queued, one try each, waiting at
    /// most `timeout` (client-go's `Shutdown`, plus a flush). Returns `true` if
    /// everything queued was handled, `false` if the timeout cut it short (the
    /// task is then aborted). Idempotent.
    pub async fn shutdown(&self, timeout: Duration) -> bool {
        self.pipeline.shutdown(timeout).await
    }
}

/// The one task per broadcaster: client-go's `StartEventWatcher` goroutine running
/// `recordToSink`.
struct Worker<S> {
    sink: S,
    correlator: EventCorrelator,
    max_tries: u32,
    sleep: Duration,
    shutdown: watch::Receiver<bool>,
}

impl<S: EventSink> Worker<S> {
    async fn run(mut self, mut rx: mpsc::Receiver<Event>) {
        loop {
            let event = tokio::select! {
                biased;
                event = rx.recv() => event,
                () = shut_down(&mut self.shutdown) => {
                    // Stop accepting; what is already queued is still received.
                    rx.close();
                    rx.recv().await
                }
            };
            let Some(event) = event else { break };
            self.record_to_sink(event).await;
        }
        tracing::debug!("event broadcaster stopped");
    }

    /// client-go's `recordToSink`.
    async fn record_to_sink(&mut self, event: Event) {
        tracing::debug!(
            object = ?event.involved_object.name,
            namespace = ?event.involved_object.namespace,
            kind = ?event.involved_object.kind,
            r#type = ?event.type_,
            reason = ?event.reason,
            message = ?event.message,
            "event occurred"
        );
        let result = self.correlator.event_correlate(event);
        if result == EventCorrelateResult::Skip {
            tracing::debug!("event dropped by the spam filter");
            return;
        }
        let mut tries = 0;
        loop {
            if self.record_event(&result).await {
                return;
            }
            tries += 1;
            if tries >= self.max_tries {
                tracing::error!(tries, "unable to write event (retry limit exceeded)");
                return;
            }
            // Randomise the first pause so clients do not retry in lock-step.
            let delay = if tries == 1 {
                self.sleep.mul_f64(rand::rng().random::<f64>())
            } else {
                self.sleep
            };
            tokio::select! {
                () = shut_down(&mut self.shutdown) => {
                    tracing::error!("unable to write event (broadcaster is shut down)");
                    return;
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// client-go's `recordEvent`: true when done (written or abandoned), false to
    /// retry.
    async fn record_event(&mut self, result: &EventCorrelateResult) -> bool {
        let written = match result {
            EventCorrelateResult::Skip => return true,
            EventCorrelateResult::Create(event) => self.sink.create(event).await,
            EventCorrelateResult::Patch { event, patch } => {
                match self.sink.patch(event, patch).await {
                    // Expired or deleted: create it again under the same name.
                    Err(SinkError::NotFound) => self.sink.create(event).await,
                    other => other,
                }
            }
        };
        match written {
            Ok(stored) => {
                self.correlator.update_state(&stored);
                true
            }
            Err(SinkError::Transient(err)) => {
                tracing::error!(%err, "unable to write event (may retry after sleeping)");
                false
            }
            Err(err) if err.is_expected_rejection() => {
                tracing::debug!(%err, "server rejected event (will not retry)");
                true
            }
            Err(err) => {
                tracing::error!(%err, "server rejected event (will not retry)");
                true
            }
        }
    }
}
