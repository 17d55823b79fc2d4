//! The broadcaster with a scripted sink under paused time: queueing and dropping,
//! retries, the 404 fallback and shutdown.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use record::{
    BroadcasterError, BroadcasterOptions, CorrelatorOptions, EventBroadcaster, EventSink,
    EventType, SinkError, TokioClock,
};

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Create { name: String, count: i32 },
    Patch { name: String, count: i32 },
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    stored: HashMap<String, Event>,
    /// Failures handed out to the next calls, in order.
    failures: VecDeque<SinkError>,
    /// Fail every call with this, after `failures` is empty.
    always: Option<SinkError>,
    /// Never answer (simulates a hung API server).
    hang: bool,
}

/// An in-memory API server for Events with scriptable failures.
#[derive(Clone, Default)]
struct ScriptedSink(Arc<Mutex<State>>);

impl ScriptedSink {
    fn calls(&self) -> Vec<Call> {
        self.0.lock().unwrap().calls.clone()
    }
    fn stored(&self) -> Vec<Event> {
        self.0.lock().unwrap().stored.values().cloned().collect()
    }

    async fn answer(&self, call: Call, event: &Event, create: bool) -> Result<Event, SinkError> {
        let hang = {
            let mut s = self.0.lock().unwrap();
            s.calls.push(call);
            s.hang
        };
        if hang {
            std::future::pending::<()>().await;
        }
        let mut s = self.0.lock().unwrap();
        if let Some(err) = s.failures.pop_front().or_else(|| s.always.clone()) {
            return Err(err);
        }
        let name = event.metadata.name.clone().unwrap();
        if !create && !s.stored.contains_key(&name) {
            return Err(SinkError::NotFound);
        }
        s.stored.insert(name, event.clone());
        Ok(event.clone())
    }
}

impl EventSink for ScriptedSink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        let call = Call::Create {
            name: event.metadata.name.clone().unwrap(),
            count: event.count.unwrap(),
        };
        self.answer(call, event, true).await
    }

    async fn patch(&self, event: &Event, _patch: &serde_json::Value) -> Result<Event, SinkError> {
        let call = Call::Patch {
            name: event.metadata.name.clone().unwrap(),
            count: event.count.unwrap(),
        };
        self.answer(call, event, false).await
    }
}

fn options(queue_size: usize) -> BroadcasterOptions {
    BroadcasterOptions {
        queue_size,
        correlator: CorrelatorOptions {
            clock: Arc::new(TokioClock::new()),
            ..CorrelatorOptions::default()
        },
        ..BroadcasterOptions::default()
    }
}

fn config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.uid = Some(format!("uid-{name}"));
    cm
}

/// Polls (in paused time) until `sink` saw `n` calls, failing after an hour.
async fn wait_for_calls(sink: &ScriptedSink, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3600);
    while sink.calls().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {:?}",
            sink.calls()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_drops_without_blocking_and_counts() {
    let broadcaster = EventBroadcaster::new(options(5));
    let recorder = broadcaster.new_recorder("c", "");
    // Nothing consumes yet: 5 fit, 3 are dropped, and `event` returned every time.
    for i in 0..8 {
        recorder.event(&config_map(&format!("cm-{i}")), EventType::Normal, "R", "m");
    }
    assert_eq!(recorder.dropped_events(), 3);
    assert_eq!(broadcaster.dropped_events(), 3);
    // The queued ones are written once a sink starts.
    let sink = ScriptedSink::default();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    assert_eq!(sink.stored().len(), 5);
}

#[tokio::test(start_paused = true)]
async fn the_default_queue_holds_1000_events() {
    let broadcaster = EventBroadcaster::new(options(record::broadcaster::MAX_QUEUED_EVENTS));
    let recorder = broadcaster.new_recorder("c", "");
    let cm = config_map("cm");
    for i in 0..1010 {
        recorder.event(&cm, EventType::Normal, "R", format!("m{i}"));
    }
    assert_eq!(recorder.dropped_events(), 10);
}

