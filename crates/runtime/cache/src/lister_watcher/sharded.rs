//! The client side of a sharded list and watch (see [`crate::shard`]): the
//! `shardSelector` parameter on every request, the probe that finds out whether the
//! server filtered, and the filter every page and every event passes through.
//!
//! The filter runs whether or not the server filtered. With server-side filtering it
//! drops nothing (one FNV hash per object is its whole cost); without it, it is what
//! keeps the cache to the slice.
//!
//! **Did the server filter?** A list answer that carries `metadata.shardInfo` says
//! yes. Its absence is not proof of the opposite: Kubernetes 1.37.2 filters lists and
//! watches of custom resources too, but their answers carry no `shardInfo` (found on
//! a real server, gate on: two halves of six Foos came back as 4 + 2, neither with
//! `shardInfo`; built-in kinds carry it). So the objects themselves are the evidence:
//! one object outside the ranges asked for means the server did not filter; with
//! none outside after as many objects as make chance improbable (fewer than one in a
//! million: 20 objects for half of the space, 13 for a third), it did. For objects sharded by their controller's UID it
//! also remembers which keys it let through, because an object can *leave* the slice
//! through an update (its ownerReference changed): that update reaches the queue as a
//! deletion, and updates of objects it never let through are dropped.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use kube::Resource;
use kube::api::WatchEvent;
use parking_lot::Mutex;

use super::WatchStream;
use crate::keys::meta_namespace_key;
use crate::shard::{RangeSet, ServerFiltering, ShardBy, ShardFilter};

/// The query parameter (`ListOptions.shardSelector`, KEP-5866).
pub const SHARD_SELECTOR_PARAM: &str = "shardSelector";

/// A [`ShardFilter`] plus the keys it let through (for [`ShardBy::ControllerUid`]).
#[derive(Debug, Clone)]
pub(crate) struct ShardState {
    pub(crate) filter: ShardFilter,
    /// Keys passed through since the last list began; only kept when objects can
    /// leave the slice by an update.
    passed: Arc<Mutex<HashSet<String>>>,
    /// The informer's name in logs (the collection's URL).
    name: Arc<str>,
    /// Objects the server sent inside the ranges asked for, while undecided.
    inside: Arc<AtomicU64>,
}

impl ShardState {
    pub(crate) fn new(filter: ShardFilter, name: &str) -> Self {
        Self {
            filter,
            passed: Arc::new(Mutex::new(HashSet::new())),
            name: name.into(),
            inside: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Counts one object the server sent (inside `ranges` or not) as evidence of its
    /// filtering (see the module docs). Only for rules the server can filter.
    fn evidence(&self, ranges: &RangeSet, inside: bool) {
        // Settled (or a rule the server cannot filter): one load per object, no more.
        let state = self.filter.server_filtering();
        if state == ServerFiltering::No || state == ServerFiltering::NotApplicable {
            return;
        }
        if !inside {
            // Proof the server did not filter; final (see `found`).
            self.found(ServerFiltering::No);
            return;
        }
        if state == ServerFiltering::Yes {
            return;
        }
        // Unknown, nothing outside so far (that would have made it No): enough objects
        // inside and a server that ignored the selector would have sent one outside
        // with probability above 1 - 1e-6.
        let seen = self.inside.fetch_add(1, Ordering::Relaxed) + 1;
        let share = ranges.fraction();
        if share < 0.999 && (seen as f64) * share.ln() < (1e-6f64).ln() {
            self.found(ServerFiltering::Yes);
        }
    }

    /// Objects move in and out of the slice only when the hash is not of an
    /// immutable field.
    fn tracks_keys(&self) -> bool {
        self.filter.by == ShardBy::ControllerUid
    }

    /// A list (or a streaming list) starts over: forget the keys passed before.
    pub(crate) fn list_started(&self) {
        if self.tracks_keys() {
            self.passed.lock().clear();
        }
    }

    /// Keeps the items of a page that are in `ranges`.
    pub(crate) fn filter_page<K: Resource>(&self, ranges: &RangeSet, items: Vec<K>) -> Vec<K> {
        let kept: Vec<K> = items
            .into_iter()
            .filter(|obj| {
                let inside = self.filter.matches(ranges, obj);
                self.evidence(ranges, inside);
                inside
            })
            .collect();
        if self.tracks_keys() {
            let mut passed = self.passed.lock();
            passed.extend(kept.iter().filter_map(key_of));
        }
        kept
    }

    /// What becomes of one watch event under `ranges`: kept, dropped, or (an object
    /// that left the slice by an update) turned into a deletion.
    fn filter_event<K: Resource>(
        &self,
        ranges: &RangeSet,
        event: WatchEvent<K>,
    ) -> Option<WatchEvent<K>> {
        let obj = match &event {
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj) => obj,
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => return Some(event),
        };
        let inside = self.filter.matches(ranges, obj);
        self.evidence(ranges, inside);
        if !self.tracks_keys() {
            // The hashed field never changes: an object is always in or always out.
            return inside.then_some(event);
        }
        let key = key_of(obj)?;
        let mut passed = self.passed.lock();
        match event {
            WatchEvent::Deleted(obj) => passed.remove(&key).then_some(WatchEvent::Deleted(obj)),
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) if inside => {
                let first = passed.insert(key);
                Some(if first {
                    WatchEvent::Added(obj)
                } else {
                    WatchEvent::Modified(obj)
                })
            }
            // Outside now: if it was inside, it leaves the cache.
            WatchEvent::Added(obj) | WatchEvent::Modified(obj) => {
                passed.remove(&key).then_some(WatchEvent::Deleted(obj))
            }
            other => Some(other),
        }
    }

