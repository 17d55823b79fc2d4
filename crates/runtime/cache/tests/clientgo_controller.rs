//! client-go v0.37.2's `tools/cache/controller_test.go`, ported onto this crate (issue
//! 32: the cache on client-go's exact semantics). One test per Go test function, each
//! named above it; client-go's expectations are kept, except where this crate differs
//! on purpose (said at the test, and in the module docs it points to).
//!
//! client-go's tests drive the plain `controller` (`NewInformer`,
//! `NewTransformingInformer`, `New(&Config{...})`) with a hand-made `Process` function.
//! This crate has no plain controller: its one informer is the [`SharedIndexInformer`],
//! built here with `common::new_informer` so that every queue kind the suites support
//! (`CACHE_TEST_QUEUE`) runs these tests. client-go's `FakeControllerSource` (a live,
//! versioned object set: `Add`, `Modify`, `Delete`, the `DropWatch` variants that change
//! the set without telling the watchers, `ResetWatch`) is re-created at the bottom of
//! this file as [`fake::FakeControllerSource`]: the scripted
//! `cache::testing::ScriptedListerWatcher` answers from a script fixed in advance, and
//! these tests change the source while the informer runs. Where a test only needs a
//! script (`TestReplaceEvents`), the scripted source plays client-go's fake.
//! client-go's fake clocks and real sleeps become Tokio's paused time.
//!
//! # Differences on purpose, asserted as this crate's behaviour
//!
//! * `TestPanicPropagated`: a panicking handler does not take the informer down; the
//!   panic is logged and the handler keeps receiving events (`processor_listener`
//!   module docs). client-go's plain controller lets the panic escape `Run`.
//! * `TestTransformingInformer`, `TestReplaceEvents`,
//!   `TestStoreResourceVersionWithNonMetaTransform`: an update whose resourceVersion is
//!   unchanged (here: a transform that clears it, or a re-add of a cached object at the
//!   same version) is a resync, delivered only to handlers in a resync round
//!   (`shared_informer` module docs). That is client-go's `sharedIndexInformer.OnUpdate`;
//!   its plain controller, which these Go tests use, hands every update over.
//! * `TestStoreResourceVersion*`: `last_store_sync_resource_version` is `None` unless
//!   the queue is the atomic RealFIFO (`QueueKind::tracks_store_version`), as
//!   client-go's store answers `""` without `AtomicFIFO`.
//!
//! On the DeltaFIFO (`CACHE_TEST_QUEUE=delta`) a replace queues the listed objects
//! before the tombstones, as client-go's `DeltaFIFO.Replace` does (`informer_queue`
//! docs); client-go's `TestReplaceEvents` only runs its RealFIFO, which queues the
//! tombstones first, and so do ours.
//!
//! # Not ported, or only in part
//!
//! * `TestProcessDeltasInBatch`: only "all transaction succeeding should works". The
//!   other three subcases fail store transactions (`TransactionStore`, `mockTxnStore`);
//!   this crate's indexer applies every delta infallibly and has no transactions.
//! * `TestDeletedObjectGetObjectName`, `TestDeletedObjectGetKey`: the "completely empty
//!   `DeletedObject`" subcase. Go's `DeletedObject[T]` is a struct with two optional
//!   fields; ours is an enum that always holds an object or a tombstone.
//! * `TestStoreResourceVersionWithNonMetaTransform`: a transform into a non-object (a
//!   `string`) with a key function that ignores metadata: a transform here maps `K` to
//!   `K` and keys are always `namespace/name`. Ported as a transform that removes the
//!   metadata the store's resourceVersion is read from (`resourceVersion`).
//! * `atomic` subtests (`TestReplaceEvents`, `TestResetWatch`): the queue is chosen by
//!   `CACHE_TEST_QUEUE` for the whole run (hack/test.sh reruns the suites per kind),
//!   not per subtest.

#![allow(clippy::unwrap_used)] // test code: an unwrap is an assertion

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, gone};
use cache::{
    DeletedFinalStateUnknown, DeletedObject, EventHandler, EventHandlerFuncs, Indexer, ObjectName,
    QueueKind, SharedIndexInformer, deletion_handling_meta_namespace_key, meta_namespace_key,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec};
use kube::Resource;
use kube::api::{ObjectMeta, WatchEvent};
use parking_lot::Mutex;
use rand::Rng;
use tokio_util::sync::CancellationToken;

mod common;
use common::fake_source as fake;
use common::{delivered, eventually, new_informer, queue_kind};

use fake::FakeControllerSource;

/// A ConfigMap standing in for client-go's test Pods: `namespace/name`, no version
/// (the source sets it).
fn object(namespace: Option<&str>, name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: namespace.map(str::to_string),
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whether the queue of this run has the store track the version it has caught up
/// with (the atomic RealFIFO only, as client-go's `AtomicFIFO`).
fn in_order() -> bool {
    queue_kind().tracks_store_version()
}

/// Runs `informer` until the returned token is cancelled.
fn run<K: Resource + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    (stop, task)
}

