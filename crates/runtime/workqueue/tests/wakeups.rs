//! No lost wake-up: an item added while workers wait is always handed to one of them,
//! without the help of a shutdown (which wakes everyone and would hide a lost one).
//!
//! Four workers on four threads, some of which abandon their `get` after a random
//! short time (cancellation), and a producer that adds small bursts and then waits,
//! with a deadline, until every item added so far was processed. A lost wake-up
//! leaves an item in line next to sleeping workers and trips the deadline.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use workqueue::Queue;

const ROUNDS: usize = 3_000;
const WORKERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn items_added_while_workers_wait_are_always_picked_up() {
    let q = Queue::<usize>::new();
    let processed = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (q, processed) = (q.clone(), Arc::clone(&processed));
            tokio::spawn(async move {
                let mut rng = SmallRng::seed_from_u64(w as u64);
                loop {
                    // Half of the workers sometimes give up waiting and try again.
                    let item = if w % 2 == 0 && rng.random_bool(0.5) {
                        let wait = Duration::from_micros(rng.random_range(1..50));
                        match tokio::time::timeout(wait, q.get()).await {
                            Ok(item) => item,
                            Err(_) => continue,
                        }
                    } else {
                        q.get().await
                    };
                    let Some(item) = item else { return };
                    if rng.random_bool(0.2) {
                        tokio::task::yield_now().await;
                    }
                    processed.fetch_add(1, SeqCst);
                    item.done();
                }
            })
        })
        .collect();

    let mut rng = SmallRng::seed_from_u64(99);
    let mut added = 0;
    for round in 0..ROUNDS {
        for _ in 0..rng.random_range(1..=8) {
            q.add(added);
            added += 1;
        }
        if rng.random_bool(0.5) {
            tokio::task::yield_now().await;
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while processed.load(SeqCst) < added {
            assert!(
                tokio::time::Instant::now() < deadline,
                "round {round}: {} of {added} items processed, {} in line: a wake-up was lost",
                processed.load(SeqCst),
                q.len()
            );
            tokio::task::yield_now().await;
        }
    }
    q.shut_down();
    for w in workers {
        w.await.unwrap();
    }
    assert_eq!(processed.load(SeqCst), added);
}
