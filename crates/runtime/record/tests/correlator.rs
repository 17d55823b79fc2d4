//! The correlator's client-go behaviour, with paused tokio time and a
//! [`TokioClock`], so windows and refills are exact.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::jiff::Timestamp;
use record::event::make_event;
use record::{CorrelatorOptions, EventCorrelateResult, EventCorrelator, EventType, TokioClock};

fn clock() -> Arc<TokioClock> {
    Arc::new(TokioClock::with_wall_time(
        Timestamp::from_second(1_750_000_000).unwrap(),
    ))
}

fn correlator_with(clock: Arc<TokioClock>, lru_cache_size: usize) -> EventCorrelator {
    EventCorrelator::new(CorrelatorOptions {
        clock,
        lru_cache_size,
        ..CorrelatorOptions::default()
    })
}

fn correlator(clock: Arc<TokioClock>) -> EventCorrelator {
    correlator_with(clock, record::correlator::MAX_LRU_CACHE_ENTRIES)
}

fn reference(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        name: Some(name.into()),
        namespace: Some("ns".into()),
        uid: Some(format!("uid-{name}")),
        resource_version: Some("1".into()),
        field_path: None,
    }
}

fn event(clock: &TokioClock, object: &str, reason: &str, message: &str) -> Event {
    use record::Clock;
    make_event(
        reference(object),
        &EventSource {
            component: Some("foo-controller".into()),
            host: None,
        },
        EventType::Warning,
        reason.into(),
        message.into(),
        clock.wall_now(),
    )
}

