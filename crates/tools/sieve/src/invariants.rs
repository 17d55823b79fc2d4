//! The invariants every run must hold, checked over its [`Trace`] and its end state.
//!
//! - **No owned object created twice** ([`Violation::CreatedTwice`]): two creates of the
//!   same resource and key that the server accepted, with no delete of that key between:
//!   neither a delete the controller sent, nor a `DELETED` event it received, nor a list
//!   of the resource it made (a controller started again, or one whose watch failed,
//!   relists and learns of a deletion by the object's absence: found when a crash-point
//!   plan of the MyWeb operator restarted it while the garbage collector removed the
//!   old ConfigMap). The trace
//!   holds what the controller saw, so a controller that does not watch what it creates
//!   (it cannot check a cache it does not have) is reported even when someone else
//!   deleted the first one: that is the finding.
//! - **None left for a deleted owner** ([`Violation::LeftForDeletedOwner`]): an object of
//!   the end state whose owner reference names an owner that is not in the end state
//!   (same namespace, kind and name), or is there with another uid (it was deleted and
//!   created again). Only owners of the kinds the end state captured in full are checked.
//! - **No write on behalf of an object that no longer exists**
//!   ([`Violation::WriteForDeletedOwner`]): an accepted write of an object whose owner
//!   reference names a uid the controller had already received `DELETED` when it *sent*
//!   the write ([`Write::sent_after`](crate::trace::Write::sent_after)), other than a delete
//!   (cleaning up owned objects) or a write that removes a finalizer. Owner references
//!   without a uid are not checked (the API server requires one).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value as Json;

use crate::trace::{Event, EventType, Method, Trace};

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "invariant", rename_all = "camelCase")]
pub enum Violation {
    /// The same object created twice with no delete between.
    CreatedTwice {
        /// The resource.
        resource: String,
        /// The object's `namespace/name` key.
        key: String,
        /// The first create's record.
        first: u64,
        /// The second create's record.
        second: u64,
    },
    /// An end-state object whose owner is gone.
    LeftForDeletedOwner {
        /// The object's kind.
        kind: String,
        /// The object's `namespace/name`.
        key: String,
        /// The owner reference's kind.
        owner_kind: String,
        /// The owner reference's name.
        owner_name: String,
        /// The uid of the owner of that kind and name in the end state, if there is one
        /// (it is then another uid than the reference's).
        live_uid: Option<String>,
    },
    /// A write on behalf of an owner the controller had seen deleted.
    WriteForDeletedOwner {
        /// The write's record.
        seq: u64,
        /// The write ([`Write::summary`](crate::trace::Write::summary)).
        write: String,
        /// The owner's kind.
        owner_kind: String,
        /// The owner's name.
        owner_name: String,
        /// The owner's uid.
        owner_uid: String,
        /// The record of the `DELETED` event the controller had received for it.
        deleted_at: u64,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::CreatedTwice {
                resource,
                key,
                first,
                second,
            } => write!(
                f,
                "created twice: {resource} {key} (records {first} and {second}, no delete between)"
            ),
            Violation::LeftForDeletedOwner {
                kind,
                key,
                owner_kind,
                owner_name,
                live_uid,
            } => {
                write!(
                    f,
                    "left for a deleted owner: {kind} {key} (its owner {owner_kind} {owner_name} "
                )?;
                match live_uid {
                    None => write!(f, "is not in the end state)"),
                    Some(uid) => write!(f, "in the end state is another object, uid {uid})"),
                }
            }
            Violation::WriteForDeletedOwner {
                seq,
                write,
                owner_kind,
                owner_name,
                owner_uid,
                deleted_at,
            } => write!(
                f,
                "write for a deleted owner: record {seq}: {write}, on behalf of {owner_kind} {owner_name} \
                 (uid {owner_uid}), seen deleted at record {deleted_at}"
            ),
        }
    }
}

/// Every violation in `trace` and `end_state` (see [`check_trace`] and [`check_end_state`]).
pub fn check(trace: &Trace, end_state: &[Json], captured_kinds: &[&str]) -> Vec<Violation> {
    let mut violations = check_trace(trace);
    violations.extend(check_end_state(end_state, captured_kinds));
    violations
}

