//! Priorities (controller-runtime's priority queue, priorityqueue_test.go territory) on
//! top of client-go's rules, with paused Tokio time where delays are involved.

use std::time::Duration;

use tokio::time::{Instant, advance};
use workqueue::priority::{DEFAULT, LOW};
use workqueue::{AddOpts, ItemExponentialFailureRateLimiter, ItemState, Queue, RateLimitingQueue};

const MS: Duration = Duration::from_millis(1);

/// The queue under test: priorities are given with `RateLimitingQueue::add_with_opts`
/// (controller-runtime's `AddWithOpts`); backoff 10 ms, 20 ms, ... Needs a runtime.
/// Without the starvation bound, so that the expectations are controller-runtime's
/// strict order (the bound's own tests are in src/queue/starvation_tests.rs; the
/// last test here shows what it changes).
fn new_queue<T: workqueue::Item>() -> RateLimitingQueue<T> {
    RateLimitingQueue::with_config(
        ItemExponentialFailureRateLimiter::new(10 * MS, Duration::from_secs(1)),
        workqueue::QueueConfig::default().with_starvation_bound(None),
    )
}

/// `AddOpts` for an add at `priority`, now.
fn at(priority: i32) -> AddOpts {
    AddOpts {
        priority,
        ..AddOpts::default()
    }
}

/// `AddOpts` for an add at `priority` once `after` has passed.
fn after_at(after: Duration, priority: i32) -> AddOpts {
    AddOpts {
        after,
        priority,
        ..AddOpts::default()
    }
}

/// `AddOpts` for a retry with backoff at `priority`.
fn rate_limited_at(priority: i32) -> AddOpts {
    AddOpts {
        rate_limited: true,
        priority,
        ..AddOpts::default()
    }
}

/// Takes everything in line, as `(item, priority)`, marking each done.
fn drain<T: workqueue::Item>(q: &Queue<T>) -> Vec<(T, i32)> {
    std::iter::from_fn(|| {
        let item = q.try_get()?;
        Some(((*item).clone(), item.priority()))
    })
    .collect()
}

