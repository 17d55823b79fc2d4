//! Which Events API a controller process writes, and the broadcaster behind its one
//! recorder: client-go's `tools/events` (events.k8s.io/v1, the default) or
//! `tools/record` (core/v1). See [`EventsApi`].

use std::time::Duration;

use clap::ValueEnum;
use leaderelection::hostname;
use record::{BroadcasterOptions, EventBroadcaster, EventRecorder};

/// Which Events API the process writes (`--events-api`). Controllers do not care:
/// they hold one [`EventRecorder`] either way; this only picks the broadcaster
/// behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum EventsApi {
    /// events.k8s.io/v1 Events with an `EventSeries` (client-go's `tools/events`,
    /// the record crate's `events` module): what kube-scheduler and controller-runtime's
    /// `GetEventRecorder` write, shown by `kubectl events` as `(x20 over 2m)`, and
    /// the only API that keeps an Event's `action` and `related` object. The
    /// default.
    #[default]
    #[value(name = "events.k8s.io/v1")]
    EventsV1,
    /// core/v1 Events with `count` / `lastTimestamp` (client-go's `tools/record`,
    /// the record crate's `EventBroadcaster`): for tools that still read those fields.
    #[value(name = "core/v1")]
    CoreV1,
}

impl EventsApi {
    /// The flag value: `events.k8s.io/v1` or `core/v1`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventsApi::EventsV1 => "events.k8s.io/v1",
            EventsApi::CoreV1 => "core/v1",
        }
    }
}

impl std::fmt::Display for EventsApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Event broadcaster of the API chosen, behind the one recorder type.
#[derive(Debug)]
pub(crate) enum Events {
    CoreV1(EventBroadcaster),
    EventsV1(record::events::EventBroadcaster),
}

impl Events {
    /// Starts writing Events with `client` and returns the recorder for them:
    /// reporting controller `name`, instance from this host's name (the Pod's name
    /// in a cluster): `source.host` for core/v1, `<name>-<host>` for events.k8s.io.
    pub(crate) fn start(
        api: EventsApi,
        client: &kube::Client,
        name: &str,
    ) -> Result<(Self, EventRecorder), record::BroadcasterError> {
        let host = hostname().unwrap_or_default();
        Ok(match api {
            EventsApi::CoreV1 => {
                let events = EventBroadcaster::new(BroadcasterOptions::default());
                events.start_recording_to_sink(client.clone())?;
                let recorder = events.new_recorder(name, host);
                (Self::CoreV1(events), recorder)
            }
            EventsApi::EventsV1 => {
                let events = record::events::EventBroadcaster::default();
                events.start_recording_to_sink(client.clone())?;
                let recorder = events.new_recorder(name, host);
                (Self::EventsV1(events), recorder)
            }
        })
    }

    /// Flushes queued Events (and unwritten series counts), waiting at most
    /// `timeout`; `false` if that was not enough.
    pub(crate) async fn shutdown(&self, timeout: Duration) -> bool {
        match self {
            Self::CoreV1(events) => events.shutdown(timeout).await,
            Self::EventsV1(events) => events.shutdown(timeout).await,
        }
    }
}

/// The reason of the Warning Event written on an object a controller's informer cannot
/// decode (`kubectl events` shows it on the object).
pub const REASON_FAILED_DECODE: &str = "FailedDecode";

/// What every informer of a manager's factory does with an object its type cannot
/// decode ([`cache::unreadable`]): besides the log, the metric and the pipeline
/// page's banner, a Warning Event on the object itself, where `kubectl describe`
/// shows it to whoever wrote the object.
pub(crate) fn unreadable_hook(recorder: EventRecorder) -> cache::unreadable::UnreadableHook {
    std::sync::Arc::new(move |unreadable: &cache::Unreadable| {
        recorder.event_ref(
            &unreadable.object_reference(),
            record::EventType::Warning,
            REASON_FAILED_DECODE,
            format!(
                "left out of this controller's cache, which cannot decode it (it is not reconciled until it can): {}",
                unreadable.error
            ),
        );
    })
}