/// Waits for `cond`, letting both virtual time pass (the informer's timers: backoff,
/// resync) and real time (the handlers' threads, which paused time knows nothing of).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(2)))
            .await
            .unwrap();
    }
    panic!("timed out waiting for: {what}");
}

/// client-go's `eventRecord`: what a handler saw, and what the store held for the key
/// when it saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EventRecord {
    action: &'static str,
    key: String,
    event_rv: String,
    store_rv: String,
    is_in_initial_list: bool,
}

fn record(action: &'static str, key: &str, event_rv: &str, store_rv: &str) -> EventRecord {
    EventRecord {
        action,
        key: key.to_string(),
        event_rv: event_rv.to_string(),
        store_rv: store_rv.to_string(),
        is_in_initial_list: false,
    }
}

/// client-go's `eventRecorder`: a handler that records every event with the store's
/// version of the object at that moment.
struct EventRecorder<K> {
    history: Arc<Mutex<Vec<EventRecord>>>,
    store: Indexer<K>,
}

impl<K> Clone for EventRecorder<K> {
    fn clone(&self) -> Self {
        Self {
            history: self.history.clone(),
            store: self.store.clone(),
        }
    }
}

fn resource_version<K: Resource>(obj: &K) -> String {
    obj.meta().resource_version.clone().unwrap_or_default()
}

impl<K: Resource + Send + Sync + 'static> EventRecorder<K> {
    fn new(store: Indexer<K>) -> Self {
        Self {
            history: Arc::default(),
            store,
        }
    }

    fn record(&self, action: &'static str, key: String, obj: Option<&K>, initial: bool) {
        let store_rv = self
            .store
            .get_by_key(&key)
            .map(|o| resource_version(o.as_ref()))
            .unwrap_or_default();
        self.history.lock().push(EventRecord {
            action,
            key,
            event_rv: obj.map(resource_version).unwrap_or_default(),
            store_rv,
            is_in_initial_list: initial,
        });
    }

    fn history(&self) -> Vec<EventRecord> {
        self.history.lock().clone()
    }

    fn clear_history(&self) {
        self.history.lock().clear();
    }

    /// client-go's `waitForEventCount`.
    async fn wait_for_event_count(&self, count: usize) {
        let what = format!("{count} events");
        until(&what, || self.history.lock().len() >= count).await;
    }
}

impl<K: Resource + Send + Sync + 'static> EventHandler<K> for EventRecorder<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let key = meta_namespace_key(obj.as_ref()).unwrap();
        self.record("add", key, Some(obj), is_in_initial_list);
    }
    fn on_update(&self, _old: &Arc<K>, new: &Arc<K>) {
        let key = meta_namespace_key(new.as_ref()).unwrap();
        self.record("update", key, Some(new), false);
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let key = deletion_handling_meta_namespace_key(obj).unwrap();
        self.record("delete", key, obj.object().map(|o| o.as_ref()), false);
    }
}