/// The violations of the trace alone: objects created twice, writes for deleted owners.
pub fn check_trace(trace: &Trace) -> Vec<Violation> {
    let mut violations = Vec::new();
    // (resource, key) -> the record of its last accepted create, while it is not deleted.
    let mut created: HashMap<(&str, &str), u64> = HashMap::new();
    // uid -> the record of the DELETED event the controller received.
    let mut deleted: HashMap<&str, u64> = HashMap::new();
    for record in &trace.records {
        match &record.event {
            Event::List { resource } => {
                created.retain(|(r, _), _| r != resource);
            }
            Event::Watch(event) if event.event == EventType::Deleted => {
                created.remove(&(event.resource.as_str(), event.key.as_str()));
                if let Some(uid) = &event.uid {
                    deleted.entry(uid.as_str()).or_insert(record.seq);
                }
            }
            Event::Write(write) if write.succeeded() => {
                let object = (write.resource.as_str(), write.key.as_str());
                match (write.method, write.subresource.is_some()) {
                    (Method::Post, false) => {
                        if let Some(first) = created.insert(object, record.seq) {
                            violations.push(Violation::CreatedTwice {
                                resource: write.resource.clone(),
                                key: write.key.clone(),
                                first,
                                second: record.seq,
                            });
                        }
                    }
                    (Method::Delete, false) => {
                        created.remove(&object);
                    }
                    _ => {}
                }
                if write.method == Method::Delete || write.removes_finalizer {
                    continue;
                }
                // What the controller had received when it sent the write (the write is
                // recorded once answered; older traces: when answered).
                let sent_after = write.sent_after.unwrap_or(record.seq);
                for owner in &write.owners {
                    let Some(uid) = &owner.uid else { continue };
                    if let Some(&deleted_at) = deleted.get(uid.as_str())
                        && deleted_at <= sent_after
                    {
                        violations.push(Violation::WriteForDeletedOwner {
                            seq: record.seq,
                            write: write.summary(),
                            owner_kind: owner.kind.clone(),
                            owner_name: owner.name.clone(),
                            owner_uid: uid.clone(),
                            deleted_at,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    violations
}

/// The Deployments of `end_state` still rolling out (kubectl's `rollout status`: the
/// deployment controller has not observed the spec, or not every replica is updated,
/// available and the only one): `Kind name`. The deployment controller's and the
/// kubelet's (kwok's) work, not the controller's; under load it can pause for longer
/// than a quiet period, so the runner waits for it before it takes the end state.
pub fn rolling_out(end_state: &[Json]) -> Vec<String> {
    let number = |object: &Json, pointer: &str| object.pointer(pointer).and_then(Json::as_i64);
    end_state
        .iter()
        .filter(|o| o.pointer("/kind").and_then(Json::as_str) == Some("Deployment"))
        .filter(|d| {
            let want = number(d, "/spec/replicas").unwrap_or(1);
            let observed = number(d, "/status/observedGeneration").unwrap_or(0)
                >= number(d, "/metadata/generation").unwrap_or(0);
            let count = |field: &str| number(d, &format!("/status/{field}")).unwrap_or(0);
            !(observed
                && count("updatedReplicas") == want
                && count("replicas") == want
                && count("availableReplicas") == want)
        })
        .map(|d| {
            let name = d.pointer("/metadata/name").and_then(Json::as_str);
            format!("Deployment {}", name.unwrap_or_default())
        })
        .collect()
}

/// The objects of `end_state` left for an owner that is gone. Only owner references to
/// `captured_kinds` are checked: the end state holds every object of those kinds.
pub fn check_end_state(end_state: &[Json], captured_kinds: &[&str]) -> Vec<Violation> {
    let text = |object: &Json, pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Json::as_str)
            .map(str::to_string)
    };
    // (namespace, kind, name) -> uid.
    let live: HashMap<(Option<String>, String, String), Option<String>> = end_state
        .iter()
        .filter_map(|o| {
            let kind = text(o, "/kind")?;
            let name = text(o, "/metadata/name")?;
            Some((
                (text(o, "/metadata/namespace"), kind, name),
                text(o, "/metadata/uid"),
            ))
        })
        .collect();
    let mut violations = Vec::new();
    for object in end_state {
        let namespace = text(object, "/metadata/namespace");
        let references = object
            .pointer("/metadata/ownerReferences")
            .and_then(Json::as_array);
        for reference in references.into_iter().flatten() {
            let (Some(owner_kind), Some(owner_name)) =
                (text(reference, "/kind"), text(reference, "/name"))
            else {
                continue;
            };
            if !captured_kinds.contains(&owner_kind.as_str()) {
                continue;
            }
            let live_uid =
                match live.get(&(namespace.clone(), owner_kind.clone(), owner_name.clone())) {
                    None => None,
                    Some(live_uid) => match (live_uid, text(reference, "/uid")) {
                        (Some(live_uid), Some(uid)) if *live_uid != uid => Some(live_uid.clone()),
                        _ => continue,
                    },
                };
            let name = text(object, "/metadata/name").unwrap_or_default();
            violations.push(Violation::LeftForDeletedOwner {
                kind: text(object, "/kind").unwrap_or_default(),
                key: namespace
                    .as_ref()
                    .map_or_else(|| name.clone(), |ns| format!("{ns}/{name}")),
                owner_kind,
                owner_name,
                live_uid,
            });
        }
    }
    violations
}

#[cfg(test)]
#[path = "invariants_tests.rs"]
mod tests;
