//! The staleness guard in the loop (client-go 1.36's KEP-5647 read-your-writes), on
//! paused Tokio time over a scripted informer: a key's next sync waits until the
//! informer has applied the key's last write, wakes the moment it does, and when the
//! bound passes the key is requeued with backoff instead of synced.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, config_map};
use cache::{Indexer, QueueKind, SharedIndexInformer};
use controller::{Action, Controller, Freshness, FreshnessOutcome, SyncHandler};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use parking_lot::Mutex;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;

const KEY: &str = "default/a";

/// A sync that records which version of ConfigMap `a` its cache showed, and, when
/// told to, "writes" `a` at a version and reports the write to the guard.
struct Writer {
    freshness: Freshness,
    cache: Indexer<ConfigMap>,
    /// (when, key, the cached version of `a`) per sync.
    seen: Mutex<Vec<(Instant, String, String)>>,
    /// The version the next sync of [`KEY`] writes, if any.
    next_write: Mutex<Option<String>>,
}

impl SyncHandler for Writer {
    type Error = String;
    async fn sync(&self, key: &str) -> Result<Action, String> {
        let cached = self
            .cache
            .get_by_key(KEY)
            .and_then(|cm| cm.metadata.resource_version.clone())
            .unwrap_or_default();
        self.seen
            .lock()
            .push((Instant::now(), key.to_string(), cached));
        if key == KEY
            && let Some(rv) = self.next_write.lock().take()
        {
            self.freshness.wrote(key, &config_map("a", &rv));
        }
        Ok(Action::Done)
    }
}

struct Setup {
    informer: SharedIndexInformer<ConfigMap>,
    watch: UnboundedSender<Result<WatchEvent<ConfigMap>, kube::Error>>,
    writer: Arc<Writer>,
    queue: RateLimitingQueue<String>,
    stop: CancellationToken,
}

/// An informer listing `a` at version 10, on `queue_kind`, and a controller guarded
/// by a `timeout` bound, with one worker running.
async fn setup(timeout: Duration, queue_kind: QueueKind) -> Setup {
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![config_map("a", "10")], "10");
    let watch = lw.push_watch_channel();
    let informer = SharedIndexInformer::new("configmaps", Arc::new(lw), Duration::ZERO);
    informer.set_queue_kind(queue_kind);
    let freshness = Freshness::new(timeout);
    freshness.track(&informer);
    let stop = CancellationToken::new();
    tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    assert!(informer.wait_for_cache_sync(&stop).await);
    let writer = Writer {
        freshness: freshness.clone(),
        cache: informer.indexer().clone(),
        seen: Mutex::new(Vec::new()),
        next_write: Mutex::new(None),
    };
    let queue = RateLimitingQueue::with_default_rate_limiter("freshness-test");
    let controller =
        Controller::new("freshness-test", queue.clone(), writer).with_freshness(Some(freshness));
    let writer = controller.handler().clone();
    tokio::spawn(async move { controller.run_worker().await });
    Setup {
        informer,
        watch,
        writer,
        queue,
        stop,
    }
}

impl Setup {
    /// The cached version of `a` each sync of `key` saw.
    fn seen(&self, key: &str) -> Vec<String> {
        let seen = self.writer.seen.lock();
        seen.iter()
            .filter(|(_, k, _)| k == key)
            .map(|(_, _, rv)| rv.clone())
            .collect()
    }

    fn syncs(&self) -> usize {
        self.writer.seen.lock().len()
    }