// client-go: TestHammerController (controller_test.go)
#[tokio::test(start_paused = true)]
async fn hammer_controller() {
    let source = FakeControllerSource::<ConfigMap>::new();
    // Key -> the operations its handler calls saw, in order.
    let output: Arc<Mutex<BTreeMap<String, Vec<&'static str>>>> = Arc::default();
    let recorder = |op: &'static str| {
        let output = output.clone();
        move |obj: &ConfigMap| {
            let key = meta_namespace_key(obj).unwrap();
            output.lock().entry(key).or_default().push(op);
        }
    };
    let informer = new_informer("hammer", source.clone(), Duration::from_millis(100));
    let (add, update) = (recorder("add"), recorder("update"));
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |obj: &Arc<ConfigMap>, _| add(obj))
            .on_update(move |_, obj: &Arc<ConfigMap>| update(obj))
            .on_delete({
                let output = output.clone();
                // Through the key: a tombstone may come without an object.
                move |obj: &DeletedObject<ConfigMap>| {
                    let key = deletion_handling_meta_namespace_key(obj).unwrap();
                    output.lock().entry(key).or_default().push("delete");
                }
            }),
    );
    assert!(
        !informer.has_synced(),
        "Expected HasSynced() to return false before we started the controller"
    );

    let (stop, task) = run(&informer);
    eventually("initial sync", || informer.has_synced()).await;

    // Three threads add, modify and delete random objects at once.
    let threads: Vec<_> = (0..3)
        .map(|thread| {
            let source = source.clone();
            std::thread::spawn(move || {
                let mut rng = rand::rng();
                let mut current: Vec<String> = Vec::new();
                for _ in 0..100 {
                    if current.is_empty() || rng.random_range(0..3) == 1 {
                        let name = format!("t{thread}-{}", rng.random_range(0..1_000_000u32));
                        current.push(name.clone());
                        source.add(object(Some("default"), &name));
                        continue;
                    }
                    let index = rng.random_range(0..current.len());
                    let name = current[index].clone();
                    if rng.random_range(0..2) == 0 {
                        source.modify(object(Some("default"), &name));
                    } else {
                        current.swap_remove(index);
                        source.delete(object(Some("default"), &name));
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        tokio::task::spawn_blocking(move || thread.join().unwrap())
            .await
            .unwrap();
    }

    tokio::time::sleep(Duration::from_millis(100)).await;
    // Beyond client-go's test (which only logs what it got): the cache converges on the
    // source, and every key's last event agrees with whether the object still exists.
    eventually("cache == source", || {
        let mut keys = informer.indexer().list_keys();
        keys.sort();
        keys == source.keys()
    })
    .await;
    let expected = source.keys();
    delivered("last events match the source", || {
        output.lock().iter().all(|(key, ops)| {
            let exists = expected.binary_search(key).is_ok();
            ops.last().is_some_and(|op| (*op == "delete") != exists)
        })
    })
    .await;
    stop.cancel();
    task.await.unwrap();
}

// client-go: TestUpdate (controller_test.go)
#[tokio::test(start_paused = true)]
async fn update() {
    let source = FakeControllerSource::<ConfigMap>::new();
    const FROM: &str = "from";
    const TO: &str = "to";
    // The transitions an update may show; a resync may repeat either state.
    let allowed = [(FROM, TO), (TO, TO), (FROM, FROM)];
    let labelled = |name: &str, check: &str, last: bool| {
        let mut obj = object(None, name);
        let mut labels = BTreeMap::from([("check".to_string(), check.to_string())]);
        if last {
            labels.insert("final".to_string(), "true".to_string());
        }
        obj.metadata.labels = Some(labels);
        obj
    };
    let label = |obj: &ConfigMap, label: &str| {
        obj.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(label).cloned())
            .unwrap_or_default()
    };

    const THREADS: usize = 3;
    let deleted = Arc::new(AtomicUsize::new(0));
    let bad_transitions = Arc::new(Mutex::new(Vec::new()));
    let informer = new_informer("update", source.clone(), Duration::ZERO);
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_update({
                let (source, bad) = (source.clone(), bad_transitions.clone());
                move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                    let (from, to) = (label(old, "check"), label(new, "check"));
                    if !allowed.contains(&(from.as_str(), to.as_str())) {
                        bad.lock()
                            .push(format!("observed transition {from:?} -> {to:?}"));
                    }
                    if label(new, "final") == "true" {
                        source.delete(new.as_ref().clone());
                    }
                }
            })
            .on_delete({
                let deleted = deleted.clone();
                move |_: &DeletedObject<ConfigMap>| {
                    deleted.fetch_add(1, Ordering::SeqCst);
                }
            }),
    );
    let (stop, task) = run(&informer);
    // client-go's watchCh: the changes below must reach the informer by its watch.
    eventually("watch started", || source.watch_calls() > 0).await;

    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let source = source.clone();
            let (from, to) = (labelled, labelled);
            std::thread::spawn(move || {
                let name = format!("a-{i}-0");
                source.add(from(&name, FROM, false));
                source.modify(to(&name, TO, true));
            })
        })
        .collect();
    for thread in threads {
        tokio::task::spawn_blocking(move || thread.join().unwrap())
            .await
            .unwrap();
    }
    delivered("every object deleted", || {
        deleted.load(Ordering::SeqCst) == THREADS
    })
    .await;
    assert_eq!(*bad_transitions.lock(), Vec::<String>::new());
    stop.cancel();
    task.await.unwrap();
}

// client-go: TestPanicPropagated (controller_test.go)
//
// On purpose: client-go's plain controller lets a handler's panic escape `Run`; here a
// panic is contained to the handler's call (processor_listener module docs): the
// informer keeps running and the handler keeps receiving events.
#[tokio::test(start_paused = true)]
async fn panic_propagated() {
    let source = FakeControllerSource::<ConfigMap>::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let informer = new_informer("panic", source.clone(), Duration::from_millis(100));
    informer.add_event_handler(EventHandlerFuncs::new().on_add({
        let calls = calls.clone();
        move |_: &Arc<ConfigMap>, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            panic!("Just panic.");
        }
    }));
    let (stop, task) = run(&informer);
    source.add(object(None, "test"));
    delivered("the handler panicked", || calls.load(Ordering::SeqCst) == 1).await;

    // Not propagated: the informer still runs and still delivers.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!task.is_finished(), "the panic stopped the informer");
    source.add(object(None, "test2"));
    delivered("the next add delivered", || {
        calls.load(Ordering::SeqCst) == 2
    })
    .await;
    stop.cancel();
    task.await.expect("the informer ends normally");
}

