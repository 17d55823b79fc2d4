//! client-go v0.37.2's `tools/cache/the_real_fifo_test.go`, ported: one Rust test per
//! Go test (each names its Go original), client-go's expectations unchanged, run in
//! the mode the Go test runs (the plain RealFIFO, or with `emitAtomicEvents` the
//! atomic one: client-go's tests set the option per test rather than loop over both).
//!
//! How the Go vocabulary maps:
//!
//! * `mkFifoObj(name, val)` is a cluster-scoped-looking ConfigMap (no namespace, so
//!   its key is its name, as `testFifoObjectKeyFunc` gives) whose resourceVersion is
//!   `val`; a popped entry is compared as a line such as `Added foo 10`,
//!   `Tombstone bar 6` (a `DeletedFinalStateUnknown` and its object's version),
//!   `ReplacedAll 123 [foo 2]` or `SyncAll`.
//! * `literalListerGetter` is [`Literal`], a `KeyListerGetter` that keeps its order.
//! * `f.getItems()` followed by popping is "pop everything"; `Pop` / `PopBatch` are
//!   `pop` / `pop_batch`, `f.batchSize` their `max`.
//!
//! Go tests and subcases that do not map onto our API, and what stands in for them:
//!
//! * `TestRealFIFO_KeyOf`: `keyOf` of a `Deltas` or `Delta` wrapper does not exist (our
//!   queue hands each entry's key next to it). Ported: the keys the queue gives a plain
//!   object and a `DeletedFinalStateUnknown` with and without an object.
//! * `TestRealFIFO_PopBrokenItemsInBatch`: it plants unkeyable objects straight into
//!   `f.items`. Ours keys every object when it is queued and refuses one without a
//!   name (`add` returns the error), so no queued entry can be unkeyable. Ported as
//!   that behaviour: the broken objects are refused, the good ones batch normally.
//! * `TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue`'s commented-out
//!   `emitDeltaTypeReplaced` subcase (commented out in Go too) and its "there is no
//!   option without knownObjects" half: a plain RealFIFO always has known objects, in
//!   Go and here.
//! * `TestRealFIFO_transformer`'s check that the transform rejects a
//!   `DeletedFinalStateUnknown` that was transformed a wrong number of times: our
//!   transform is `K -> K` and never sees a tombstone; the test asserts instead that
//!   every object popped, tombstones' included, was transformed exactly once.
//!
//! Differences kept on purpose (the tests assert ours): none in the entries or their
//! order. Our queue is async (`pop` is a future), so the Go tests' goroutines and
//! 50 ms "nothing else arrives" waits are tasks and `tokio::time::timeout`.

// Test code: an unwrap is an assertion.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use cache::{DeletedObject, Delta, KeyListerGetter, Popped, RealFifo, TransformFunc};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

mod atomic;
mod batch;
mod plain;
mod synced;

/// `mkFifoObj(name, val)`: keyed by `name`, carrying `val` as its resourceVersion.
fn mk(name: &str, val: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(val.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// `literalListerGetter`: the indexer as a fixed list, in its order.
struct Literal(Vec<ConfigMap>);

impl KeyListerGetter<ConfigMap> for Literal {
    fn list_keys(&self) -> Vec<String> {
        self.0
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect()
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0
            .iter()
            .find(|o| o.metadata.name.as_deref() == Some(key))
            .map(|o| Arc::new(o.clone()))
    }
}

/// `NewRealFIFO(testFifoObjectKeyFunc, literalListerGetter(known), nil)`.
fn plain_fifo(known: Vec<ConfigMap>) -> RealFifo<ConfigMap> {
    RealFifo::new(Arc::new(Literal(known)), None)
}

/// A plain FIFO with a transform.
fn plain_fifo_with(
    known: Vec<ConfigMap>,
    transform: TransformFunc<ConfigMap>,
) -> RealFifo<ConfigMap> {
    RealFifo::new(Arc::new(Literal(known)), Some(transform))
}

/// A FIFO with `f.emitAtomicEvents = true` (and `f.emitDeltaTypeBookmark = true`: ours
/// sets both together, as client-go's informers do).
fn atomic_fifo() -> RealFifo<ConfigMap> {
    RealFifo::new_atomic(None)
}

/// `name rv` of an object.
fn obj(o: &ConfigMap) -> String {
    format!(
        "{} {}",
        o.metadata.name.as_deref().unwrap_or("?"),
        o.metadata.resource_version.as_deref().unwrap_or("?")
    )
}

/// One delta as a line.
fn line(delta: &Delta<ConfigMap>) -> String {
    match delta {
        Delta::Added(o) => format!("Added {}", obj(o)),
        Delta::Updated(o) => format!("Updated {}", obj(o)),
        Delta::Replaced(o) => format!("Replaced {}", obj(o)),
        Delta::Sync(o) => format!("Sync {}", obj(o)),
        Delta::Deleted(DeletedObject::Object(o)) => format!("Deleted {}", obj(o)),
        Delta::Deleted(DeletedObject::Tombstone(t)) => {
            let rv = t
                .obj
                .as_deref()
                .and_then(|o| o.metadata.resource_version.clone());
            format!("Tombstone {} {}", t.key, rv.as_deref().unwrap_or("-"))
        }
        Delta::Bookmark(rv) => format!("Bookmark {rv}"),
    }
}

/// One popped entry (or batch) as lines.
fn lines(popped: Popped<ConfigMap>) -> Vec<String> {
    match popped {
        Popped::Events(batch) => batch.iter().map(|(_, d)| line(d)).collect(),
        Popped::ReplacedAll(all) => {
            let objects: Vec<String> = all.objects.iter().map(|(_, o)| obj(o)).collect();
            let rv = all.resource_version.as_deref().unwrap_or("-").to_string();
            vec![format!("ReplacedAll {rv} [{}]", objects.join(", "))]
        }
        Popped::SyncAll => vec!["SyncAll".into()],
    }
}

/// `testRealFIFOPop` / `Pop(f)`: the next entry as one line.
async fn pop1(fifo: &RealFifo<ConfigMap>) -> String {
    pop_initial(fifo).await.0
}

/// The next entry as one line, and whether it belongs to the initial list.
async fn pop_initial(fifo: &RealFifo<ConfigMap>) -> (String, bool) {
    fifo.pop(|popped, initial| {
        let mut l = lines(popped);
        assert_eq!(l.len(), 1, "pop hands out one entry");
        (l.remove(0), initial)
    })
    .await
    .expect("an entry")
}

/// `popN(f, len(f.getItems()))` then `collapseDeltas`: every queued entry, one pop each.
async fn pop_all(fifo: &RealFifo<ConfigMap>) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..fifo.len() {
        out.push(pop1(fifo).await);
    }
    assert!(fifo.is_empty(), "expected no extra deltas");
    out
}

/// Asserts nothing more is handed out within 50 ms (the Go tests' `time.After`).
async fn nothing_more(fifo: &RealFifo<ConfigMap>) {
    let more = tokio::time::timeout(
        std::time::Duration::from_millis(50),
        fifo.pop(|p, _| lines(p)),
    )
    .await;
    assert!(more.is_err(), "got an unexpected entry: {more:?}");
}