/// (name, count, message) of a Create or Patch; panics on Skip.
fn written(result: &EventCorrelateResult) -> (String, i32, String) {
    let e = match result {
        EventCorrelateResult::Create(e) => e,
        EventCorrelateResult::Patch { event, .. } => event,
        EventCorrelateResult::Skip => panic!("unexpected Skip"),
    };
    (
        e.metadata.name.clone().unwrap(),
        e.count.unwrap(),
        e.message.clone().unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn identical_events_create_once_then_patch_with_growing_count() {
    let clock = clock();
    let mut c = correlator(clock.clone());

    let first = c.event_correlate(event(&clock, "cm", "ErrResourceExists", "not ours"));
    let EventCorrelateResult::Create(created) = &first else {
        panic!("first event must be a create: {first:?}");
    };
    let name = created.metadata.name.clone().unwrap();
    let first_ts = created.first_timestamp.clone();

    for count in 2..=5 {
        tokio::time::advance(Duration::from_secs(7)).await;
        let result = c.event_correlate(event(&clock, "cm", "ErrResourceExists", "not ours"));
        let EventCorrelateResult::Patch { event, patch } = &result else {
            panic!("repeat must be a patch: {result:?}");
        };
        assert_eq!(event.metadata.name.as_deref(), Some(name.as_str()));
        assert_eq!(event.count, Some(count));
        assert_eq!(event.first_timestamp, first_ts, "firstTimestamp is kept");
        assert!(event.last_timestamp > event.first_timestamp);
        // The patch carries exactly count, lastTimestamp and message.
        let fields = patch.as_object().unwrap();
        assert_eq!(fields.len(), 3, "{patch}");
        assert_eq!(patch["count"], count);
        assert_eq!(patch["message"], "not ours");
        assert_eq!(
            patch["lastTimestamp"],
            serde_json::to_value(&event.last_timestamp).unwrap()
        );
    }
}

#[tokio::test(start_paused = true)]
async fn different_messages_reasons_and_objects_are_separate_events() {
    let clock = clock();
    let mut c = correlator(clock.clone());
    let a = c.event_correlate(event(&clock, "cm", "R", "one"));
    let b = c.event_correlate(event(&clock, "cm", "R", "two"));
    let d = c.event_correlate(event(&clock, "cm", "Other", "one"));
    let e = c.event_correlate(event(&clock, "cm-2", "R", "one"));
    let names: Vec<String> = [&a, &b, &d, &e].iter().map(|r| written(r).0).collect();
    for r in [&a, &b, &d, &e] {
        assert!(matches!(r, EventCorrelateResult::Create(_)), "{r:?}");
    }
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "{names:?}");
}

#[tokio::test(start_paused = true)]
async fn eleven_similar_messages_aggregate() {
    let clock = clock();
    let mut c = correlator(clock.clone());
    // Messages 1..=9 are below the threshold: ordinary Events.
    for i in 1..=9 {
        let r = c.event_correlate(event(
            &clock,
            "cm",
            "FailedSync",
            &format!("pod-{i} failed"),
        ));
        assert!(matches!(r, EventCorrelateResult::Create(_)), "{i}: {r:?}");
        assert_eq!(written(&r).2, format!("pod-{i} failed"));
        tokio::time::advance(Duration::from_secs(30)).await;
    }
    // The 10th distinct message reaches it: a new aggregate Event.
    let tenth = c.event_correlate(event(&clock, "cm", "FailedSync", "pod-10 failed"));
    assert!(
        matches!(tenth, EventCorrelateResult::Create(_)),
        "{tenth:?}"
    );
    let (agg_name, count, message) = written(&tenth);
    assert_eq!(count, 1);
    assert_eq!(message, "(combined from similar events): pod-10 failed");
    // The 11th updates that aggregate Event.
    let eleventh = c.event_correlate(event(&clock, "cm", "FailedSync", "pod-11 failed"));
    assert!(
        matches!(eleventh, EventCorrelateResult::Patch { .. }),
        "{eleventh:?}"
    );
    assert_eq!(
        written(&eleventh),
        (
            agg_name,
            2,
            "(combined from similar events): pod-11 failed".to_string()
        )
    );
}

#[tokio::test(start_paused = true)]
async fn after_the_aggregation_window_a_new_event_is_created() {
    let clock = clock();
    let mut c = correlator(clock.clone());
    for i in 1..=11 {
        c.event_correlate(event(&clock, "cm", "FailedSync", &format!("m{i}")));
    }
    // Still inside the window (measured from the group's last event): aggregated.
    tokio::time::advance(Duration::from_secs(600)).await;
    let inside = c.event_correlate(event(&clock, "cm", "FailedSync", "m12"));
    assert!(
        written(&inside)
            .2
            .starts_with("(combined from similar events)"),
        "{inside:?}"
    );
    // Ten quiet minutes and a bit: the group starts afresh, a plain new Event.
    tokio::time::advance(Duration::from_secs(601)).await;
    let after = c.event_correlate(event(&clock, "cm", "FailedSync", "m13"));
    let EventCorrelateResult::Create(created) = &after else {
        panic!("expected a new Event: {after:?}");
    };
    assert_eq!(created.message.as_deref(), Some("m13"));
    assert_eq!(created.count, Some(1));
    assert_ne!(created.metadata.name, Some(written(&inside).0));
}

#[tokio::test(start_paused = true)]
async fn identical_events_after_the_window_still_patch_like_client_go() {
    // client-go's dedupe has no time window (only the LRU bound): a repeat an hour
    // later still patches; the sink creates the Event again if it expired (404).
    let clock = clock();
    let mut c = correlator(clock.clone());
    let first = c.event_correlate(event(&clock, "cm", "R", "same"));
    tokio::time::advance(Duration::from_secs(3600)).await;
    let later = c.event_correlate(event(&clock, "cm", "R", "same"));
    assert!(
        matches!(later, EventCorrelateResult::Patch { .. }),
        "{later:?}"
    );
    assert_eq!(written(&later).0, written(&first).0);
    assert_eq!(written(&later).1, 2);
}

#[tokio::test(start_paused = true)]
async fn spam_filter_drops_after_25_and_refills_one_per_5_minutes() {
    let clock = clock();
    let mut c = correlator(clock.clone());
    for i in 1..=25 {
        let r = c.event_correlate(event(&clock, "cm", "R", "again"));
        assert_ne!(
            r,
            EventCorrelateResult::Skip,
            "event {i} is within the burst"
        );
    }
    assert_eq!(
        c.event_correlate(event(&clock, "cm", "R", "again")),
        EventCorrelateResult::Skip
    );
    // Another object from the same source has its own bucket.
    assert!(matches!(
        c.event_correlate(event(&clock, "other", "R", "again")),
        EventCorrelateResult::Create(_)
    ));
    // Just under 5 minutes: still empty.
    tokio::time::advance(Duration::from_secs(299)).await;
    assert_eq!(
        c.event_correlate(event(&clock, "cm", "R", "again")),
        EventCorrelateResult::Skip
    );
    // 5 minutes after the bucket emptied: exactly one more.
    tokio::time::advance(Duration::from_secs(1)).await;
    let through = c.event_correlate(event(&clock, "cm", "R", "again"));
    let EventCorrelateResult::Patch { event: e, .. } = &through else {
        panic!("expected one patch through the filter: {through:?}");
    };
    // The two skipped repeats were still counted (client-go's order: dedupe first).
    assert_eq!(e.count, Some(28));
    assert_eq!(
        c.event_correlate(event(&clock, "cm", "R", "again")),
        EventCorrelateResult::Skip
    );
}

#[tokio::test(start_paused = true)]
async fn spam_filter_counts_different_reasons_against_one_object() {
    let clock = clock();
    let mut c = correlator(clock.clone());
    let mut passed = 0;
    for i in 0..40 {
        // Distinct reasons: no dedupe, no aggregation; the spam key ignores reason.
        let r = c.event_correlate(event(&clock, "cm", &format!("Reason{i}"), "m"));
        if r != EventCorrelateResult::Skip {
            passed += 1;
        }
    }
    assert_eq!(passed, 25);
}

#[tokio::test(start_paused = true)]
async fn caches_are_bounded_by_the_lru_size() {
    let clock = clock();
    let mut c = correlator(clock.clone());
    for i in 0..5000 {
        c.event_correlate(event(&clock, &format!("cm-{i}"), "R", "m"));
    }
    assert_eq!(c.cache_sizes(), (4096, 4096, 4096));
}

#[tokio::test(start_paused = true)]
async fn an_evicted_event_is_created_again() {
    let clock = clock();
    let mut c = correlator_with(clock.clone(), 2);
    let first = c.event_correlate(event(&clock, "a", "R", "m"));
    c.event_correlate(event(&clock, "b", "R", "m"));
    c.event_correlate(event(&clock, "c", "R", "m"));
    // "a" was evicted from every cache: the next one is a fresh Event.
    let again = c.event_correlate(event(&clock, "a", "R", "m"));
    let EventCorrelateResult::Create(created) = &again else {
        panic!("expected a create after eviction: {again:?}");
    };
    assert_eq!(created.count, Some(1));
    assert_ne!(created.metadata.name, Some(written(&first).0));
    assert_eq!(c.cache_sizes(), (2, 2, 2));
}
