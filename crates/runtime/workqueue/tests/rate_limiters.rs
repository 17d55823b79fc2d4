//! Every rate limiter's numbers, with paused time where time matters
//! (client-go default_rate_limiters_test.go territory).

use std::time::Duration;

use tokio::time::advance;
use workqueue::{
    BucketRateLimiter, CoalescingRateLimiter, ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter, MaxOfRateLimiter, RateLimiter, WithMaxWaitRateLimiter,
    default_controller_rate_limiter, default_item_based_rate_limiter,
};

const MS: Duration = Duration::from_millis(1);

#[test]
fn exponential_doubles_from_base_to_cap() {
    let l = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
    let got: Vec<_> = (0..5).map(|_| l.when(&"one")).collect();
    assert_eq!(got, [5 * MS, 10 * MS, 20 * MS, 40 * MS, 80 * MS]);
    assert_eq!(l.num_requeues(&"one"), 5);

    // Items are independent.
    assert_eq!(l.when(&"two"), 5 * MS);
    assert_eq!(l.num_requeues(&"two"), 1);

    // Forget resets one item only.
    l.forget(&"one");
    assert_eq!(l.num_requeues(&"one"), 0);
    assert_eq!(l.when(&"one"), 5 * MS);
    assert_eq!(l.when(&"two"), 10 * MS);
}

#[test]
fn exponential_is_capped() {
    let l = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    let delays: Vec<_> = (0..12).map(|_| l.when(&0)).collect();
    assert_eq!(delays[9], 512 * MS);
    assert_eq!(
        delays[10],
        Duration::from_secs(1),
        "1024 ms is capped at 1 s"
    );
    assert_eq!(delays[11], Duration::from_secs(1));
}

#[test]
fn exponential_never_overflows() {
    let max = Duration::from_secs(1000);
    let l = ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), max);
    for _ in 0..300 {
        assert!(l.when(&"x") <= max);
    }
    assert_eq!(l.when(&"x"), max);
    assert_eq!(l.num_requeues(&"x"), 301);

    // Even a huge base with a huge cap saturates at the cap instead of wrapping.
    let huge = ItemExponentialFailureRateLimiter::new(Duration::MAX / 2, Duration::MAX);
    assert_eq!(huge.when(&"y"), Duration::MAX / 2);
    assert_eq!(
        huge.when(&"y"),
        (Duration::MAX / 2) * 2,
        "just below the cap"
    );
    assert_eq!(huge.when(&"y"), Duration::MAX, "4x would overflow: the cap");
    assert_eq!(huge.when(&"y"), Duration::MAX);
}

#[test]
fn default_item_based_starts_at_one_millisecond() {
    let l = default_item_based_rate_limiter();
    assert_eq!(l.when(&"a"), MS);
    assert_eq!(l.when(&"a"), 2 * MS);
}

#[test]
fn fast_slow_switches_after_max_fast_attempts() {
    let l = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
    let got: Vec<_> = (0..5).map(|_| l.when(&"a")).collect();
    assert_eq!(
        got,
        [
            5 * MS,
            5 * MS,
            5 * MS,
            Duration::from_secs(10),
            Duration::from_secs(10)
        ]
    );
    assert_eq!(l.num_requeues(&"a"), 5);
    assert_eq!(l.when(&"b"), 5 * MS, "per item");
    l.forget(&"a");
    assert_eq!(l.num_requeues(&"a"), 0);
    assert_eq!(l.when(&"a"), 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn bucket_burst_then_increasing_delays_like_x_time_rate() {
    let l = BucketRateLimiter::new(10.0, 100);
    for i in 0..100 {
        assert_eq!(
            RateLimiter::<&str>::when(&l, &"x"),
            Duration::ZERO,
            "call {i}"
        );
    }
    assert_eq!(RateLimiter::<&str>::when(&l, &"x"), 100 * MS, "101st");
    assert_eq!(RateLimiter::<&str>::when(&l, &"x"), 200 * MS, "102nd");
    assert_eq!(RateLimiter::<&str>::when(&l, &"x"), 300 * MS, "103rd");

    // Refill: 1 s later the debt of 3 tokens is paid and 7 are back.
    advance(Duration::from_secs(1)).await;
    for _ in 0..7 {
        assert_eq!(RateLimiter::<&str>::when(&l, &"x"), Duration::ZERO);
    }
    assert_eq!(RateLimiter::<&str>::when(&l, &"x"), 100 * MS);

    // Per-item calls are no-ops.
    assert_eq!(RateLimiter::<&str>::num_requeues(&l, &"x"), 0);
    RateLimiter::<&str>::forget(&l, &"x");
}

#[tokio::test(start_paused = true)]
async fn bucket_refills_no_higher_than_burst() {
    let l = BucketRateLimiter::new(10.0, 2);
    assert_eq!(l.reserve(), Duration::ZERO);
    advance(Duration::from_secs(3600)).await;
    assert_eq!(l.reserve(), Duration::ZERO);
    assert_eq!(l.reserve(), Duration::ZERO);
    assert_eq!(l.reserve(), 100 * MS, "only `burst` tokens were saved up");
}

#[tokio::test(start_paused = true)]
async fn bucket_edge_cases() {
    assert_eq!(
        BucketRateLimiter::new(f64::INFINITY, 0).reserve(),
        Duration::ZERO
    );
    assert_eq!(BucketRateLimiter::new(10.0, 0).reserve(), Duration::MAX);
    let zero_rate = BucketRateLimiter::new(0.0, 1);
    assert_eq!(
        zero_rate.reserve(),
        Duration::ZERO,
        "the one token in the bucket"
    );
    assert_eq!(zero_rate.reserve(), Duration::MAX, "and never another");
    // Fractional rates: 0.5 qps = one token every 2 s.
    let slow = BucketRateLimiter::new(0.5, 1);
    assert_eq!(slow.reserve(), Duration::ZERO);
    assert_eq!(slow.reserve(), Duration::from_secs(2));
}

#[test]
fn max_of_takes_the_longest_and_every_limiter_counts() {
    let l: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
        Box::new(ItemFastSlowRateLimiter::new(
            5 * MS,
            Duration::from_secs(3),
            3,
        )),
        Box::new(ItemExponentialFailureRateLimiter::new(
            MS,
            Duration::from_secs(1),
        )),
    ]);
    let got: Vec<_> = (0..5).map(|_| l.when(&"a")).collect();
    assert_eq!(
        got,
        [
            5 * MS,
            5 * MS,
            5 * MS,
            Duration::from_secs(3),
            Duration::from_secs(3)
        ]
    );
    assert_eq!(l.num_requeues(&"a"), 5);
    l.forget(&"a");
    assert_eq!(l.num_requeues(&"a"), 0);
    assert_eq!(l.when(&"a"), 5 * MS);

    let empty = MaxOfRateLimiter::<&str>::new(vec![]);
    assert_eq!(empty.when(&"a"), Duration::ZERO);
}

