//! The events.k8s.io/v1 pipeline (`record::events`) with an in-memory API server
//! under paused time: creates, series, the flush delay, finishing, the
//! heartbeat, dropping, 404s, retries and shutdown.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use record::events::{BroadcasterOptions, EventBroadcaster, EventSink};
use record::{EventRecorder, EventType, SinkError, TokioClock};
use tokio::time::Instant;

#[derive(Debug, Clone, PartialEq)]
enum Call {
    /// A create; `count` is the series count it carried, if any.
    Create { name: String, count: Option<i32> },
    /// A patch of `series` to `count`.
    Patch { name: String, count: i32 },
}

#[derive(Default)]
struct State {
    calls: Vec<(Instant, Call)>,
    stored: HashMap<String, Event>,
    /// Failures handed out to the next calls, in order.
    failures: VecDeque<SinkError>,
    /// Fail every call with this, after `failures` is empty.
    always: Option<SinkError>,
}

/// An in-memory events.k8s.io API with scriptable failures.
#[derive(Clone, Default)]
struct MemorySink(Arc<Mutex<State>>);

impl MemorySink {
    fn calls(&self) -> Vec<Call> {
        self.0
            .lock()
            .unwrap()
            .calls
            .iter()
            .map(|(_, c)| c.clone())
            .collect()
    }
    fn timed_calls(&self) -> Vec<(Instant, Call)> {
        self.0.lock().unwrap().calls.clone()
    }
    fn stored(&self) -> Vec<Event> {
        let mut events: Vec<_> = self.0.lock().unwrap().stored.values().cloned().collect();
        events.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        events
    }
    fn creates(&self) -> usize {
        self.calls()
            .iter()
            .filter(|c| matches!(c, Call::Create { .. }))
            .count()
    }
    fn fail(&self) -> Option<SinkError> {
        let mut s = self.0.lock().unwrap();
        s.failures.pop_front().or_else(|| s.always.clone())
    }
}

impl EventSink for MemorySink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        let name = event.metadata.name.clone().unwrap();
        let call = Call::Create {
            name: name.clone(),
            count: event.series.as_ref().map(|s| s.count),
        };
        self.0.lock().unwrap().calls.push((Instant::now(), call));
        if let Some(err) = self.fail() {
            return Err(err);
        }
        assert_eq!(event.metadata.resource_version, None);
        let mut s = self.0.lock().unwrap();
        if s.stored.contains_key(&name) {
            return Err(SinkError::Rejected {
                code: 409,
                reason: "AlreadyExists".into(),
                message: name,
            });
        }
        s.stored.insert(name, event.clone());
        Ok(event.clone())
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
        let name = event.metadata.name.clone().unwrap();
        // Only `series` may change on an events.k8s.io/v1 Event.
        let body = patch.as_object().expect("a merge patch object");
        assert_eq!(body.keys().collect::<Vec<_>>(), ["series"], "{patch}");
        let series: EventSeries = serde_json::from_value(body["series"].clone()).unwrap();
        let call = Call::Patch {
            name: name.clone(),
            count: series.count,
        };
        self.0.lock().unwrap().calls.push((Instant::now(), call));
        if let Some(err) = self.fail() {
            return Err(err);
        }
        let mut s = self.0.lock().unwrap();
        let stored = s.stored.get_mut(&name).ok_or(SinkError::NotFound)?;
        stored.series = Some(series);
        Ok(stored.clone())
    }
}

/// The wall time at the start of every test: `eventTime`s are exact.
fn wall_start() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn options() -> BroadcasterOptions {
    BroadcasterOptions {
        clock: Arc::new(TokioClock::with_wall_time(wall_start())),
        ..BroadcasterOptions::default()
    }
}

fn started(options: BroadcasterOptions) -> (EventBroadcaster, MemorySink, EventRecorder) {
    let broadcaster = EventBroadcaster::new(options);
    let sink = MemorySink::default();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("foo-controller", "host-1");
    (broadcaster, sink, recorder)
}

fn config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.uid = Some(format!("uid-{name}"));
    cm
}

fn warn(recorder: &EventRecorder, cm: &ConfigMap) {
    recorder.event(cm, EventType::Warning, "ErrResourceExists", "not ours");
}

async fn sleep(secs: u64) {
    tokio::time::sleep(Duration::from_secs(secs)).await;
}

fn series_count(event: &Event) -> Option<i32> {
    event.series.as_ref().map(|s| s.count)
}

