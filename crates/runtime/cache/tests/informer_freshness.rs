//! How fresh is the cache? The store's resourceVersion
//! (`last_store_sync_resource_version`, client-go 1.36's `LastStoreSyncResourceVersion`)
//! and the bookmarks handlers receive (KEP-5647's `BookmarkFunc`), against a scripted
//! source with paused time.
//!
//! Both exist only on the RealFIFO with atomic events, the default: hack/test.sh also
//! runs this suite on the plain RealFIFO (`CACHE_TEST_QUEUE=real`) and the DeltaFIFO
//! (`CACHE_TEST_QUEUE=delta`), where every test checks the other half of the
//! contract: no store version and no bookmark, ever (client-go 1.36 answers `""`
//! without `AtomicFIFO`).

use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, bookmark, config_map as cm, gone, initial_events_end};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;

mod common;
use common::{Recorder, Running, delivered, eventually, queue_kind};

fn in_order() -> bool {
    queue_kind().tracks_store_version()
}

/// The store's version as a plain string ("" for none).
fn store_rv(r: &Running) -> String {
    r.informer
        .last_store_sync_resource_version()
        .map(|rv| rv.to_string())
        .unwrap_or_default()
}

/// `events` without the bookmarks, which only the RealFIFO delivers.
fn expect(events: &[&str]) -> Vec<String> {
    events
        .iter()
        .filter(|e| in_order() || !e.starts_with("bookmark"))
        .map(|e| e.to_string())
        .collect()
}

fn start(lw: ScriptedListerWatcher<ConfigMap>) -> (Running, Recorder) {
    let rec = Recorder::with_bookmarks();
    (common::start(lw, Some(rec.clone()), Duration::ZERO), rec)
}

#[tokio::test(start_paused = true)]
async fn the_store_version_follows_what_was_applied_and_bookmarks_follow_the_events_before_them() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1"), cm("b", "2")], "10");
    let watch = lw.push_watch_channel();
    let (r, rec) = start(lw);
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    let want = expect(&["add a 1 initial", "add b 2 initial", "bookmark 10"]);
    delivered("the initial list", || rec.events().len() == want.len()).await;
    assert_eq!(rec.events(), want);
    if in_order() {
        // The bookmark queued behind the list: the list's version, not an object's.
        eventually("store at the list's version", || store_rv(&r) == "10").await;
    }

    watch.send(Ok(WatchEvent::Added(cm("c", "11")))).unwrap();
    eventually("c cached", || r.keys().len() == 3).await;
    assert_eq!(store_rv(&r), if in_order() { "11" } else { "" });

    watch.send(Ok(WatchEvent::Modified(cm("a", "12")))).unwrap();
    watch.send(Ok(bookmark("20"))).unwrap();
    watch.send(Ok(WatchEvent::Deleted(cm("b", "21")))).unwrap();
    let want = expect(&[
        "add a 1 initial",
        "add b 2 initial",
        "bookmark 10",
        "add c 11",
        "update a 1->12",
        "bookmark 20",
        "delete b 21",
    ]);
    delivered("every event", || rec.events().len() == want.len()).await;
    assert_eq!(rec.events(), want);
    assert_eq!(store_rv(&r), if in_order() { "21" } else { "" });
    // What the reflector received, whatever the queue: client-go's
    // LastSyncResourceVersion.
    assert_eq!(r.informer.last_sync_resource_version(), "21");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn after_a_relist_the_store_reaches_the_new_version_only_behind_its_tombstones() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("keep", "1"), cm("vanish", "2")], "10");
    lw.push_watch(vec![Err(gone())], false);
    lw.push_list_items(vec![cm("keep", "1"), cm("born", "25")], "30");
    let (r, rec) = start(lw);
    let want = expect(&[
        "add keep 1 initial",
        "add vanish 2 initial",
        "bookmark 10",
        "delete default/vanish tombstone",
        "add born 25",
        "bookmark 30",
    ]);
    delivered("the relist", || rec.events().len() >= want.len()).await;
    let mut events = rec.events();
    // The relist delivers `keep` again as a sync (same version): not to this handler.
    events.retain(|e| !e.starts_with("update keep"));
    // Per key in order; with the atomic RealFIFO the relist is one unit whose
    // deletions are told first, then the list, then its version (client-go's
    // `processReplacedAllInfo`).
    if in_order() {
        assert_eq!(
            events,
            expect(&[
                "add keep 1 initial",
                "add vanish 2 initial",
                "bookmark 10",
                "delete default/vanish tombstone",
                "add born 25",
                "bookmark 30",
            ])
        );
        assert_eq!(store_rv(&r), "30");
    } else {
        let mut sorted = events.clone();
        sorted.sort();
        let mut want = want;
        want.sort();
        assert_eq!(sorted, want);
        assert_eq!(store_rv(&r), "");
    }
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_ends_with_a_bookmark_at_its_end_version() {
    let lw = ScriptedListerWatcher::new();
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("a", "1"))),
            Ok(WatchEvent::Added(cm("b", "2"))),
            Ok(initial_events_end("40")),
        ],
        false,
    );
    let (r, rec) = start(lw);
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    let want = expect(&["add a 1 initial", "add b 2 initial", "bookmark 40"]);
    delivered("the stream", || rec.events().len() == want.len()).await;
    assert_eq!(rec.events(), want);
    assert_eq!(store_rv(&r), if in_order() { "40" } else { "" });
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_handler_registered_late_gets_a_bookmark_right_after_its_snapshot() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "10");
    let watch = lw.push_watch_channel();
    let (r, _) = start(lw);
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    watch.send(Ok(WatchEvent::Added(cm("b", "11")))).unwrap();
    eventually("b cached", || r.keys().len() == 2).await;

    let late = Recorder::with_bookmarks();
    let registration = r.informer.add_event_handler(late.clone());
    let want_tail = expect(&["bookmark 11"]);
    delivered("the snapshot and its bookmark", || {
        registration.has_synced() && late.events().len() == 2 + want_tail.len()
    })
    .await;
    let mut events = late.events();
    let tail = events.split_off(2);
    events.sort(); // a snapshot of the cache: no order
    assert_eq!(events, ["add a 1 initial", "add b 11 initial"]);
    assert_eq!(tail, want_tail);

    // A bookmark carries no object: a handler that ignores it is not bothered.
    let ignores = Recorder::default();
    r.informer.add_event_handler(ignores.clone());
    watch.send(Ok(bookmark("50"))).unwrap();
    delivered("the late handler's bookmark", || {
        late.events().len() == 2 + expect(&["bookmark 11", "bookmark 50"]).len()
    })
    .await;
    delivered("the snapshot", || ignores.events().len() == 2).await;
    assert!(ignores.events().iter().all(|e| e.starts_with("add")));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_a_version_wakes_exactly_when_the_store_applies_it() {
    if !in_order() {
        return; // no store version on the DeltaFIFO: nothing to wait for (see above)
    }
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "10");
    let watch = lw.push_watch_channel();
    let (r, _rec) = start(lw);
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    eventually("store at the list's version", || store_rv(&r) == "10").await;
    let indexer = r.informer.indexer().clone();
    // Already there: no wait; "9" < "10" numerically.
    assert_eq!(indexer.has_reached("9"), Some(true));
    assert_eq!(indexer.wait_until_reached("10").await, Ok(()));

    // "100" is a later version than "11" although it sorts first as text.
    let waiter = tokio::spawn({
        let indexer = indexer.clone();
        async move { indexer.wait_until_reached("100").await }
    });
    watch.send(Ok(WatchEvent::Added(cm("b", "11")))).unwrap();
    watch.send(Ok(WatchEvent::Modified(cm("b", "99")))).unwrap();
    eventually("99 applied", || store_rv(&r) == "99").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!waiter.is_finished(), "woke before the store reached 100");
    assert_eq!(indexer.has_reached("100"), Some(false));

    watch
        .send(Ok(WatchEvent::Modified(cm("a", "100"))))
        .unwrap();
    let woke = tokio::time::timeout(Duration::from_secs(1), waiter).await;
    assert_eq!(woke.expect("woken when 100 was applied").unwrap(), Ok(()));
    assert_eq!(indexer.has_reached("100"), Some(true));

    // A version the API does not promise to order is refused at once, never waited on.
    assert_eq!(
        indexer.wait_until_reached("v7").await,
        Err(cache::Incomparable)
    );
    assert_eq!(indexer.has_reached("v7"), None);
    r.stop().await;
}

