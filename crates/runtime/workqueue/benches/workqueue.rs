//! Workqueue benchmarks: the scenarios of the workqueue benchmark issue, mirrored one
//! to one by `hack/bench/workqueue-go` (client-go's real `util/workqueue`), so that
//! `hack/bench/workqueue.sh` can put the two side by side. Results: docs/benchmarks.md.
//!
//! Keys are `Arc<str>` `"ns-<i % 100>/name-<i>"` built before the timer starts (the
//! same strings the Go benchmark uses). Both sides add a key they already hold the
//! way their API makes natural: Go passes the string header by value (no copy of the
//! bytes, no reference count), Rust passes a reference, `add(&key)` /
//! `add_after(&key, d)`, and the queue clones the key only when it stores it (a
//! reference-count increment for `Arc<str>`, an allocation and a copy for `String`):
//! a re-add of a waiting key clones nothing, as in Go. `single_worker/arc_str_owned`
//! keeps the by-value form, `add(key.clone())`, where the caller pays the clone and
//! the queue drops it when the key is already known.
//!
//! Every benchmark sets `Throughput::Elements`, so criterion reports elements/s:
//!
//! | benchmark                             | one element                                      |
//! |---------------------------------------|--------------------------------------------------|
//! | `single_worker/arc_str`               | add + get + done on a distinct key               |
//! | `single_worker/arc_str_owned`         | the same with `add(key.clone())`                 |
//! | `single_worker/string`                | the same with `String` keys (stored as a clone)  |
//! | `single_worker/rate_limited`          | add + get + forget + done, `RateLimitingQueue`   |
//! | `dedup_heavy/arc_str`                 | one add; each key is added 10 times per get+done |
//! | `two_producers_two_workers/arc_str`   | one added key, got and done by a worker          |
//! | `add_after_100k_pending/new_item`     | add_after of a new key, 100k-150k keys waiting   |
//! | `add_after_100k_pending/readd_waiting`| add_after of an already-waiting key (no-op path) |
//!
//! The whole run takes a few minutes: 3 s of measurement and 20 samples per benchmark.

use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tokio::runtime::{Builder, Runtime};
use workqueue::{DelayingQueue, Queue, RateLimitingQueue, default_controller_rate_limiter};

/// Distinct keys the single-worker benchmarks cycle through.
const NUM_KEYS: usize = 10_000;
/// Keys per dedup-heavy batch, and how often each is added before the batch drains.
const DEDUP_BATCH: usize = 1_000;
const DEDUP_REPEATS: usize = 10;
/// Keys waiting in the delaying queue before add_after is timed.
const PENDING: usize = 100_000;
/// Timed add_afters per freshly pre-filled queue (so 100k-150k keys are waiting).
const ADD_AFTER_RUN: usize = 50_000;
/// The producers of the 2x2 benchmark yield to the scheduler every this many adds
/// (the Go producers call `runtime.Gosched()` as often).
const YIELD_EVERY: usize = 64;

fn key(prefix: &str, i: usize) -> String {
    format!("ns-{}/{prefix}-{i}", i % 100)
}

fn arc_keys(prefix: &str, range: Range<usize>) -> Vec<Arc<str>> {
    range.map(|i| Arc::from(key(prefix, i))).collect()
}

/// `n` delays spread deterministically over [1 h, 2 h), the Go benchmark's formula:
/// new items land all over the waiting set, never at its head.
fn delays(n: usize, mult: usize) -> Vec<Duration> {
    (0..n)
        .map(|i| Duration::from_secs(3600) + Duration::from_millis(((i * mult) % 3_600_000) as u64))
        .collect()
}

fn current_thread() -> Runtime {
    Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn single_worker(c: &mut Criterion) {
    let rt = current_thread();
    let keys = arc_keys("name", 0..NUM_KEYS);
    let string_keys: Vec<String> = (0..NUM_KEYS).map(|i| key("name", i)).collect();
    let mut g = c.benchmark_group("single_worker");
    g.throughput(Throughput::Elements(1));

    g.bench_function("arc_str", |b| {
        let queue: Queue<Arc<str>> = Queue::new();
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters as usize {
                    queue.add(&keys[i % NUM_KEYS]);
                    let item = queue.get().await.expect("not shut down");
                    black_box(&*item);
                    item.done();
                }
                start.elapsed()
            })
        });
    });

    g.bench_function("arc_str_owned", |b| {
        let queue: Queue<Arc<str>> = Queue::new();
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters as usize {
                    queue.add(keys[i % NUM_KEYS].clone());
                    let item = queue.get().await.expect("not shut down");
                    black_box(&*item);
                    item.done();
                }
                start.elapsed()
            })
        });
    });

    g.bench_function("string", |b| {
        let queue: Queue<String> = Queue::new();
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters as usize {
                    queue.add(&string_keys[i % NUM_KEYS]);
                    let item = queue.get().await.expect("not shut down");
                    black_box(&*item);
                    item.done();
                }
                start.elapsed()
            })
        });
    });

    g.bench_function("rate_limited", |b| {
        // The delaying queue under it spawns its timer task: needs the runtime.
        let queue: RateLimitingQueue<Arc<str>> =
            rt.block_on(async { RateLimitingQueue::new(default_controller_rate_limiter()) });
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for i in 0..iters as usize {
                    queue.add(&keys[i % NUM_KEYS]);
                    let item = queue.get().await.expect("not shut down");
                    queue.forget(&item);
                    item.done();
                }
                start.elapsed()
            })
        });
    });
    g.finish();
}

