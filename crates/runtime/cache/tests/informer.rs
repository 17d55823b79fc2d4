//! Reflector + informer behaviour against a scripted list/watch source, with paused
//! time: pagination, bookmarks, 410 relists with tombstones, error backoff, resync,
//! late handlers, slow-handler isolation, transforms.

use std::sync::Arc;
use std::time::Duration;

use cache::ListPage;
use cache::testing::{ScriptedListerWatcher, api_error, bookmark, config_map as cm, gone};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

mod common;
use common::{Recorder, delivered, eventually, start};

#[tokio::test(start_paused = true)]
async fn initial_list_is_paginated_and_most_recent() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list(Ok(ListPage {
        items: vec![cm("a", "1"), cm("b", "2")],
        resource_version: "10".into(),
        continue_token: Some("page2".into()),
        unreadable: Vec::new(),
    }));
    lw.push_list(Ok(ListPage {
        items: vec![cm("c", "3")],
        resource_version: "10".into(),
        continue_token: None,
        unreadable: Vec::new(),
    }));
    let rec = Recorder::default();
    let r = start(lw, Some(rec.clone()), Duration::ZERO);
    eventually("synced", || r.informer.has_synced()).await;

    assert_eq!(r.keys(), ["default/a", "default/b", "default/c"]);
    let calls = r.lw.list_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].resource_version, "",
        "first list: the most recent state (consistent, paged)"
    );
    assert_eq!(calls[0].limit, 500);
    assert_eq!(calls[0].continue_token, None);
    assert_eq!(calls[1].continue_token.as_deref(), Some("page2"));
    eventually("watch started", || !r.lw.watch_calls().is_empty()).await;
    let watch = &r.lw.watch_calls()[0];
    assert_eq!(
        watch.resource_version, "10",
        "watch from the list's version"
    );
    assert!(watch.allow_bookmarks);
    assert!((300..600).contains(&watch.timeout_seconds));
    delivered("3 initial adds", || rec.events().len() == 3).await;
    assert!(rec.events().iter().all(|e| e.ends_with("initial")));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn bookmarks_advance_the_resource_version_for_the_next_watch() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![], "5");
    lw.push_watch(
        vec![Ok(WatchEvent::Added(cm("a", "6"))), Ok(bookmark("42"))],
        true,
    );
    let rec = Recorder::default();
    let r = start(lw, Some(rec.clone()), Duration::ZERO);
    eventually("second watch", || r.lw.watch_calls().len() >= 2).await;
    let calls = r.lw.watch_calls();
    assert_eq!(calls[0].resource_version, "5");
    assert_eq!(
        calls[1].resource_version, "42",
        "re-watch from the bookmark, no relist"
    );
    assert_eq!(r.lw.list_calls().len(), 1);
    assert_eq!(r.informer.last_sync_resource_version(), "42");
    delivered("the add", || !rec.events().is_empty()).await;
    assert_eq!(rec.events(), ["add a 6"]);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn gone_relists_consistently_and_delivers_tombstones_for_the_gap() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(
        vec![cm("keep", "1"), cm("change", "1"), cm("vanish", "1")],
        "10",
    );
    lw.push_watch(vec![Err(gone())], false);
    // During the gap: "vanish" deleted, "change" updated, "born" created.
    lw.push_list_items(
        vec![cm("keep", "1"), cm("change", "20"), cm("born", "21")],
        "30",
    );
    let rec = Recorder::default();
    let r = start(lw, Some(rec.clone()), Duration::ZERO);
    eventually("relisted", || {
        r.keys() == ["default/born", "default/change", "default/keep"]
    })
    .await;
    delivered("all events", || rec.events().len() >= 6).await;

    let calls = r.lw.list_calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[1].resource_version, "",
        "after 410: the most recent version"
    );
    let events = rec.events();
    assert!(
        events.contains(&"delete default/vanish tombstone".to_string()),
        "{events:?}"
    );
    assert!(
        events.contains(&"update change 1->20".to_string()),
        "{events:?}"
    );
    assert!(events.contains(&"add born 21".to_string()), "{events:?}");
    assert!(
        !events.iter().any(|e| e.starts_with("update keep")),
        "an unchanged object is a sync, not an update: {events:?}"
    );
    eventually("watch from the new list", || {
        r.lw.watch_calls()
            .last()
            .is_some_and(|w| w.resource_version == "30")
    })
    .await;
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_errors_back_off_and_resume_from_the_same_version() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "7");
    lw.push_watch_error(api_error(500, "InternalError", "etcd is sad"));
    // A watch that breaks off (the connection is lost). (An error *reported by the
    // server* inside a watch relists instead, as in client-go: tests/clientgo_reflector.)
    lw.push_watch(
        vec![Err(kube::Error::ReadEvents(std::io::Error::from(
            std::io::ErrorKind::ConnectionReset,
        )))],
        false,
    );
    let started = tokio::time::Instant::now();
    let r = start(lw, None, Duration::ZERO);
    eventually("third watch", || r.lw.watch_calls().len() >= 3).await;
    let calls = r.lw.watch_calls();
    assert!(
        calls.iter().all(|c| c.resource_version == "7"),
        "no relist for a watch that failed to start or broke off"
    );
    assert_eq!(r.lw.list_calls().len(), 1);
    // Two backoffs: >= 800 ms, then >= 1.6 s (jitter only lengthens them).
    assert!(
        started.elapsed() >= Duration::from_millis(2400),
        "{:?}",
        started.elapsed()
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn failing_lists_back_off_instead_of_spinning() {
    let lw = ScriptedListerWatcher::new(); // every list fails with a 500
    let r = start(lw, None, Duration::ZERO);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let lists = r.lw.list_calls().len();
    // 0.8 + 1.6 + 3.2 + 6.4 + 12.8 + 25.6 s ... at most ~7 attempts in a minute.
    assert!((2..=8).contains(&lists), "{lists} list calls in 60 s");
    assert!(!r.informer.has_synced());
    r.stop().await;
}

/// A custom resource whose conversion webhook is down: the API server fails the
/// watch and then every list with a `500` naming the webhook. The informer backs off,
/// keeps serving its last state, shows the failure on the pipeline page, and recovers
/// on its own once a list works again.
#[tokio::test(start_paused = true)]
async fn a_refused_relist_keeps_the_cache_and_shows_until_a_list_works() {
    const REFUSAL: &str = "conversion webhook for cloudnative.tw/v1alpha1, Kind=VirtualMachine failed: connection refused (informer test)";
    let refused = || api_error(500, "InternalError", REFUSAL);
    let shown = || {
        pipeline::troubles()
            .read()
            .into_iter()
            .find(|t| t.last_error.contains("(informer test)"))
    };
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1"), cm("b", "2")], "7");
    // Reported inside the established watch: the reflector relists (client-go does).
    lw.push_watch(vec![Err(refused())], false);
    for _ in 0..3 {
        lw.push_list(Err(refused()));
    }
    lw.push_list_items(vec![cm("a", "1"), cm("c", "9")], "12");
    let _open = lw.push_watch_channel();
    let r = start(lw, None, Duration::ZERO);
    eventually("the second list", || r.lw.list_calls().len() >= 2).await;

    let trouble = shown().expect("the failing list is on the pipeline page");
    assert_eq!(
        (trouble.component.as_str(), trouble.what),
        ("ConfigMap", "list")
    );
    assert_eq!(trouble.stage, pipeline::Stage::Fifo);
    assert!(trouble.retry_at_unix_ms > Some(trouble.since_unix_ms));
    assert_eq!(
        r.keys(),
        ["default/a", "default/b"],
        "the cache keeps its last state"
    );
    assert!(r.informer.has_synced());

    eventually("the fourth list", || r.lw.list_calls().len() >= 4).await;
    assert!(shown().is_some_and(|t| t.failures >= 3), "{:?}", shown());
    eventually("the list that works", || {
        r.keys() == ["default/a", "default/c"]
    })
    .await;
    assert!(shown().is_none(), "recovered: no banner");
    // 0.8 + 1.6 + 3.2 s of backoff before the fifth list, not a loop.
    assert_eq!(r.lw.list_calls().len(), 5);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn very_short_empty_watches_do_not_spin() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![], "1");
    for _ in 0..100 {
        lw.push_watch(vec![], true); // closes at once, nothing delivered
    }
    let r = start(lw, None, Duration::ZERO);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let watches = r.lw.watch_calls().len();
    assert!(watches <= 8, "{watches} watches in 30 s");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn watch_events_update_the_cache_before_handlers_run() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "1");
    let tx = lw.push_watch_channel();
    let rec = Recorder::default();
    let r = start(lw, Some(rec.clone()), Duration::ZERO);
    eventually("synced", || r.informer.has_synced()).await;
    tx.send(Ok(WatchEvent::Modified(cm("a", "2")))).unwrap();
    tx.send(Ok(WatchEvent::Added(cm("b", "3")))).unwrap();
    tx.send(Ok(WatchEvent::Deleted(cm("a", "4")))).unwrap();
    delivered("4 events", || rec.events().len() == 4).await;
    // Order is guaranteed per object (keys may interleave: "a" can still be queued
    // with both its deltas when "b" arrives).
    let events = rec.events();
    let of = |name: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e.split(' ').nth(1) == Some(name))
            .cloned()
            .collect()
    };
    assert_eq!(of("a"), ["add a 1 initial", "update a 1->2", "delete a 4"]);
    assert_eq!(of("b"), ["add b 3"]);
    assert_eq!(r.keys(), ["default/b"]);
    assert_eq!(r.informer.last_sync_resource_version(), "4");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_redelivers_only_to_handlers_that_asked() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1"), cm("b", "1")], "1");
    let r = start(lw, None, Duration::ZERO);
    let resyncing = Recorder::default();
    let quiet = Recorder::default();
    r.informer
        .add_event_handler_with_resync_period(resyncing.clone(), Duration::from_secs(10));
    r.informer.add_event_handler(quiet.clone());
    eventually("synced", || r.informer.has_synced()).await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    let count_syncs = |rec: &Recorder| {
        rec.events()
            .iter()
            .filter(|e| e.starts_with("update "))
            .count()
    };
    delivered("4 syncs", || count_syncs(&resyncing) >= 4).await;
    delivered("2 initial adds", || quiet.events().len() >= 2).await;
    // Give a 5th (wrong) sync the chance to show up before asserting exact counts.
    tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(50)))
        .await
        .unwrap();
    let syncs = resyncing
        .events()
        .iter()
        .filter(|e| e.starts_with("update "))
        .count();
    assert_eq!(
        syncs,
        4,
        "two objects, two resync rounds: {:?}",
        resyncing.events()
    );
    assert_eq!(
        quiet.events().len(),
        2,
        "only the initial adds: {:?}",
        quiet.events()
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn late_handler_gets_synthetic_adds_then_live_events() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1"), cm("b", "1")], "1");
    let tx = lw.push_watch_channel();
    let r = start(lw, None, Duration::ZERO);
    eventually("synced", || r.informer.has_synced()).await;

    let late = Recorder::default();
    let registration = r.informer.add_event_handler(late.clone());
    tx.send(Ok(WatchEvent::Added(cm("c", "2")))).unwrap();
    delivered("3 events", || late.events().len() == 3).await;
    let mut events = late.events();
    assert_eq!(events.pop().unwrap(), "add c 2");
    events.sort();
    assert_eq!(events, ["add a 1 initial", "add b 1 initial"]);
    delivered("registration synced", || registration.has_synced()).await;

    r.informer.remove_event_handler(&registration);
    tx.send(Ok(WatchEvent::Added(cm("d", "3")))).unwrap();
    eventually("d cached", || r.keys().len() == 4).await;
    tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(100)))
        .await
        .unwrap();
    assert_eq!(late.events().len(), 3, "no events after removal");
    r.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_handler_blocks_neither_other_handlers_nor_the_reflector() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![], "1");
    let tx = lw.push_watch_channel();
    let r = start(lw, None, Duration::ZERO);

    let released = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow_seen = Arc::new(Mutex::new(0usize));
    r.informer
        .add_event_handler(cache::EventHandlerFuncs::new().on_add({
            let (released, slow_seen) = (released.clone(), slow_seen.clone());
            move |_: &Arc<ConfigMap>, _| {
                // Stuck (blocking its thread) until the test releases it.
                while !released.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1));
                }
                *slow_seen.lock() += 1;
            }
        }));
    let fast = Recorder::default();
    r.informer.add_event_handler(fast.clone());
    for i in 0..100 {
        tx.send(Ok(WatchEvent::Added(cm(
            &format!("cm-{i}"),
            &format!("{}", i + 2),
        ))))
        .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(20), async {
        while fast.events().len() < 100 || r.informer.indexer().len() < 100 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the fast handler and the cache keep up while the slow handler is stuck");
    assert_eq!(*slow_seen.lock(), 0);
    released.store(true, std::sync::atomic::Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(20), async {
        while *slow_seen.lock() < 100 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the slow handler catches up, losing nothing");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn transform_runs_before_objects_are_cached_and_delivered() {
    let lw = ScriptedListerWatcher::new();
    let mut fat = cm("a", "1");
    fat.data = Some([("blob".to_string(), "x".repeat(4096))].into());
    lw.push_list_items(vec![fat], "1");
    let lw = Arc::new(lw);
    let informer = common::new_informer("configmaps", lw.clone(), Duration::ZERO);
    informer
        .set_transform(Arc::new(|mut cm: ConfigMap| {
            cm.data = None;
            cm
        }))
        .unwrap();
    let saw_data = Arc::new(Mutex::new(None));
    informer.add_event_handler(cache::EventHandlerFuncs::new().on_add({
        let saw_data = saw_data.clone();
        move |cm: &Arc<ConfigMap>, _| *saw_data.lock() = Some(cm.data.is_some())
    }));
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    delivered("delivered", || saw_data.lock().is_some()).await;
    assert_eq!(*saw_data.lock(), Some(false));
    assert!(
        informer
            .indexer()
            .get_by_key("default/a")
            .unwrap()
            .data
            .is_none()
    );
    assert!(
        informer.set_transform(Arc::new(|cm| cm)).is_err(),
        "too late once started"
    );
    stop.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_is_contained() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1"), cm("b", "1")], "1");
    let r = start(lw, None, Duration::ZERO);
    let calls = Arc::new(Mutex::new(0));
    r.informer
        .add_event_handler(cache::EventHandlerFuncs::new().on_add({
            let calls = calls.clone();
            move |_: &Arc<ConfigMap>, _| {
                *calls.lock() += 1;
                panic!("handler bug");
            }
        }));
    delivered("both delivered despite the panic", || *calls.lock() == 2).await;
    assert_eq!(r.keys().len(), 2);
    r.stop().await;
}

/// A handler that [delivers inline](cache::EventHandler::delivers_inline) gets no thread:
/// the informer calls it on its own task (here the test's thread: a current-thread
/// runtime), every notification in order, a panic contained as on a handler thread;
/// its registration syncs with the informer and is shut down as soon as it is removed.
#[tokio::test(start_paused = true)]
async fn an_inline_handler_runs_on_the_informers_task_in_order_and_is_contained() {
    type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;
    struct Inline(Seen);
    impl Inline {
        fn record(&self, what: &str, cm: &ConfigMap) {
            let name = cm.metadata.name.clone().unwrap_or_default();
            let thread = std::thread::current().name().map(str::to_owned);
            self.0.lock().push((format!("{what} {name}"), thread));
            assert_ne!(name, "b", "handler bug");
        }
    }
    impl cache::EventHandler<ConfigMap> for Inline {
        fn on_add(&self, cm: &Arc<ConfigMap>, _: bool) {
            self.record("add", cm);
        }
        fn on_update(&self, _: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
            self.record("update", new);
        }
        fn delivers_inline(&self) -> bool {
            true
        }
    }

    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1"), cm("b", "1")], "1");
    // The watch's events are sent once the list has been delivered: a DeltaFIFO
    // (CACHE_TEST_QUEUE=delta) would otherwise hand out a's update with a's add.
    let watch = lw.push_watch_channel();
    let r = start(lw, None, Duration::ZERO);
    let seen = Seen::default();
    let registration = r.informer.add_event_handler(Inline(seen.clone()));
    delivered("the initial list", || seen.lock().len() == 2).await;
    watch.send(Ok(WatchEvent::Modified(cm("a", "2")))).unwrap();
    watch.send(Ok(WatchEvent::Added(cm("c", "3")))).unwrap();
    delivered("every notification", || seen.lock().len() == 4).await;
    let test_thread = std::thread::current().name().map(str::to_owned);
    assert_eq!(
        *seen.lock(),
        ["add a", "add b", "update a", "add c"].map(|what| (what.to_string(), test_thread.clone())),
        "in order, on the informer's task, the panic on b contained"
    );
    assert!(registration.has_synced());
    assert!(!registration.is_shut_down());
    r.informer.remove_event_handler(&registration);
    assert!(registration.is_shut_down(), "no thread left to wait for");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn cancellation_stops_the_informer() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "1");
    let r = start(lw, None, Duration::ZERO);
    eventually("synced", || r.informer.has_synced()).await;
    let stop = r.stop.clone();
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), r.task)
        .await
        .expect("run returns after cancel")
        .unwrap();
    assert!(!r.informer.wait_for_cache_sync(&stop).await || r.informer.has_synced());
}

