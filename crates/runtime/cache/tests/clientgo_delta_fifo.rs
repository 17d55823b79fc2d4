//! client-go v0.37.2's own DeltaFIFO tests (`tools/cache/delta_fifo_test.go`, all 20
//! test functions), ported onto [`cache::DeltaFifo`] with client-go's expectations,
//! one Rust test per Go test function (a comment above each names it). A Go table is
//! one Rust test with the same table.
//!
//! # How the Go tests map onto our API
//!
//! * **Objects and keys.** The Go tests queue `testFifoObject{name, val}` keyed by
//!   name alone (`testFifoObjectKeyFunc`). Our FIFO keys every object with
//!   `meta_namespace_key` (there is no `KeyFunction` option), so an object is a
//!   ConfigMap `default/<name>` whose resourceVersion is the Go `val`:
//!   `mkFifoObj("foo", 5)` is `mk("foo", 5)`, and its key is `default/foo`.
//! * **Deltas are compared as text**, one string per delta (`Added foo@5`,
//!   `Deleted DeletedFinalStateUnknown{default/bar, bar@6}`, `... nil}` for a
//!   tombstone without a last state): the same fields `reflect.DeepEqual` compares.
//! * **`literalListerGetter`**, the Go tests' `KnownObjects`, is [`Literal`] here: a
//!   fixed list of objects, listed in order.
//! * **Internals.** Where a Go test reads the FIFO's private state (`f.items`,
//!   `f.list()`, `f.get()`), the Rust test observes the same through the public API:
//!   what `pop` hands out, `list_keys`, `is_empty`.
//!
//! # Where we differ on purpose (the tests assert our behaviour)
//!
//! * **`EmitDeltaTypeReplaced` is always on.** client-go's DeltaFIFO queues a listed
//!   object as `Sync` unless `EmitDeltaTypeReplaced` is set; every shared informer
//!   sets it, and ours is the informer's queue, so it always queues `Replaced`. The Go
//!   tests built without the option expect `Sync` for listed objects; here they
//!   expect `Replaced` (`TestDeltaFIFO_replaceWithDeleteDeltaIn`, the "Synced
//!   objects" row of `TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue`,
//!   `TestDeltaFIFO_ReplaceMakesDeletions`, `TestDeltaFIFO_HasSyncedCorrectOnDeletion`;
//!   each place says so). A `Sync` delta still comes from `resync`, as in client-go.
//! * **The transform is typed** (`Fn(K) -> K`), so it cannot be handed a
//!   `DeletedFinalStateUnknown` at all; client-go's transform receives `interface{}` and
//!   `TestDeltaFIFO_transformer` checks that a tombstone reaching it carries an object
//!   transformed exactly once. Here the same is checked on the popped tombstone.
//!
//! # Not mapped
//!
//! * `TestDeltaFIFO_KeyOf`, rows C and D (`KeyOf` of a `Deltas` value): we have no
//!   `Deltas` type to key and no `KeyOf` on arbitrary values; `pop` hands the key
//!   together with the deltas. Those rows are checked as the key `pop` hands out with
//!   deltas whose newest delta is the object C, or a tombstone for D without a last
//!   state. Rows A and B map onto `meta_namespace_key` and
//!   `deletion_handling_meta_namespace_key`.
//!
//! # Found by the port, and fixed
//!
//! * Two deletions in a row: client-go's `dedupDeltas` / `isDeletionDup` keeps the
//!   *earlier* one unless it is a tombstone; ours kept the later real deletion (and the
//!   earlier of two tombstones). Fixed in `delta_fifo.rs`; delta_fifo_test.go only
//!   reaches the rule through `Replace` (where both behaved alike), so
//!   [`dedup_keeps_the_earlier_deletion_unless_it_is_a_tombstone`] pins it directly.

use std::sync::Arc;
use std::time::Duration;

use cache::testing::config_map;
use cache::{
    DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, KeyListerGetter,
    deletion_handling_meta_namespace_key, meta_namespace_key,
};
use k8s_openapi::api::core::v1::ConfigMap;

/// `mkFifoObj(name, val)`: the ConfigMap `default/<name>` at resourceVersion `val`.
fn mk(name: &str, val: u64) -> ConfigMap {
    config_map(name, &val.to_string())
}