fn dedup_heavy(c: &mut Criterion) {
    let rt = current_thread();
    let keys = arc_keys("name", 0..DEDUP_BATCH);
    let mut g = c.benchmark_group("dedup_heavy");
    // One iteration: 10 rounds of adds over 1,000 keys, then 1,000 get + done.
    g.throughput(Throughput::Elements((DEDUP_BATCH * DEDUP_REPEATS) as u64));
    g.bench_function("arc_str", |b| {
        let queue: Queue<Arc<str>> = Queue::new();
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    for _ in 0..DEDUP_REPEATS {
                        for k in &keys {
                            queue.add(k);
                        }
                    }
                    for _ in 0..DEDUP_BATCH {
                        let item = queue.get().await.expect("not shut down");
                        black_box(&*item);
                        item.done();
                    }
                }
                start.elapsed()
            })
        });
    });
    g.finish();
}

fn two_producers_two_workers(c: &mut Criterion) {
    let rt = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Distinct keys for every add of a sample, so every add is processed exactly once;
    // grown on demand and reused across samples (each sample gets a fresh queue).
    let mut pool: Arc<Vec<Arc<str>>> = Arc::new(Vec::new());
    let mut g = c.benchmark_group("two_producers_two_workers");
    g.throughput(Throughput::Elements(1));
    g.bench_function("arc_str", |b| {
        b.iter_custom(|iters| {
            let n = iters as usize;
            if pool.len() < n {
                let have = pool.len();
                Arc::get_mut(&mut pool)
                    .expect("no task holds the pool between samples")
                    .extend(arc_keys("name", have..n));
            }
            let queue: Queue<Arc<str>> = Queue::new();
            rt.block_on(async {
                let start = Instant::now();
                let workers: Vec<_> = (0..2)
                    .map(|_| {
                        let queue = queue.clone();
                        tokio::spawn(async move {
                            let mut processed = 0u64;
                            while let Some(item) = queue.get().await {
                                black_box(&*item);
                                item.done();
                                processed += 1;
                            }
                            processed
                        })
                    })
                    .collect();
                let producers: Vec<_> = [0..n / 2, n / 2..n]
                    .into_iter()
                    .map(|range| {
                        let queue = queue.clone();
                        let pool = Arc::clone(&pool);
                        tokio::spawn(async move {
                            for (j, k) in pool[range].iter().enumerate() {
                                queue.add(k);
                                if j % YIELD_EVERY == YIELD_EVERY - 1 {
                                    tokio::task::yield_now().await;
                                }
                            }
                        })
                    })
                    .collect();
                for p in producers {
                    p.await.expect("producer");
                }
                queue.shut_down();
                let mut processed = 0;
                for w in workers {
                    processed += w.await.expect("worker");
                }
                let elapsed = start.elapsed();
                assert_eq!(processed, iters, "every distinct key is processed once");
                elapsed
            })
        });
    });
    g.finish();
}

fn add_after_100k_pending(c: &mut Criterion) {
    let rt = current_thread();
    let pending_keys = arc_keys("pending", 0..PENDING);
    let pending_delays = delays(PENDING, 7919);
    let new_keys = arc_keys("name", 0..ADD_AFTER_RUN);
    let new_delays = delays(ADD_AFTER_RUN, 104_729);
    let prefilled = || {
        let queue: DelayingQueue<Arc<str>> = DelayingQueue::new();
        for (k, d) in pending_keys.iter().zip(&pending_delays) {
            queue.add_after(k.clone(), *d);
        }
        queue
    };
    let mut g = c.benchmark_group("add_after_100k_pending");
    g.throughput(Throughput::Elements(1));

    g.bench_function("new_item", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let run = left.min(ADD_AFTER_RUN);
                    let queue = prefilled();
                    let start = Instant::now();
                    for (k, d) in new_keys[..run].iter().zip(&new_delays) {
                        queue.add_after(k, *d);
                    }
                    total += start.elapsed();
                    queue.shut_down();
                    drop(queue);
                    // Let the queue's timer task see the shutdown and free the set.
                    tokio::task::yield_now().await;
                    left -= run;
                }
                total
            })
        });
    });

    g.bench_function("readd_waiting", |b| {
        let queue = rt.block_on(async { prefilled() });
        let later: Vec<Duration> = pending_delays
            .iter()
            .map(|d| *d + Duration::from_secs(3600))
            .collect();
        b.iter_custom(|iters| {
            let start = Instant::now();
            for i in 0..iters as usize {
                let j = i % PENDING;
                queue.add_after(&pending_keys[j], later[j]);
            }
            start.elapsed()
        });
        assert_eq!(queue.waiting_len(), PENDING);
        rt.block_on(async {
            queue.shut_down();
            tokio::task::yield_now().await;
        });
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = single_worker, dedup_heavy, two_producers_two_workers, add_after_100k_pending
}
criterion_main!(benches);
