//! Runs one workqueue benchmark scenario a fixed number of times, for instruction
//! counting under `valgrind --tool=callgrind` (deterministic, unlike wall-clock time
//! on a shared machine).
//!
//! ```sh
//! cargo build --profile bench -p kcr-workqueue --example cycle_cost
//! valgrind --tool=callgrind target/release/examples/cycle_cost single 100000
//! ```
//!
//! The scenarios are those of `benches/workqueue.rs` (same keys, same operations):
//! `single`, `string`, `rate_limited`, `dedup` (n adds), `add_after_new` (n at most
//! 50,000), `readd_waiting`, `two_by_two` (n keys); plus `single_try` (`try_get`
//! instead of `get().await`), `loop_only` (the loop without the queue), `contended`
//! (8 threads, 4 producers, 8 workers) and `rmw_floor` (only the atomic
//! read-modify-writes of a `single` cycle: the floor under it). The setup (keys, runtime,
//! pre-filled queues) is counted too, so run a scenario with two counts and divide
//! the difference of the totals by the difference of the counts: that is the cost
//! of one operation.
//!
//! `WQ_ADD=ref` adds by reference, `add(&key)` / `add_after(&key, ..)`, instead of by value,
//! `add(key.clone())` / `add_after(key.clone(), ..)`.
//!
//! With a third argument `min`, a scenario instead times many short runs of `n`
//! operations and prints the fastest run's nanoseconds per operation (the
//! multi-threaded ones also the median run): on a loaded machine the fastest of many
//! short runs is one that was not preempted, which makes A/B comparisons far steadier
//! than a mean or a median.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::runtime::Builder;
use workqueue::{DelayingQueue, Queue, RateLimitingQueue, default_controller_rate_limiter};

fn keys(prefix: &str, n: usize) -> Vec<Arc<str>> {
    (0..n)
        .map(|i| Arc::from(format!("ns-{}/{prefix}-{i}", i % 100)))
        .collect()
}

fn delays(n: usize, mult: usize) -> Vec<Duration> {
    (0..n)
        .map(|i| Duration::from_secs(3600) + Duration::from_millis(((i * mult) % 3_600_000) as u64))
        .collect()
}

/// Runs `run` once, or, in `min` mode, 2,000 times and prints the fastest run's
/// nanoseconds per operation (`n` operations per run).
async fn repeat(min_mode: bool, n: usize, run: &mut impl AsyncFnMut()) {
    if !min_mode {
        run().await;
        return;
    }
    let mut best = f64::MAX;
    for _ in 0..2_000 {
        let start = Instant::now();
        run().await;
        best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
    }
    println!("{best:.1} ns/op");
}

/// `two_producers_two_workers`: `n` distinct keys added by 2 producer tasks (each
/// yielding every 64 adds) and processed by 2 worker tasks on a 2-thread runtime,
/// until shutdown and drain; `runs` times, printing the fastest and the median run
/// in ns per key.
fn two_by_two(n: usize, runs: usize) {
    many_by_many(n, runs, 2, 2, 2);
}

/// `WQ_ADD=ref`: add with `add(&key)` instead of `add(key.clone())`.
fn by_ref() -> bool {
    std::env::var("WQ_ADD").is_ok_and(|v| v == "ref")
}

