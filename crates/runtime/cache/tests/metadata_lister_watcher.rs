//! The metadata-only lister-watcher against a scripted API server behind a real
//! `kube::Client` (a tower service answering canned bodies): which `Accept` header
//! each request carries (client-go's metadata client: `as=PartialObjectMetadataList`
//! for lists, `as=PartialObjectMetadata` for watches, plain JSON as the fallback, no
//! protobuf), that paged lists, watches and streaming lists decode to
//! `PartialObjectMeta`, that `strip_managed_fields` applies, and that a full-object
//! lister-watcher of the same kind keeps asking for protobuf.

#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use cache::lister_watcher::metadata::{METADATA_LIST_ACCEPT, METADATA_WATCH_ACCEPT};
use cache::{ApiListerWatcher, ListOptions, ListerWatcher, WatchOptions, Wire};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, WatchEvent};
use kube::client::Body;
use kube::core::PartialObjectMeta;

/// One request as the server saw it: its URI and `Accept` header.
#[derive(Debug, Clone)]
struct Seen {
    uri: String,
    accept: Option<String>,
}

/// A scripted server: a PartialObjectMetadataList in two pages for lists, two
/// events and a bookmark for watches. Records every request.
fn server() -> (kube::Client, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let uri = request.uri().to_string();
        log.lock().unwrap().push(Seen {
            uri: uri.clone(),
            accept: request
                .headers()
                .get(http::header::ACCEPT)
                .map(|v| v.to_str().unwrap().to_string()),
        });
        let body = if uri.contains("watch=true") {
            concat!(
                r#"{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"c","namespace":"ns","resourceVersion":"12","managedFields":[{"manager":"kubectl"}]}}}"#,
                "\n",
                r#"{"type":"DELETED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"13"}}}"#,
                "\n",
                r#"{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"14","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
                "\n",
            )
            .to_string()
        } else if uri.contains("continue=") {
            r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"11"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","uid":"u-b","resourceVersion":"9"}}]}"#.to_string()
        } else {
            r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"11","continue":"next"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","uid":"u-a","resourceVersion":"8","managedFields":[{"manager":"kubectl"}]}}]}"#.to_string()
        };
        async move {
            Ok::<_, Infallible>(
                http::Response::builder()
                    .header(
                        http::header::CONTENT_TYPE,
                        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                    )
                    .body(Body::from(body.into_bytes()))
                    .unwrap(),
            )
        }
    });
    (kube::Client::new(service, "default"), seen)
}

fn names(items: &[PartialObjectMeta<ConfigMap>]) -> Vec<String> {
    items
        .iter()
        .map(|m| m.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn paged_lists_ask_for_partial_object_metadata_lists_even_on_the_protobuf_wire() {
    let (client, seen) = server();
    let api: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client, "ns");
    let lw = ApiListerWatcher::new(api)
        .wire(Wire::Protobuf)
        .strip_managed_fields(true);
    let options = ListOptions {
        limit: 1,
        ..ListOptions::default()
    };
    let first = lw.list(&options).await.unwrap();
    assert_eq!(names(&first.items), ["a"]);
    assert_eq!(first.continue_token.as_deref(), Some("next"));
    assert_eq!(first.resource_version, "11");
    // Stripped before decoding, as for full objects.
    assert_eq!(first.items[0].metadata.managed_fields, None);
    assert_eq!(first.items[0].metadata.uid.as_deref(), Some("u-a"));
    let second = lw
        .list(&ListOptions {
            continue_token: first.continue_token.clone(),
            ..options
        })
        .await
        .unwrap();
    assert_eq!(names(&second.items), ["b"]);
    assert_eq!(second.continue_token, None);
    // The answer was JSON (a metadata list has no protobuf form here).
    assert_eq!(lw.answered_wire(), Some(Wire::Json));

    let seen = seen.lock().unwrap().clone();
    // The first page, and the second read ahead before the first was decoded.
    assert_eq!(seen.len(), 2, "{seen:?}");
    for request in &seen {
        assert!(request.uri.starts_with("/api/v1/namespaces/ns/configmaps?"));
        assert_eq!(request.accept.as_deref(), Some(METADATA_LIST_ACCEPT));
    }
}

#[tokio::test]
async fn watches_and_streaming_lists_ask_for_partial_object_metadata() {
    let (client, seen) = server();
    let api: Api<PartialObjectMeta<ConfigMap>> = Api::all(client);
    let lw = ApiListerWatcher::new(api).strip_managed_fields(true);
    for send_initial_events in [false, true] {
        let options = WatchOptions {
            resource_version: String::new(),
            timeout_seconds: 60,
            allow_bookmarks: true,
            send_initial_events,
        };
        let events: Vec<_> = lw.watch(&options).await.unwrap().collect().await;
        assert_eq!(events.len(), 3, "{events:?}");
        match &events[0] {
            Ok(WatchEvent::Added(m)) => {
                assert_eq!(m.metadata.name.as_deref(), Some("c"));
                assert_eq!(m.metadata.managed_fields, None);
            }
            other => panic!("expected ADDED, got {other:?}"),
        }
        assert!(
            matches!(&events[1], Ok(WatchEvent::Deleted(m)) if m.metadata.name.as_deref() == Some("a"))
        );
        match &events[2] {
            Ok(WatchEvent::Bookmark(b)) => {
                assert_eq!(b.metadata.resource_version, "14");
                assert!(
                    b.metadata
                        .annotations
                        .contains_key("k8s.io/initial-events-end")
                );
            }
            other => panic!("expected BOOKMARK, got {other:?}"),
        }
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    for request in &seen {
        assert_eq!(request.accept.as_deref(), Some(METADATA_WATCH_ACCEPT));
    }
    assert!(seen[1].uri.contains("sendInitialEvents=true"), "{seen:?}");
}

#[tokio::test]
async fn a_full_object_lister_watcher_of_the_same_kind_still_asks_for_protobuf() {
    let (client, seen) = server();
    let api: Api<ConfigMap> = Api::all(client);
    let lw = ApiListerWatcher::new(api).wire(Wire::Protobuf);
    // The canned answer is not a ConfigMap list in protobuf; only the question matters.
    let _ = lw.list(&ListOptions::default()).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].accept.as_deref(), Some(protowire::ACCEPT));
}
