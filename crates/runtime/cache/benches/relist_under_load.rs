//! How long the reflector waits to queue a watch event while the informer applies a
//! large relist (issue 32: "the reflector no longer blocked while the informer
//! applies"; client-go's `UnlockWhileProcessingFIFO`).
//!
//! One round: a FIFO holds a relist of `RELIST_OBJECTS` ConfigMaps (queued with the
//! calls the reflector makes: `begin_replace`, `replace_page`, `finish_replace_at`). A
//! consumer thread pops it with `pop_batch` and applies it to an [`Indexer`] with the
//! calls the informer makes (`replace_shared` for a `ReplacedAll`, `add` per event of
//! a batch); the informer's per-object notifications are left out, so the apply here
//! is shorter than an informer's, which favours the modes that hold the lock. From the
//! moment the consumer pops, the producer (the reflector's side) queues a watch event
//! every 100 µs until the relist is applied, timing each `add` call.
//!
//! Three modes: the default (`AtomicFifo`: one `ReplacedAll`, the lock released while
//! it is applied), the atomic FIFO with the lock held (what the unlock buys), and the
//! plain RealFIFO (the relist as events, applied in batches under the lock). Printed per
//! mode: the apply time and the producer's `add` latencies (median, p99, max) over all
//! rounds.
//!
//! Run with `cargo bench -p kcr-cache --bench relist_under_load` (`RELIST_OBJECTS`, `ROUNDS`
//! to change the defaults, 50,000 and 5).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use cache::{DEFAULT_BATCH_SIZE, Indexer, Popped, RealFifo};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

#[derive(Clone, Copy, Debug)]
enum Mode {
    AtomicUnlocked,
    AtomicLocked,
    Plain,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::AtomicUnlocked => "atomic, unlocked while applying (default)",
            Mode::AtomicLocked => "atomic, locked while applying",
            Mode::Plain => "plain RealFIFO (batches under the lock)",
        }
    }

    fn fifo(self, indexer: &Indexer<ConfigMap>) -> RealFifo<ConfigMap> {
        match self {
            Mode::AtomicUnlocked => RealFifo::new_atomic(None).with_unlock_while_processing(true),
            Mode::AtomicLocked => RealFifo::new_atomic(None),
            Mode::Plain => RealFifo::new(Arc::new(indexer.clone()), None),
        }
    }
}

fn config_map(i: usize, rv: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some(format!("ns-{}", i % 100)),
            name: Some(format!("cm-{i}")),
            resource_version: Some(rv.to_string()),
            ..Default::default()
        },
        data: Some([("key".to_string(), "x".repeat(256))].into()),
        ..Default::default()
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One round: the apply time and every `add` latency the producer saw.
fn round(mode: Mode, objects: usize) -> (Duration, Vec<Duration>) {
    let indexer: Indexer<ConfigMap> = Indexer::with_namespace_index();
    let fifo = Arc::new(mode.fifo(&indexer));
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(
        &mut replacement,
        (0..objects).map(|i| config_map(i, 1)).collect(),
    );
    fifo.finish_replace_at(replacement, Some("1"))
        .expect("a list of named objects");

    let popped = Arc::new(AtomicBool::new(false));
    let applied = Arc::new(AtomicBool::new(false));
    let consumer = thread::spawn({
        let (fifo, indexer) = (fifo.clone(), indexer.clone());
        let (popped, applied) = (popped.clone(), applied.clone());
        move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a current-thread runtime");
            let started = Instant::now();
            let mut remaining = objects;
            while remaining > 0 {
                let done = runtime.block_on(fifo.pop_batch(DEFAULT_BATCH_SIZE, |popped_now, _| {
                    popped.store(true, Ordering::SeqCst);
                    match popped_now {
                        Popped::ReplacedAll(all) => {
                            let n = all.objects.len();
                            indexer.replace_shared(all.objects);
                            n
                        }
                        Popped::Events(batch) => {
                            let n = batch.len();
                            for (key, delta) in batch {
                                if let Some(obj) = delta.object() {
                                    indexer.add(key, obj.clone());
                                }
                            }
                            n
                        }
                        Popped::SyncAll => 0,
                    }
                }));
                remaining = remaining.saturating_sub(done.unwrap_or(objects));
            }
            let took = started.elapsed();
            applied.store(true, Ordering::SeqCst);
            took
        }
    });

    while !popped.load(Ordering::SeqCst) {
        std::hint::spin_loop();
    }
    let mut latencies = Vec::new();
    let mut i = 0;
    while !applied.load(Ordering::SeqCst) {
        let event = config_map(objects + i, 2 + i);
        let start = Instant::now();
        fifo.add(event).expect("a named object");
        latencies.push(start.elapsed());
        i += 1;
        thread::sleep(Duration::from_micros(100));
    }
    let apply = consumer.join().expect("the consumer thread");
    (apply, latencies)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn main() {
    let objects = env_usize("RELIST_OBJECTS", 50_000);
    let rounds = env_usize("ROUNDS", 5);
    println!(
        "relist of {objects} ConfigMaps, {rounds} rounds per mode (interleaved), a watch event queued every 100 µs while it is applied"
    );
    let modes = [Mode::AtomicUnlocked, Mode::AtomicLocked, Mode::Plain];
    let mut applies: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    let mut adds: Vec<Vec<Duration>> = vec![Vec::new(); modes.len()];
    for _ in 0..rounds {
        for (m, mode) in modes.iter().enumerate() {
            let (apply, latencies) = round(*mode, objects);
            applies[m].push(apply);
            adds[m].extend(latencies);
        }
    }
    println!(
        "| mode | apply ms (median) | events queued meanwhile | add median µs | add p99 µs | add max ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for (m, mode) in modes.iter().enumerate() {
        applies[m].sort();
        adds[m].sort();
        let apply = percentile(&applies[m], 0.5);
        println!(
            "| {} | {:.0} | {} | {:.1} | {:.1} | {:.1} |",
            mode.name(),
            apply.as_secs_f64() * 1e3,
            adds[m].len(),
            percentile(&adds[m], 0.5).as_secs_f64() * 1e6,
            percentile(&adds[m], 0.99).as_secs_f64() * 1e6,
            adds[m].last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        );
    }
}