/// Lets the delaying queue's timer task run after time moved.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn higher_priority_is_handed_out_first() {
    let q = new_queue();
    q.add_with_opts("listed", at(LOW));
    q.add("changed");
    q.add_with_opts("urgent", at(5));
    q.add_with_opts("other-listed", at(LOW));
    q.add("changed-too");
    assert_eq!(q.len(), 5);
    assert_eq!(
        drain(q.queue()),
        [
            ("urgent", 5),
            ("changed", DEFAULT),
            ("changed-too", DEFAULT),
            ("listed", LOW),
            ("other-listed", LOW),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn fifo_within_each_priority() {
    let q = new_queue();
    // Interleaved adds at three priorities.
    for i in 0..30u32 {
        q.add_with_opts(i, at([LOW, DEFAULT, 7][i as usize % 3]));
    }
    let got = drain(q.queue());
    let expected: Vec<(u32, i32)> = [7, DEFAULT, LOW]
        .into_iter()
        .flat_map(|p| {
            (0..30u32)
                .filter(move |i| [LOW, DEFAULT, 7][*i as usize % 3] == p)
                .map(move |i| (i, p))
        })
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test(start_paused = true)]
async fn re_add_at_a_higher_priority_moves_to_the_end_of_its_new_line() {
    // controller-runtime: "gets pushed to the front if the priority increases".
    let q = new_queue();
    for k in ["foo", "bar", "baz"] {
        q.add(k);
    }
    q.add_with_opts("baz", at(1));
    assert_eq!(q.len(), 3, "moved, not duplicated");
    assert_eq!(drain(q.queue()), [("baz", 1), ("foo", 0), ("bar", 0)]);

    // controller-runtime: "follows FIFO order in the new priority queue when item
    // priority changes": behind the items already at the new priority.
    q.add_with_opts("foo", at(0));
    q.add_with_opts("bar", at(1));
    q.add_with_opts("foo", at(1));
    assert_eq!(q.len(), 2);
    assert_eq!(drain(q.queue()), [("bar", 1), ("foo", 1)]);

    // Raised twice: the place in line is the one of the last raise.
    for k in ["a", "b", "c"] {
        q.add_with_opts(k, at(LOW));
    }
    q.add_with_opts("a", at(DEFAULT));
    q.add_with_opts("b", at(DEFAULT));
    q.add_with_opts("a", at(3));
    q.add_with_opts("c", at(3));
    assert_eq!(q.len(), 3);
    assert_eq!(drain(q.queue()), [("a", 3), ("c", 3), ("b", DEFAULT)]);
}

#[tokio::test(start_paused = true)]
async fn re_add_at_the_same_or_a_lower_priority_is_a_no_op() {
    // controller-runtime: "will not decrease the priority", "de-duplicates items".
    let q = new_queue();
    q.add_with_opts("a", at(5));
    q.add_with_opts("b", at(5));
    q.add_with_opts("a", at(5)); // same: keeps its place
    q.add("a"); // lower
    q.add_with_opts("a", at(LOW)); // lower
    assert_eq!(q.len(), 2);
    assert_eq!(q.state_of(&"a"), Some(ItemState::Queued));
    assert_eq!(drain(q.queue()), [("a", 5), ("b", 5)]);
}

#[tokio::test(start_paused = true)]
async fn add_while_processing_requeues_at_the_highest_priority_added_meanwhile() {
    let q = new_queue();
    q.add("a");
    let a = q.try_get().unwrap();
    assert_eq!(a.priority(), DEFAULT);
    q.add_with_opts("a", at(LOW));
    assert_eq!(q.state_of(&"a"), Some(ItemState::ProcessingDirty));
    q.add_with_opts("a", at(7));
    q.add_with_opts("a", at(3));
    q.add_with_opts("b", at(5));
    assert_eq!(
        q.len(),
        1,
        "a held item is not in line, whatever its priority"
    );
    let b = q.try_get().unwrap();
    assert_eq!((*b, b.priority()), ("b", 5));
    q.add_with_opts("b", at(6));
    assert!(q.try_get().is_none(), "both are held");
    a.done();
    assert_eq!(drain(q.queue()), [("a", 7)]);
    b.done();
    assert_eq!(drain(q.queue()), [("b", 6)]);

    // Re-added only at a low priority: back in line behind the default ones.
    q.add("x");
    let x = q.try_get().unwrap();
    q.add_with_opts("x", at(LOW));
    q.add("y");
    x.done();
    assert_eq!(drain(q.queue()), [("y", DEFAULT), ("x", LOW)]);
}

#[tokio::test(start_paused = true)]
async fn explicit_done_requeues_at_the_re_add_priority() {
    let q = new_queue();
    q.add("a");
    let a = q.try_get().unwrap().into_inner();
    q.add_with_opts(a, at(9));
    q.add("b");
    q.done(&a);
    assert_eq!(drain(q.queue()), [("a", 9), ("b", DEFAULT)]);
}

#[tokio::test(start_paused = true)]
async fn len_is_exact_with_stale_places_in_line() {
    let q = new_queue();
    for i in 0..10u32 {
        q.add_with_opts(i, at(LOW));
    }
    for i in 0..5 {
        q.add(i); // raised: a stale place is left in the low line
    }
    for i in 0..3 {
        q.add_with_opts(i, at(10)); // raised again
    }
    assert_eq!(q.len(), 10);
    let mut seen = Vec::new();
    for remaining in (0..10).rev() {
        let item = q.try_get().unwrap();
        seen.push((*item, item.priority()));
        assert_eq!(q.len(), remaining);
    }
    assert!(q.try_get().is_none());
    assert_eq!(q.len(), 0);
    let expected: Vec<(u32, i32)> = (0..3)
        .map(|i| (i, 10))
        .chain((3..5).map(|i| (i, DEFAULT)))
        .chain((5..10).map(|i| (i, LOW)))
        .collect();
    assert_eq!(seen, expected, "each item once, by priority");
}

#[tokio::test(start_paused = true)]
async fn a_freed_and_reused_slot_is_not_taken_for_its_stale_place() {
    let q = new_queue();
    q.add_with_opts("a", at(LOW));
    q.add_with_opts("b", at(LOW));
    q.add("a"); // raised: "a"'s first place, ahead of "b", is stale
    let a = q.try_get().unwrap();
    assert_eq!((*a, a.priority()), ("a", DEFAULT));
    a.done(); // "a" is forgotten, its slot freed

    // The same item again, then another item, most likely in the freed slot: both
    // must line up behind "b", not at the stale place ahead of it.
    q.add_with_opts("a", at(LOW));
    assert_eq!(q.len(), 2);
    assert_eq!(drain(q.queue()), [("b", LOW), ("a", LOW)]);

    q.add_with_opts("c", at(LOW));
    q.add_with_opts("d", at(LOW));
    q.add("c");
    q.try_get().unwrap().done(); // "c" at DEFAULT, freed
    q.add_with_opts("e", at(LOW)); // a new item, in "c"'s old slot
    q.add_with_opts("c", at(LOW));
    assert_eq!(q.len(), 3);
    assert_eq!(drain(q.queue()), [("d", LOW), ("e", LOW), ("c", LOW)]);

    // A stale place in the default line, and a slot reused at the default priority.
    q.add("p");
    q.add("q");
    q.add_with_opts("p", at(5));
    q.try_get().unwrap().done(); // "p" at 5, freed
    q.add("r");
    q.add("p");
    assert_eq!(
        drain(q.queue()),
        [("q", DEFAULT), ("r", DEFAULT), ("p", DEFAULT)]
    );
    assert!(q.is_empty());
}

#[tokio::test(start_paused = true)]
async fn work_items_tell_their_priority() {
    let q = new_queue();
    q.add_with_opts("a".to_string(), at(3));
    q.add_with_opts("b".to_string(), at(LOW));
    let a = q.get_owned().await.unwrap();
    assert_eq!((a.as_str(), a.priority()), ("a", 3));
    let b = q.get().await.unwrap();
    assert_eq!((b.as_str(), b.priority()), ("b", LOW));
    let b = b.into_owned();
    assert_eq!(b.priority(), LOW);
}

#[tokio::test(start_paused = true)]
async fn shut_down_hands_out_what_is_in_line_by_priority_then_none() {
    let q = new_queue();
    q.add_with_opts(1, at(LOW));
    q.add(2);
    q.add_with_opts(3, at(4));
    q.shut_down();
    q.add_with_opts(4, at(100)); // ignored
    q.add_with_opts(1, at(100)); // ignored: no raise after shutdown
    let mut got = Vec::new();
    while let Some(item) = q.get().await {
        got.push((*item, item.priority()));
    }
    assert_eq!(got, [(3, 4), (2, DEFAULT), (1, LOW)]);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_waits_for_a_held_item_whatever_its_priority() {
    let q = new_queue();
    q.add_with_opts("a", at(LOW));
    let a = q.get_owned().await.unwrap();
    q.add_with_opts("a", at(9)); // dirty while held: dropped by the shutdown
    let drained = tokio::spawn({
        let q = q.clone();
        async move {
            q.shut_down_with_drain().await;
            Instant::now()
        }
    });
    advance(Duration::from_secs(1)).await;
    settle().await;
    assert!(!drained.is_finished());
    let done_at = Instant::now();
    drop(a);
    assert_eq!(drained.await.unwrap(), done_at);
    // Client-go: the item re-added while it was held is still handed out.
    let again = q.get().await.unwrap();
    assert_eq!((*again, again.priority()), ("a", 9));
}

#[tokio::test(start_paused = true)]
async fn add_after_keeps_the_earliest_time_and_the_highest_priority() {
    let q = new_queue();
    q.add_after("a", 100 * MS); // client-go's verb: DEFAULT
    q.add_with_opts("a", after_at(300 * MS, 5)); // later: only the priority counts
    q.add_with_opts("b", after_at(50 * MS, 7));
    q.add_with_opts("b", after_at(20 * MS, LOW)); // earlier: keeps priority 7
    assert_eq!(q.waiting_len(), 2);
    q.add("c");

    advance(20 * MS).await;
    settle().await;
    assert_eq!(q.len(), 2);
    advance(80 * MS).await;
    settle().await;
    assert_eq!(q.len(), 3);
    assert_eq!(q.waiting_len(), 0);
    assert_eq!(drain(q.queue()), [("b", 7), ("a", 5), ("c", DEFAULT)]);

    advance(Duration::from_secs(1)).await;
    settle().await;
    assert!(q.is_empty(), "the later request was merged, not kept");
}

#[tokio::test(start_paused = true)]
async fn delayed_items_line_up_by_when_they_became_ready() {
    // controller-runtime: TestHighPriorityItemThatBecameReadyIsReturnedBeforeLowPriorityItem.
    let q = new_queue();
    q.add_with_opts("low", at(LOW));
    q.add_with_opts("high", after_at(10 * MS, 10));
    q.add_after("later", 30 * MS);
    q.add_after("sooner", 20 * MS);
    q.add("now");
    advance(30 * MS).await;
    settle().await;
    assert_eq!(
        drain(q.queue()),
        [
            ("high", 10),
            ("now", DEFAULT),
            ("sooner", DEFAULT),
            ("later", DEFAULT),
            ("low", LOW),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_due_item_raises_its_queued_copy() {
    // The delaying set is client-go's: separate from the line. A queued item stays at
    // its priority until its delayed add is due, which then raises it.
    let q = new_queue();
    q.add_with_opts("a", at(LOW));
    q.add("b");
    q.add_with_opts("a", after_at(10 * MS, 5));
    assert_eq!(q.len(), 2);
    advance(10 * MS).await;
    settle().await;
    assert_eq!(q.len(), 2);
    assert_eq!(drain(q.queue()), [("a", 5), ("b", DEFAULT)]);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_with_a_priority() {
    let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        10 * MS,
        Duration::from_secs(1),
    ));
    q.add_with_opts("listed", at(LOW));
    let start = Instant::now();
    q.add_with_opts("failed", rate_limited_at(5));
    q.add_rate_limited("other"); // client-go's verb: DEFAULT
    assert_eq!((q.len(), q.waiting_len()), (1, 2));
    assert_eq!(q.num_requeues(&"failed"), 1);

    // Wait for the retries: a worker that only sees "listed" would get it first.
    tokio::time::sleep(10 * MS).await;
    settle().await;
    assert_eq!(start.elapsed(), 10 * MS);
    assert_eq!(
        drain(q.queue()),
        [("failed", 5), ("other", DEFAULT), ("listed", LOW)]
    );
}

#[tokio::test(start_paused = true)]
async fn add_with_opts_is_controller_runtimes_add_with_opts() {
    let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        10 * MS,
        Duration::from_secs(1),
    ));
    // The default: a plain add at priority 0.
    q.add_with_opts("plain", AddOpts::default());
    assert_eq!((q.len(), q.waiting_len()), (1, 0));
    assert_eq!(q.num_requeues(&"plain"), 0);

    // Priority only.
    let low = AddOpts {
        priority: LOW,
        ..AddOpts::default()
    };
    q.add_with_opts("listed", low);
    assert_eq!(drain(q.queue()), [("plain", DEFAULT), ("listed", LOW)]);

    // After: waits, then at its priority.
    let later = AddOpts {
        after: 50 * MS,
        priority: 3,
        ..AddOpts::default()
    };
    q.add_with_opts("later", later);
    assert_eq!((q.len(), q.waiting_len()), (0, 1));

    // Rate limited, with a longer after: the backoff (10 ms) wins.
    let retry = AddOpts {
        after: 40 * MS,
        rate_limited: true,
        priority: 2,
    };
    q.add_with_opts("retry", retry);
    assert_eq!(q.num_requeues(&"retry"), 1);
    // Rate limited, with a shorter after: the after (5 ms) wins over the backoff.
    q.add_with_opts("busy", AddOpts { after: MS, ..retry });
    q.add_with_opts("busy", AddOpts { after: MS, ..retry }); // backoff now 20 ms
    assert_eq!(q.num_requeues(&"busy"), 2);

    let start = Instant::now();
    let first = q.get().await.unwrap();
    assert_eq!((*first, first.priority(), start.elapsed()), ("busy", 2, MS));
    first.done();
    let second = q.get().await.unwrap();
    assert_eq!(
        (*second, second.priority(), start.elapsed()),
        ("retry", 2, 10 * MS)
    );
    second.done();
    let third = q.get().await.unwrap();
    assert_eq!(
        (*third, third.priority(), start.elapsed()),
        ("later", 3, 50 * MS)
    );
}

#[tokio::test(start_paused = true)]
async fn a_fifo_queue_hears_every_priority_as_zero() {
    // `QueueConfig::with_fifo(true)`: client-go's single FIFO, even for code that
    // passes priorities (the controllers' `--fifo-queue`).
    let q = RateLimitingQueue::with_config(
        ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)),
        workqueue::QueueConfig::default().with_fifo(true),
    );
    q.add_with_opts("listed", at(LOW));
    q.add("changed");
    q.add_with_opts("urgent", at(5));
    q.add_with_opts("later", after_at(MS, 7));
    advance(2 * MS).await;
    settle().await;
    assert_eq!(
        drain(q.queue()),
        [
            ("listed", DEFAULT),
            ("changed", DEFAULT),
            ("urgent", DEFAULT),
            ("later", DEFAULT)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn with_the_default_bound_a_burst_of_higher_items_lets_one_lower_item_through() {
    // The same interleaved adds as `fifo_within_each_priority`, on a queue with the
    // default starvation bound (10): the ten items at 7 pass over the rest ten times,
    // so the eleventh hand-out goes to the longest-waiting item below the top lane
    // (0, at LOW), then the default items, then the other LOW ones.
    let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        10 * MS,
        Duration::from_secs(1),
    ));
    for i in 0..30u32 {
        q.add_with_opts(i, at([LOW, DEFAULT, 7][i as usize % 3]));
    }
    let got: Vec<u32> = drain(q.queue()).into_iter().map(|(i, _)| i).collect();
    let sevens = (0..30).filter(|i| i % 3 == 2);
    let defaults: Vec<u32> = (0..30).filter(|i| i % 3 == 1).collect();
    let lows = (3..30).filter(|i| i % 3 == 0);
    let mut expected: Vec<u32> = sevens.collect();
    expected.push(0);
    // Then the defaults pass over the LOW items: every eleventh hand-out is one of
    // them, but there are only ten defaults.
    expected.extend(&defaults);
    expected.extend(lows);
    assert_eq!(got, expected);
}
