//! Objects an informer cannot decode: left out of the cache and reported, while every
//! other object is listed, watched and handed to the handlers as usual.
//!
//! # Why
//!
//! A typed informer decodes every object into its Rust type. The API server does not
//! promise that every stored object fits that type: a custom resource written through
//! another version of its CRD (a conversion that drops a field, a version whose schema
//! allows what the type requires), a CRD schema changed under stored objects, or a
//! controller built from older types can all leave objects the type cannot hold. In
//! client-go the list's decoder fails on such an object, `Reflector.list` fails, and the
//! reflector retries the *whole* list with backoff for ever: one object stops every
//! informer of its type, a restarted controller never syncs its caches, and no object
//! of the kind is reconciled (controller-runtime and kube-runtime's watcher do the
//! same). Here the one object is set aside instead.
//!
//! # What happens
//!
//! * **A paged list** decodes its page in one piece, as before; only when that fails
//!   is the page decoded again item by item
//!   ([`decode_list_items`]): what decodes goes into the list, what does not becomes
//!   an [`Unreadable`] (its key, its metadata, the decoder's error) in the page's
//!   [`ListPage::unreadable`](crate::ListPage::unreadable). The happy path costs
//!   nothing extra.
//! * **A streaming list** (`sendInitialEvents`) that meets an event it cannot decode
//!   is abandoned for a paged list that time (the stream says nothing about which
//!   object broke it), which then sets the object aside as above.
//! * **A watch event** that cannot be decoded ends the watch, and the reflector
//!   relists at once (client-go relists after a backoff step; here that would leave
//!   the whole cache up to a minute behind after every write to one bad object), at most
//!   once per [`UNDECODABLE_RELIST_INTERVAL`](crate::reflector::UNDECODABLE_RELIST_INTERVAL). The relist leaves the object out, so it leaves the cache (handlers
//!   hear a deletion with a [`DeletedFinalStateUnknown`](crate::DeletedFinalStateUnknown)
//!   tombstone, as for an object deleted while the watch was down): the cache holds
//!   what the server holds *and the type can say*, never a stale state that a
//!   controller would go on acting on as if it were current.
//! * **When it becomes decodable again** (fixed through the version that can hold it,
//!   or deleted), the next watch event for it is an ordinary one: it comes back into
//!   the cache (handlers hear an add) and leaves the report.
//!
//! The reflector keeps the current set ([`Reflector::unreadable`](crate::Reflector::unreadable),
//! [`SharedIndexInformer::unreadable`](crate::SharedIndexInformer::unreadable)), logs each
//! object once at `warn` with its key and error, sets the
//! [`names::UNREADABLE_OBJECTS`](crate::metrics::names::UNREADABLE_OBJECTS) gauge, shows
//! a `decode` banner on the pipeline page while the set is not empty, and calls the
//! informer's [`on_unreadable`](crate::SharedIndexInformer::on_unreadable) hook once
//! per object and resourceVersion (a controller writes a Warning Event there, on the
//! object itself: the metadata is all an Event needs).
//!
//! Built-in types in protobuf are not covered: their decoder is generated from the
//! same schema the server encodes with. Dynamic and metadata-only informers cannot
//! meet an undecodable object.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::api::ObjectMeta;
use kube::core::PartialObjectMeta;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use crate::metrics::ReflectorMetrics;

/// An object the informer's type cannot hold, left out of its cache. See the
/// [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// `namespace/name` (or `name`), as the cache would key it.
    pub key: String,
    /// `apiVersion` of the object, as the server sent it.
    pub api_version: Option<String>,
    /// `kind` of the object, as the server sent it.
    pub kind: Option<String>,
    /// The object's metadata, as far as it decodes (name, namespace, uid,
    /// resourceVersion: enough to write an Event about it).
    pub metadata: ObjectMeta,
    /// Why the type cannot hold it: the decoder's error (`missing field ...`).
    pub error: String,
}

impl Unreadable {
    /// The report for `raw`, one item of a list (or a watch event's object) that did not
    /// decode with `error`; `None` if even its metadata is not an object's metadata.
    pub fn of_raw(raw: &serde_json::Value, error: &serde_json::Error) -> Option<Self> {
        let mut metadata: ObjectMeta =
            serde_json::from_value(raw.get("metadata")?.clone()).unwrap_or_default();
        metadata.managed_fields = None;
        let name = metadata.name.as_deref().filter(|n| !n.is_empty())?;
        let key = match metadata.namespace.as_deref().filter(|n| !n.is_empty()) {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        };
        let text = |field: &str| raw.get(field).and_then(|v| v.as_str()).map(str::to_owned);
        Some(Self {
            key,
            api_version: text("apiVersion"),
            kind: text("kind"),
            metadata,
            error: error.to_string(),
        })
    }
}