#[tokio::test(start_paused = true)]
async fn the_first_occurrence_is_created_with_every_required_field() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    warn(&recorder, &cm);
    sleep(5).await;
    assert_eq!(sink.creates(), 1);
    let [event] = &sink.stored()[..] else {
        panic!("{:?}", sink.stored())
    };
    assert!(event.metadata.name.as_deref().unwrap().starts_with("cm."));
    assert_eq!(event.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("foo-controller")
    );
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some("foo-controller-host-1")
    );
    // `event` (no action given): action = reason.
    assert_eq!(event.action.as_deref(), Some("ErrResourceExists"));
    assert_eq!(event.reason.as_deref(), Some("ErrResourceExists"));
    assert_eq!(event.note.as_deref(), Some("not ours"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let regarding = event.regarding.clone().unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.uid.as_deref(), Some("uid-cm"));
    assert_eq!(event.related, None);
    assert_eq!(event.series, None);
    assert_eq!(event.event_time, Some(MicroTime(wall_start())));
    assert_eq!(event.deprecated_count, None);
}

#[tokio::test(start_paused = true)]
async fn eventf_keeps_action_and_related() {
    let (_b, sink, recorder) = started(options());
    let related = ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: Some("web".into()),
        namespace: Some("ns".into()),
        ..ObjectReference::default()
    };
    recorder.eventf(
        &config_map("cm"),
        Some(&related),
        EventType::Normal,
        "Adopted",
        "Adopt",
        "adopted deployment web",
    );
    // An empty action would be rejected by the server: the reason stands in.
    recorder.eventf(
        &config_map("cm2"),
        None,
        EventType::Normal,
        "Synced",
        "",
        "ok",
    );
    sleep(5).await;
    let stored = sink.stored();
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].action.as_deref(), Some("Adopt"));
    assert_eq!(stored[0].related.as_ref(), Some(&related));
    assert_eq!(stored[1].action.as_deref(), Some("Synced"));
}

#[tokio::test(start_paused = true)]
async fn a_repeat_becomes_a_series_of_two() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    warn(&recorder, &cm);
    sleep(10).await;
    warn(&recorder, &cm);
    sleep(5).await;
    let calls = sink.calls();
    let Call::Create { name, count: None } = &calls[0] else {
        panic!("{calls:?}")
    };
    assert_eq!(
        calls[1..],
        [Call::Patch {
            name: name.clone(),
            count: 2
        }]
    );
    let stored = sink.stored();
    let series = stored[0].series.clone().unwrap();
    assert_eq!(series.count, 2);
    // lastObservedTime is the repeat's time, 10 s after the first eventTime.
    let first = stored[0].event_time.clone().unwrap().0;
    assert_eq!(
        series.last_observed_time.0.duration_since(first).as_secs(),
        10
    );
}

#[tokio::test(start_paused = true)]
async fn twenty_identical_events_are_one_event_with_count_20_in_two_writes() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    let start = Instant::now();
    for _ in 0..20 {
        warn(&recorder, &cm);
    }
    sleep(3).await;
    let timed = sink.timed_calls();
    let calls: Vec<_> = timed.iter().map(|(_, c)| c.clone()).collect();
    let Call::Create { name, count: None } = &calls[0] else {
        panic!("{calls:?}")
    };
    assert_eq!(
        calls[1..],
        [Call::Patch {
            name: name.clone(),
            count: 20
        }]
    );
    // Written after the 1-second flush delay, not at a 30-minute heartbeat.
    assert_eq!(timed[1].0 - start, Duration::from_secs(1));
    let stored = sink.stored();
    assert_eq!(stored.len(), 1);
    assert_eq!(series_count(&stored[0]), Some(20));
}

#[tokio::test(start_paused = true)]
async fn a_steady_stream_costs_at_most_one_patch_per_flush_delay() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    // 100 occurrences, one every 100 ms, for 10 s.
    for _ in 0..100 {
        warn(&recorder, &cm);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    sleep(2).await;
    let calls = sink.calls();
    assert_eq!(sink.creates(), 1, "{calls:?}");
    assert!(calls.len() <= 12, "{} writes: {calls:?}", calls.len());
    assert_eq!(series_count(&sink.stored()[0]), Some(100));
}

#[tokio::test(start_paused = true)]
async fn the_flush_delay_is_configurable() {
    let (_b, sink, recorder) = started(BroadcasterOptions {
        flush_delay: Duration::from_secs(5),
        ..options()
    });
    let cm = config_map("cm");
    for _ in 0..3 {
        warn(&recorder, &cm);
    }
    sleep(4).await;
    assert_eq!(sink.calls().len(), 1, "only the create so far");
    sleep(2).await;
    assert_eq!(series_count(&sink.stored()[0]), Some(3));
}

