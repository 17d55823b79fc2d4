//! Handling one watch: cancellation, closed and failing watches, events into the
//! queue, the resourceVersion they carry, the watch timeout, and relisting after an
//! error inside a watch.

use std::time::Duration;

use cache::testing::bookmark;
use kube::api::WatchEvent;
use tokio::time::Instant;

use crate::common::eventually;
use crate::harness::{Harness, Queue, Recorded, cm, error_event, is_watch};

/// A reflector that lists `items` at `rv` in pages (no streaming list).
fn listing(items: Vec<k8s_openapi::api::core::v1::ConfigMap>, rv: &str) -> Recorded {
    let lw = Recorded::new();
    lw.script.push_list_items(items, rv);
    lw
}

// client-go: TestCloseWatchChannelOnError (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn close_watch_channel_on_error() {
    let lw = listing(vec![], "1");
    let tx = lw.script.push_watch_channel();
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    let running = h.spawn();
    tx.send(Ok(error_event(500, "InternalError", "an error")))
        .unwrap();
    // The reflector lets go of the watch: the server's side sees it closed.
    tokio::time::timeout(Duration::from_secs(30), tx.closed())
        .await
        .expect("watch left open after an error event");
    running.stop().await;
}

// client-go: TestRunUntil (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn run_until() {
    let lw = listing(vec![], "1");
    let tx = lw.script.push_watch_channel();
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    let running = h.spawn();
    // An event through the watch: the reflector is in its watch handler.
    tx.send(Ok(WatchEvent::Added(cm("bar", "2")))).unwrap();
    eventually("the event is handled", || {
        h.reflector.last_sync_resource_version() == "2"
    })
    .await;
    running.stop().await;
    // Both ended: `run` returned (above) and the watch was let go.
    assert!(tx.is_closed(), "watch left open after stopping");
}

// client-go: TestReflectorWatchStoppedBefore (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn watch_stopped_before() {
    let h = Harness::new(Recorded::new(), |r| r);
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    h.reflector.run(cancel).await;
    assert!(h.lw.calls().is_empty(), "neither list nor watch called");
}

// client-go: TestReflectorWatchStoppedAfter (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn watch_stopped_after() {
    let lw = listing(vec![], "1");
    // A watch that never sends anything.
    lw.script.push_watch(vec![], false);
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    let started = Instant::now();
    // Cancelled 10 ms after the watch started.
    h.run_until_after(is_watch, Duration::from_millis(10)).await;
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert_eq!(
        h.lw.summaries(),
        [r#"list rv="" limit=500"#, r#"watch rv="1""#]
    );
}

// client-go: TestReflectorHandleWatchStoppedBefore (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn handle_watch_stopped_before() {
    let lw = listing(vec![], "1");
    let tx = lw.script.push_watch_channel();
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    // Cancelled as the watch is being started, before any event is handled.
    h.run_until(is_watch).await;
    // `run` returned, and the watch was let go (client-go: `Stop` called).
    assert!(tx.is_closed(), "watch left open");
    assert_eq!(
        h.lw.summaries(),
        [r#"list rv="" limit=500"#, r#"watch rv="1""#]
    );
}

// client-go: TestReflectorHandleWatchStoppedAfter (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn handle_watch_stopped_after() {
    let lw = listing(vec![], "1");
    let tx = lw.script.push_watch_channel();
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    let started = Instant::now();
    // Cancelled 10 ms after watching started.
    h.run_until_after(is_watch, Duration::from_millis(10)).await;
    assert_eq!(started.elapsed(), Duration::from_millis(10));
    assert!(tx.is_closed(), "watch left open");
}

/// A backoff without jitter, so that the waits are exact.
fn exact_backoff(initial: Duration) -> cache::BackoffConfig {
    cache::BackoffConfig {
        initial,
        jitter: 0.0,
        ..cache::BackoffConfig::default()
    }
}

// client-go: TestReflectorHandleWatchResultChanClosedBefore (reflector_test.go)
//
// client-go: a watch closed before it delivered anything is a `VeryShortWatchError`;
// `ListAndWatch` returns and `Run` relists after a backoff. Ours (on purpose, see the
// file header): the same backoff, then a watch from the same version, no relist.
#[tokio::test(start_paused = true)]
async fn handle_watch_result_chan_closed_before() {
    let lw = listing(vec![], "1");
    lw.script.push_watch(vec![], true);
    let h = Harness::new(lw, |r| {
        r.with_watch_list(false)
            .with_backoff(exact_backoff(Duration::from_millis(800)))
    });
    h.run_until_nth(2, is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="1""#,
            r#"watch rv="1""#
        ]
    );
    let times = h.lw.times();
    assert_eq!(
        times[2] - times[1],
        Duration::from_millis(800),
        "backed off"
    );
}

// client-go: TestReflectorHandleWatchResultChanClosedAfter (reflector_test.go)
//
// As above, for a watch that the server closes 10 ms after it started, with no event.
#[tokio::test(start_paused = true)]
async fn handle_watch_result_chan_closed_after() {
    let lw = listing(vec![], "1");
    let tx = lw.script.push_watch_channel();
    let h = Harness::new(lw, |r| {
        r.with_watch_list(false)
            .with_backoff(exact_backoff(Duration::from_millis(800)))
    });
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(tx);
    });
    h.run_until_nth(2, is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="1""#,
            r#"watch rv="1""#
        ]
    );
    let times = h.lw.times();
    assert_eq!(
        times[2] - times[1],
        Duration::from_millis(810),
        "closed after 10 ms, then backed off"
    );
}

