//! e2e: the events.k8s.io/v1 pipeline (`record::events`) against a real
//! kube-apiserver (crates/dev/testenv): 20 identical events become ONE Event whose
//! `series.count` is 20 within seconds (client-go would show 2 until its
//! 30-minute heartbeat), the server accepts every field we write, the core/v1
//! view (`kubectl describe`) sees the same Event, and a deleted Event is created
//! again with its series.

use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use record::EventType;
use record::events::EventBroadcaster;
use testenv::{Check, TestEnv, wait_for};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn create_config_map(api: &Api<ConfigMap>, name: &str) -> anyhow::Result<ConfigMap> {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Ok(api.create(&PostParams::default(), &cm).await?)
}

/// The events.k8s.io/v1 Events about `obj` with `reason`, read back from the
/// server (the namespace is the test's own, so listing it all is cheap).
async fn events_for(
    events: &Api<Event>,
    obj: &ConfigMap,
    reason: &str,
) -> kube::Result<Vec<Event>> {
    let list = events.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| {
            e.regarding.as_ref().and_then(|r| r.uid.as_ref()) == obj.metadata.uid.as_ref()
                && e.reason.as_deref() == Some(reason)
        })
        .collect())
}

/// Waits until exactly one Event about `obj` with `reason` exists and its series
/// count is `count` (`None`: no series).
async fn wait_for_single_event(
    events: &Api<Event>,
    obj: &ConfigMap,
    reason: &str,
    count: Option<i32>,
) -> anyhow::Result<Event> {
    let what = format!(
        "one {reason} Event with series count {count:?} for {}",
        obj.metadata.name.as_deref().unwrap_or_default()
    );
    wait_for(&what, TIMEOUT, || async {
        let found = events_for(events, obj, reason).await?;
        let seen: Vec<_> = found
            .iter()
            .map(|e| (e.metadata.name.clone(), e.series.as_ref().map(|s| s.count)))
            .collect();
        let done = found.len() == 1 && found[0].series.as_ref().map(|s| s.count) == count;
        Ok::<_, kube::Error>(Check::ready_if(
            done,
            found.into_iter().next(),
            format!("{seen:?}"),
        ))
    })
    .await?
    .context("the Event vanished")
}