/// `literalListerGetter`: known objects from a fixed list, listed in order.
struct Literal(Vec<ConfigMap>);

impl KeyListerGetter<ConfigMap> for Literal {
    fn list_keys(&self) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|obj| meta_namespace_key(obj).ok())
            .collect()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0
            .iter()
            .find(|obj| meta_namespace_key(*obj).is_ok_and(|k| k == key))
            .map(|obj| Arc::new(obj.clone()))
    }
}

/// `NewDeltaFIFOWithOptions(DeltaFIFOOptions{KeyFunction: ..})`: no known objects.
fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(None, None)
}

/// `NewDeltaFIFOWithOptions` with `KnownObjects: literalListerGetter(..)`.
fn fifo_knowing(known: Vec<ConfigMap>) -> DeltaFifo<ConfigMap> {
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(Literal(known));
    DeltaFifo::new(Some(known), None)
}

/// `name@rv` of an object, `nil` for none.
fn obj_text(obj: Option<&Arc<ConfigMap>>) -> String {
    match obj {
        Some(obj) => format!(
            "{}@{}",
            obj.metadata.name.as_deref().unwrap_or("?"),
            obj.metadata.resource_version.as_deref().unwrap_or("?")
        ),
        None => "nil".to_string(),
    }
}

/// One delta as text: what `reflect.DeepEqual` compares in the Go tests.
fn delta_text(delta: &Delta<ConfigMap>) -> String {
    match delta {
        Delta::Deleted(DeletedObject::Tombstone(DeletedFinalStateUnknown { key, obj })) => {
            format!(
                "Deleted DeletedFinalStateUnknown{{{key}, {}}}",
                obj_text(obj.as_ref())
            )
        }
        other => format!("{:?} {}", other.delta_type(), obj_text(other.object())),
    }
}

/// `Pop(f)`: the next key's deltas as text.
async fn pop(f: &DeltaFifo<ConfigMap>) -> Vec<String> {
    pop2(f).await.0
}

/// `pop2`: the next key's deltas as text, and `isInInitialList`.
async fn pop2(f: &DeltaFifo<ConfigMap>) -> (Vec<String>, bool) {
    f.pop(|_, deltas, initial| (deltas.iter().map(delta_text).collect(), initial))
        .await
        .expect("an item to pop")
}

/// `testPop(f)`: the newest delta's object of the next key.
async fn test_pop(f: &DeltaFifo<ConfigMap>) -> Arc<ConfigMap> {
    f.pop(|_, deltas, _| deltas.last().and_then(|d| d.object().cloned()))
        .await
        .expect("an item to pop")
        .expect("the newest delta carries an object")
}

/// The resourceVersion (the Go `val`) of an object as a number.
fn val(obj: &ConfigMap) -> u64 {
    obj.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric resourceVersion")
}

fn strings(expected: &[&str]) -> Vec<String> {
    expected.iter().map(|s| s.to_string()).collect()
}

// client-go: TestDeltaFIFO_basic (delta_fifo_test.go)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_delta_fifo_basic() {
    let f = Arc::new(fifo());
    const AMOUNT: u64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|producer| {
            let f = f.clone();
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    f.add(mk(&format!("{producer}-{i}"), i + 1)).unwrap();
                }
            })
        })
        .collect();

    // Each producer's objects come out in the order it queued them.
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..AMOUNT * 2 {
        let obj = test_pop(&f).await;
        let name = obj.metadata.name.clone().unwrap();
        let last = if name.starts_with("a-") {
            &mut last_a
        } else if name.starts_with("b-") {
            &mut last_b
        } else {
            panic!("unexpected object {name}");
        };
        let v = val(&obj);
        assert!(v > *last, "got {name}@{v} out of order, last was {last}");
        *last = v;
    }
    for producer in producers {
        producer.join().unwrap();
    }
    assert_eq!((last_a, last_b), (AMOUNT, AMOUNT));
}

