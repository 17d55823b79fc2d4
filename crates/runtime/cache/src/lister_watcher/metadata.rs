//! Metadata-only lists and watches: client-go's `metadata` client under its
//! `metadatainformer`, kube's `Api::list_metadata` / `watch_metadata`.
//!
//! An informer that only needs to know *which* objects exist and *that* they changed
//! (an owner mapping its owned objects back to itself, a garbage collector) pays for
//! whole objects when it lists and watches them: a ConfigMap's `data`, a Deployment's
//! pod template, decoded and cached for nothing. The API server can send the
//! `metadata` alone: asked with
//! `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` it
//! answers a list as a `meta.k8s.io/v1` `PartialObjectMetadataList` (each item
//! `kind: PartialObjectMetadata` with the object's `metadata` and nothing else), and a
//! watch asked with `as=PartialObjectMetadata` sends each event's object that way. The
//! cut happens on the server, so neither the wire nor the client's decoder sees the
//! rest.
//!
//! Here a metadata-only lister-watcher is the ordinary
//! [`ApiListerWatcher`](super::ApiListerWatcher) over
//! [`kube::core::PartialObjectMeta<K>`], typed by the full kind `K`:
//! `ApiListerWatcher::new(Api::<PartialObjectMeta<ConfigMap>>::all(client))`.
//! `PartialObjectMeta<K>` answers [`Resource::metadata_api`] with `true`, and that is
//! what makes the lister-watcher ask with the headers of this module
//! ([`METADATA_LIST_ACCEPT`], [`METADATA_WATCH_ACCEPT`]) instead of protobuf or plain
//! JSON. Everything else is unchanged: the pager and its
//! read-ahead, the watch stream, streaming lists (`sendInitialEvents`: the initial
//! events and the closing bookmark arrive as `PartialObjectMetadata` too),
//! [`strip_managed_fields`](super::ApiListerWatcher::strip_managed_fields), sharding.
//! Because the type is `PartialObjectMeta<K>`, not `K`, the factory keys its informer
//! apart from `K`'s full-object one
//! ([`SharedInformerFactory::metadata_informer_for`](crate::SharedInformerFactory::metadata_informer_for)),
//! and listers, indexers and the freshness guard treat it as a kind of its own.
//!
//! # The media types, and how they differ from client-go's
//!
//! client-go's metadata client asks
//! `application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,`
//! `application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json`
//! (and `as=PartialObjectMetadata` for watches). We leave out the protobuf form:
//! `protowire` has no decoder for `PartialObjectMetadata` (and the object is a small
//! part of what protobuf saves on a full object), so JSON is the only form asked for.
//! The trailing `application/json` is kept, as in client-go: a server (or an aggregated
//! API) that cannot convert to `PartialObjectMetadata` answers the full objects as
//! plain JSON instead of `406 Not Acceptable`, and decoding them as
//! `PartialObjectMeta<K>` keeps their `metadata` and ignores the rest, which is what
//! client-go does with such an answer (`json.Unmarshal` into `PartialObjectMetadata`).
//! kube's `list_metadata` / `watch_metadata` send the `as=` form alone, without that
//! fallback.

use kube::Resource;

/// The `Accept` header of a metadata-only list: a `PartialObjectMetadataList`, or the
/// plain JSON list from a server that cannot convert (see the [module docs](self)).
pub const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

/// The `Accept` header of a metadata-only watch: each event's object a
/// `PartialObjectMetadata`, or the plain JSON object from a server that cannot convert.
pub const METADATA_WATCH_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// Which request an `Accept` header is for: the two metadata forms differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verb {
    /// A list (one page).
    List,
    /// A watch, streaming lists included.
    Watch,
}