impl Unreadable {
    /// A reference to the object, for an Event about it (`involvedObject`, `regarding`).
    pub fn object_reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.metadata.name.clone(),
            namespace: self.metadata.namespace.clone(),
            uid: self.metadata.uid.clone(),
            resource_version: self.metadata.resource_version.clone(),
            field_path: None,
        }
    }

    /// The object's metadata as a [`PartialObjectMeta<K>`], for what needs only that
    /// (a shard's filter, an Event's reference).
    pub fn as_partial<K: Resource>(&self) -> PartialObjectMeta<K> {
        PartialObjectMeta {
            types: None,
            metadata: self.metadata.clone(),
            _phantom: std::marker::PhantomData,
        }
    }
}

/// Decodes the items of a list one by one: what decodes as `K`, and a report for each
/// item that does not. `managedFields` are dropped from the decoded objects when
/// `strip_managed_fields` is set. An item without a usable name cannot be reported by
/// key; it is counted in the error of the returned `Err` only if *no* item could be
/// reported, so a list of garbage still fails as before.
pub fn decode_list_items<K: Resource + DeserializeOwned>(
    items: Vec<serde_json::Value>,
    strip_managed_fields: bool,
) -> Result<(Vec<K>, Vec<Unreadable>), serde_json::Error> {
    let mut decoded = Vec::with_capacity(items.len());
    let mut unreadable = Vec::new();
    for raw in items {
        // `from_value` consumes the value; keep the metadata for the report.
        let meta_only = serde_json::json!({
            "apiVersion": raw.get("apiVersion"),
            "kind": raw.get("kind"),
            "metadata": raw.get("metadata"),
        });
        match serde_json::from_value::<K>(raw) {
            Ok(mut obj) => {
                if strip_managed_fields {
                    obj.meta_mut().managed_fields = None;
                }
                decoded.push(obj);
            }
            Err(e) => match Unreadable::of_raw(&meta_only, &e) {
                Some(report) => unreadable.push(report),
                None => return Err(e),
            },
        }
    }
    Ok((decoded, unreadable))
}

/// What the informer calls for each newly unreadable object (once per object and
/// resourceVersion): [`SharedIndexInformer::on_unreadable`](crate::SharedIndexInformer::on_unreadable).
pub type UnreadableHook = Arc<dyn Fn(&Unreadable) + Send + Sync>;

/// A reflector's unreadable objects and their reporting: the log, the gauge, the
/// pipeline page's banner and the hook.
pub(crate) struct SetAside {
    reflector: String,
    set: Mutex<UnreadableSet>,
    /// Mirrors `set.len()`, so the watch path's check costs no lock while it is empty.
    count: AtomicUsize,
    trouble: pipeline::TroubleReporter,
    hook: Option<UnreadableHook>,
}

impl fmt::Debug for SetAside {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetAside")
            .field("unreadable", &self.set.lock().len())
            .finish_non_exhaustive()
    }
}

impl SetAside {
    /// An empty set for reflector `reflector`, shown on the pipeline page as
    /// `component`'s.
    pub(crate) fn new(reflector: &str, component: &str) -> Self {
        Self {
            reflector: reflector.to_owned(),
            set: Mutex::default(),
            count: AtomicUsize::new(0),
            trouble: pipeline::troubles().reporter(component, pipeline::Stage::Fifo),
            hook: None,
        }
    }

    pub(crate) fn set_hook(&mut self, hook: UnreadableHook) {
        self.hook = Some(hook);
    }

    /// A list completed with `found` unreadable: the set becomes exactly that.
    pub(crate) fn listed(&self, found: Vec<Unreadable>, metrics: Option<&ReflectorMetrics>) {
        if found.is_empty() && self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let (fresh, all) = {
            let mut set = self.set.lock();
            let fresh = set.replace(found);
            (fresh, set.all())
        };
        for report in &fresh {
            tracing::warn!(reflector = %self.reflector, key = %report.key, error = %report.error,
                "an object the type cannot decode is left out of the cache");
            if let Some(hook) = &self.hook {
                hook(report);
            }
        }
        self.publish(&all, metrics);
    }