#[tokio::test(start_paused = true)]
async fn repeats_become_patches_through_the_sink() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    for _ in 0..3 {
        recorder.event(&config_map("cm"), EventType::Warning, "R", "m");
    }
    wait_for_calls(&sink, 3).await;
    let calls = sink.calls();
    let Call::Create { name, count: 1 } = &calls[0] else {
        panic!("{calls:?}");
    };
    assert_eq!(
        calls[1..],
        [
            Call::Patch {
                name: name.clone(),
                count: 2
            },
            Call::Patch {
                name: name.clone(),
                count: 3
            }
        ]
    );
    assert_eq!(sink.stored().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_patch_of_a_vanished_event_creates_it_again() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    recorder.event(&config_map("cm"), EventType::Warning, "R", "m");
    wait_for_calls(&sink, 1).await;
    // The Event expires on the server.
    sink.0.lock().unwrap().stored.clear();
    recorder.event(&config_map("cm"), EventType::Warning, "R", "m");
    wait_for_calls(&sink, 3).await;
    let calls = sink.calls();
    let Call::Create { name, .. } = &calls[0] else {
        panic!("{calls:?}");
    };
    assert_eq!(
        calls[1..],
        [
            Call::Patch {
                name: name.clone(),
                count: 2
            },
            Call::Create {
                name: name.clone(),
                count: 2
            }
        ]
    );
    assert_eq!(sink.stored().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_at_most_12_times() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    sink.0.lock().unwrap().always = Some(SinkError::Transient("connection refused".into()));
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    let start = tokio::time::Instant::now();
    recorder.event(&config_map("cm"), EventType::Warning, "R", "m");
    wait_for_calls(&sink, 12).await;
    // 1 randomised pause (< 10 s) + 10 pauses of 10 s.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(100) && took <= Duration::from_secs(111),
        "{took:?}"
    );
    // Then it gives up: no 13th try however long we wait.
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(sink.calls().len(), 12);
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_then_success_writes_once() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    sink.0.lock().unwrap().failures.extend([
        SinkError::Transient("a".into()),
        SinkError::Transient("b".into()),
    ]);
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    broadcaster
        .new_recorder("c", "")
        .event(&config_map("cm"), EventType::Warning, "R", "m");
    wait_for_calls(&sink, 3).await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(sink.calls().len(), 3);
    assert_eq!(sink.stored().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn rejected_events_are_not_retried() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    sink.0
        .lock()
        .unwrap()
        .failures
        .push_back(SinkError::Rejected {
            code: 422,
            reason: "Invalid".into(),
            message: "bad".into(),
        });
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    recorder.event(&config_map("a"), EventType::Warning, "R", "m");
    recorder.event(&config_map("b"), EventType::Warning, "R", "m");
    wait_for_calls(&sink, 2).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    // One try for "a" (rejected), one for "b" (stored).
    assert_eq!(sink.calls().len(), 2);
    assert_eq!(sink.stored().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_flushes_queued_events_and_then_drops_new_ones() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    let recorder = broadcaster.new_recorder("c", "");
    for i in 0..20 {
        recorder.event(&config_map(&format!("cm-{i}")), EventType::Normal, "R", "m");
    }
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    assert_eq!(sink.stored().len(), 20);
    // After shutdown, recording is still safe: dropped and counted.
    recorder.event(&config_map("late"), EventType::Normal, "R", "m");
    assert_eq!(recorder.dropped_events(), 1);
    assert_eq!(sink.stored().len(), 20);
    assert_eq!(
        broadcaster.start_recording_to_sink(sink.clone()),
        Err(BroadcasterError::AlreadyStarted)
    );
}

#[tokio::test(start_paused = true)]
async fn shutdown_does_not_retry_failing_writes() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    sink.0.lock().unwrap().always = Some(SinkError::Transient("down".into()));
    let recorder = broadcaster.new_recorder("c", "");
    for i in 0..3 {
        recorder.event(&config_map(&format!("cm-{i}")), EventType::Normal, "R", "m");
    }
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    assert!(broadcaster.shutdown(Duration::from_secs(5)).await);
    // At most one retry cycle was under way when shutdown came: each queued
    // event got a single try afterwards, no 10-second pauses.
    assert!(sink.calls().len() <= 4, "{:?}", sink.calls());
    assert!(sink.calls().len() >= 3, "{:?}", sink.calls());
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_up_after_its_timeout_on_a_hung_sink() {
    let broadcaster = EventBroadcaster::new(options(100));
    let sink = ScriptedSink::default();
    sink.0.lock().unwrap().hang = true;
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    broadcaster
        .new_recorder("c", "")
        .event(&config_map("cm"), EventType::Normal, "R", "m");
    wait_for_calls(&sink, 1).await;
    let start = tokio::time::Instant::now();
    assert!(!broadcaster.shutdown(Duration::from_secs(5)).await);
    assert_eq!(start.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn starting_twice_is_an_error() {
    let broadcaster = EventBroadcaster::new(options(10));
    broadcaster
        .start_recording_to_sink(ScriptedSink::default())
        .unwrap();
    assert_eq!(
        broadcaster.start_recording_to_sink(ScriptedSink::default()),
        Err(BroadcasterError::AlreadyStarted)
    );
}