// client-go: TestDeltaFIFO_replaceWithDeleteDeltaIn (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_replace_with_delete_delta_in() {
    let old_obj = mk("foo", 1);
    let new_obj = mk("foo", 2);
    let f = fifo_knowing(vec![old_obj.clone()]);

    f.delete(old_obj).unwrap();
    f.replace(vec![new_obj]).unwrap();

    // client-go (without EmitDeltaTypeReplaced): `Sync foo@2`; ours always emits
    // `Replaced` (module docs). The point of the test holds: the listed object is
    // queued behind the deletion, so handlers see it created again.
    assert_eq!(pop(&f).await, strings(&["Deleted foo@1", "Replaced foo@2"]));
}

// client-go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_replace_makes_deletions_for_objects_only_in_queue() {
    let obj = || mk("foo", 2);
    let obj_v2 = || mk("foo", 3);
    type Operations = Box<dyn Fn(&DeltaFifo<ConfigMap>)>;
    let table: Vec<(&str, Operations, Vec<String>)> = vec![
        (
            "Added object should be deleted on Replace",
            Box::new(move |f| {
                f.add(obj()).unwrap();
                f.replace(vec![]).unwrap();
            }),
            strings(&[
                "Added foo@2",
                "Deleted DeletedFinalStateUnknown{default/foo, foo@2}",
            ]),
        ),
        (
            // client-go sets `f.emitDeltaTypeReplaced = true` for this row; ours is
            // always so.
            "Replaced object should have only a single Delete",
            Box::new(move |f| {
                f.add(obj()).unwrap();
                f.replace(vec![obj()]).unwrap();
                f.replace(vec![]).unwrap();
            }),
            strings(&[
                "Added foo@2",
                "Replaced foo@2",
                "Deleted DeletedFinalStateUnknown{default/foo, foo@2}",
            ]),
        ),
        (
            "Deleted object should have only a single Delete",
            Box::new(move |f| {
                f.add(obj()).unwrap();
                f.delete(obj()).unwrap();
                f.replace(vec![]).unwrap();
            }),
            strings(&["Added foo@2", "Deleted foo@2"]),
        ),
        (
            // client-go (without EmitDeltaTypeReplaced): `Sync foo@2` twice; ours
            // always emits `Replaced` (module docs).
            "Synced objects should have a single delete",
            Box::new(move |f| {
                f.add(obj()).unwrap();
                f.replace(vec![obj()]).unwrap();
                f.replace(vec![obj()]).unwrap();
                f.replace(vec![]).unwrap();
            }),
            strings(&[
                "Added foo@2",
                "Replaced foo@2",
                "Replaced foo@2",
                "Deleted DeletedFinalStateUnknown{default/foo, foo@2}",
            ]),
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            Box::new(move |f| {
                f.add(obj()).unwrap();
                f.replace(vec![]).unwrap();
                f.replace(vec![]).unwrap();
            }),
            strings(&[
                "Added foo@2",
                "Deleted DeletedFinalStateUnknown{default/foo, foo@2}",
            ]),
        ),
        (
            "Added and deleted and added object should be deleted",
            Box::new(move |f| {
                f.add(obj()).unwrap();
                f.delete(obj()).unwrap();
                f.add(obj_v2()).unwrap();
                f.replace(vec![]).unwrap();
            }),
            strings(&[
                "Added foo@2",
                "Deleted foo@2",
                "Added foo@3",
                "Deleted DeletedFinalStateUnknown{default/foo, foo@3}",
            ]),
        ),
    ];
    for (name, operations, expected) in table {
        // With a backing KnownObjects (that knows nothing), then without one.
        for (with_known, f) in [(true, fifo_knowing(vec![])), (false, fifo())] {
            operations(&f);
            assert_eq!(
                pop(&f).await,
                expected,
                "{name} (known objects: {with_known})"
            );
            assert!(
                f.is_empty(),
                "{name} (known objects: {with_known}): extra deltas {:?}",
                f.list_keys()
            );
        }
    }
}

// client-go: TestDeltaFIFO_addUpdate (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_add_update() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();

    // `f.listKeys()`; `f.list()` (the newest object per key) is what the pop shows.
    assert_eq!(f.list_keys(), ["default/foo"]);
    let first = test_pop(&f).await;
    assert_eq!(val(&first), 15, "didn't get the updated value");

    // No second value within 50 ms.
    let second = tokio::time::timeout(Duration::from_millis(50), f.pop(|_, d, _| d)).await;
    assert!(second.is_err(), "got a second value {second:?}");
    // `f.get(foo)`: the item was removed.
    assert!(f.list_keys().is_empty(), "item did not get removed");
}