fn make_pod(name: &str, generation: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some("namespace".to_string()),
            labels: Some(BTreeMap::from([(
                "generation".to_string(),
                generation.to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(PodSpec {
            hostname: Some("hostname".to_string()),
            subdomain: Some("subdomain".to_string()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// What the transform makes of [`make_pod`].
fn expected_pod(name: &str, generation: &str) -> Pod {
    let mut pod = make_pod(name, generation);
    let spec = pod.spec.as_mut().unwrap();
    spec.hostname = Some("new-hostname".to_string());
    spec.subdomain = None;
    spec.node_name = Some("nodename".to_string());
    pod
}

#[derive(Debug, PartialEq)]
enum PodEvent {
    Added(Arc<Pod>),
    Modified(Arc<Pod>, Arc<Pod>),
    Deleted(Arc<Pod>),
}

// client-go: TestTransformingInformer (controller_test.go)
//
// On purpose: the transform clears resourceVersion (client-go does it "to simplify
// comparisons"), so pod2's update keeps the version its cached state has, and this
// crate's informer, like client-go's sharedIndexInformer, treats it as a resync that
// goes to no handler here (shared_informer module docs). client-go's plain controller
// hands it over; this test asserts that the cache has the update and the handler does
// not hear of it.
#[tokio::test(start_paused = true)]
async fn transforming_informer() {
    let source = FakeControllerSource::<Pod>::new();
    source.add(make_pod("pod1", "1"));
    source.modify(make_pod("pod1", "2"));

    let events = Arc::new(Mutex::new(Vec::new()));
    let informer = new_informer("transforming", source.clone(), Duration::ZERO);
    informer
        .set_transform(Arc::new(|mut pod: Pod| {
            let spec = pod.spec.get_or_insert_with(Default::default);
            spec.hostname = Some("new-hostname".to_string());
            spec.subdomain = None;
            spec.node_name = Some("nodename".to_string());
            pod.metadata.resource_version = None;
            pod
        }))
        .unwrap();
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add({
                let events = events.clone();
                move |pod: &Arc<Pod>, _| events.lock().push(PodEvent::Added(pod.clone()))
            })
            .on_update({
                let events = events.clone();
                move |old: &Arc<Pod>, new: &Arc<Pod>| {
                    events
                        .lock()
                        .push(PodEvent::Modified(old.clone(), new.clone()));
                }
            })
            .on_delete({
                let events = events.clone();
                move |pod: &DeletedObject<Pod>| {
                    let pod = pod.object().expect("the final state");
                    events.lock().push(PodEvent::Deleted(pod.clone()));
                }
            }),
    );
    let seen = AtomicUsize::new(0);
    let verify_event = |expected: PodEvent| {
        let (events, seen) = (events.clone(), &seen);
        async move {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            delivered("the next event", || events.lock().len() > n).await;
            assert_eq!(events.lock()[n], expected);
        }
    };
    let verify_store = |expected: &[Pod]| {
        let mut items: Vec<Pod> = informer
            .indexer()
            .list()
            .iter()
            .map(|p| (**p).clone())
            .collect();
        items.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        assert_eq!(items, expected);
    };

    let (stop, task) = run(&informer);
    verify_event(PodEvent::Added(Arc::new(expected_pod("pod1", "2")))).await;
    verify_store(&[expected_pod("pod1", "2")]);

    source.add(make_pod("pod2", "1"));
    verify_event(PodEvent::Added(Arc::new(expected_pod("pod2", "1")))).await;
    verify_store(&[expected_pod("pod1", "2"), expected_pod("pod2", "1")]);

    source.add(make_pod("pod3", "1"));
    verify_event(PodEvent::Added(Arc::new(expected_pod("pod3", "1")))).await;

    source.modify(make_pod("pod2", "2"));
    // client-go: verifyEvent(watch.Modified, expectedPod("pod2", "1"), expectedPod("pod2", "2")).
    // Here the cache takes the update and no handler hears of it (see above).
    eventually("pod2 updated in the cache", || {
        informer
            .indexer()
            .get_by_key("namespace/pod2")
            .is_some_and(|p| *p == expected_pod("pod2", "2"))
    })
    .await;

    source.delete(make_pod("pod1", "2"));
    verify_event(PodEvent::Deleted(Arc::new(expected_pod("pod1", "2")))).await;
    verify_store(&[expected_pod("pod2", "2"), expected_pod("pod3", "1")]);
    assert_eq!(events.lock().len(), 4, "no update was delivered");
    stop.cancel();
    task.await.unwrap();
}

// client-go: TestTransformingInformerRace (controller_test.go)
#[tokio::test(start_paused = true)]
async fn transforming_informer_race() {
    const LABEL: &str = "to-be-transformed";
    let make = |name: &str| {
        let mut pod = make_pod(name, "1");
        pod.metadata.labels = Some(BTreeMap::from([(LABEL.to_string(), "true".to_string())]));
        pod
    };
    let source = FakeControllerSource::<Pod>::new();
    const NUM_OBJS: usize = 5;
    for i in 0..NUM_OBJS {
        source.add(make(&format!("pod-{i}")));
    }

    let bad_transform = Arc::new(AtomicBool::new(false));
    let informer = new_informer("race", source.clone(), Duration::from_millis(5));
    informer
        .set_transform(Arc::new({
            let bad_transform = bad_transform.clone();
            move |mut pod: Pod| {
                let labels = pod.metadata.labels.get_or_insert_with(Default::default);
                if labels.get(LABEL).map(String::as_str) != Some("true") {
                    // Transformed twice.
                    bad_transform.store(true, Ordering::SeqCst);
                }
                labels.insert(LABEL.to_string(), "false".to_string());
                pod
            }
        }))
        .unwrap();
    let events = Arc::new(AtomicUsize::new(0));
    let count = {
        let events = events.clone();
        move || {
            events.fetch_add(1, Ordering::SeqCst);
        }
    };
    let (add, update, delete) = (count.clone(), count.clone(), count);
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |_: &Arc<Pod>, _| add())
            .on_update(move |_, _: &Arc<Pod>| update())
            .on_delete(move |_: &DeletedObject<Pod>| delete()),
    );
    let (stop, task) = run(&informer);
    delivered("the initial adds", || {
        events.load(Ordering::SeqCst) >= NUM_OBJS
    })
    .await;

    // Readers on threads of their own fetch the objects while resyncs run.
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..NUM_OBJS)
        .map(|i| {
            let (store, done) = (informer.indexer().clone(), done.clone());
            std::thread::spawn(move || -> Result<(), String> {
                let key = format!("namespace/pod-{i}");
                while !done.load(Ordering::SeqCst) {
                    let pod = store
                        .get_by_key(&key)
                        .ok_or_else(|| format!("couldn't get the object for {key}"))?;
                    let label = pod.metadata.labels.as_ref().and_then(|l| l.get(LABEL));
                    if label.map(String::as_str) != Some("false") {
                        return Err(format!("unexpected object: {pod:?}"));
                    }
                    std::thread::yield_now();
                }
                Ok(())
            })
        })
        .collect();

    // Let resyncs happen for some time.
    tokio::time::sleep(Duration::from_secs(1)).await;
    stop.cancel();
    task.await.unwrap();
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        let result = tokio::task::spawn_blocking(move || reader.join().unwrap())
            .await
            .unwrap();
        assert_eq!(result, Ok(()));
    }
    assert!(
        events.load(Ordering::SeqCst) > NUM_OBJS,
        "resyncs were delivered"
    );
    assert!(
        !bad_transform.load(Ordering::SeqCst),
        "unexpected transformation happened"
    );
}

fn test_config_map() -> ConfigMap {
    object(Some("testnamespace"), "testname")
}

// client-go: TestDeletionHandlingObjectToName (controller_test.go)
#[test]
fn deletion_handling_object_to_name() {
    let cm = test_config_map();
    let string_key = meta_namespace_key(&cm).unwrap();
    let deleted = DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: string_key,
        obj: Some(Arc::new(cm.clone())),
    });
    let expected = ObjectName::of(&cm).unwrap();
    let actual: ObjectName = deletion_handling_meta_namespace_key(&deleted)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(expected, actual);
}

// client-go: TestDeletedObjectGetObjectName (controller_test.go)
#[test]
fn deleted_object_get_object_name() {
    let cm = test_config_map();
    let expected = ObjectName::of(&cm).unwrap();
    let name_of = |deleted: &DeletedObject<ConfigMap>| -> ObjectName {
        deletion_handling_meta_namespace_key(deleted)
            .unwrap()
            .parse()
            .unwrap()
    };

    let deleted = DeletedObject::Object(Arc::new(cm.clone()));
    assert_eq!(name_of(&deleted), expected);

    let string_key = meta_namespace_key(&cm).unwrap();
    let deleted_unknown = DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: string_key.clone(),
        obj: Some(Arc::new(cm.clone())),
    });
    assert_eq!(name_of(&deleted_unknown), expected);

    // A tombstone may have no object if the informer never saw it; the key is still
    // authoritative.
    let deleted_unknown_no_obj = DeletedObject::<ConfigMap>::Tombstone(DeletedFinalStateUnknown {
        key: string_key,
        obj: None,
    });
    assert_eq!(name_of(&deleted_unknown_no_obj), expected);
    // Not ported: the completely empty DeletedObject (see the module docs).
}

