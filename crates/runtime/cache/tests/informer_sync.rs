//! When an informer counts as synced. The reflector hands a list to the informer's
//! queue (the atomic RealFIFO; the plain one with `CACHE_TEST_QUEUE=real`, the
//! DeltaFIFO with `CACHE_TEST_QUEUE=delta`) page by page: the DeltaFIFO lets objects
//! reach the indexer before the last page arrives, the RealFIFO keeps them until then;
//! `has_synced` waits for the whole list, and a list that fails half-way deletes
//! nothing.
//! `wait_for_cache_sync` is woken by the queue instead of polling, and a
//! registration's by its handler's thread. Scripted source, paused time (real time
//! where a handler thread is waited for).

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, config_map as cm};
use cache::{EventHandler, ListPage};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

mod common;
use common::{eventually, new_informer, start};

#[tokio::test(start_paused = true)]
async fn pages_reach_the_cache_early_and_a_failed_list_deletes_nothing() {
    let lw = ScriptedListerWatcher::new();
    // The first page of the initial list; the script has no second page, so asking
    // for it fails (a 500), as an expired continue token or a dropped connection would.
    lw.push_list(Ok(ListPage {
        items: vec![cm("a", "1"), cm("b", "1")],
        resource_version: "10".into(),
        continue_token: Some("page2".into()),
        unreadable: Vec::new(),
    }));
    let r = start(lw, None, Duration::ZERO);
    let (informer, lw) = (&r.informer, &r.lw);

    // The DeltaFIFO delivers page 1 while the reflector backs off (>= 800 ms) after
    // page 2 failed; the RealFIFO (plain or atomic) keeps the pages until the last one,
    // as client-go's does (its tombstones, or its one `ReplacedAll`, need the whole
    // list), so nothing of the failed list reaches the cache. Either way the informer
    // is not synced: the list is incomplete.
    eventually("page 2 failed", || lw.list_calls().len() == 2).await;
    if common::queue_kind() == cache::QueueKind::DeltaFifo {
        eventually("page 1 cached", || r.keys() == ["default/a", "default/b"]).await;
    } else {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            r.keys().is_empty(),
            "a half list reached the cache: {:?}",
            r.keys()
        );
    }
    assert!(!informer.has_synced(), "synced on half a list");
    assert_eq!(lw.list_calls()[1].continue_token.as_deref(), Some("page2"));

    // The retry lists from the start; "b" is gone by now. Only this complete list may
    // delete it (tombstone), and only now does the informer sync.
    lw.push_list_items(vec![cm("a", "2")], "20");
    eventually("synced", || informer.has_synced()).await;
    assert_eq!(r.keys(), ["default/a"]);
    let a = informer
        .indexer()
        .get_by_key("default/a")
        .expect("a cached");
    assert_eq!(a.metadata.resource_version.as_deref(), Some("2"));
    let calls = lw.list_calls();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2].continue_token, None, "a relist starts over");
    assert_eq!(calls[2].resource_version, "");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_wakes_when_the_last_object_is_cached() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list(Ok(ListPage {
        items: (0..600).map(|i| cm(&format!("cm-{i}"), "1")).collect(),
        resource_version: "10".into(),
        continue_token: Some("page2".into()),
        unreadable: Vec::new(),
    }));
    lw.push_list_items(vec![cm("last", "1")], "10");
    let started = tokio::time::Instant::now();
    let r = start(lw, None, Duration::ZERO);
    let informer = r.informer.clone();
    let stop = r.stop.clone();
    assert!(informer.wait_for_cache_sync(&stop).await);
    // Every object is in the indexer the moment the wait returns...
    assert_eq!(informer.indexer().len(), 601);
    assert!(informer.indexer().get_by_key("default/last").is_some());
    // ...and no virtual time passed: nothing slept (client-go polls every 100 ms).
    assert_eq!(started.elapsed(), Duration::ZERO);

    r.stop().await;
    // A wait on a cancelled token returns at once with the current state.
    assert!(informer.wait_for_cache_sync(&stop).await);
}

/// A handler that takes one token per add before returning: the test decides when
/// it has processed the initial list.
struct Gated(Mutex<mpsc::Receiver<()>>);

impl EventHandler<ConfigMap> for Gated {
    fn on_add(&self, _obj: &Arc<ConfigMap>, _initial: bool) {
        let _ = self.0.lock().expect("gate").recv();
    }
}

#[tokio::test]
async fn a_registration_syncs_when_its_handler_has_processed_the_initial_list() {
    let lw = Arc::new(ScriptedListerWatcher::new());
    lw.push_list_items(vec![cm("a", "1"), cm("b", "1")], "10");
    let informer = new_informer("configmaps", lw, Duration::ZERO);
    let (tokens, gate) = mpsc::channel();
    let registration = informer.add_event_handler(Gated(Mutex::new(gate)));
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });

    // The cache is full, but the handler is stuck on its first add.
    assert!(informer.wait_for_cache_sync(&stop).await);
    assert!(!registration.has_synced());
    let waited = tokio::time::timeout(
        Duration::from_millis(50),
        registration.wait_for_cache_sync(&stop),
    )
    .await;
    assert!(waited.is_err(), "synced before the handler saw the list");

    // Let it through both adds: the handler's thread wakes the wait.
    tokens.send(()).unwrap();
    tokens.send(()).unwrap();
    let synced = tokio::time::timeout(
        Duration::from_secs(10),
        registration.wait_for_cache_sync(&stop),
    )
    .await;
    assert_eq!(synced, Ok(true));
    assert!(registration.has_synced());

    stop.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_registration_of_an_informer_that_never_runs_waits_until_cancelled() {
    let informer = new_informer(
        "configmaps",
        Arc::new(ScriptedListerWatcher::<ConfigMap>::new()),
        Duration::ZERO,
    );
    let registration = informer.add_event_handler(Gated(Mutex::new(mpsc::channel().1)));
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            stop.cancel();
        }
    });
    assert!(!registration.wait_for_cache_sync(&stop).await);
    assert!(stop.is_cancelled(), "returned only once cancelled");
}
