//! The load: Foos, VirtualMachines and MyWebs created up front, then created, updated,
//! deleted and recreated by several writers for the whole fault phase. The writers talk
//! to the API server directly (not through the proxy): the faults are the controllers'.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachineResource, VirtualMachineSpec};
use apis::operator::v1::{MyWeb, MyWebSpec};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use futures::StreamExt;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// How much load.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The namespace.
    pub namespace: String,
    /// Foos.
    pub foos: usize,
    /// VirtualMachines.
    pub vms: usize,
    /// MyWebs (at most 2,700: one node port each).
    pub mywebs: usize,
    /// Concurrent writers.
    pub writers: usize,
    /// Writes per second, all writers together.
    pub writes_per_second: f64,
}

/// Counters of the writes.
#[derive(Debug, Default)]
pub struct LoadCounters {
    creates: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
    failed: AtomicU64,
}

/// A copy of the counters, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LoadStats {
    /// Creates that succeeded (initial ones included).
    pub creates: u64,
    /// Updates that succeeded.
    pub updates: u64,
    /// Deletes that succeeded.
    pub deletes: u64,
    /// Writes that failed (the API server down, a conflict, already exists, not found).
    pub failed: u64,
}

impl LoadCounters {
    /// The counters so far.
    pub fn stats(&self) -> LoadStats {
        LoadStats {
            creates: self.creates.load(Ordering::Relaxed),
            updates: self.updates.load(Ordering::Relaxed),
            deletes: self.deletes.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }

    fn count<T, E>(&self, counter: &AtomicU64, result: Result<T, E>) {
        match result {
            Ok(_) => counter.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// The three object kinds.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Foo,
    Vm,
    Web,
}

/// The name of object `i` of a kind.
pub fn foo_name(i: usize) -> String {
    format!("foo-{i:05}")
}

/// The name of VirtualMachine `i`.
pub fn vm_name(i: usize) -> String {
    format!("vm-{i:04}")
}

/// The name of MyWeb `i`.
pub fn web_name(i: usize) -> String {
    format!("web-{i:04}")
}

struct Apis {
    foos: Api<Foo>,
    vms: Api<VirtualMachine>,
    webs: Api<MyWeb>,
}

impl Apis {
    fn new(client: &Client, namespace: &str) -> Self {
        Self {
            foos: Api::namespaced(client.clone(), namespace),
            vms: Api::namespaced(client.clone(), namespace),
            webs: Api::namespaced(client.clone(), namespace),
        }
    }

    async fn create(&self, kind: Kind, i: usize, rng: &mut StdRng) -> kube::Result<()> {
        let pp = PostParams::default();
        match kind {
            Kind::Foo => {
                let name = foo_name(i);
                let foo = Foo::new(&name, FooSpec::new(&name, rng.random_range(1..=2)));
                self.foos.create(&pp, &foo).await.map(drop)
            }
            Kind::Vm => {
                let resource = VirtualMachineResource::new("1", "64Mi", "1Gi");
                let vm = VirtualMachine::new(&vm_name(i), VirtualMachineSpec { resource });
                self.vms.create(&pp, &vm).await.map(drop)
            }
            Kind::Web => {
                let port = 30000 + i32::try_from(i).unwrap_or(0);
                let spec = MyWebSpec::new("nginx:1.27", port, format!("<p>{i} v0</p>"));
                self.webs
                    .create(&pp, &MyWeb::new(&web_name(i), spec))
                    .await
                    .map(drop)
            }
        }
    }

    async fn update(&self, kind: Kind, i: usize, rng: &mut StdRng) -> kube::Result<()> {
        let pp = PatchParams::default();
        let generation: u32 = rng.random();
        match kind {
            Kind::Foo => {
                let patch = json!({"spec": {"replicas": rng.random_range(1..=2)}});
                self.foos
                    .patch(&foo_name(i), &pp, &Patch::Merge(patch))
                    .await
                    .map(drop)
            }
            Kind::Vm => {
                let patch =
                    json!({"metadata": {"labels": {"chaos-generation": generation.to_string()}}});
                self.vms
                    .patch(&vm_name(i), &pp, &Patch::Merge(patch))
                    .await
                    .map(drop)
            }
            Kind::Web => {
                let patch =
                    json!({"spec": {"pageContentHtml": format!("<p>{i} v{generation}</p>")}});
                self.webs
                    .patch(&web_name(i), &pp, &Patch::Merge(patch))
                    .await
                    .map(drop)
            }
        }
    }

    async fn delete(&self, kind: Kind, i: usize) -> kube::Result<()> {
        let dp = DeleteParams::default();
        match kind {
            Kind::Foo => self.foos.delete(&foo_name(i), &dp).await.map(drop),
            Kind::Vm => self.vms.delete(&vm_name(i), &dp).await.map(drop),
            Kind::Web => self.webs.delete(&web_name(i), &dp).await.map(drop),
        }
    }
}

/// Creates every object (16 requests at a time); returns how many creates failed.
pub async fn create_initial(
    client: &Client,
    options: &LoadOptions,
    counters: &LoadCounters,
    seed: u64,
) -> u64 {
    let apis = Apis::new(client, &options.namespace);
    let all: Vec<(Kind, usize)> = (0..options.foos)
        .map(|i| (Kind::Foo, i))
        .chain((0..options.vms).map(|i| (Kind::Vm, i)))
        .chain((0..options.mywebs).map(|i| (Kind::Web, i)))
        .collect();
    let failed_before = counters.failed.load(Ordering::Relaxed);
    futures::stream::iter(all)
        .for_each_concurrent(16, |(kind, i)| {
            let apis = &apis;
            async move {
                let mut rng = StdRng::seed_from_u64(seed ^ ((i as u64) << 8));
                let result = apis.create(kind, i, &mut rng).await;
                counters.count(&counters.creates, result);
            }
        })
        .await;
    counters.failed.load(Ordering::Relaxed) - failed_before
}

/// Runs the writers until `stop`: each picks an object at random (Foos, VMs and MyWebs
/// in proportion to their numbers) and updates it (60 %), deletes it (15 %) or creates
/// it again (25 %; "already exists" when it was not deleted).
pub async fn run_writers(
    client: Client,
    options: LoadOptions,
    counters: Arc<LoadCounters>,
    seed: u64,
    stop: CancellationToken,
) {
    let total = options.foos + options.vms + options.mywebs;
    if total == 0 || options.writers == 0 || options.writes_per_second <= 0.0 {
        return;
    }
    let period = Duration::from_secs_f64(options.writers as f64 / options.writes_per_second);
    let mut tasks = Vec::new();
    for writer in 0..options.writers {
        let (apis, counters, stop) = (
            Apis::new(&client, &options.namespace),
            Arc::clone(&counters),
            stop.clone(),
        );
        let (foos, vms) = (options.foos, options.vms);
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(seed.wrapping_add(1 + writer as u64));
            let mut tick = tokio::time::interval(period);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let pick = rng.random_range(0..total);
                let (kind, i) = if pick < foos {
                    (Kind::Foo, pick)
                } else if pick < foos + vms {
                    (Kind::Vm, pick - foos)
                } else {
                    (Kind::Web, pick - foos - vms)
                };
                let roll: f64 = rng.random();
                let write = async {
                    if roll < 0.60 {
                        let r = apis.update(kind, i, &mut rng).await;
                        counters.count(&counters.updates, r);
                    } else if roll < 0.75 {
                        let r = apis.delete(kind, i).await;
                        counters.count(&counters.deletes, r);
                    } else {
                        let r = apis.create(kind, i, &mut rng).await;
                        counters.count(&counters.creates, r);
                    }
                };
                if tokio::time::timeout(Duration::from_secs(10), write)
                    .await
                    .is_err()
                {
                    counters.failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}
