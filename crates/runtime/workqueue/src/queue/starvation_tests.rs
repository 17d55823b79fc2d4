//! The starvation bound (the `lanes` module docs): lower priorities keep a share of
//! the hand-outs however busy the higher ones are, and nothing changes while no
//! higher item is in line.

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::time::Duration;

use tokio::time::Instant;

use crate::priority::{DEFAULT, LOW};
use crate::{AddOpts, Queue, QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

fn queue_with_bound(bound: Option<u32>) -> Queue<String> {
    Queue::with_config(
        QueueConfig::default().with_starvation_bound(bound.and_then(NonZeroU32::new)),
    )
}

/// Adds one new default-priority item before every hand-out (a stream the worker
/// never catches up with) and returns the first `n` items handed out.
fn hand_outs_under_a_stream(q: &Queue<String>, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            q.add_at(Cow::Owned(format!("d{i}")), DEFAULT);
            q.try_get().expect("an item").into_inner()
        })
        .collect()
}

#[test]
fn a_passed_over_item_gets_the_hand_out_after_the_bound() {
    let q = queue_with_bound(Some(3));
    for i in 0..3 {
        q.add_at(Cow::Owned(format!("l{i}")), LOW);
    }
    let order = hand_outs_under_a_stream(&q, 12);
    assert_eq!(
        order,
        [
            "d0", "d1", "d2", "l0", "d3", "d4", "d5", "l1", "d6", "d7", "d8", "l2"
        ],
    );
}

#[test]
fn without_a_bound_the_stream_starves_lower_items() {
    let q = queue_with_bound(None);
    q.add_at(Cow::Owned("l0".into()), LOW);
    let order = hand_outs_under_a_stream(&q, 1000);
    assert!(order.iter().all(|i| i.starts_with('d')), "{order:?}");
    assert_eq!(q.len(), 1, "l0 still waits");
}

#[test]
fn the_reserved_hand_out_goes_to_the_longest_waiting_lower_item() {
    let q = queue_with_bound(Some(1));
    // "older" got in line first, at the lowest priority; "newer" later, higher.
    q.add_at(Cow::Owned("older".into()), -100);
    q.add_at(Cow::Owned("newer".into()), -1);
    let order = hand_outs_under_a_stream(&q, 4);
    assert_eq!(order, ["d0", "older", "d1", "newer"]);
}

#[test]
fn items_above_the_default_pass_over_default_items_within_the_bound_too() {
    let q = queue_with_bound(Some(2));
    q.add_at(Cow::Owned("default".into()), DEFAULT);
    let order: Vec<String> = (0..4)
        .map(|i| {
            q.add_at(Cow::Owned(format!("high{i}")), 10);
            q.try_get().unwrap().into_inner()
        })
        .collect();
    assert_eq!(order, ["high0", "high1", "default", "high2"]);
}

#[test]
fn a_change_after_a_restart_still_goes_ahead_of_the_initial_list() {
    let q = queue_with_bound(Some(1));
    for i in 0..1000 {
        q.add_at(Cow::Owned(format!("listed-{i}")), LOW);
    }
    // The list is being worked through: no item is passed over, nothing counts.
    for i in 0..500 {
        assert_eq!(q.try_get().unwrap().into_inner(), format!("listed-{i}"));
    }
    q.add_at(Cow::Owned("changed".into()), DEFAULT);
    assert_eq!(q.try_get().unwrap().into_inner(), "changed");
}

#[test]
fn the_count_starts_again_once_nothing_waits_below() {
    let q = queue_with_bound(Some(2));
    q.add_at(Cow::Owned("low".into()), LOW);
    q.add_at(Cow::Owned("first".into()), DEFAULT);
    q.add_at(Cow::Owned("second".into()), DEFAULT);
    // Two passes over "low": the bound, not beyond it.
    assert_eq!(q.try_get().unwrap().into_inner(), "first");
    assert_eq!(q.try_get().unwrap().into_inner(), "second");
    assert_eq!(q.try_get().unwrap().into_inner(), "low");
    // A new episode: two passes again before a lower item's turn.
    q.add_at(Cow::Owned("low2".into()), LOW);
    let order = hand_outs_under_a_stream(&q, 4);
    assert_eq!(order, ["d0", "d1", "low2", "d2"]);
}

/// The bound in time: one worker taking 10 ms per item, default-priority events
/// arriving every 5 ms (twice what it can take) for 20 s, and 50 initial-list items
/// at `LOW` from the start. Each listed item is handed out within (k + 1)(N + 1)
/// hand-outs of the start (k: listed items ahead of it), and without the bound
/// none of them is.
#[tokio::test(start_paused = true)]
async fn the_bound_holds_under_a_synthetic_stream_in_paused_time() {
    const LISTED: usize = 50;
    const WORK: Duration = Duration::from_millis(10);
    for bound in [Some(crate::priority::STARVATION_BOUND), None] {
        let config = QueueConfig::default().with_starvation_bound(bound.and_then(NonZeroU32::new));
        let q = RateLimitingQueue::with_config(default_controller_rate_limiter(), config);
        let low = AddOpts {
            priority: LOW,
            ..AddOpts::default()
        };
        for i in 0..LISTED {
            q.add_with_opts(format!("listed-{i}"), low);
        }
        // The stream is already under way when the worker starts.
        q.add("event-0".to_string());
        let producer = {
            let q = q.clone();
            tokio::spawn(async move {
                for i in 1.. {
                    q.add(format!("event-{i}"));
                    tokio::time::sleep(WORK / 2).await;
                }
            })
        };
        let start = Instant::now();
        let mut waits = Vec::new();
        while start.elapsed() < Duration::from_secs(20) {
            let item = q.get().await.expect("not shut down");
            if item.starts_with("listed-") {
                waits.push(start.elapsed());
            }
            tokio::time::sleep(WORK).await;
            item.done();
        }
        producer.abort();
        match bound {
            Some(n) => {
                assert_eq!(waits.len(), LISTED, "every listed item handed out");
                let per_turn = WORK * (n + 1);
                for (k, wait) in waits.iter().enumerate() {
                    let limit = per_turn * u32::try_from(k + 1).unwrap();
                    assert!(
                        *wait <= limit,
                        "listed item {k} waited {wait:?}, bound {limit:?}"
                    );
                }
            }
            None => assert!(waits.is_empty(), "strictly by priority: {waits:?}"),
        }
    }
}
