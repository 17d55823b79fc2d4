//! Hand-written traces for the tests of the planner and the invariants.

use crate::trace::{Event, EventType, Method, OwnerRef, Trace, WatchEvent, Write};

/// A write of `resource` `key` answered with `status` (and `rv`, if any).
pub fn write(method: Method, resource: &str, key: &str, status: u16, rv: Option<&str>) -> Event {
    Event::Write(Write {
        method,
        resource: resource.into(),
        key: key.into(),
        subresource: None,
        status,
        resource_version: rv.map(str::to_string),
        owners: Vec::new(),
        removes_finalizer: false,
        sent_after: None,
    })
}

/// A status write (`PUT resource/status`).
pub fn status_write(resource: &str, key: &str, status: u16, rv: Option<&str>) -> Event {
    let mut event = write(Method::Put, resource, key, status, rv);
    if let Event::Write(w) = &mut event {
        w.subresource = Some("status".into());
    }
    event
}

/// A write of an object owned by `owner_kind` `owner_name` (uid `owner_uid`).
pub fn owned(mut event: Event, owner_kind: &str, owner_name: &str, owner_uid: &str) -> Event {
    if let Event::Write(w) = &mut event {
        w.owners.push(OwnerRef {
            kind: owner_kind.into(),
            name: owner_name.into(),
            uid: Some(owner_uid.into()),
        });
    }
    event
}

/// A watch event.
pub fn watch(resource: &str, event: EventType, key: &str, rv: &str, uid: &str) -> Event {
    Event::Watch(WatchEvent {
        resource: resource.into(),
        event,
        key: key.into(),
        resource_version: rv.into(),
        uid: Some(uid.into()),
    })
}

/// A trace of `events`, numbered from 1.
pub fn trace(events: impl IntoIterator<Item = Event>) -> Trace {
    let mut trace = Trace::default();
    for event in events {
        trace.push(event);
    }
    trace
}

/// The start of step `step`.
pub fn begin(step: usize, op: &str, name: &str) -> Event {
    Event::StepBegin {
        step,
        op: op.into(),
        name: name.into(),
    }
}

/// The end of step `step`.
pub fn end(step: usize) -> Event {
    Event::StepEnd { step }
}