// client-go: TestDeletedObjectGetKey (controller_test.go)
#[test]
fn deleted_object_get_key() {
    let cm = test_config_map();
    let expected = meta_namespace_key(&cm).unwrap();

    let deleted = DeletedObject::Object(Arc::new(cm.clone()));
    assert_eq!(
        deletion_handling_meta_namespace_key(&deleted).unwrap(),
        expected
    );

    let deleted_unknown = DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: expected.clone(),
        obj: Some(Arc::new(cm.clone())),
    });
    assert_eq!(
        deletion_handling_meta_namespace_key(&deleted_unknown).unwrap(),
        expected
    );

    let deleted_unknown_no_obj = DeletedObject::<ConfigMap>::Tombstone(DeletedFinalStateUnknown {
        key: expected.clone(),
        obj: None,
    });
    assert_eq!(
        deletion_handling_meta_namespace_key(&deleted_unknown_no_obj).unwrap(),
        expected
    );
    // Not ported: the completely empty DeletedObject (see the module docs).
}

// client-go: TestProcessDeltasInBatch (controller_test.go)
//
// Only the subcase "all transaction succeeding should works" (see the module docs): one
// Added delta of the initial list, applied and handed to the listener.
#[tokio::test(start_paused = true)]
async fn process_deltas_in_batch() {
    let cm1 = object(Some("testnamespace"), "testname1");
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm1.clone()], "1");
    let informer = new_informer("batch", Arc::new(lw), Duration::ZERO);
    let received = Arc::new(Mutex::new(Vec::new()));
    informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add({
                let received = received.clone();
                move |obj: &Arc<ConfigMap>, initial| {
                    received.lock().push(((**obj).clone(), initial))
                }
            })
            .on_update({
                let received = received.clone();
                move |_, obj: &Arc<ConfigMap>| received.lock().push(((**obj).clone(), false))
            })
            .on_delete({
                let received = received.clone();
                move |obj: &DeletedObject<ConfigMap>| {
                    received
                        .lock()
                        .push(((**obj.object().unwrap()).clone(), false));
                }
            }),
    );
    let (stop, task) = run(&informer);
    eventually("synced", || informer.has_synced()).await;
    delivered("the add", || !received.lock().is_empty()).await;
    assert_eq!(*received.lock(), vec![(cm1.clone(), true)]);
    assert_eq!(informer.indexer().list_keys(), ["testnamespace/testname1"]);
    stop.cancel();
    task.await.unwrap();
}