/// [`two_by_two`] with `threads` runtime threads, `producers` producer tasks and
/// `workers` worker tasks: `contended` runs 8 threads, 4 producers and 8 workers on
/// whatever cores there are, to see the locks under oversubscription.
fn many_by_many(n: usize, runs: usize, threads: usize, producers: usize, workers: usize) {
    let rt = Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("runtime");
    let pool: Arc<Vec<Arc<str>>> = Arc::new(keys("name", n));
    let by_ref = by_ref();
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let queue: Queue<Arc<str>> = Queue::new();
        let pool = Arc::clone(&pool);
        let elapsed = rt.block_on(async move {
            let start = Instant::now();
            let workers: Vec<_> = (0..workers)
                .map(|_| {
                    let queue = queue.clone();
                    tokio::spawn(async move {
                        let mut processed = 0usize;
                        while let Some(item) = queue.get().await {
                            black_box(&*item);
                            item.done();
                            processed += 1;
                        }
                        processed
                    })
                })
                .collect();
            let producers: Vec<_> = (0..producers)
                .map(|p| p * n / producers..(p + 1) * n / producers)
                .map(|range| {
                    let queue = queue.clone();
                    let pool = Arc::clone(&pool);
                    tokio::spawn(async move {
                        for (j, k) in pool[range].iter().enumerate() {
                            if by_ref {
                                queue.add(k);
                            } else {
                                queue.add(k.clone());
                            }
                            if j % 64 == 63 {
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
            assert_eq!(processed, n);
            start.elapsed()
        });
        times.push(elapsed.as_nanos() as f64 / n as f64);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{:.1} ns/op (median {:.1})",
        times[0],
        times[times.len() / 2]
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_else(|| "single".into());
    let n: usize = args.next().map_or(100_000, |s| s.parse().expect("a count"));
    let min_mode = args.next().as_deref() == Some("min");
    let by_ref = by_ref();
    if scenario == "two_by_two" {
        two_by_two(n, if min_mode { 200 } else { 1 });
        return;
    }
    if scenario == "contended" {
        many_by_many(n, if min_mode { 100 } else { 1 }, 8, 4, 8);
        return;
    }
    let rt = Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        match scenario.as_str() {
            "single" => {
                let keys = keys("name", 10_000);
                let queue: Queue<Arc<str>> = Queue::new();
                let mut i = 0;
                let mut run = async || {
                    for _ in 0..n {
                        if by_ref {
                            queue.add(&keys[i % keys.len()]);
                        } else {
                            queue.add(keys[i % keys.len()].clone());
                        }
                        let item = queue.get().await.expect("not shut down");
                        black_box(&*item);
                        item.done();
                        i += 1;
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "single_try" => {
                // `single` with the synchronous `try_get`: the difference is what the
                // `get().await` future costs.
                let keys = keys("name", 10_000);
                let queue: Queue<Arc<str>> = Queue::new();
                let mut i = 0;
                let mut run = async || {
                    for _ in 0..n {
                        queue.add(&keys[i % keys.len()]);
                        let item = queue.try_get().expect("queued");
                        black_box(&*item);
                        item.done();
                        i += 1;
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "loop_only" => {
                // The loop around the queue calls, without the queue: the harness's
                // own cost per cycle.
                let keys = keys("name", 10_000);
                let mut i = 0;
                let mut run = async || {
                    for _ in 0..n {
                        black_box(&keys[i % keys.len()]);
                        i += 1;
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "rmw_floor" => {
                // What the single-worker cycle's atomic read-modify-writes cost with
                // nothing around them: three lock acquisitions (a compare-exchange,
                // released with a plain store, as `spin_lock` does) and the key's two
                // reference-count updates (the queue's clone in `add`, its drop in
                // `done`). No lock-based queue that stores `Arc<str>` keys makes a
                // `single` cycle cheaper than this on the machine it runs on.
                let keys = keys("name", 10_000);
                let lock = AtomicBool::new(false);
                let mut i = 0;
                let mut run = async || {
                    for _ in 0..n {
                        for _ in 0..3 {
                            let lock = black_box(&lock);
                            while lock
                                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                                .is_err()
                            {}
                            lock.store(false, Ordering::Release);
                        }
                        let key = Arc::clone(&keys[i % keys.len()]);
                        black_box(&key);
                        drop(key);
                        i += 1;
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "string" => {
                let keys: Vec<String> =
                    keys("name", 10_000).iter().map(|k| k.to_string()).collect();
                let queue: Queue<String> = Queue::new();
                let mut i = 0;
                let mut run = async || {
                    for _ in 0..n {
                        if by_ref {
                            queue.add(&keys[i % keys.len()]);
                        } else {
                            queue.add(keys[i % keys.len()].clone());
                        }
                        let item = queue.get().await.expect("not shut down");
                        black_box(&*item);
                        item.done();
                        i += 1;
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "rate_limited" => {
                let keys = keys("name", 10_000);
                let queue: RateLimitingQueue<Arc<str>> =
                    RateLimitingQueue::new(default_controller_rate_limiter());
                let mut i = 0;
                let mut run = async || {
                    for _ in 0..n {
                        if by_ref {
                            queue.add(&keys[i % keys.len()]);
                        } else {
                            queue.add(keys[i % keys.len()].clone());
                        }
                        let item = queue.get().await.expect("not shut down");
                        queue.forget(&item);
                        item.done();
                        i += 1;
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "dedup" => {
                // n adds: n / 10,000 batches of 10 adds per key over 1,000 keys.
                let keys = keys("name", 1_000);
                let queue: Queue<Arc<str>> = Queue::new();
                let mut run = async || {
                    for _ in 0..n / 10_000 {
                        for _ in 0..10 {
                            for k in &keys {
                                if by_ref {
                                    queue.add(k);
                                } else {
                                    queue.add(k.clone());
                                }
                            }
                        }
                        for _ in 0..keys.len() {
                            let item = queue.get().await.expect("not shut down");
                            black_box(&*item);
                            item.done();
                        }
                    }
                };
                repeat(min_mode, n, &mut run).await;
            }
            "add_after_new" | "readd_waiting" => {
                let pending = keys("pending", 100_000);
                let pending_delays = delays(100_000, 7919);
                // Built for the largest count, so the setup does not depend on n.
                let new_keys = keys("name", 50_000);
                let new_delays = delays(50_000, 104_729);
                let mut best = f64::MAX;
                // In `min` mode: 20 fresh pre-filled queues, the fastest timed run.
                for _ in 0..if min_mode { 20 } else { 1 } {
                    let queue: DelayingQueue<Arc<str>> = DelayingQueue::new();
                    for (k, d) in pending.iter().zip(&pending_delays) {
                        queue.add_after(k.clone(), *d);
                    }
                    let start = Instant::now();
                    if scenario == "add_after_new" {
                        for (k, d) in new_keys.iter().zip(&new_delays).take(n) {
                            if by_ref {
                                queue.add_after(k, *d);
                            } else {
                                queue.add_after(k.clone(), *d);
                            }
                        }
                    } else {
                        for i in 0..n {
                            let j = i % pending.len();
                            let later = pending_delays[j] + Duration::from_secs(3600);
                            if by_ref {
                                queue.add_after(&pending[j], later);
                            } else {
                                queue.add_after(pending[j].clone(), later);
                            }
                        }
                    }
                    best = best.min(start.elapsed().as_nanos() as f64 / n as f64);
                    queue.shut_down();
                    tokio::task::yield_now().await;
                }
                if min_mode {
                    println!("{best:.1} ns/op");
                }
            }
            other => panic!("unknown scenario {other}"),
        }
    });
}