// client-go: TestDeltaFIFO_transformer (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_transformer() {
    const XFRM: &str = "xfrm";
    // `rvAndXfrm.xfrm`: how many times the transform saw the object.
    let transformed = |obj: &ConfigMap| -> u32 {
        obj.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(XFRM))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let xfrm: cache::TransformFunc<ConfigMap> = Arc::new(move |mut obj: ConfigMap| {
        let n = transformed(&obj) + 1;
        obj.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(XFRM.to_string(), n.to_string());
        obj
    });
    let f = DeltaFifo::new(None, Some(xfrm));
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 11)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    f.replace(vec![]).unwrap();
    f.add(mk("bar", 16)).unwrap();
    f.replace(vec![]).unwrap();

    assert_eq!(f.list_keys(), ["default/foo", "default/bar"]);

    for _ in 0..2 {
        let newest = f
            .pop(|_, mut deltas, _| deltas.pop().expect("a delta"))
            .await
            .expect("an item");
        match newest {
            Delta::Deleted(DeletedObject::Object(obj)) => {
                assert_eq!(
                    obj.metadata.name.as_deref(),
                    Some("foo"),
                    "expected regular deletion of foo"
                );
                assert_eq!(val(&obj), 15, "expected last message");
                assert_eq!(transformed(&obj), 1, "transformed wrong number of times");
            }
            Delta::Deleted(DeletedObject::Tombstone(tombstone)) => {
                let obj = tombstone.obj.expect("the tombstone's last state");
                assert_eq!(
                    obj.metadata.name.as_deref(),
                    Some("bar"),
                    "expected tombstone deletion of bar"
                );
                assert_eq!(val(&obj), 16, "expected last message");
                assert_eq!(
                    transformed(&obj),
                    1,
                    "tombstoned obj transformed wrong number of times"
                );
            }
            other => panic!("unknown item {other:?}"),
        }
    }
}

// client-go: TestDeltaFIFO_enqueueingNoLister (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_enqueueing_no_lister() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    f.add(mk("qux", 17)).unwrap();
    f.delete(mk("qux", 18)).unwrap();

    // This delete does not enqueue anything because baz doesn't exist.
    f.delete(mk("baz", 20)).unwrap();

    for expect in [10, 15, 18] {
        assert_eq!(
            val(&*test_pop(&f).await),
            expect,
            "didn't get updated value"
        );
    }
    assert!(
        f.is_empty(),
        "queue unexpectedly not empty: {:?}",
        f.list_keys()
    );
}

// client-go: TestDeltaFIFO_enqueueingWithLister (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_enqueueing_with_lister() {
    let f = fifo_knowing(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();

    // This delete does enqueue the deletion, because "baz" is in the key lister.
    f.delete(mk("baz", 20)).unwrap();

    for expect in [10, 15, 20] {
        assert_eq!(
            val(&*test_pop(&f).await),
            expect,
            "didn't get updated value"
        );
    }
    assert!(
        f.is_empty(),
        "queue unexpectedly not empty: {:?}",
        f.list_keys()
    );
}

// client-go: TestDeltaFIFO_addReplace (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_add_replace() {
    let f = fifo();
    f.add(mk("foo", 10)).unwrap();
    f.replace(vec![mk("foo", 15)]).unwrap();

    let first = test_pop(&f).await;
    assert_eq!(val(&first), 15, "didn't get updated value");
    let second = tokio::time::timeout(Duration::from_millis(50), f.pop(|_, d, _| d)).await;
    assert!(second.is_err(), "got a second value {second:?}");
    assert!(f.list_keys().is_empty(), "item did not get removed");
}

// client-go: TestDeltaFIFO_ResyncNonExisting (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_resync_non_existing() {
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.resync();

    // `f.items["foo"]`: one delta, the deletion (no Sync behind it).
    assert_eq!(pop(&f).await, strings(&["Deleted foo@10"]));
}

// client-go: TestDeltaFIFO_Resync (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_resync() {
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.resync();

    assert_eq!(pop(&f).await, strings(&["Sync foo@5"]));
}

