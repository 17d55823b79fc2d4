//! `parking_lot::RwLock<HashMap>` (the design in `src/store.rs`) against a sharded
//! `dashmap` design, for the reads controllers do all day (`get_by_key`, `list`,
//! `by_index`) while the informer writes.
//!
//! Both hold 10,000 ConfigMaps in 100 namespaces (100 each) with a namespace index.
//! Each read is measured twice: with no writer, and with a writer thread that updates
//! objects in a tight loop for the whole measurement (far more writes than any real
//! informer makes, so the worst case for the reader). The dashmap variant is the
//! minimal correct one: an item map plus a namespace-value -> keys map, each sharded;
//! updating an object touches both maps one after the other, so it is not atomic (a
//! reader can see the index and the items disagree), which the `RwLock` design never
//! allows.
//!
//! Run with `cargo bench -p kcr-cache --bench store`.

use std::collections::HashSet;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use cache::{Indexer, NAMESPACE_INDEX};
use criterion::{Criterion, criterion_group, criterion_main};
use dashmap::DashMap;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

const NAMESPACES: usize = 100;
const PER_NAMESPACE: usize = 100;

fn config_map(ns: usize, i: usize, generation: u64) -> (String, Arc<ConfigMap>) {
    let (ns, name) = (format!("ns-{ns}"), format!("cm-{i}"));
    let cm = ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(ns.clone()),
            name: Some(name.clone()),
            resource_version: Some(generation.to_string()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    };
    (format!("{ns}/{name}"), Arc::new(cm))
}

fn all_objects() -> Vec<(String, Arc<ConfigMap>)> {
    (0..NAMESPACES)
        .flat_map(|ns| (0..PER_NAMESPACE).map(move |i| config_map(ns, i, 0)))
        .collect()
}

/// The two designs under test, behind the operations the bench needs.
trait Store: Send + Sync + 'static {
    fn add(&self, key: String, obj: Arc<ConfigMap>);
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>>;
    fn list(&self) -> Vec<Arc<ConfigMap>>;
    fn by_namespace(&self, ns: &str) -> Vec<Arc<ConfigMap>>;
}

impl Store for Indexer<ConfigMap> {
    fn add(&self, key: String, obj: Arc<ConfigMap>) {
        Indexer::add(self, key, obj);
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        Indexer::get_by_key(self, key)
    }
    fn list(&self) -> Vec<Arc<ConfigMap>> {
        Indexer::list(self)
    }
    fn by_namespace(&self, ns: &str) -> Vec<Arc<ConfigMap>> {
        self.by_index(NAMESPACE_INDEX, ns).unwrap_or_default()
    }
}

/// The minimal dashmap design: sharded items, sharded namespace index.
#[derive(Default)]
struct DashStore {
    items: DashMap<String, Arc<ConfigMap>>,
    by_namespace: DashMap<String, HashSet<String>>,
}

fn namespace_of(obj: &ConfigMap) -> String {
    obj.metadata.namespace.clone().unwrap_or_default()
}

impl Store for DashStore {
    fn add(&self, key: String, obj: Arc<ConfigMap>) {
        let new_ns = namespace_of(&obj);
        let old = self.items.insert(key.clone(), obj);
        if let Some(old) = old {
            let old_ns = namespace_of(&old);
            if old_ns != new_ns
                && let Some(mut keys) = self.by_namespace.get_mut(&old_ns)
            {
                keys.remove(&key);
            }
        }
        self.by_namespace.entry(new_ns).or_default().insert(key);
    }
    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.items.get(key).map(|e| e.value().clone())
    }
    fn list(&self) -> Vec<Arc<ConfigMap>> {
        self.items.iter().map(|e| e.value().clone()).collect()
    }
    fn by_namespace(&self, ns: &str) -> Vec<Arc<ConfigMap>> {
        // Copy the keys out first: holding an index shard while locking item shards
        // is how a dashmap design deadlocks against a writer doing the reverse.
        let keys: Vec<String> = match self.by_namespace.get(ns) {
            Some(keys) => keys.iter().cloned().collect(),
            None => return Vec::new(),
        };
        keys.iter().filter_map(|k| self.get_by_key(k)).collect()
    }
}

/// A thread that keeps updating objects until dropped.
struct Writer {
    stop: Arc<AtomicBool>,
    handle: Option<thread::JoinHandle<u64>>,
}

impl Writer {
    fn start<S: Store>(store: Arc<S>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = thread::spawn(move || {
            let mut writes = 0u64;
            while !flag.load(Ordering::Relaxed) {
                let n = writes as usize;
                let (key, obj) =
                    config_map(n % NAMESPACES, (n / NAMESPACES) % PER_NAMESPACE, writes);
                store.add(key, obj);
                writes += 1;
            }
            writes
        });
        Self {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take()
            && let Ok(writes) = handle.join()
        {
            eprintln!("(the writer made {writes} updates meanwhile)");
        }
    }
}

fn bench_design<S: Store>(c: &mut Criterion, design: &str, store: Arc<S>) {
    for writer in [false, true] {
        let _writer = writer.then(|| Writer::start(store.clone()));
        let condition = if writer { "writer" } else { "idle" };
        let mut group = c.benchmark_group(format!("store/{condition}"));
        group.bench_function(format!("{design}/get_by_key"), |b| {
            let mut i = 0usize;
            let keys: Vec<String> = (0..1000)
                .map(|n| format!("ns-{}/cm-{}", n % NAMESPACES, (n * 7) % PER_NAMESPACE))
                .collect();
            b.iter(|| {
                i = (i + 1) % keys.len();
                black_box(store.get_by_key(&keys[i]))
            })
        });
        group.bench_function(format!("{design}/list_10k"), |b| {
            b.iter(|| black_box(store.list()))
        });
        group.bench_function(format!("{design}/by_index_100"), |b| {
            let mut i = 0usize;
            let namespaces: Vec<String> = (0..NAMESPACES).map(|n| format!("ns-{n}")).collect();
            b.iter(|| {
                i = (i + 1) % namespaces.len();
                black_box(store.by_namespace(&namespaces[i]))
            })
        });
        group.finish();
    }
}

fn store_reads(c: &mut Criterion) {
    let indexer = Indexer::<ConfigMap>::with_namespace_index();
    indexer.replace(all_objects());
    bench_design(c, "rwlock", Arc::new(indexer));

    let dash = DashStore::default();
    for (key, obj) in all_objects() {
        dash.add(key, obj);
    }
    bench_design(c, "dashmap", Arc::new(dash));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = store_reads
}
criterion_main!(benches);