/// What the watch stream yields for an object `ConfigMap` cannot hold.
fn undecodable() -> kube::Error {
    kube::Error::SerdeError(
        serde_json::from_str::<ConfigMap>(r#"{"data": 5}"#).expect_err("data must be a map"),
    )
}

#[tokio::test(start_paused = true)]
async fn an_undecodable_watch_event_relists_at_once_and_at_most_once_per_interval() {
    let lw = ScriptedListerWatcher::new();
    for rv in ["5", "6"] {
        lw.push_list_items(vec![cm("a", "1")], rv);
        lw.push_watch(vec![Err(undecodable())], false);
    }
    lw.push_list_items(vec![cm("a", "1")], "7");
    let started = tokio::time::Instant::now();
    let r = start(lw, None, Duration::ZERO);
    eventually("the relist after the first", || {
        r.lw.list_calls().len() >= 2
    })
    .await;
    // At once: a backoff step would be at least 800 ms.
    assert!(
        started.elapsed() < Duration::from_millis(100),
        "{:?}",
        started.elapsed()
    );
    eventually("the relist after the second", || {
        r.lw.list_calls().len() >= 3
    })
    .await;
    assert!(
        started.elapsed() >= cache::reflector::UNDECODABLE_RELIST_INTERVAL,
        "{:?}",
        started.elapsed()
    );
    r.stop().await;
}