#[tokio::test(start_paused = true)]
async fn different_reason_regarding_action_or_type_are_separate_events() {
    let (_b, sink, recorder) = started(options());
    let (cm, other) = (config_map("cm"), config_map("other"));
    let record = |obj: &ConfigMap, t: EventType, reason: &str, action: &str, note: &str| {
        recorder.eventf(obj, None, t, reason, action, note);
    };
    record(&cm, EventType::Warning, "Failed", "Sync", "first");
    record(&other, EventType::Warning, "Failed", "Sync", "first");
    record(&cm, EventType::Warning, "Invalid", "Sync", "first");
    record(&cm, EventType::Warning, "Failed", "Create", "first");
    record(&cm, EventType::Normal, "Failed", "Sync", "first");
    // The note is not part of the key (client-go's getKey): this joins the first
    // Event's series, which keeps its first note (the server forbids changing it).
    record(&cm, EventType::Warning, "Failed", "Sync", "second");
    sleep(3).await;
    assert_eq!(sink.creates(), 5, "{:?}", sink.calls());
    let stored = sink.stored();
    assert_eq!(stored.len(), 5);
    let series: Vec<_> = stored.iter().filter(|e| e.series.is_some()).collect();
    assert_eq!(series.len(), 1);
    assert_eq!(series_count(series[0]), Some(2));
    assert_eq!(series[0].note.as_deref(), Some("first"));
    assert_eq!(series[0].reason.as_deref(), Some("Failed"));
    assert_eq!(series[0].type_.as_deref(), Some("Warning"));
}

#[tokio::test(start_paused = true)]
async fn a_series_silent_for_6_minutes_is_finished() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    warn(&recorder, &cm);
    warn(&recorder, &cm);
    sleep(2).await;
    // 5 min 59 s of silence: still the same series.
    tokio::time::sleep(Duration::from_secs(6 * 60 - 3)).await;
    warn(&recorder, &cm);
    sleep(2).await;
    assert_eq!(sink.creates(), 1);
    assert_eq!(series_count(&sink.stored()[0]), Some(3));
    let first = sink.stored()[0].metadata.name.clone();
    // 6 minutes of silence: the series is over; the same event starts a new one.
    tokio::time::sleep(Duration::from_secs(6 * 60)).await;
    warn(&recorder, &cm);
    sleep(2).await;
    assert_eq!(sink.creates(), 2, "{:?}", sink.calls());
    let stored = sink.stored();
    assert_eq!(stored.len(), 2);
    let new = stored.iter().find(|e| e.metadata.name != first).unwrap();
    assert_eq!(new.series, None);
    // The finished one keeps its final count.
    let old = stored.iter().find(|e| e.metadata.name == first).unwrap();
    assert_eq!(series_count(old), Some(3));
}

#[tokio::test(start_paused = true)]
async fn the_30_minute_heartbeat_rewrites_every_live_series() {
    let (_b, sink, recorder) = started(options());
    let start = Instant::now();
    let (cm, single) = (config_map("cm"), config_map("single"));
    warn(&recorder, &cm);
    warn(&recorder, &cm);
    warn(&recorder, &single);
    // Keep the series alive with a repeat every 5 minutes, up to minute 25.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(5 * 60)).await;
        warn(&recorder, &cm);
    }
    // Minute 25 + 1 s: its patch is written (count 7). Nothing else happens
    // until the heartbeat at minute 30.
    tokio::time::sleep_until(start + Duration::from_secs(30 * 60 - 1)).await;
    let before = sink.calls().len();
    let last = sink.calls().last().cloned().unwrap();
    assert!(matches!(last, Call::Patch { count: 7, .. }), "{last:?}");
    sleep(2).await;
    let timed = sink.timed_calls();
    let beat: Vec<_> = timed[before..].to_vec();
    // One patch, of the series (the singleton finished long ago), same count.
    assert_eq!(beat.len(), 1, "{beat:?}");
    assert_eq!(beat[0].0 - start, Duration::from_secs(30 * 60));
    assert_eq!(beat[0].1, last);
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_drops_and_counts_without_blocking() {
    let broadcaster = EventBroadcaster::new(BroadcasterOptions {
        queue_size: 5,
        ..options()
    });
    let recorder = broadcaster.new_recorder("c", "h");
    // Nothing consumes yet: 5 fit, 3 are dropped, and every call returned.
    for i in 0..8 {
        warn(&recorder, &config_map(&format!("cm-{i}")));
    }
    assert_eq!(recorder.dropped_events(), 3);
    assert_eq!(broadcaster.dropped_events(), 3);
    let sink = MemorySink::default();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    assert_eq!(sink.stored().len(), 5);
    // After shutdown, recording is still safe: dropped and counted.
    warn(&recorder, &config_map("late"));
    assert_eq!(recorder.dropped_events(), 4);
}

