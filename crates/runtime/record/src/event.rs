//! Building a core/v1 Event: client-go's `recorderImpl.makeEvent`,
//! `reference.GetReference` and the `EventSource`.
//!
//! An Event is a small object *about* another object (its `involvedObject`): who
//! reported it (`source.component`, `reportingController`), what happened (`type`,
//! `reason`, `message`), when (`firstTimestamp`, `lastTimestamp`) and how often
//! (`count`). It is created in the involved object's namespace (`default` for
//! cluster-scoped objects, because Events themselves are namespaced), so
//! `kubectl describe <object>` finds it with a field selector on
//! `involvedObject.uid`.

use std::sync::atomic::{AtomicI64, Ordering};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;

/// The namespace of Events about cluster-scoped objects: `metav1.NamespaceDefault`.
pub const NAMESPACE_DEFAULT: &str = "default";

/// An Event's `type`: client-go's `v1.EventTypeNormal` / `v1.EventTypeWarning`.
/// The API server accepts only these two for core/v1 Events written by
/// `tools/record` (`util.ValidateEventType`); an enum makes any other value
/// impossible instead of a runtime error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Something expected happened (`Created`, `Synced`, `ScalingReplicaSet`).
    Normal,
    /// Something may need attention (`ErrResourceExists`, `FailedCreate`).
    Warning,
}

impl EventType {
    /// The wire value: `"Normal"` or `"Warning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl std::fmt::Display for EventType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reference to `obj` stored in `involvedObject`: apiVersion, kind, name,
/// namespace, uid and resourceVersion (client-go's `reference.GetReference`).
///
/// The type's apiVersion and kind come from [`Resource`], so this works for objects
/// whose `apiVersion`/`kind` fields are empty (as objects from a typed list are).
pub fn object_reference<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// A unique suffix for Event names: the wall time in Unix nanoseconds, as hex
/// (client-go: `fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())`).
///
/// Deviation from client-go: the value is made strictly increasing process-wide,
/// so two Events stamped in the same nanosecond (or at the same paused instant in
/// a test) still get different names instead of an `AlreadyExists` that client-go
/// would silently drop.
pub fn unique_suffix(wall: Timestamp) -> String {
    static LAST: AtomicI64 = AtomicI64::new(i64::MIN);
    let wanted = i64::try_from(wall.as_nanosecond()).unwrap_or(i64::MAX);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = wanted.max(last.saturating_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return format!("{next:x}"),
            Err(seen) => last = seen,
        }
    }
}

/// A new Event about `reference`, as client-go's `makeEvent` plus `generateEvent`
/// build it: named `<object>.<unique hex>`, in the object's namespace (`default`
/// if it has none), count 1, first = last timestamp = `wall`, with the source and
/// the reporting controller/instance of the recorder.
pub fn make_event(
    reference: ObjectReference,
    source: &EventSource,
    event_type: EventType,
    reason: String,
    message: String,
    wall: Timestamp,
) -> Event {
    let namespace = reference
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| NAMESPACE_DEFAULT.to_string());
    let object_name = reference.name.clone().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            name: Some(format!("{object_name}.{}", unique_suffix(wall))),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        involved_object: reference,
        reason: Some(reason),
        message: Some(message),
        first_timestamp: Some(Time(wall)),
        last_timestamp: Some(Time(wall)),
        count: Some(1),
        type_: Some(event_type.as_str().to_string()),
        source: Some(source.clone()),
        reporting_component: source.component.clone(),
        reporting_instance: source.host.clone(),
        ..Event::default()
    }
}

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

fn source_parts(event: &Event) -> (&str, &str) {
    match &event.source {
        Some(src) => (s(&src.component), s(&src.host)),
        None => ("", ""),
    }
}

/// The key of *identical* events (client-go's `getEventKey`): source,
/// involvedObject (kind, namespace, name, fieldPath, uid, apiVersion), type, reason
/// and message. Two events with the same key are one Event with a higher count.
pub fn get_event_key(event: &Event) -> String {
    let (component, host) = source_parts(event);
    let o = &event.involved_object;
    [
        component,
        host,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.field_path),
        s(&o.uid),
        s(&o.api_version),
        s(&event.type_),
        s(&event.reason),
        s(&event.message),
    ]
    .join("")
}

/// The spam filter's key (client-go's `getSpamKey`): source and involvedObject
/// only, so every event a component reports about one object shares one bucket.
pub fn get_spam_key(event: &Event) -> String {
    let (component, host) = source_parts(event);
    let o = &event.involved_object;
    [
        component,
        host,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
    ]
    .join("")
}

/// The aggregator's grouping (client-go's `EventAggregatorByReasonFunc`): the
/// aggregate key is everything but the message (source, involvedObject, type,
/// reason, reportingController, reportingInstance); the local key is the message.
pub fn event_aggregator_by_reason_func(event: &Event) -> (String, String) {
    let (component, host) = source_parts(event);
    let o = &event.involved_object;
    let key = [
        component,
        host,
        s(&o.kind),
        s(&o.namespace),
        s(&o.name),
        s(&o.uid),
        s(&o.api_version),
        s(&event.type_),
        s(&event.reason),
        s(&event.reporting_component),
        s(&event.reporting_instance),
    ]
    .join("");
    (key, s(&event.message).to_string())
}

/// The aggregated message (client-go's `EventAggregatorByReasonMessageFunc`):
/// `"(combined from similar events): " + message`.
pub fn event_aggregator_by_reason_message_func(event: &Event) -> String {
    format!("(combined from similar events): {}", s(&event.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn reference_and_event_from_a_config_map() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                namespace: Some("ns".into()),
                uid: Some("u-1".into()),
                resource_version: Some("42".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        let r = object_reference(&cm);
        assert_eq!(r.api_version.as_deref(), Some("v1"));
        assert_eq!(r.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(r.uid.as_deref(), Some("u-1"));
        assert_eq!(r.resource_version.as_deref(), Some("42"));
        let source = EventSource {
            component: Some("foo-controller".into()),
            host: Some("host-1".into()),
        };
        let wall = Timestamp::from_second(1_700_000_000).unwrap();
        let e = make_event(r, &source, EventType::Warning, "R".into(), "m".into(), wall);
        assert_eq!(e.metadata.namespace.as_deref(), Some("ns"));
        assert!(e.metadata.name.as_deref().unwrap().starts_with("cm."));
        assert_eq!(e.reporting_component.as_deref(), Some("foo-controller"));
        assert_eq!(e.reporting_instance.as_deref(), Some("host-1"));
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.count, Some(1));
    }

    #[test]
    fn cluster_scoped_objects_get_default_namespace() {
        let r = ObjectReference {
            name: Some("node-1".into()),
            kind: Some("Node".into()),
            ..ObjectReference::default()
        };
        let wall = Timestamp::UNIX_EPOCH;
        let e = make_event(
            r,
            &EventSource::default(),
            EventType::Normal,
            "R".into(),
            "m".into(),
            wall,
        );
        assert_eq!(e.metadata.namespace.as_deref(), Some(NAMESPACE_DEFAULT));
    }

    #[test]
    fn suffixes_are_unique_even_for_the_same_instant() {
        let wall = Timestamp::from_second(1_800_000_000).unwrap();
        let a = unique_suffix(wall);
        let b = unique_suffix(wall);
        assert_ne!(a, b);
        assert!(i64::from_str_radix(&a, 16).unwrap() >= 1_800_000_000_000_000_000);
    }
}