    /// `stream` with every event passed through [`filter_event`](Self::filter_event)
    /// under `ranges` (the ranges of the list this watch continues: a change of
    /// ranges relists, so they are fixed for the stream's life).
    ///
    /// For a streaming list, `initial` is the generation of `ranges`: the bookmark
    /// that ends the initial events marks the list done for it.
    pub(crate) fn filter_stream<K>(
        &self,
        ranges: Arc<RangeSet>,
        initial: Option<u64>,
        stream: WatchStream<K>,
    ) -> WatchStream<K>
    where
        K: Resource + Send + 'static,
    {
        let state = self.clone();
        stream
            .filter_map(move |item| {
                if let (Some(generation), Ok(WatchEvent::Bookmark(bookmark))) = (initial, &item)
                    && bookmark
                        .metadata
                        .annotations
                        .contains_key(crate::reflector::INITIAL_EVENTS_END)
                {
                    state.filter.mark_listed(generation);
                }
                let out = match item {
                    Ok(event) => state.filter_event(&ranges, event).map(Ok),
                    Err(e) => Some(Err(e)),
                };
                futures::future::ready(out)
            })
            .boxed()
    }

    /// A list answer carried `metadata.shardInfo`: the server filtered.
    pub(crate) fn shard_info_seen(&self) {
        self.found(ServerFiltering::Yes);
    }

    /// Records a finding; logs when it changes (the first time included). "No" is
    /// final: an object outside the ranges is proof.
    fn found(&self, found: ServerFiltering) {
        if self.filter.server_filtering() == ServerFiltering::No {
            return;
        }
        let before = self.filter.set_server_filtering(found);
        if before == found {
            return;
        }
        match found {
            ServerFiltering::Yes => tracing::info!(
                informer = %self.name,
                "the API server filters by shardSelector (KEP-5866): only this replica's slice travels"
            ),
            _ => tracing::info!(
                informer = %self.name,
                "the API server ignored shardSelector (feature gate ShardedListAndWatch off, or a server before 1.36): \
                 filtering on the client with the same hash"
            ),
        }
    }
}

fn key_of<K: Resource>(obj: &K) -> Option<String> {
    meta_namespace_key(obj).ok()
}