/// client-go's TestStoreResourceVersion (client-go 1.36, shared_informer_test.go): a
/// handler that reads the store's version when it is told of an event sees at least
/// that event's version, because the store records it as it applies the object,
/// before any handler is called. Here the version was once recorded after the whole
/// popped batch, and a handler on its own thread could run first (6 failures in 20
/// runs of the port, issue 58). 100 rounds of 30 events, in real time: the race is
/// between threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_told_of_an_event_finds_the_store_at_its_version_at_least() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use cache::EventHandlerFuncs;

    if !in_order() {
        return; // no store version without atomic events: the other tests check that
    }
    let lagging = Arc::new(Mutex::new(Vec::new()));
    for round in 0..100 {
        let lw = ScriptedListerWatcher::new();
        lw.push_list_items(vec![], "1");
        let watch = lw.push_watch_channel();
        let r = common::start(lw, None, Duration::ZERO);
        let seen = Arc::new(AtomicUsize::new(0));
        let check = {
            let (informer, lagging, seen) = (r.informer.clone(), lagging.clone(), seen.clone());
            move |obj: &ConfigMap| {
                let event: u64 = obj
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap()
                    .parse()
                    .unwrap();
                let store: u64 = informer
                    .last_store_sync_resource_version()
                    .map_or(0, |rv| rv.parse().unwrap());
                if store < event {
                    lagging
                        .lock()
                        .unwrap()
                        .push(format!("round {round}: event {event}, store {store}"));
                }
                seen.fetch_add(1, Ordering::SeqCst);
            }
        };
        let (on_add, on_update) = (check.clone(), check);
        r.informer.add_event_handler(
            EventHandlerFuncs::new()
                .on_add(move |obj, _| on_add(obj))
                .on_update(move |_, new| on_update(new)),
        );
        assert!(r.informer.wait_for_cache_sync(&r.stop).await);
        for i in 0..30u64 {
            let name = format!("cm-{}", i % 10);
            let event = if i < 10 {
                WatchEvent::Added(cm(&name, &(2 + i).to_string()))
            } else {
                WatchEvent::Modified(cm(&name, &(2 + i).to_string()))
            };
            watch.send(Ok(event)).unwrap();
        }
        delivered("30 events", || seen.load(Ordering::SeqCst) == 30).await;
        r.stop().await;
    }
    let lagging = lagging.lock().unwrap();
    assert!(
        lagging.is_empty(),
        "handlers ran before the store had their event: {lagging:?}"
    );
}
