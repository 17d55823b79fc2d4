//! `ListAndWatch` as a whole: the requests, what reaches the queue, errors on the way,
//! the transform, and (through the informer) the resync.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, initial_events_end};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;

use crate::common::{self, Recorder, delivered, eventually};
use crate::harness::{Harness, Queue, Recorded, cm, plain_error};

/// Pops `n` entries; the newest object of each as `name rv` (client-go's `Pop` of a
/// `FIFO`, which keeps the newest object per key).
async fn pop_newest(h: &Harness, n: usize) -> Vec<String> {
    let mut popped = Vec::new();
    for _ in 0..n {
        let newest = h
            .queue
            .pop(|_, deltas, _| {
                deltas
                    .iter()
                    .rev()
                    .find_map(|d| d.object().map(|o| crate::harness::describe(o)))
            })
            .await
            .flatten();
        popped.push(newest.unwrap_or_default());
    }
    popped
}

// client-go: TestReflectorListAndWatch (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn list_and_watch() {
    let expected_store = ["foo 2", "bar 3", "baz 4", "qux 5", "zoo 6"];
    let changes = || {
        vec![
            Ok(WatchEvent::Modified(cm("foo", "2"))),
            Ok(WatchEvent::Added(cm("bar", "3"))),
            Ok(WatchEvent::Added(cm("baz", "4"))),
            Ok(WatchEvent::Added(cm("qux", "5"))),
            Ok(WatchEvent::Added(cm("zoo", "6"))),
        ]
    };

    // "UseWatchList enabled" (ours: the default).
    let lw = Recorded::new();
    let mut events = vec![
        Ok(WatchEvent::Added(cm("foo", "1"))),
        Ok(initial_events_end("1")),
    ];
    events.extend(changes());
    lw.script.push_watch_list(events, false);
    let h = Harness::with_queue(lw, Queue::Delta, None, |r| r);
    let running = h.spawn();
    eventually("every event", || {
        h.reflector.last_sync_resource_version() == "6"
    })
    .await;
    // foo at 1 is superseded by foo at 2.
    assert_eq!(pop_newest(&h, 5).await, expected_store);
    running.stop().await;
    // One streaming list (resourceVersion "" is "not older than now"), nothing else.
    assert_eq!(h.lw.summaries(), [r#"watchlist rv="""#]);

    // "UseWatchList disabled". client-go lists at "0" first; ours at "" (the file
    // header says why).
    let lw = Recorded::new();
    lw.script.push_list_items(vec![cm("foo", "1")], "1");
    lw.script.push_watch(changes(), false);
    let h = Harness::with_queue(lw, Queue::Delta, None, |r| r.with_watch_list(false));
    let running = h.spawn();
    eventually("every event", || {
        h.reflector.last_sync_resource_version() == "6"
    })
    .await;
    assert_eq!(pop_newest(&h, 5).await, expected_store);
    running.stop().await;
    assert_eq!(
        h.lw.summaries(),
        [r#"list rv="" limit=500"#, r#"watch rv="1""#],
        "the watch asks for bookmarks"
    );
}

// client-go: TestReflectorListAndWatchWithErrors (reflector_test.go)
//
// A new reflector per row, all on one queue; before each list, the store holds what
// that list returns. client-go's `ListAndWatch` returns a list or watch error to its
// caller, whose `Run` loop backs off and relists; ours backs off inside `run`, then
// lists again (a list error) or watches again from the same version (a watch that
// could not be started; on purpose, see the file header).
#[tokio::test(start_paused = true)]
async fn list_and_watch_with_errors() {
    fn paged() -> impl FnOnce(cache::Reflector<ConfigMap>) -> cache::Reflector<ConfigMap> {
        |r| r.with_watch_list(false)
    }
    async fn watch_until(h: &Harness, rv: &str) {
        let running = h.spawn();
        eventually(&format!("rv {rv}"), || {
            h.reflector.last_sync_resource_version() == rv
        })
        .await;
        running.stop().await;
        h.drain().await;
    }

    // 1. An empty list, then two adds.
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "1");
    lw.script.push_watch(
        vec![
            Ok(WatchEvent::Added(cm("foo", "2"))),
            Ok(WatchEvent::Added(cm("bar", "3"))),
        ],
        false,
    );
    let mut h = Harness::new(lw, paged());
    watch_until(&h, "3").await;

    // 2. A delete and an add.
    assert_eq!(h.store(), ["bar 3", "foo 2"]);
    let lw = Recorded::new();
    lw.script
        .push_list_items(vec![cm("foo", "2"), cm("bar", "3")], "3");
    lw.script.push_watch(
        vec![
            Ok(WatchEvent::Deleted(cm("foo", "4"))),
            Ok(WatchEvent::Added(cm("qux", "5"))),
        ],
        false,
    );
    h.new_reflector(lw, paged());
    watch_until(&h, "5").await;

    // 3. The list fails: back off, list again; no watch.
    let lw = Recorded::new();
    lw.script.push_list(Err(plain_error("a list error")));
    h.new_reflector(lw, paged());
    h.run_until_nth(2, |c| matches!(c, crate::harness::Call::List(_)))
        .await;
    let times = h.lw.times();
    assert!(
        (Duration::from_millis(800)..Duration::from_millis(1600)).contains(&(times[1] - times[0])),
        "backoff {:?}",
        times[1] - times[0]
    );
    assert_eq!(
        h.lw.summaries().len(),
        2,
        "no watch: {:?}",
        h.lw.summaries()
    );
    h.drain().await;

    // 4. The watch cannot be started: back off, watch again from the same version.
    assert_eq!(h.store(), ["bar 3", "qux 5"]);
    let lw = Recorded::new();
    lw.script
        .push_list_items(vec![cm("bar", "3"), cm("qux", "5")], "5");
    lw.script.push_watch_error(plain_error("a watch error"));
    h.new_reflector(lw, paged());
    h.run_until_nth(2, crate::harness::is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="5""#,
            r#"watch rv="5""#
        ]
    );
    h.drain().await;

    // 5. An add.
    assert_eq!(h.store(), ["bar 3", "qux 5"]);
    let lw = Recorded::new();
    lw.script
        .push_list_items(vec![cm("bar", "3"), cm("qux", "5")], "5");
    lw.script
        .push_watch(vec![Ok(WatchEvent::Added(cm("baz", "6")))], false);
    h.new_reflector(lw, paged());
    watch_until(&h, "6").await;

    // 6. The list is what the store holds.
    assert_eq!(h.store(), ["bar 3", "baz 6", "qux 5"]);
    let lw = Recorded::new();
    lw.script
        .push_list_items(vec![cm("bar", "3"), cm("qux", "5"), cm("baz", "6")], "6");
    h.new_reflector(lw, paged());
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.store(), ["bar 3", "baz 6", "qux 5"]);
}