#[tokio::test]
async fn twenty_identical_events_are_one_event_with_series_count_20() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("record-v1").await?;
    let client = env.client().clone();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), env.namespace());
    let events = Api::<Event>::namespaced(client.clone(), env.namespace());
    let cm = create_config_map(&config_maps, "settings").await?;
    let related = ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: Some("settings".into()),
        namespace: Some(env.namespace().into()),
        ..ObjectReference::default()
    };

    let broadcaster = EventBroadcaster::default();
    broadcaster.start_recording_to_sink(client.clone())?;
    let recorder = broadcaster.new_recorder("record-e2e", "test-host");
    let note = "Resource \"settings\" already exists and is not managed by Foo";
    let start = Instant::now();
    for _ in 0..20 {
        recorder.eventf(
            &cm,
            Some(&related),
            EventType::Warning,
            "ErrResourceExists",
            "Adopt",
            note,
        );
    }
    // Another reason about the same object is another Event, through `event`.
    recorder.event(&cm, EventType::Normal, "Synced", "synced successfully");

    let event = wait_for_single_event(&events, &cm, "ErrResourceExists", Some(20)).await?;
    // Converged in seconds, not at a 30-minute heartbeat.
    let took = start.elapsed();
    assert!(took < Duration::from_secs(30), "took {took:?}");
    assert_eq!(event.reporting_controller.as_deref(), Some("record-e2e"));
    assert_eq!(
        event.reporting_instance.as_deref(),
        Some("record-e2e-test-host")
    );
    assert_eq!(event.action.as_deref(), Some("Adopt"));
    assert_eq!(event.note.as_deref(), Some(note));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(event.event_time.is_some(), "eventTime");
    let series = event.series.clone().context("series")?;
    assert!(series.last_observed_time >= event.event_time.clone().unwrap());
    let regarding = event.regarding.clone().context("regarding")?;
    assert_eq!(regarding.uid, cm.metadata.uid);
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.api_version.as_deref(), Some("v1"));
    assert_eq!(regarding.name.as_deref(), Some("settings"));
    assert_eq!(
        event.related.as_ref().and_then(|r| r.name.as_deref()),
        Some("settings")
    );
    assert_eq!(event.metadata.namespace.as_deref(), Some(env.namespace()));
    let name = event.metadata.name.clone().unwrap_or_default();
    assert!(name.starts_with("settings."), "{name}");
    // None of the core/v1-only fields (the server answers an empty source).
    assert_eq!(event.deprecated_count, None);
    assert_eq!(
        event.deprecated_source.unwrap_or_default(),
        Default::default()
    );

    let synced = wait_for_single_event(&events, &cm, "Synced", None).await?;
    assert_eq!(synced.action.as_deref(), Some("Synced"), "action = reason");
    assert_ne!(synced.metadata.name, event.metadata.name);

    // `kubectl describe configmap settings` reads core/v1 by involvedObject.uid:
    // the same two Events, the series carried over.
    let core = Api::<CoreEvent>::namespaced(client.clone(), env.namespace());
    let uid = cm.metadata.uid.clone().unwrap_or_default();
    let seen = core
        .list(&ListParams::default().fields(&format!("involvedObject.uid={uid}")))
        .await?
        .items;
    assert_eq!(seen.len(), 2, "{seen:?}");
    let warning = seen
        .iter()
        .find(|e| e.reason.as_deref() == Some("ErrResourceExists"))
        .context("core/v1 view")?;
    assert_eq!(warning.message.as_deref(), Some(note));
    assert_eq!(warning.series.as_ref().and_then(|s| s.count), Some(20));
    assert_eq!(warning.reporting_component.as_deref(), Some("record-e2e"));

    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    assert_eq!(broadcaster.dropped_events(), 0);
    assert_eq!(events.list(&ListParams::default()).await?.items.len(), 2);
    Ok(())
}

#[tokio::test]
async fn a_deleted_event_is_created_again_with_its_series() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("record-v1").await?;
    let client = env.client().clone();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), env.namespace());
    let events = Api::<Event>::namespaced(client.clone(), env.namespace());
    let cm = create_config_map(&config_maps, "flaky").await?;

    let broadcaster = EventBroadcaster::default();
    broadcaster.start_recording_to_sink(client.clone())?;
    let recorder = broadcaster.new_recorder("record-e2e", "");
    recorder.event(&cm, EventType::Warning, "FailedSync", "boom");
    let event = wait_for_single_event(&events, &cm, "FailedSync", None).await?;
    assert_eq!(event.reporting_instance.as_deref(), Some("record-e2e"));
    let name = event.metadata.name.clone().unwrap_or_default();

    // The Event expires (or someone deletes it): the next repeat's PATCH gets a
    // 404 and the broadcaster creates it again, same name, with its series.
    events.delete(&name, &DeleteParams::default()).await?;
    wait_for("event deleted", TIMEOUT, || async {
        let found = events_for(&events, &cm, "FailedSync").await?;
        Ok::<_, kube::Error>(Check::ready_if(found.is_empty(), (), found.len()))
    })
    .await?;
    recorder.event(&cm, EventType::Warning, "FailedSync", "boom");
    recorder.event(&cm, EventType::Warning, "FailedSync", "boom");
    let again = wait_for_single_event(&events, &cm, "FailedSync", Some(3)).await?;
    assert_eq!(again.metadata.name.as_deref(), Some(name.as_str()));
    assert_ne!(again.metadata.uid, event.metadata.uid, "a new object");

    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    Ok(())
}
