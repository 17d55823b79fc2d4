//! Streaming lists (`sendInitialEvents`, KEP-3157) against a scripted source, paused
//! time: the informer syncs from one watch and keeps watching on it; a server without
//! the feature gets paged lists for good; a stream that breaks before its end
//! bookmark falls back to a paged list once; a relist by stream delivers tombstones; a
//! resource not served yet (404) is no server without the feature.

use std::time::Duration;

use cache::testing::{
    ScriptedListerWatcher, api_error, bookmark, config_map as cm, gone, initial_events_end,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;

mod common;
use common::{Recorder, Running, delivered, eventually};

/// An informer with a recording handler over `lw`.
fn start(lw: ScriptedListerWatcher<ConfigMap>) -> (Running, Recorder) {
    let events = Recorder::default();
    (
        common::start(lw, Some(events.clone()), Duration::ZERO),
        events,
    )
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_syncs_from_one_watch_and_keeps_watching_on_it() {
    let lw = ScriptedListerWatcher::new();
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("a", "1"))),
            Ok(bookmark("3")), // a plain bookmark does not end the initial events
            Ok(WatchEvent::Added(cm("b", "2"))),
            Ok(initial_events_end("10")),
            Ok(WatchEvent::Modified(cm("a", "11"))),
        ],
        false,
    );
    let (r, rec) = start(lw);
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    assert_eq!(r.keys(), ["default/a", "default/b"]);
    delivered("the update", || rec.events().len() == 3).await;
    // Per key in order (the update may come before b's add: the DeltaFIFO queues
    // a's change behind its initial delta if a has not been popped yet).
    let events = rec.events();
    let position = |e: &str| events.iter().position(|x| x == e);
    assert!(position("add b 2 initial").is_some(), "{events:?}");
    assert!(
        position("add a 1 initial") < position("update a 1->11"),
        "{events:?}"
    );
    assert!(position("add a 1 initial").is_some(), "{events:?}");
    assert_eq!(r.informer.last_sync_resource_version(), "11");
    let call = &r.lw.watch_list_calls()[0];
    assert_eq!(call.resource_version, "", "not older than now");
    assert!(call.send_initial_events && call.allow_bookmarks);
    assert!(r.lw.list_calls().is_empty(), "no list request");
    assert!(r.lw.watch_calls().is_empty(), "no second watch");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_without_streaming_lists_gets_paged_lists_for_good() {
    // The scripted source answers streaming lists with 422, as a server with the
    // WatchList feature off.
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "5");
    lw.push_watch(vec![Err(gone())], false);
    lw.push_list_items(vec![cm("b", "6")], "7");
    let (r, _events) = start(lw);
    eventually("relisted", || r.keys() == ["default/b"]).await;
    assert_eq!(r.lw.list_calls().len(), 2);
    assert_eq!(
        r.lw.watch_list_calls().len(),
        1,
        "asked once, not per relist"
    );
    r.stop().await;
}

/// An informer started right after its CRD was applied: the resource is not served
/// yet, and the streaming list is answered 404. That says nothing about streaming lists
/// (issue 58: it once switched them off for the life of the process): the paged list
/// of this attempt fails the same way, and once the resource is served the informer
/// streams.
#[tokio::test(start_paused = true)]
async fn a_resource_not_served_yet_is_no_server_without_streaming_lists() {
    let lw = ScriptedListerWatcher::new();
    let not_found = || {
        api_error(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    lw.push_watch_list_error(not_found());
    lw.push_list(Err(not_found()));
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("a", "1"))),
            Ok(initial_events_end("5")),
        ],
        false,
    );
    let (r, _events) = start(lw);
    // Bounded (paused time): a reflector that gave up on streams asks for a second
    // paged list the script does not have, and never syncs.
    let synced = tokio::time::timeout(
        Duration::from_secs(600),
        r.informer.wait_for_cache_sync(&r.stop),
    )
    .await;
    assert!(
        synced.is_ok_and(|ok| ok),
        "not synced: streaming lists were given up after a 404 ({} streams, {} lists)",
        r.lw.watch_list_calls().len(),
        r.lw.list_calls().len()
    );
    assert_eq!(r.keys(), ["default/a"]);
    assert_eq!(
        r.lw.watch_list_calls().len(),
        2,
        "streamed again after the 404"
    );
    assert_eq!(
        r.lw.list_calls().len(),
        1,
        "one paged list, for the 404's attempt"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_broken_stream_falls_back_once_and_a_streamed_relist_delivers_tombstones() {
    let lw = ScriptedListerWatcher::new();
    // 1. The stream closes before its end bookmark: this time, a paged list.
    lw.push_watch_list(vec![Ok(WatchEvent::Added(cm("a", "1")))], true);
    lw.push_list_items(vec![cm("keep", "1"), cm("vanish", "1")], "5");
    // 2. The watch after that list expires (410)...
    lw.push_watch(vec![Err(gone())], false);
    // 3. ...and the relist streams again; "vanish" was deleted in the gap.
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("keep", "1"))),
            Ok(initial_events_end("20")),
        ],
        false,
    );
    let (r, rec) = start(lw);
    eventually("streamed relist", || r.lw.watch_list_calls().len() == 2).await;
    eventually("vanish gone", || r.keys() == ["default/keep"]).await;
    delivered("the tombstone", || {
        rec.events()
            .contains(&"delete default/vanish tombstone".to_string())
    })
    .await;
    assert_eq!(r.lw.list_calls().len(), 1, "only the fallback list");
    assert_eq!(r.informer.last_sync_resource_version(), "20");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn changes_before_the_end_bookmark_mean_the_server_ignores_the_request() {
    let lw = ScriptedListerWatcher::new();
    // A server that ignores sendInitialEvents: synthetic adds, then changes, no end.
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("a", "1"))),
            Ok(WatchEvent::Modified(cm("a", "2"))),
        ],
        false,
    );
    lw.push_list_items(vec![cm("a", "2")], "5");
    lw.push_watch(vec![Err(gone())], false);
    lw.push_list_items(vec![cm("a", "3")], "6");
    let (r, _events) = start(lw);
    eventually("relisted", || r.lw.list_calls().len() == 2).await;
    assert_eq!(r.lw.watch_list_calls().len(), 1, "not asked again");
    r.stop().await;
}