// client-go: TestDeltaFIFO_DeleteExistingNonPropagated (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_delete_existing_non_propagated() {
    let f = fifo_knowing(vec![]);
    f.add(mk("foo", 5)).unwrap();
    f.delete(mk("foo", 6)).unwrap();

    // Two deltas, the last one the deletion.
    assert_eq!(pop(&f).await, strings(&["Added foo@5", "Deleted foo@6"]));
}

// client-go: TestDeltaFIFO_ReplaceMakesDeletions (delta_fifo_test.go)
//
// client-go builds these FIFOs without EmitDeltaTypeReplaced and expects `Sync` for
// listed objects; ours always emits `Replaced` (module docs). Nothing else changes.
#[tokio::test]
async fn test_delta_fifo_replace_makes_deletions() {
    // We test with only one pre-existing object because there is no promise about
    // how their deletes are ordered.
    let known = || vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)];

    // Try it with a pre-existing Delete.
    let f = fifo_knowing(known());
    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)]).unwrap();
    let expected_list = [
        vec!["Deleted baz@10"],
        vec!["Replaced foo@5"],
        // Since "bar" didn't have a delete event and wasn't in the Replace list it
        // should get a tombstone key with the right Obj.
        vec!["Deleted DeletedFinalStateUnknown{default/bar, bar@6}"],
    ];
    for expected in expected_list {
        assert_eq!(pop(&f).await, strings(&expected));
    }

    // Now try starting with an Add instead of a Delete.
    let f = fifo_knowing(known());
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)]).unwrap();
    let expected_list = [
        vec![
            "Added baz@10",
            "Deleted DeletedFinalStateUnknown{default/baz, baz@10}",
        ],
        vec!["Replaced foo@5"],
        vec!["Deleted DeletedFinalStateUnknown{default/bar, bar@6}"],
    ];
    for expected in expected_list {
        assert_eq!(pop(&f).await, strings(&expected));
    }

    // Now try deleting and recreating the object in the queue, then delete it by a
    // Replace call.
    let f = fifo_knowing(known());
    f.delete(mk("bar", 6)).unwrap();
    f.add(mk("bar", 100)).unwrap();
    f.replace(vec![mk("foo", 5)]).unwrap();
    let expected_list = [
        vec![
            "Deleted bar@6",
            "Added bar@100",
            // Since "bar" has a newer object in the queue than in the state, it
            // should get a tombstone key with the latest object from the queue.
            "Deleted DeletedFinalStateUnknown{default/bar, bar@100}",
        ],
        vec!["Replaced foo@5"],
        vec!["Deleted DeletedFinalStateUnknown{default/baz, baz@7}"],
    ];
    for expected in expected_list {
        assert_eq!(pop(&f).await, strings(&expected));
    }

    // Now try syncing it first to ensure the delete use the latest version.
    let f = fifo_knowing(known());
    f.replace(vec![mk("bar", 100), mk("foo", 5)]).unwrap();
    f.replace(vec![mk("foo", 5)]).unwrap();
    let expected_list = [
        vec![
            "Replaced bar@100",
            // Since "bar" didn't have a delete event and wasn't in the Replace list
            // it should get a tombstone key with the right Obj.
            "Deleted DeletedFinalStateUnknown{default/bar, bar@100}",
        ],
        vec!["Replaced foo@5", "Replaced foo@5"],
        vec!["Deleted DeletedFinalStateUnknown{default/baz, baz@7}"],
    ];
    for expected in expected_list {
        assert_eq!(pop(&f).await, strings(&expected));
    }

    // Now try starting without an explicit KeyListerGetter.
    let f = fifo();
    f.add(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 5)]).unwrap();
    let expected_list = [
        vec![
            "Added baz@10",
            "Deleted DeletedFinalStateUnknown{default/baz, baz@10}",
        ],
        vec!["Replaced foo@5"],
    ];
    for expected in expected_list {
        assert_eq!(pop(&f).await, strings(&expected));
    }
}

// client-go: TestDeltaFIFO_ReplaceMakesDeletionsReplaced (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_replace_makes_deletions_replaced() {
    let f = fifo_knowing(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);

    f.delete(mk("baz", 10)).unwrap();
    f.replace(vec![mk("foo", 6)]).unwrap();

    let expected_list = [
        vec!["Deleted baz@10"],
        vec!["Replaced foo@6"],
        // Since "bar" didn't have a delete event and wasn't in the Replace list it
        // should get a tombstone key with the right Obj.
        vec!["Deleted DeletedFinalStateUnknown{default/bar, bar@6}"],
    ];
    for expected in expected_list {
        assert_eq!(pop(&f).await, strings(&expected));
    }
}