    /// An ordinary event arrived for `obj`: if it was set aside, it is readable again
    /// (or deleted).
    pub(crate) fn event_for<K: Resource>(&self, obj: &K, metrics: Option<&ReflectorMetrics>) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let Ok(key) = crate::meta_namespace_key(obj) else {
            return;
        };
        let all = {
            let mut set = self.set.lock();
            if !set.forget(&key) {
                return;
            }
            set.all()
        };
        tracing::info!(reflector = %self.reflector, %key, "an object set aside as unreadable decodes again");
        self.publish(&all, metrics);
    }

    /// Every object set aside now.
    pub(crate) fn all(&self) -> Vec<Unreadable> {
        self.set.lock().all()
    }

    fn publish(&self, all: &[Unreadable], metrics: Option<&ReflectorMetrics>) {
        self.count.store(all.len(), Ordering::Release);
        if let Some(m) = metrics {
            m.unreadable(all.len());
        }
        match all.first() {
            None => self.trouble.recovered(),
            Some(first) => {
                let more = match all.len() {
                    1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                };
                let message = format!(
                    "left out of the cache, the type cannot decode it: {}: {}{more}",
                    first.key, first.error
                );
                self.trouble.standing("decode", &message);
            }
        }
    }
}

/// The reflector's current set of unreadable objects, by key.
#[derive(Debug, Default)]
pub(crate) struct UnreadableSet {
    by_key: BTreeMap<String, Unreadable>,
}

impl UnreadableSet {
    /// After a complete list: the set becomes exactly `found`. Returns the reports that
    /// are new (a key not in the set before, or at another resourceVersion): the ones
    /// to log and hand to the hook.
    pub(crate) fn replace(&mut self, found: Vec<Unreadable>) -> Vec<Unreadable> {
        let mut fresh = Vec::new();
        let mut next = BTreeMap::new();
        for report in found {
            let known = self.by_key.get(&report.key).is_some_and(|old| {
                old.metadata.resource_version == report.metadata.resource_version
            });
            if !known {
                fresh.push(report.clone());
            }
            next.insert(report.key.clone(), report);
        }
        self.by_key = next;
        fresh
    }

    /// An ordinary event (or a deletion) arrived for `key`: it is readable again, or
    /// gone. Returns whether it was in the set.
    pub(crate) fn forget(&mut self, key: &str) -> bool {
        self.by_key.remove(key).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }

    pub(crate) fn all(&self) -> Vec<Unreadable> {
        self.by_key.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn pod(name: &str, rv: &str, containers: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "ns", "name": name, "uid": format!("u-{name}"), "resourceVersion": rv},
            "spec": {"containers": containers},
        })
    }

    #[test]
    fn one_bad_item_is_reported_by_key_and_the_others_decode() {
        let items = vec![
            pod("a", "1", json!([{"name": "c"}])),
            pod("bad", "2", json!("not a list")),
            pod("b", "3", json!([{"name": "c"}])),
        ];
        let (pods, unreadable) = decode_list_items::<Pod>(items, false).unwrap();
        let names: Vec<_> = pods
            .iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(unreadable.len(), 1);
        let bad = &unreadable[0];
        assert_eq!(bad.key, "ns/bad");
        assert_eq!(bad.kind.as_deref(), Some("Pod"));
        assert_eq!(bad.metadata.uid.as_deref(), Some("u-bad"));
        assert_eq!(bad.metadata.resource_version.as_deref(), Some("2"));
        assert!(bad.error.contains("invalid type"), "{}", bad.error);
    }

    #[test]
    fn an_item_without_a_name_fails_the_list_as_before() {
        let items = vec![json!({"metadata": {}, "spec": 5})];
        assert!(decode_list_items::<Pod>(items, false).is_err());
    }

    #[test]
    fn the_set_reports_each_object_once_per_resource_version() {
        let report = |key: &str, rv: &str| Unreadable {
            key: key.into(),
            api_version: None,
            kind: None,
            metadata: ObjectMeta {
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            error: "e".into(),
        };
        let mut set = UnreadableSet::default();
        assert_eq!(set.replace(vec![report("a", "1")]).len(), 1);
        assert!(set.replace(vec![report("a", "1")]).is_empty());
        assert_eq!(
            set.replace(vec![report("a", "2"), report("b", "1")]).len(),
            2
        );
        assert!(set.forget("a"));
        assert!(!set.forget("a"));
        assert_eq!(set.len(), 1);
        set.replace(Vec::new());
        assert_eq!(set.len(), 0);
    }
}