// client-go: TestReflectorWatchHandler (reflector_test.go)
//
// (The `*v1.Service` event that client-go rejects for its type cannot be sent to a
// typed reflector; see the file header.)
#[tokio::test(start_paused = true)]
async fn watch_handler() {
    let lw = listing(vec![cm("foo", "1"), cm("bar", "1")], "1");
    lw.script.push_watch(
        vec![
            Ok(WatchEvent::Deleted(cm("foo", ""))),
            Ok(WatchEvent::Modified(cm("bar", "55"))),
            Ok(WatchEvent::Added(cm("baz", "32"))),
        ],
        false,
    );
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    let running = h.spawn();
    eventually("the last event", || {
        h.reflector.last_sync_resource_version() == "32"
    })
    .await;
    running.stop().await;
    h.drain().await;
    assert_eq!(h.store(), ["bar 55", "baz 32"], "foo deleted, bar updated");
    // The version of the last event, not the largest one seen.
    assert_eq!(h.reflector.last_sync_resource_version(), "32");
}

// client-go: TestReflectorStopWatch (reflector_test.go)
//
// client-go hands a cancelled context and a busy watch to `handleWatch`, which must
// return. Here: a watch with ten thousand events ready, cancelled as it starts; the
// reflector stops without working through them all.
#[tokio::test(start_paused = true)]
async fn stop_watch() {
    let lw = listing(vec![], "1");
    let events = (0..10_000)
        .map(|i| {
            Ok(WatchEvent::Added(cm(
                &format!("p{i}"),
                &(i + 2).to_string(),
            )))
        })
        .collect();
    lw.script.push_watch(events, false);
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    h.run_until(is_watch).await;
    assert!(
        h.queue.len() < 10_000,
        "cancellation waited for the stream: {} events queued",
        h.queue.len()
    );
}

// client-go: TestWatchTimeout (reflector_test.go), case "no timeout"
//
// (The `MinWatchTimeout` cases are not ported: the option is not offered.)
#[tokio::test(start_paused = true)]
async fn watch_timeout() {
    let lw = listing(vec![], "10");
    let h = Harness::new(lw, |r| r);
    h.run_until_watch().await;
    // A streaming list (refused with 422 by the script), then the watch: both carry a
    // timeout in [5 min, 10 min].
    let calls = h.lw.calls();
    assert_eq!(calls.len(), 3, "{:?}", h.lw.summaries());
    for call in [&calls[0], &calls[2]] {
        let crate::harness::Call::Watch(options) = call else {
            panic!("not a watch: {call:?}");
        };
        assert!(
            (300..=600).contains(&options.timeout_seconds),
            "timeout {} s",
            options.timeout_seconds
        );
    }
}

// client-go: TestReflectorResourceVersionUpdate (reflector_test.go)
//
// client-go records the versions its store's `UpdateResourceVersion` is told; ours
// is the reflector's `last_sync_resource_version` after each event, and the events
// and bookmark the queue carries to the store, in order.
#[tokio::test(start_paused = true)]
async fn resource_version_update() {
    let lw = listing(vec![], "10");
    let tx = lw.script.push_watch_channel();
    let h = Harness::with_queue(lw, Queue::Atomic, None, |r| r.with_watch_list(false));
    let running = h.spawn();
    let mut seen = Vec::new();
    for (event, rv) in [
        (WatchEvent::Added(cm("p", "10")), "10"),
        (WatchEvent::Modified(cm("p", "20")), "20"),
        (bookmark("30"), "30"),
        (WatchEvent::Deleted(cm("p", "40")), "40"),
    ] {
        tx.send(Ok(event)).unwrap();
        eventually(&format!("rv {rv}"), || {
            h.reflector.last_sync_resource_version() == rv
        })
        .await;
        seen.push(h.reflector.last_sync_resource_version());
    }
    assert_eq!(seen, ["10", "20", "30", "40"]);
    running.stop().await;
    let popped = h.drain().await;
    // The atomic FIFO (the informers' default) carries the bookmark to the store in
    // order; the list's version travels inside its relist entry.
    assert_eq!(
        popped,
        ["Added p 10", "Updated p 20", "Bookmark 30", "Deleted p 40"]
    );
}

// client-go: TestReflectorReplacesStoreOnUnsafeDelete (reflector_test.go)
//
// A corrupt object is deleted unsafely: the watch ends with a 500 StoreReadError and
// no DELETED event; the relist that follows removes the object.
#[tokio::test(start_paused = true)]
async fn replaces_store_on_unsafe_delete() {
    let pods = || vec![cm("foo-1", "1"), cm("foo-2", "2"), cm("foo-3", "3")];
    let lw = listing(pods(), "3");
    lw.script.push_watch(
        vec![
            Ok(WatchEvent::Added(cm("foo", "4"))),
            Ok(error_event(
                500,
                "StorageReadError",
                "failed to prepare current and previous objects: corrupt object has been deleted",
            )),
        ],
        false,
    );
    lw.script.push_list_items(pods(), "5");
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    let running = h.spawn();
    eventually("the corrupt object", || {
        h.reflector.last_sync_resource_version() == "4"
    })
    .await;
    h.drain().await;
    assert_eq!(h.store(), ["foo 4", "foo-1 1", "foo-2 2", "foo-3 3"]);
    eventually("the relist", || {
        h.reflector.last_sync_resource_version() == "5"
    })
    .await;
    running.stop().await;
    let popped = h.drain().await;
    assert!(popped.contains(&"Deleted foo 4".to_string()), "{popped:?}");
    assert_eq!(h.store(), ["foo-1 1", "foo-2 2", "foo-3 3"]);
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="3""#,
            r#"list rv="" limit=500"#,
            r#"watch rv="5""#
        ]
    );
}