fn versioned(name: &str, rv: &str, ver: Option<&str>) -> ConfigMap {
    let mut obj = object(Some("default"), name);
    obj.metadata.resource_version = Some(rv.to_string());
    obj.metadata.labels = ver.map(|v| BTreeMap::from([("ver".to_string(), v.to_string())]));
    obj
}

/// client-go's `sortDeleteEventsByKey`: synthetic deletes from a replace are not
/// ordered, so each run of consecutive deletes is sorted by key; the rest keeps its order.
fn sort_delete_events_by_key(mut events: Vec<EventRecord>) -> Vec<EventRecord> {
    let mut start = 0;
    while start < events.len() {
        let len = events[start..]
            .iter()
            .take_while(|r| r.action == "delete")
            .count();
        events[start..start + len].sort_by(|a, b| a.key.cmp(&b.key));
        start += len.max(1);
    }
    events
}

// client-go: TestReplaceEvents (controller_test.go)
//
// client-go calls the FIFO's `Add` and `Replace` directly; here they arrive as the
// reflector makes them: watch ADDED events, and a relist after a 410 (scripted source).
// On purpose (module docs): a re-add of a cached object at its cached version is a
// resync no handler hears of here. The DeltaFIFO queues the tombstones last.
#[tokio::test(start_paused = true)]
async fn replace_events() {
    struct Case {
        name: &'static str,
        initial_objs: Vec<ConfigMap>,
        replaced_items: Vec<ConfigMap>,
        replace_rv: &'static str,
        expected_history: Vec<EventRecord>,
    }
    let cases = vec![
        Case {
            name: "Create with no initial objects",
            initial_objs: vec![],
            replaced_items: vec![versioned("pod-1", "1", None)],
            expected_history: vec![record("add", "default/pod-1", "1", "1")],
            replace_rv: "1",
        },
        Case {
            name: "Delete all objects",
            initial_objs: vec![versioned("pod-1", "1", None), versioned("pod-3", "2", None)],
            replaced_items: vec![],
            expected_history: vec![
                record("delete", "default/pod-1", "1", ""),
                record("delete", "default/pod-3", "2", ""),
            ],
            replace_rv: "2",
        },
        Case {
            name: "Create, update, delete",
            initial_objs: vec![
                versioned("pod-1", "1", None),
                versioned("pod-2", "2", Some("1")),
                versioned("pod-3", "3", None),
            ],
            replaced_items: vec![
                versioned("pod-1", "4", None),
                versioned("pod-2", "5", Some("2")),
                versioned("pod-4", "6", None),
            ],
            expected_history: vec![
                record("delete", "default/pod-3", "3", ""),
                record("update", "default/pod-1", "4", "4"),
                record("update", "default/pod-2", "5", "5"),
                record("add", "default/pod-4", "6", "6"),
            ],
            replace_rv: "6",
        },
    ];

    let lw = Arc::new(ScriptedListerWatcher::<ConfigMap>::new());
    lw.push_list_items(vec![], "0");
    let mut watch = lw.push_watch_channel();
    let informer = new_informer("replace", lw.clone(), Duration::ZERO);
    let store = informer.indexer().clone();
    let recorder = EventRecorder::new(store.clone());
    informer.add_event_handler(recorder.clone());
    let (stop, task) = run(&informer);
    assert!(informer.wait_for_cache_sync(&stop).await);

    for case in cases {
        recorder.clear_history();
        // A re-add of a cached object at its cached version is a resync (see above).
        let initial_events = case
            .initial_objs
            .iter()
            .filter(|obj| {
                let key = meta_namespace_key(*obj).unwrap();
                store.get_by_key(&key).map(|o| resource_version(o.as_ref()))
                    != obj.metadata.resource_version
            })
            .count();
        for obj in &case.initial_objs {
            watch.send(Ok(WatchEvent::Added(obj.clone()))).unwrap();
        }
        eventually("initial objects cached", || {
            case.initial_objs.iter().all(|obj| {
                store
                    .get_by_key(&meta_namespace_key(obj).unwrap())
                    .is_some_and(|o| o.metadata == obj.metadata)
            })
        })
        .await;
        recorder.wait_for_event_count(initial_events).await;
        recorder.clear_history();

        // Replace: the watch expires, the reflector relists.
        lw.push_list_items(case.replaced_items.clone(), case.replace_rv);
        let next = lw.push_watch_channel();
        watch.send(Err(gone())).unwrap();
        watch = next;
        recorder
            .wait_for_event_count(case.expected_history.len())
            .await;

        let mut items: Vec<ConfigMap> = store.list().iter().map(|o| (**o).clone()).collect();
        items.sort_by_key(|o| meta_namespace_key(o).unwrap());
        assert_eq!(items, case.replaced_items, "{}", case.name);
        let history = recorder.history();
        let (mut deletes, others): (Vec<_>, Vec<_>) =
            history.iter().cloned().partition(|r| r.action == "delete");
        // Synthetic deletes are not ordered among themselves.
        deletes.sort_by(|a, b| a.key.cmp(&b.key));
        let (expected_deletes, expected_others): (Vec<_>, Vec<_>) = case
            .expected_history
            .iter()
            .cloned()
            .partition(|r| r.action == "delete");
        assert_eq!(deletes, expected_deletes, "{}: {history:?}", case.name);
        assert_eq!(others, expected_others, "{}: {history:?}", case.name);
        // Where the tombstones go: first, as client-go's RealFIFO queues them; last on the
        // DeltaFIFO, as client-go's DeltaFIFO.Replace queues them (informer_queue docs).
        let tombstones_first = queue_kind() != QueueKind::DeltaFifo;
        let got = sort_delete_events_by_key(history.clone());
        let expected: Vec<_> = if tombstones_first {
            expected_deletes
                .into_iter()
                .chain(expected_others)
                .collect()
        } else {
            expected_others
                .into_iter()
                .chain(expected_deletes)
                .collect()
        };
        assert_eq!(got, expected, "{}", case.name);
    }
    stop.cancel();
    task.await.unwrap();
}

