//! e2e: events written by the broadcaster to a real kube-apiserver (crates/dev/testenv):
//! repeats fold into one core/v1 Event whose count grows, separate objects get
//! separate Events, and an Event deleted on the server is created again.

use std::time::Duration;

use anyhow::Context;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use record::{EventBroadcaster, EventType};
use testenv::{Check, TestEnv, wait_for};

const TIMEOUT: Duration = Duration::from_secs(90);

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

/// The Events whose involvedObject is `obj`, as `kubectl describe` finds them.
async fn events_for(events: &Api<Event>, obj: &ConfigMap) -> kube::Result<Vec<Event>> {
    let uid = obj.metadata.uid.as_deref().unwrap_or_default();
    let list = events
        .list(&ListParams::default().fields(&format!("involvedObject.uid={uid}")))
        .await?;
    Ok(list.items)
}

/// Waits until exactly one Event exists for `obj` and its count is `count`.
async fn wait_for_single_event(
    events: &Api<Event>,
    obj: &ConfigMap,
    count: i32,
) -> anyhow::Result<Event> {
    let what = format!(
        "one Event with count {count} for {}",
        obj.metadata.name.as_deref().unwrap_or_default()
    );
    wait_for(&what, TIMEOUT, || async {
        let found = events_for(events, obj).await?;
        let seen: Vec<_> = found
            .iter()
            .map(|e| (e.metadata.name.clone(), e.count))
            .collect();
        let done = found.len() == 1 && found[0].count == Some(count);
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
async fn repeated_warning_is_one_event_with_count_20() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("record").await?;
    let client = env.client().clone();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), env.namespace());
    let events = Api::<Event>::namespaced(client.clone(), env.namespace());
    let cm = create_config_map(&config_maps, "settings").await?;
    let other = create_config_map(&config_maps, "other").await?;

    let broadcaster = EventBroadcaster::default();
    broadcaster.start_recording_to_sink(client.clone())?;
    let recorder = broadcaster.new_recorder("record-e2e", "test-host");
    for _ in 0..20 {
        recorder.event(
            &cm,
            EventType::Warning,
            "ErrResourceExists",
            "Resource \"settings\" already exists and is not managed by Foo",
        );
    }
    recorder.event(&other, EventType::Normal, "Synced", "synced successfully");

    let event = wait_for_single_event(&events, &cm, 20).await?;
    let source = event.source.clone().unwrap_or_default();
    assert_eq!(source.component.as_deref(), Some("record-e2e"));
    assert_eq!(source.host.as_deref(), Some("test-host"));
    assert_eq!(event.reporting_component.as_deref(), Some("record-e2e"));
    assert_eq!(event.reporting_instance.as_deref(), Some("test-host"));
    assert_eq!(event.involved_object.uid, cm.metadata.uid);
    assert_eq!(event.involved_object.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(event.involved_object.api_version.as_deref(), Some("v1"));
    assert_eq!(event.involved_object.name.as_deref(), Some("settings"));
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.reason.as_deref(), Some("ErrResourceExists"));
    assert_eq!(
        event.metadata.namespace.as_deref(),
        Some(env.namespace()),
        "Events go into the object's namespace"
    );
    let name = event.metadata.name.clone().unwrap_or_default();
    assert!(name.starts_with("settings."), "{name}");
    let first = event.first_timestamp.clone().context("firstTimestamp")?;
    let last = event.last_timestamp.clone().context("lastTimestamp")?;
    assert!(first <= last, "{first:?} > {last:?}");

    // The Normal event on the second object is a separate Event.
    let separate = wait_for_single_event(&events, &other, 1).await?;
    assert_ne!(separate.metadata.name, event.metadata.name);
    assert_eq!(separate.type_.as_deref(), Some("Normal"));
    assert_eq!(separate.reason.as_deref(), Some("Synced"));
    assert_eq!(events.list(&ListParams::default()).await?.items.len(), 2);

    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    assert_eq!(broadcaster.dropped_events(), 0);
    Ok(())
}

#[tokio::test]
async fn a_deleted_event_is_created_again_with_the_next_count() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("record").await?;
    let client = env.client().clone();
    let config_maps = Api::<ConfigMap>::namespaced(client.clone(), env.namespace());
    let events = Api::<Event>::namespaced(client.clone(), env.namespace());
    let cm = create_config_map(&config_maps, "flaky").await?;

    let broadcaster = EventBroadcaster::default();
    broadcaster.start_recording_to_sink(client.clone())?;
    let recorder = broadcaster.new_recorder("record-e2e", "");
    recorder.event(&cm, EventType::Warning, "FailedSync", "boom");
    let event = wait_for_single_event(&events, &cm, 1).await?;
    let name = event.metadata.name.clone().unwrap_or_default();

    // The Event expires (or someone deletes it): the next repeat's PATCH gets a
    // 404 and the broadcaster creates it again, same name, next count.
    events.delete(&name, &DeleteParams::default()).await?;
    wait_for("event deleted", TIMEOUT, || async {
        let found = events_for(&events, &cm).await?;
        Ok::<_, kube::Error>(Check::ready_if(found.is_empty(), (), found.len()))
    })
    .await?;
    recorder.event(&cm, EventType::Warning, "FailedSync", "boom");
    let again = wait_for_single_event(&events, &cm, 2).await?;
    assert_eq!(again.metadata.name.as_deref(), Some(name.as_str()));
    assert_ne!(again.metadata.uid, event.metadata.uid, "a new object");

    assert!(broadcaster.shutdown(Duration::from_secs(30)).await);
    Ok(())
}