/// Appends `name=value` (URL-encoded) to the query of `request`'s URI.
pub(crate) fn append_query<B>(request: &mut http::Request<B>, name: &str, value: &str) {
    let uri = request.uri().to_string();
    let separator = if uri.contains('?') { '&' } else { '?' };
    let encoded: String = form_urlencoded::byte_serialize(value.as_bytes()).collect();
    if let Ok(new) = format!("{uri}{separator}{name}={encoded}").parse() {
        *request.uri_mut() = new;
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;
    use crate::shard::{HashRange, ShardRanges, fnv1a64};

    fn owned(name: &str, owner: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some(name.into());
        cm.metadata.uid = Some(format!("uid-{name}"));
        cm.metadata.owner_references = Some(vec![OwnerReference {
            uid: owner.into(),
            controller: Some(true),
            ..OwnerReference::default()
        }]);
        cm
    }

    /// The ranges holding exactly `fnv1a64(owner)`.
    fn only(owner: &str) -> RangeSet {
        let h = fnv1a64(owner.as_bytes());
        RangeSet::from_ranges([HashRange::new(h, h).unwrap()])
    }

    #[test]
    fn an_owned_object_that_changes_owner_leaves_as_a_deletion() {
        let state = ShardState::new(
            ShardFilter::new(ShardRanges::new(), ShardBy::ControllerUid),
            "test",
        );
        let mine = only("a");
        let kept = state.filter_page(&mine, vec![owned("x", "a"), owned("y", "b")]);
        assert_eq!(kept.len(), 1);
        // x moves to owner b: out of the slice, so a deletion.
        let out = state.filter_event(&mine, WatchEvent::Modified(owned("x", "b")));
        assert!(matches!(out, Some(WatchEvent::Deleted(_))));
        // Further updates of x (and y, never passed) are dropped.
        assert!(
            state
                .filter_event(&mine, WatchEvent::Modified(owned("x", "b")))
                .is_none()
        );
        assert!(
            state
                .filter_event(&mine, WatchEvent::Deleted(owned("y", "b")))
                .is_none()
        );
        // y adopted by a: it enters, as an addition.
        let out = state.filter_event(&mine, WatchEvent::Modified(owned("y", "a")));
        assert!(matches!(out, Some(WatchEvent::Added(_))));
    }

    #[test]
    fn uid_sharding_keeps_or_drops_without_remembering() {
        let state = ShardState::new(ShardFilter::new(ShardRanges::new(), ShardBy::UID), "test");
        let mut cm = owned("x", "a");
        let mine = only("uid-x");
        assert!(
            state
                .filter_event(&mine, WatchEvent::Modified(cm.clone()))
                .is_some()
        );
        cm.metadata.uid = Some("uid-other".into());
        assert!(state.filter_event(&mine, WatchEvent::Deleted(cm)).is_none());
        assert!(state.passed.lock().is_empty());
    }

    #[test]
    fn the_objects_tell_whether_the_server_filtered() {
        let quarter = RangeSet::from_ranges([HashRange::new(0, u64::MAX / 4).unwrap()]);
        let inside = |i: u32| {
            // A UID whose hash falls in the first quarter.
            (0..)
                .map(|n| format!("uid-{i}-{n}"))
                .find(|u| quarter.contains(fnv1a64(u.as_bytes())))
                .unwrap()
        };
        let cm = |uid: String| {
            let mut cm = ConfigMap::default();
            cm.metadata.uid = Some(uid);
            cm
        };
        let state = ShardState::new(ShardFilter::new(ShardRanges::new(), ShardBy::UID), "test");
        // A quarter of the space: 10 objects inside prove it (0.25^10 < 1e-6).
        for i in 0..9 {
            state.filter_page(&quarter, vec![cm(inside(i))]);
        }
        assert_eq!(state.filter.server_filtering(), ServerFiltering::Unknown);
        state.filter_page(&quarter, vec![cm(inside(9))]);
        assert_eq!(state.filter.server_filtering(), ServerFiltering::Yes);
        // One outside: the server did not filter after all, for good.
        let outside = (0..)
            .map(|n| format!("out-{n}"))
            .find(|u| !quarter.contains(fnv1a64(u.as_bytes())))
            .unwrap();
        assert!(state.filter_page(&quarter, vec![cm(outside)]).is_empty());
        assert_eq!(state.filter.server_filtering(), ServerFiltering::No);
        state.shard_info_seen();
        assert_eq!(state.filter.server_filtering(), ServerFiltering::No);
    }

    #[test]
    fn the_selector_is_appended_encoded() {
        let mut request = http::Request::new(());
        *request.uri_mut() = "/api/v1/namespaces?limit=1".parse().unwrap();
        append_query(
            &mut request,
            SHARD_SELECTOR_PARAM,
            "shardRange(a, '0x1', '0x2') || b",
        );
        let uri = request.uri().to_string();
        assert!(
            uri.starts_with("/api/v1/namespaces?limit=1&shardSelector=shardRange%28a%2C+%270x1%27"),
            "{uri}"
        );
    }
}
