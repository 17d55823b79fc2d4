//! The rate-limiting queue: `add_rate_limited` = `add_after(item, when(item))`.

use std::time::Duration;

use tokio::time::Instant;
use workqueue::{ItemExponentialFailureRateLimiter, RateLimitingQueue};

const MS: Duration = Duration::from_millis(1);

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_for_the_limiter_delay() {
    let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        10 * MS,
        Duration::from_secs(1),
    ));
    let start = Instant::now();
    q.add_rate_limited("a");
    assert_eq!(q.len(), 0);
    assert_eq!(q.num_requeues(&"a"), 1);
    let item = q.get().await.unwrap();
    assert_eq!(start.elapsed(), 10 * MS);
    item.done();

    // Second failure: 20 ms.
    let start = Instant::now();
    q.add_rate_limited("a");
    q.get().await.unwrap().done();
    assert_eq!(start.elapsed(), 20 * MS);
    assert_eq!(q.num_requeues(&"a"), 2);

    // Success: forget resets the backoff.
    q.forget(&"a");
    assert_eq!(q.num_requeues(&"a"), 0);
    let start = Instant::now();
    q.add_rate_limited("a");
    q.get().await.unwrap().done();
    assert_eq!(start.elapsed(), 10 * MS);
}

#[tokio::test(start_paused = true)]
async fn retry_while_processing_runs_after_done() {
    let q = RateLimitingQueue::with_default_rate_limiter("retry");
    q.add("a".to_string());
    let item = q.get().await.unwrap();
    q.add_rate_limited(item.clone()); // failure: retry in 5 ms
    tokio::time::sleep(50 * MS).await;
    assert_eq!(q.len(), 0, "ready but still held by the worker");
    item.done();
    assert_eq!(q.len(), 1, "back in line once done");
}

#[tokio::test(start_paused = true)]
async fn shutdown_ignores_rate_limited_adds() {
    let q = RateLimitingQueue::with_default_rate_limiter("shut");
    q.shut_down();
    q.add_rate_limited(1u32);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(q.get().await.is_none());
}