    /// Lets every task run without moving the clock, until `n` syncs happened.
    async fn until_syncs(&self, n: usize) {
        for _ in 0..100_000 {
            if self.syncs() >= n {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("expected {n} syncs, saw {}", self.syncs());
    }

    /// Lets every task run without moving the clock.
    async fn settle(&self) {
        for _ in 0..1000 {
            tokio::task::yield_now().await;
        }
    }

    fn modified(&self, rv: &str) {
        self.watch
            .send(Ok(WatchEvent::Modified(config_map("a", rv))))
            .unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn the_next_sync_waits_for_the_write_and_wakes_the_moment_the_informer_applies_it() {
    let s = setup(Duration::from_secs(5), QueueKind::AtomicFifo).await;
    *s.writer.next_write.lock() = Some("11".into());
    s.queue.add(KEY.to_string());
    s.until_syncs(1).await;
    assert_eq!(s.seen(KEY), ["10"]);

    // The key comes back (an event for it, say) before the informer has seen "11":
    // parked, not synced against the stale cache ...
    s.queue.add(KEY.to_string());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(s.seen(KEY), ["10"], "synced against the stale cache");
    // ... and the worker is free for other keys meanwhile.
    s.queue.add("default/other".to_string());
    s.until_syncs(2).await;
    assert_eq!(s.seen("default/other"), ["10"]);

    // An unrelated event does not release it: "11" is not reached yet.
    s.watch
        .send(Ok(WatchEvent::Added(config_map("b", "10"))))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.seen(KEY), ["10"]);

    let delivered_at = Instant::now();
    s.modified("11");
    s.until_syncs(3).await;
    let (synced_at, key, saw) = s.writer.seen.lock()[2].clone();
    assert_eq!(
        (key.as_str(), saw.as_str()),
        (KEY, "11"),
        "the sync must see its own write"
    );
    assert_eq!(synced_at, delivered_at, "woken at once, not by polling");
    assert_eq!(
        s.writer.freshness.keys_waiting(),
        0,
        "the record is cleared"
    );
    assert_eq!(s.queue.num_requeues(&KEY.to_string()), 0, "no backoff");
    s.stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_cache_that_does_not_catch_up_in_time_requeues_the_key_with_backoff() {
    let s = setup(Duration::from_millis(100), QueueKind::AtomicFifo).await;
    *s.writer.next_write.lock() = Some("50".into());
    s.queue.add(KEY.to_string());
    s.until_syncs(1).await;

    // Parked; the bound passes; requeued with backoff, still unsynced.
    s.queue.add(KEY.to_string());
    tokio::time::sleep(Duration::from_millis(101)).await;
    s.settle().await;
    assert_eq!(s.seen(KEY), ["10"], "no sync against the stale cache");
    assert_eq!(
        s.queue.num_requeues(&KEY.to_string()),
        1,
        "requeued with backoff"
    );
    assert_eq!(
        s.writer.freshness.keys_waiting(),
        1,
        "the write stays on record"
    );

    // Each round waits the bound again, backing off between rounds: no hot loop.
    tokio::time::sleep(Duration::from_secs(1)).await;
    s.settle().await;
    let rounds = s.queue.num_requeues(&KEY.to_string());
    assert!((2..=9).contains(&rounds), "{rounds} rounds in 1.1 s");
    assert_eq!(s.seen(KEY), ["10"]);

    // Once the informer gets there, the key syncs, against the fresh cache.
    s.modified("50");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(s.seen(KEY), ["10", "50"]);
    assert_eq!(s.writer.freshness.keys_waiting(), 0);
    s.stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_version_the_api_does_not_promise_to_order_never_holds_a_key_back() {
    let s = setup(Duration::from_secs(5), QueueKind::AtomicFifo).await;
    *s.writer.next_write.lock() = Some("not-a-number".into());
    s.queue.add(KEY.to_string());
    s.until_syncs(1).await;
    s.queue.add(KEY.to_string());
    s.until_syncs(2).await;
    assert_eq!(s.seen(KEY), ["10", "10"]);
    assert_eq!(s.writer.freshness.keys_waiting(), 0);
    s.stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn an_informer_without_a_store_version_never_holds_a_key_back() {
    // The DeltaFIFO regroups events per key, so its store never has a version.
    let s = setup(Duration::from_secs(5), QueueKind::DeltaFifo).await;
    assert_eq!(s.informer.last_store_sync_resource_version(), None);
    *s.writer.next_write.lock() = Some("11".into());
    s.queue.add(KEY.to_string());
    s.until_syncs(1).await;
    s.queue.add(KEY.to_string());
    s.until_syncs(2).await;
    assert_eq!(s.seen(KEY), ["10", "10"]);
    s.stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn only_the_newest_write_per_type_counts_and_writes_of_untracked_types_are_ignored() {
    let s = setup(Duration::from_secs(5), QueueKind::AtomicFifo).await;
    let f = &s.writer.freshness;
    f.wrote(KEY, &config_map("a", "12"));
    f.wrote(KEY, &config_map("a", "11")); // older: ignored
    let mut secret = k8s_openapi::api::core::v1::Secret::default();
    secret.metadata.resource_version = Some("5".into());
    f.wrote("default/other", &secret); // no Secret informer is tracked
    assert_eq!(f.keys_waiting(), 1);
    s.watch
        .send(Ok(WatchEvent::Modified(config_map("a", "11"))))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let waiter = tokio::spawn({
        let f = f.clone();
        async move { f.wait_until_fresh(KEY).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !waiter.is_finished(),
        "12 is the version to wait for, not 11"
    );
    s.watch
        .send(Ok(WatchEvent::Modified(config_map("a", "12"))))
        .unwrap();
    assert!(matches!(
        waiter.await.unwrap(),
        FreshnessOutcome::Fresh { .. }
    ));
    s.stop.cancel();
}
