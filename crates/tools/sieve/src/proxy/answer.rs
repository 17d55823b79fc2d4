//! The trace's records, read from the API server's answers.

use apiproxy::path::ApiAction;
use apiproxy::watch;
use serde_json::Value;

use crate::trace::{EventType, Method, OwnerRef, WatchEvent, Write};

/// The metadata field `field` of `object`, if it is a string.
fn metadata<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get("metadata")?.get(field)?.as_str()
}

/// How many finalizers `object` lists.
pub(super) fn finalizer_count(object: &Value) -> usize {
    object
        .get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The write `api` answered `status` with `body`; `finalizers`: how many the object
/// had in the last watch event delivered of it. `None` for what is not a write.
pub(super) fn write(
    api: &ApiAction,
    status: u16,
    body: &[u8],
    finalizers: Option<usize>,
    sent_after: Option<u64>,
) -> Option<Write> {
    let method = match api.verb.as_str() {
        "create" => Method::Post,
        "update" => Method::Put,
        "patch" => Method::Patch,
        "delete" => Method::Delete,
        _ => return None,
    };
    let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    // A DELETE answers the object while finalizers hold it, else a Status; a failure
    // answers a Status naming the object in its details.
    let object = (answer.get("kind").and_then(Value::as_str) != Some("Status")
        && metadata(&answer, "name").is_some())
    .then_some(&answer);
    let namespace = object
        .and_then(|o| metadata(o, "namespace"))
        .or(api.namespace.as_deref())
        .filter(|n| !n.is_empty());
    let name = object
        .and_then(|o| metadata(o, "name"))
        .or(api.name.as_deref())
        .or_else(|| answer.get("details")?.get("name")?.as_str())
        .unwrap_or_default();
    let key = match namespace {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name.to_string(),
    };
    let owners = object
        .and_then(|o| o.get("metadata")?.get("ownerReferences")?.as_array())
        .map(|refs| {
            refs.iter()
                .filter_map(|r| {
                    Some(OwnerRef {
                        kind: r.get("kind")?.as_str()?.to_string(),
                        name: r.get("name")?.as_str()?.to_string(),
                        uid: r.get("uid").and_then(Value::as_str).map(str::to_string),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Some(Write {
        method,
        resource: api.resource.clone(),
        key,
        subresource: api.subresource.clone(),
        status,
        resource_version: object
            .and_then(|o| metadata(o, "resourceVersion"))
            .map(str::to_string),
        owners,
        removes_finalizer: object
            .zip(finalizers)
            .is_some_and(|(o, before)| finalizer_count(o) < before),
        sent_after,
    })
}

/// The record of a watch event of `resource`; `None` for bookmarks and errors.
pub(super) fn watch_event(resource: &str, event: &watch::WatchEvent) -> Option<WatchEvent> {
    let event_type = match event.event_type.as_str() {
        "ADDED" => EventType::Added,
        "MODIFIED" => EventType::Modified,
        "DELETED" => EventType::Deleted,
        _ => return None,
    };
    Some(WatchEvent {
        resource: resource.to_string(),
        event: event_type,
        key: event.key()?,
        resource_version: event
            .metadata("resourceVersion")
            .unwrap_or_default()
            .to_string(),
        uid: event.metadata("uid").map(str::to_string),
    })
}