// client-go: TestResetWatch (controller_test.go)
#[tokio::test(start_paused = true)]
async fn reset_watch() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.add(object(Some("default"), "pod-1"));
    let informer = new_informer("reset", source.clone(), Duration::ZERO);
    let recorder = EventRecorder::new(informer.indexer().clone());
    informer.add_event_handler(recorder.clone());
    let (stop, task) = run(&informer);
    assert!(
        informer.wait_for_cache_sync(&stop).await,
        "Timed out waiting for cache sync"
    );

    // The first event should be the initial add.
    recorder.wait_for_event_count(1).await;
    let history = recorder.history();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].action, "add");
    assert_eq!(history[0].key, "default/pod-1");
    assert!(history[0].is_in_initial_list);

    recorder.clear_history();
    source.modify_drop_watch(object(Some("default"), "pod-1"));
    source.add_drop_watch(object(Some("default"), "pod-2"));
    source.reset_watch();

    // An add for the second pod and an update for the first, on the relist.
    recorder.wait_for_event_count(2).await;
    let history = recorder.history();
    assert_eq!(history.len(), 2, "{history:?}");
    let update = history.iter().find(|r| r.action == "update").unwrap();
    let add = history.iter().find(|r| r.action == "add").unwrap();
    assert_eq!(update.key, "default/pod-1");
    assert!(!update.is_in_initial_list);
    assert_eq!(add.key, "default/pod-2");
    assert!(!add.is_in_initial_list);
    stop.cancel();
    task.await.unwrap();
}