// client-go: TestReflectorResync (reflector_test.go)
//
// client-go's reflector calls its store's `Resync` every resync period. Ours has no
// resync timer: the informer resyncs each handler on its own period. Ported against
// the informer: resyncs keep coming while the watch is quiet.
#[tokio::test(start_paused = true)]
async fn resync() {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "1");
    let events = Recorder::default();
    let r = common::start(lw, Some(events.clone()), Duration::from_secs(1));
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    // Two resyncs at least: the resync is periodic, not once.
    let resyncs = || {
        events
            .events()
            .iter()
            .filter(|e| *e == "update a 1->1")
            .count()
    };
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(1100)).await;
        if resyncs() >= 2 {
            break;
        }
    }
    delivered("two resyncs", || resyncs() >= 2).await;
    r.stop().await;
}

// client-go: TestReflectorRespectStoreTransformer (reflector_test.go)
//
// client-go counts 5 transforms for 3 objects: twice for the streaming list's
// temporary store, twice on replace, once for the later event. Ours transforms each
// object once, as it enters the queue (on purpose, see the file header).
#[tokio::test(start_paused = true)]
async fn respect_store_transformer() {
    for queue in [Queue::Real, Queue::Delta] {
        let with_hostname = |name: &str, rv: &str| {
            let mut obj = cm(name, rv);
            obj.data = Some([("hostname".to_string(), "test".to_string())].into());
            obj
        };
        let lw = Recorded::new();
        lw.script.push_watch_list(
            vec![
                Ok(WatchEvent::Added(with_hostname("foo-1", "1"))),
                Ok(WatchEvent::Added(with_hostname("foo-2", "2"))),
                Ok(initial_events_end("3")),
                Ok(WatchEvent::Added(with_hostname("foo-3", "3"))),
            ],
            false,
        );
        let invoked = Arc::new(AtomicUsize::new(0));
        let transform: cache::TransformFunc<ConfigMap> = {
            let invoked = invoked.clone();
            Arc::new(move |mut obj: ConfigMap| {
                invoked.fetch_add(1, Ordering::SeqCst);
                obj.data = Some([("hostname".to_string(), "transformed".to_string())].into());
                obj
            })
        };
        let h = Harness::with_queue(lw, queue, Some(transform), |r| r);
        let running = h.spawn();
        eventually("three objects", || invoked.load(Ordering::SeqCst) == 3).await;
        running.stop().await;
        assert_eq!(h.reflector.last_sync_resource_version(), "3");
        h.drain().await;
        let stored = h.indexer.list();
        assert_eq!(stored.len(), 3, "{queue:?}");
        for obj in stored {
            assert_eq!(
                obj.data
                    .as_ref()
                    .and_then(|d| d.get("hostname"))
                    .map(String::as_str),
                Some("transformed"),
                "{queue:?}"
            );
        }
        assert_eq!(invoked.load(Ordering::SeqCst), 3, "{queue:?}");
    }
}
