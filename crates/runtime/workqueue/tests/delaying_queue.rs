//! `add_after` rules, with paused Tokio time: every timing is exact.

use std::time::Duration;

use tokio::time::{Instant, advance, sleep};
use workqueue::DelayingQueue;

const MS: Duration = Duration::from_millis(1);

/// Lets the timer task run after time moved.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn item_becomes_ready_exactly_after_its_delay() {
    let q = DelayingQueue::new();
    q.add_after("a", 50 * MS);
    settle().await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.waiting_len(), 1);

    advance(49 * MS).await;
    settle().await;
    assert_eq!(q.len(), 0, "not ready 1 ms early");

    advance(MS).await;
    settle().await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_the_delay() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after("a", Duration::from_secs(30));
    let item = q.get().await.unwrap();
    assert_eq!(*item, "a");
    assert_eq!(start.elapsed(), Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let q = DelayingQueue::new();
    q.add_after("a", Duration::ZERO);
    assert_eq!(q.len(), 1, "no trip through the timer task");
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn waiting_item_keeps_the_earlier_ready_time() {
    let q = DelayingQueue::new();
    q.add_after("a", 100 * MS);
    q.add_after("a", 300 * MS); // later: ignored
    assert_eq!(q.waiting_len(), 1);
    advance(100 * MS).await;
    settle().await;
    assert_eq!(q.len(), 1, "ready at the earlier time");
    q.try_get().unwrap().done();

    advance(300 * MS).await;
    settle().await;
    assert_eq!(q.len(), 0, "the later request was dropped, not kept");
}

#[tokio::test(start_paused = true)]
async fn earlier_re_add_moves_the_item_forward() {
    let q = DelayingQueue::new();
    q.add_after("a", 500 * MS);
    q.add_after("a", 20 * MS);
    assert_eq!(q.waiting_len(), 1);
    advance(20 * MS).await;
    settle().await;
    assert_eq!(q.len(), 1);
    assert_eq!(q.waiting_len(), 0);
    q.try_get().unwrap().done();
    advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(q.len(), 0, "the old, later entry is gone");
}

#[tokio::test(start_paused = true)]
async fn items_come_out_in_ready_time_order() {
    let q = DelayingQueue::new();
    q.add_after("c", 30 * MS);
    q.add_after("a", 10 * MS);
    q.add_after("b", 20 * MS);
    let start = Instant::now();
    for (expected, at) in [("a", 10), ("b", 20), ("c", 30)] {
        let item = q.get().await.unwrap();
        assert_eq!(*item, expected);
        assert_eq!(start.elapsed(), at * MS);
    }
}

#[tokio::test(start_paused = true)]
async fn new_earlier_item_wakes_the_timer() {
    let q = DelayingQueue::new();
    q.add_after("late", Duration::from_secs(3600));
    settle().await; // the timer is now sleeping for an hour
    q.add_after("soon", 5 * MS);
    let start = Instant::now();
    let item = q.get().await.unwrap();
    assert_eq!(*item, "soon");
    assert_eq!(start.elapsed(), 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn ready_item_is_deduplicated_with_a_queued_one() {
    let q = DelayingQueue::new();
    q.add("a");
    q.add_after("a", 10 * MS);
    advance(10 * MS).await;
    settle().await;
    assert_eq!(q.len(), 1, "already queued: the delayed add is a no-op");
}

#[tokio::test(start_paused = true)]
async fn add_after_shutdown_is_ignored() {
    let q = DelayingQueue::new();
    q.shut_down();
    q.add_after("a", 10 * MS);
    q.add_after("b", Duration::ZERO);
    assert_eq!(q.waiting_len(), 0);
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_the_timer_and_drops_waiting_items() {
    let q = DelayingQueue::new();
    q.add_after("a", 10 * MS);
    q.shut_down();
    advance(20 * MS).await;
    settle().await;
    assert_eq!(q.len(), 0);
    assert!(q.get().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn huge_delay_does_not_overflow() {
    let q = DelayingQueue::new();
    q.add_after("never", Duration::MAX);
    q.add_after("soon", MS);
    let item = q.get().await.unwrap();
    assert_eq!(*item, "soon");
    assert_eq!(q.waiting_len(), 1);
}

#[tokio::test(start_paused = true)]
async fn many_pending_items_all_arrive_once() {
    let q = DelayingQueue::new();
    for i in 0..1000u64 {
        // Spread over 1 s, in reverse, with duplicates that must keep the earlier time.
        q.add_after(i, Duration::from_millis(1000 - i));
        q.add_after(i, Duration::from_millis(2000));
    }
    assert_eq!(q.waiting_len(), 1000);
    sleep(Duration::from_millis(1000)).await;
    settle().await;
    assert_eq!(q.len(), 1000);
    let mut seen = Vec::new();
    while let Some(item) = q.try_get() {
        seen.push(item.into_inner());
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 1000, "each item exactly once");
    assert_eq!(seen[0], 999, "the earliest ready item comes out first");
}

#[tokio::test(start_paused = true)]
async fn timer_task_ends_when_the_queue_is_dropped() {
    let q = DelayingQueue::<u8>::new();
    q.add_after(1, Duration::from_secs(10));
    settle().await;
    let tasks_before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    assert_eq!(
        tasks_before, 1,
        "one timer task for the queue, none per item"
    );
    drop(q);
    settle().await;
    assert_eq!(
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks(),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn moving_an_item_earlier_again_and_again_fires_it_once() {
    let q = DelayingQueue::new();
    // Each add_after moves "a" 1 ms earlier: every move leaves a stale timer entry.
    for i in 0..5_000u32 {
        q.add_after("a", Duration::from_secs(10) - i * MS);
        q.add_after("b", Duration::from_secs(20));
    }
    assert_eq!(q.waiting_len(), 2);
    let start = Instant::now();
    let first = q.get().await.unwrap();
    assert_eq!(*first, "a");
    assert_eq!(start.elapsed(), Duration::from_secs(10) - 4_999 * MS);
    first.done();
    let second = q.get().await.unwrap();
    assert_eq!(*second, "b", "the stale entries of 'a' never fire");
    assert_eq!(start.elapsed(), Duration::from_secs(20));
    second.done();
    advance(Duration::from_secs(60)).await;
    settle().await;
    assert!(q.is_empty());
    assert_eq!(q.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn items_due_at_the_same_time_come_out_in_add_order() {
    let q = DelayingQueue::new();
    for k in ["c", "a", "d", "b"] {
        q.add_after(k, 5 * MS);
    }
    advance(5 * MS).await;
    settle().await;
    let mut order = Vec::new();
    while let Some(item) = q.try_get() {
        order.push(item.into_inner());
    }
    assert_eq!(order, ["c", "a", "d", "b"]);
}