#[test]
fn with_max_wait_caps_the_inner_delay() {
    let l = WithMaxWaitRateLimiter::new(
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(1),
            Duration::from_secs(1000),
        )),
        Duration::from_secs(3),
    );
    let got: Vec<_> = (0..4).map(|_| l.when(&"a")).collect();
    let s = Duration::from_secs;
    assert_eq!(got, [s(1), s(2), s(3), s(3)]);
    assert_eq!(l.num_requeues(&"a"), 4);
    l.forget(&"a");
    assert_eq!(l.when(&"a"), s(1));
}

#[tokio::test(start_paused = true)]
async fn default_controller_rate_limiter_is_max_of_exponential_and_bucket() {
    let l = default_controller_rate_limiter();
    // Per item: 5 ms doubling (the bucket still has tokens).
    let got: Vec<_> = (0..4).map(|_| l.when(&"a".to_string())).collect();
    assert_eq!(got, [5 * MS, 10 * MS, 20 * MS, 40 * MS]);
    assert_eq!(l.num_requeues(&"a".to_string()), 4);

    // Overall: 100 tokens in the bucket; 4 are used. 96 distinct fresh items get
    // their 5 ms; the next fresh item waits for the bucket instead (100 ms > 5 ms).
    for i in 0..96 {
        assert_eq!(l.when(&format!("k{i}")), 5 * MS);
    }
    assert_eq!(l.when(&"fresh".to_string()), 100 * MS);

    // The cap: 1000 s.
    let capped = default_controller_rate_limiter::<u32>();
    let last = (0..40).map(|_| capped.when(&7)).max().unwrap();
    assert_eq!(last, Duration::from_secs(1000));
}

#[tokio::test(start_paused = true)]
async fn coalescing_does_not_escalate_during_a_pending_backoff() {
    let plain = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
    let coalescing = CoalescingRateLimiter::new(ItemExponentialFailureRateLimiter::new(
        5 * MS,
        Duration::from_secs(1000),
    ));

    // One failure, then ten re-triggers within the 5 ms backoff.
    assert_eq!(plain.when(&"k"), 5 * MS);
    assert_eq!(coalescing.when(&"k"), 5 * MS);
    for _ in 0..10 {
        plain.when(&"k");
        assert!(coalescing.when(&"k") <= 5 * MS);
    }
    advance(5 * MS).await;

    // The real retry fails: client-go has escalated to 5 ms * 2^11, we to 5 ms * 2.
    assert_eq!(plain.when(&"k"), 5 * MS * 2048);
    assert_eq!(coalescing.when(&"k"), 10 * MS);
    assert_eq!(plain.num_requeues(&"k"), 12);
    assert_eq!(coalescing.num_requeues(&"k"), 2);
}

#[tokio::test(start_paused = true)]
async fn coalescing_returns_the_time_left_and_forget_resets() {
    let l = CoalescingRateLimiter::new(ItemExponentialFailureRateLimiter::new(
        100 * MS,
        Duration::from_secs(10),
    ));
    assert_eq!(l.when(&1), 100 * MS);
    advance(30 * MS).await;
    assert_eq!(l.when(&1), 70 * MS, "the pending backoff, not a new one");
    assert_eq!(l.when(&2), 100 * MS, "per item");
    advance(70 * MS).await;
    assert_eq!(l.when(&1), 200 * MS, "expired: a real failure");
    l.forget(&1);
    assert_eq!(l.num_requeues(&1), 0);
    assert_eq!(
        l.when(&1),
        100 * MS,
        "forget clears the pending backoff too"
    );
    assert_eq!(l.inner().num_requeues(&1), 1);
}