// client-go: TestDeltaFIFO_ReplaceDeltaType (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_replace_delta_type() {
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.replace(vec![mk("foo", 5)]).unwrap();

    assert_eq!(pop(&f).await, strings(&["Replaced foo@5"]));
}

// client-go: TestDeltaFIFO_UpdateResyncRace (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_update_resync_race() {
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.update(mk("foo", 6)).unwrap();
    f.resync();

    assert_eq!(pop(&f).await, strings(&["Updated foo@6"]));
    assert!(f.is_empty(), "no stale Sync queued: {:?}", f.list_keys());
}

// client-go: TestDeltaFIFO_HasSyncedCorrectOnDeletion (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_has_synced_correct_on_deletion() {
    let f = fifo_knowing(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.replace(vec![mk("foo", 5)]).unwrap();

    let expected_list = [
        // client-go (without EmitDeltaTypeReplaced): `Sync foo@5` (module docs).
        vec!["Replaced foo@5"],
        // Since "bar" didn't have a delete event and wasn't in the Replace list it
        // should get a tombstone key with the right Obj.
        vec!["Deleted DeletedFinalStateUnknown{default/bar, bar@6}"],
        vec!["Deleted DeletedFinalStateUnknown{default/baz, baz@7}"],
    ];
    for expected in expected_list {
        assert!(!f.has_synced(), "expected HasSynced to be false");
        let (cur, initial) = pop2(&f).await;
        assert_eq!(cur, strings(&expected));
        assert!(initial, "expected initial list item");
    }
    assert!(f.has_synced(), "expected HasSynced to be true");
}

// client-go: TestDeltaFIFO_detectLineJumpers (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_detect_line_jumpers() {
    let f = fifo();

    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 1)).unwrap();
    f.add(mk("foo", 11)).unwrap();
    f.add(mk("foo", 13)).unwrap();
    f.add(mk("zab", 30)).unwrap();

    assert_eq!(val(&*test_pop(&f).await), 13);

    f.add(mk("foo", 14)).unwrap(); // ensure foo doesn't jump back in line

    assert_eq!(val(&*test_pop(&f).await), 1);
    assert_eq!(val(&*test_pop(&f).await), 30);
    assert_eq!(val(&*test_pop(&f).await), 14);
}

// client-go: TestDeltaFIFO_KeyOf (delta_fifo_test.go)
//
// Rows A and B are `KeyOf` of an object and of a tombstone; rows C and D are `KeyOf`
// of a `Deltas` value, which we do not have: `pop` hands the key out with the deltas,
// so those rows check that key (module docs, "Not mapped").
#[tokio::test]
async fn test_delta_fifo_key_of() {
    // A: an object.
    let a = mk("A", 1);
    assert_eq!(meta_namespace_key(&a).unwrap(), "default/A");
    // B: a tombstone without a last state.
    let b = DeletedObject::<ConfigMap>::Tombstone(DeletedFinalStateUnknown {
        key: "default/B".into(),
        obj: None,
    });
    assert_eq!(
        deletion_handling_meta_namespace_key(&b).unwrap(),
        "default/B"
    );
    // C: deltas whose newest object is C.
    let f = fifo();
    f.add(mk("C", 1)).unwrap();
    let key = f.pop(|key, _, _| key.to_string()).await.unwrap();
    assert_eq!(key, "default/C");
    // D: deltas whose only delta is a tombstone for D without a last state (a known
    // key the known objects cannot return: client-go's "placing
    // DeleteFinalStateUnknown marker without object").
    struct ListsOnly;
    impl KeyListerGetter<ConfigMap> for ListsOnly {
        fn list_keys(&self) -> Vec<String> {
            vec!["default/D".into()]
        }
        fn get_by_key(&self, _: &str) -> Option<Arc<ConfigMap>> {
            None
        }
    }
    let lists_only: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(ListsOnly);
    let f = DeltaFifo::new(Some(lists_only), None);
    f.replace(vec![]).unwrap();
    let (key, deltas) = f
        .pop(|key, deltas, _| {
            (
                key.to_string(),
                deltas.iter().map(delta_text).collect::<Vec<_>>(),
            )
        })
        .await
        .unwrap();
    assert_eq!(key, "default/D");
    assert_eq!(
        deltas,
        strings(&["Deleted DeletedFinalStateUnknown{default/D, nil}"])
    );
}

