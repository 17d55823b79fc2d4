//! Backoff: how long the reflector waits after errors, and which errors make it
//! watch again from the same version rather than relist.

use std::time::Duration;

use cache::BackoffConfig;

use crate::harness::{
    Call, Harness, Recorded, cm, connection_refused, error_event, is_watch, too_many_requests,
};

/// The gaps between consecutive watch calls.
fn watch_gaps(h: &Harness) -> Vec<Duration> {
    let times: Vec<Duration> =
        h.lw.calls()
            .iter()
            .zip(h.lw.times())
            .filter(|(c, _)| is_watch(c))
            .map(|(_, t)| t)
            .collect();
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

/// A source that lists nothing at "1", refuses `fails` watches, then watches quietly.
fn refusing(fails: usize) -> Recorded {
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "1");
    for _ in 0..fails {
        lw.script.push_watch_error(connection_refused());
    }
    lw
}

// client-go: TestReflectorListAndWatchInitConnBackoff (reflector_test.go)
//
// Connection refused on every watch: the waits grow from 1 ms, doubling, up to the
// 50 ms cap, and each is stretched by a jitter of up to 100 %, applied after the cap
// (client-go's `wait.Backoff`: capped waits last [50 ms, 100 ms)). client-go's bounds
// ([32, 64] ms and [3.5, 4] s) are those of its fake clock, stepped by 2^(i+1) ms up to
// 100 ms per wait; ours are the sums of the waits themselves: [Σ base, 2 Σ base], plus
// up to 1 ms per wait for the timer's millisecond resolution.
#[tokio::test(start_paused = true)]
async fn list_and_watch_init_conn_backoff() {
    let max = Duration::from_millis(50);
    for (fails, base_sum) in [(5, 31), (40, 1 + 2 + 4 + 8 + 16 + 32 + 34 * 50)] {
        let h = Harness::new(refusing(fails), |r| {
            r.with_watch_list(false).with_backoff(BackoffConfig {
                initial: Duration::from_millis(1),
                max,
                reset_after: Duration::from_millis(100),
                jitter: 1.0,
            })
        });
        h.run_until_nth(fails + 1, is_watch).await;
        let gaps = watch_gaps(&h);
        assert_eq!(gaps.len(), fails);
        let elapsed: Duration = gaps.iter().sum();
        let lower = Duration::from_millis(base_sum);
        let upper = 2 * lower + Duration::from_millis(fails as u64);
        assert!(
            lower <= elapsed && elapsed <= upper,
            "{fails} failures: {elapsed:?} not in [{lower:?}, {upper:?}]"
        );
        // Flattened at the cap: no wait beyond twice the cap...
        assert!(
            gaps.iter()
                .all(|g| *g <= 2 * max + Duration::from_millis(1))
        );
        if fails == 40 {
            // ...and the capped waits are jittered, not cut at the cap.
            assert!(gaps[6..].iter().all(|g| *g >= max), "{gaps:?}");
            assert!(
                gaps[6..]
                    .iter()
                    .any(|g| *g > max + Duration::from_millis(1)),
                "{gaps:?}"
            );
        }
        assert_eq!(
            h.lw.summaries()
                .iter()
                .filter(|c| c.starts_with("list"))
                .count(),
            1,
            "a refused connection watches again, without a relist"
        );
    }
}

// client-go: TestNewReflectorWithCustomBackoff (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn new_reflector_with_custom_backoff() {
    // "default backoff": 2 failures, well within 10 s (jittered 0.8 s + 1.6 s).
    let h = Harness::new(refusing(2), |r| r.with_watch_list(false));
    h.run_until_nth(3, is_watch).await;
    let elapsed: Duration = watch_gaps(&h).iter().sum();
    assert!(
        Duration::from_millis(2400) <= elapsed && elapsed < Duration::from_secs(10),
        "{elapsed:?}"
    );

    // "custom backoff": 10 ms doubling, no jitter, 100 ms cap; 5 failures take
    // 10 + 20 + 40 + 80 + 100 = 250 ms.
    let h = Harness::new(refusing(5), |r| {
        r.with_watch_list(false).with_backoff(BackoffConfig {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(100),
            jitter: 0.0,
            ..BackoffConfig::default()
        })
    });
    h.run_until_nth(6, is_watch).await;
    assert_eq!(
        watch_gaps(&h),
        [10, 20, 40, 80, 100].map(Duration::from_millis)
    );
}

/// One second, then two, four: the waits, exactly.
fn seconds_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_secs(1),
        jitter: 0.0,
        ..BackoffConfig::default()
    }
}

// client-go: TestBackoffOnTooManyRequests (reflector_test.go)
//
// A 429 when starting a watch, then a 429 inside a watch: both back off (two waits)
// and watch again from the same version, without a relist. (client-go's third watch
// is closed at once, which its `ListAndWatch` returns on; ours counts it as a very
// short watch: see `handle_watch_result_chan_closed_before`.)
#[tokio::test(start_paused = true)]
async fn backoff_on_too_many_requests() {
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "1");
    lw.script.push_watch_error(too_many_requests());
    lw.script.push_watch(
        vec![Ok(error_event(429, "TooManyRequests", "too many requests"))],
        false,
    );
    lw.script.push_watch(vec![], true);
    let h = Harness::new(lw, |r| {
        r.with_watch_list(false).with_backoff(seconds_backoff())
    });
    h.run_until_nth(3, is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="1""#,
            r#"watch rv="1""#,
            r#"watch rv="1""#
        ]
    );
    assert_eq!(watch_gaps(&h), [1, 2].map(Duration::from_secs));
}

// client-go: TestNoRelistOnTooManyRequests (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn no_relist_on_too_many_requests() {
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "1");
    for _ in 0..4 {
        lw.script.push_watch_error(too_many_requests());
    }
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    h.run_until_nth(5, is_watch).await;
    let calls = h.lw.calls();
    let lists = calls.iter().filter(|c| matches!(c, Call::List(_))).count();
    let watches = calls.iter().filter(|c| is_watch(c)).count();
    assert_eq!((lists, watches), (1, 5));
}

// client-go: TestRetryInternalError (reflector_test.go), case "retries off"
//
// A 500 InternalError inside a watch: no watch from the same version (zero retries),
// a relist after the backoff. (The "retries on" cases need
// `MaxInternalErrorRetryDuration`, which is not offered: the file header.)
#[tokio::test(start_paused = true)]
async fn retry_internal_error() {
    let lw = Recorded::new();
    lw.script.push_list_items(vec![cm("a", "1")], "1");
    lw.script.push_watch(
        vec![Ok(error_event(
            500,
            "InternalError",
            "Internal error occurred: etcdserver: no leader",
        ))],
        false,
    );
    lw.script.push_list_items(vec![cm("a", "1")], "2");
    let h = Harness::new(lw, |r| {
        r.with_watch_list(false).with_backoff(seconds_backoff())
    });
    h.run_until_nth(2, is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="1""#,
            r#"list rv="" limit=500"#,
            r#"watch rv="2""#
        ]
    );
    let times = h.lw.times();
    assert_eq!(
        times[2] - times[1],
        Duration::from_secs(1),
        "after the backoff"
    );
}