// client-go: TestStoreResourceVersion (controller_test.go)
//
// Only the atomic RealFIFO has the store track its version (`None` otherwise, module
// docs).
#[tokio::test(start_paused = true)]
async fn store_resource_version() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.add(object(Some("default"), "pod-1"));
    let informer = new_informer("store-rv", source.clone(), Duration::ZERO);
    let store = informer.indexer().clone();
    let recorder = EventRecorder::new(store.clone());
    informer.add_event_handler(recorder.clone());
    let (stop, task) = run(&informer);
    assert!(
        informer.wait_for_cache_sync(&stop).await,
        "Timed out waiting for cache sync"
    );
    let store_rv = || {
        store
            .last_store_sync_resource_version()
            .map(|rv| rv.to_string())
    };

    recorder.wait_for_event_count(1).await;
    let history = recorder.history();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].action, "add");
    assert_eq!(history[0].key, "default/pod-1");
    assert!(history[0].is_in_initial_list);

    recorder.clear_history();
    // Update the labels, which increments the resource version.
    let mut modified = object(Some("default"), "pod-1");
    modified.metadata.labels = Some(BTreeMap::from([("foo".to_string(), "bar".to_string())]));
    source.modify(modified);
    recorder.wait_for_event_count(1).await;
    let history = recorder.history();
    let expected = in_order().then(|| history[0].event_rv.clone());
    assert_eq!(expected.as_deref(), in_order().then_some("2"));
    assert_eq!(store_rv(), expected, "the stored resource version changed");

    recorder.clear_history();
    source.delete(object(Some("default"), "pod-1"));
    recorder.wait_for_event_count(1).await;
    let history = recorder.history();
    assert_eq!(history[0].action, "delete");
    let expected = in_order().then(|| history[0].event_rv.clone());
    assert_eq!(expected.as_deref(), in_order().then_some("3"));
    assert_eq!(store_rv(), expected, "the stored resource version changed");
    stop.cancel();
    task.await.unwrap();
}

// client-go: TestStoreResourceVersionWithNonMetaTransform (controller_test.go)
//
// Ported in part (module docs): the transform removes the resourceVersion instead of
// turning the object into a string. Since the transformed update then carries the
// version its cached state has, it is a resync no handler hears of (on purpose,
// module docs), so the test waits for the cache instead of an event.
#[tokio::test(start_paused = true)]
async fn store_resource_version_with_non_meta_transform() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.add(object(Some("default"), "pod-1"));
    let informer = new_informer("non-meta", source.clone(), Duration::ZERO);
    informer
        .set_transform(Arc::new(|mut cm: ConfigMap| {
            cm.metadata.resource_version = None;
            cm
        }))
        .unwrap();
    let store = informer.indexer().clone();
    let recorder = EventRecorder::new(store.clone());
    informer.add_event_handler(recorder.clone());
    let (stop, task) = run(&informer);
    assert!(
        informer.wait_for_cache_sync(&stop).await,
        "Timed out waiting for cache sync"
    );
    let store_rv = || {
        store
            .last_store_sync_resource_version()
            .map(|rv| rv.to_string())
    };
    let label = || {
        store
            .get_by_key("default/pod-1")
            .and_then(|o| o.metadata.labels.as_ref()?.get("foo").cloned())
    };

    recorder.wait_for_event_count(1).await;
    let history = recorder.history();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].action, "add");
    assert_eq!(history[0].key, "default/pod-1");
    assert!(history[0].is_in_initial_list);

    // The stored version stays at the list's: the update has none.
    let replace_rv = store_rv();
    assert_eq!(replace_rv.as_deref(), in_order().then_some("1"));
    recorder.clear_history();
    let mut modified = object(Some("default"), "pod-1");
    modified.metadata.labels = Some(BTreeMap::from([("foo".to_string(), "bar".to_string())]));
    source.modify(modified.clone());
    eventually("update cached", || label().as_deref() == Some("bar")).await;
    assert_eq!(store_rv(), replace_rv, "unchanged by a version-less update");

    // Modify the object without telling the watch, and relist.
    modified.metadata.labels = Some(BTreeMap::from([("foo".to_string(), "bar2".to_string())]));
    source.modify_drop_watch(modified);
    source.reset_watch();
    eventually("relist cached", || label().as_deref() == Some("bar2")).await;
    // The stored version is the relist's.
    assert_eq!(store_rv().as_deref(), in_order().then_some("3"));
    assert!(recorder.history().is_empty(), "{:?}", recorder.history());
    stop.cancel();
    task.await.unwrap();
}