// client-go: TestDeltaFIFO_HasSynced (delta_fifo_test.go)
#[tokio::test]
async fn test_delta_fifo_has_synced() {
    enum Action {
        Add(Box<ConfigMap>),
        Replace(Vec<ConfigMap>),
        Pop,
    }
    use Action::{Add, Pop, Replace};
    let tests: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (vec![Add(Box::new(mk("a", 1)))], true),
        (vec![Replace(vec![])], true),
        (vec![Replace(vec![mk("a", 1), mk("b", 2)])], false),
        (vec![Replace(vec![mk("a", 1), mk("b", 2)]), Pop], false),
        (vec![Replace(vec![mk("a", 1), mk("b", 2)]), Pop, Pop], true),
        // This test case won't happen in practice since a Reflector, the only
        // producer for delta_fifo today, always passes a complete snapshot consistent
        // in time; there cannot be duplicate keys in the list or apiserver is broken.
        (vec![Replace(vec![mk("a", 1), mk("a", 2)]), Pop], true),
    ];

    for (i, (actions, expected_synced)) in tests.into_iter().enumerate() {
        let f = fifo();
        for action in actions {
            match action {
                Add(obj) => f.add(*obj).unwrap(),
                Replace(list) => f.replace(list).unwrap(),
                Pop => {
                    f.pop(|_, _, _| ()).await.unwrap();
                }
            }
        }
        assert_eq!(f.has_synced(), expected_synced, "test case {i} failed");
    }
}

// client-go: TestDeltaFIFO_PopShouldUnblockWhenClosed (delta_fifo_test.go)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_delta_fifo_pop_should_unblock_when_closed() {
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(Literal(vec![mk("foo", 5)]));
    let f = Arc::new(DeltaFifo::new(Some(known), None));

    const JOBS: usize = 10;
    let (tx, mut rx) = tokio::sync::mpsc::channel(JOBS);
    for _ in 0..JOBS {
        let (f, tx) = (f.clone(), tx.clone());
        tokio::spawn(async move {
            let popped = f.pop(|_, _, _| ()).await;
            tx.send(popped).await.unwrap();
        });
    }

    tokio::task::yield_now().await;
    f.close();

    for _ in 0..JOBS {
        let popped = tokio::time::timeout(Duration::from_millis(500), rx.recv())
            .await
            .expect("timed out waiting for Pop to return after Close");
        assert_eq!(popped, Some(None), "a closed, empty FIFO pops nothing");
    }
}

// Not a port: client-go's `dedupDeltas` / `isDeletionDup` (delta_fifo.go), which
// delta_fifo_test.go only reaches through `Replace`. Of two deletions in a row the
// earlier one stays, unless it is a tombstone.
#[tokio::test]
async fn dedup_keeps_the_earlier_deletion_unless_it_is_a_tombstone() {
    // Two real deletions: the first one reported stays.
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.delete(mk("foo", 11)).unwrap();
    assert_eq!(pop(&f).await, strings(&["Deleted foo@10"]));

    // A real deletion, then a tombstone (a relist without the key): the real one
    // stays.
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.replace(vec![]).unwrap();
    assert_eq!(pop(&f).await, strings(&["Deleted foo@10"]));

    // A tombstone, then the real deletion: the tombstone gives way.
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.replace(vec![]).unwrap();
    f.delete(mk("foo", 10)).unwrap();
    assert_eq!(pop(&f).await, strings(&["Deleted foo@10"]));

    // Two tombstones (two relists without the key): one is left, with the last state.
    let f = fifo_knowing(vec![mk("foo", 5)]);
    f.replace(vec![]).unwrap();
    f.replace(vec![]).unwrap();
    assert_eq!(
        pop(&f).await,
        strings(&["Deleted DeletedFinalStateUnknown{default/foo, foo@5}"])
    );
}