#[tokio::test(start_paused = true)]
async fn a_404_on_patch_creates_the_event_again_with_its_series() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    warn(&recorder, &cm);
    sleep(2).await;
    // The Event expires on the server.
    sink.0.lock().unwrap().stored.clear();
    warn(&recorder, &cm);
    warn(&recorder, &cm);
    sleep(2).await;
    let calls = sink.calls();
    let Call::Create { name, .. } = &calls[0] else {
        panic!("{calls:?}")
    };
    assert_eq!(
        calls[1..],
        [
            Call::Patch {
                name: name.clone(),
                count: 3
            },
            Call::Create {
                name: name.clone(),
                count: Some(3)
            },
        ]
    );
    assert_eq!(series_count(&sink.stored()[0]), Some(3));
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_at_most_12_times_with_jitter() {
    let (_b, sink, recorder) = started(options());
    sink.0.lock().unwrap().always = Some(SinkError::Transient("connection refused".into()));
    let start = Instant::now();
    warn(&recorder, &config_map("cm"));
    sleep(600).await;
    let timed = sink.timed_calls();
    assert_eq!(timed.len(), 12, "{timed:?}");
    for pair in timed.windows(2) {
        let pause = pair[1].0 - pair[0].0;
        assert!(
            pause >= Duration::from_secs(10) && pause <= Duration::from_millis(12_500),
            "{pause:?}"
        );
    }
    assert!(timed[11].0 - start >= Duration::from_secs(110));
}

#[tokio::test(start_paused = true)]
async fn a_failed_patch_is_retried_and_then_lands() {
    let (_b, sink, recorder) = started(options());
    let cm = config_map("cm");
    warn(&recorder, &cm);
    sleep(2).await;
    sink.0.lock().unwrap().failures.extend([
        SinkError::Transient("a".into()),
        SinkError::Transient("b".into()),
    ]);
    warn(&recorder, &cm);
    sleep(60).await;
    assert_eq!(sink.calls().len(), 4, "{:?}", sink.calls());
    assert_eq!(series_count(&sink.stored()[0]), Some(2));
}

#[tokio::test(start_paused = true)]
async fn rejected_events_are_not_retried() {
    let (_b, sink, recorder) = started(options());
    sink.0
        .lock()
        .unwrap()
        .failures
        .push_back(SinkError::Rejected {
            code: 422,
            reason: "Invalid".into(),
            message: "bad".into(),
        });
    warn(&recorder, &config_map("a"));
    warn(&recorder, &config_map("b"));
    sleep(600).await;
    assert_eq!(sink.calls().len(), 2);
    assert_eq!(sink.stored().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_writes_queued_events_and_unwritten_counts_at_once() {
    let (broadcaster, sink, recorder) = started(options());
    let start = Instant::now();
    for _ in 0..5 {
        warn(&recorder, &config_map("cm"));
    }
    warn(&recorder, &config_map("other"));
    assert!(broadcaster.shutdown(Duration::from_secs(5)).await);
    // No waiting for the flush delay: the counts are written on the way out.
    assert!(start.elapsed() < Duration::from_secs(1));
    let stored = sink.stored();
    assert_eq!(stored.len(), 2);
    assert_eq!(series_count(&stored[0]), Some(5));
    assert_eq!(series_count(&stored[1]), None);
}

#[tokio::test(start_paused = true)]
async fn shutdown_does_not_retry_failing_writes() {
    let (broadcaster, sink, recorder) = started(options());
    sink.0.lock().unwrap().always = Some(SinkError::Transient("down".into()));
    for i in 0..3 {
        warn(&recorder, &config_map(&format!("cm-{i}")));
    }
    assert!(broadcaster.shutdown(Duration::from_secs(5)).await);
    // At most one retry cycle was under way when shutdown came: each queued
    // event got a single try afterwards.
    let n = sink.calls().len();
    assert!((3..=4).contains(&n), "{:?}", sink.calls());
}