/// The `Accept` header a lister-watcher of `K` sends for `verb`: the metadata-only
/// form when `K` is a [`PartialObjectMeta`](kube::core::PartialObjectMeta) (its
/// [`Resource::metadata_api`]), else protobuf when `protobuf` (a decoder for `K` on
/// the protobuf wire), else `None` (kube's default, JSON).
pub(crate) fn accept<K: Resource>(verb: Verb, protobuf: bool) -> Option<&'static str> {
    if K::metadata_api() {
        Some(match verb {
            Verb::List => METADATA_LIST_ACCEPT,
            Verb::Watch => METADATA_WATCH_ACCEPT,
        })
    } else if protobuf {
        Some(protowire::ACCEPT)
    } else {
        None
    }
}

/// Sets `accept` as `request`'s `Accept` header (nothing for `None`).
pub(crate) fn set_accept<B>(request: &mut http::Request<B>, accept: Option<&'static str>) {
    if let Some(accept) = accept {
        request
            .headers_mut()
            .insert(http::header::ACCEPT, http::HeaderValue::from_static(accept));
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::DynamicObject;
    use kube::api::WatchEvent;
    use kube::core::{ObjectList, PartialObjectMeta};

    use super::*;

    #[test]
    fn metadata_kinds_ask_for_partial_object_metadata_whatever_the_wire() {
        type Meta = PartialObjectMeta<ConfigMap>;
        for protobuf in [false, true] {
            assert_eq!(
                accept::<Meta>(Verb::List, protobuf),
                Some(METADATA_LIST_ACCEPT)
            );
            assert_eq!(
                accept::<Meta>(Verb::Watch, protobuf),
                Some(METADATA_WATCH_ACCEPT)
            );
        }
    }

    #[test]
    fn full_kinds_ask_for_protobuf_or_leave_kubes_default() {
        assert_eq!(
            accept::<ConfigMap>(Verb::List, true),
            Some(protowire::ACCEPT)
        );
        assert_eq!(accept::<ConfigMap>(Verb::Watch, false), None);
        assert_eq!(accept::<DynamicObject>(Verb::Watch, false), None);
    }

    #[test]
    fn the_headers_name_the_meta_v1_forms_and_fall_back_to_plain_json() {
        assert!(
            METADATA_LIST_ACCEPT
                .starts_with("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,")
        );
        assert!(
            METADATA_WATCH_ACCEPT
                .starts_with("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,")
        );
        for header in [METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT] {
            assert!(header.ends_with(",application/json"));
            assert!(!header.contains("protobuf"));
        }
        let mut request = http::Request::new(());
        set_accept(&mut request, Some(METADATA_LIST_ACCEPT));
        assert_eq!(
            request.headers()[http::header::ACCEPT],
            METADATA_LIST_ACCEPT
        );
    }

    #[test]
    fn both_answers_decode_to_the_metadata_alone() {
        // What the server sends when it converts ...
        let partial = br#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
            "metadata":{"resourceVersion":"7"},
            "items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
                      "metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5"}}]}"#;
        // ... and the plain JSON fallback: the full objects, data included.
        let full = br#"{"kind":"ConfigMapList","apiVersion":"v1",
            "metadata":{"resourceVersion":"7"},
            "items":[{"metadata":{"name":"a","namespace":"ns","uid":"u1","resourceVersion":"5"},
                      "data":{"index.html":"<h1>big</h1>"}}]}"#;
        for body in [&partial[..], &full[..]] {
            let list: ObjectList<PartialObjectMeta<ConfigMap>> =
                serde_json::from_slice(body).unwrap();
            assert_eq!(list.metadata.resource_version.as_deref(), Some("7"));
            assert_eq!(list.items.len(), 1);
            let meta = &list.items[0].metadata;
            assert_eq!(meta.name.as_deref(), Some("a"));
            assert_eq!(meta.uid.as_deref(), Some("u1"));
        }
        let event = br#"{"type":"MODIFIED","object":{"kind":"PartialObjectMetadata",
            "apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","resourceVersion":"8"}}}"#;
        let event: WatchEvent<PartialObjectMeta<ConfigMap>> =
            serde_json::from_slice(event).unwrap();
        assert!(
            matches!(event, WatchEvent::Modified(m) if m.metadata.resource_version.as_deref() == Some("8"))
        );
    }
}
