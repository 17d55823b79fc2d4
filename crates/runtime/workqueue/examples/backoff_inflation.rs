//! The backoff scenario of kubernetes/kubernetes issue 132805, simulated on paused
//! Tokio time (so ten minutes take milliseconds and every figure is exact):
//!
//! * one key whose sync fails every time; the worker requeues it with
//!   `add_rate_limited`, as every controller loop does;
//! * meanwhile other events re-add the same key every second (`add`: a status update
//!   of the object, a change to something it owns...), so it is synced, fails and is
//!   rate-limited again while its earlier backoff is still pending.
//!
//! It runs the scenario with client-go's default controller limiter as it is, and
//! wrapped in the [`CoalescingRateLimiter`] (the controllers' default), and prints, at
//! several points in time, the delay the last `add_rate_limited` asked for, the
//! failures the limiter has counted, and how many syncs ran. Then the events stop and
//! the failure heals: it prints how long the key waits for its next (successful)
//! retry, which is what an inflated backoff costs.
//!
//! ```sh
//! cargo run --release -p kcr-workqueue --example backoff_inflation
//! cargo run --release -p kcr-workqueue --example backoff_inflation -- 600 1000   # run (s), event period (ms)
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use workqueue::{
    CoalescingRateLimiter, RateLimiter, RateLimitingQueue, default_controller_rate_limiter,
};

const KEY: &str = "default/always-failing";

/// Records what the wrapped limiter answers.
struct Recording<L> {
    inner: L,
    last: Mutex<Duration>,
}

impl<L: RateLimiter<String>> RateLimiter<String> for Recording<L> {
    fn when(&self, item: &String) -> Duration {
        let delay = self.inner.when(item);
        *self.last.lock() = delay;
        delay
    }
    fn forget(&self, item: &String) {
        self.inner.forget(item)
    }
    fn num_requeues(&self, item: &String) -> u32 {
        self.inner.num_requeues(item)
    }
}

/// One row of the report.
struct Sample {
    at: Duration,
    delay: Duration,
    failures: u32,
    syncs: u64,
}

struct Outcome {
    samples: Vec<Sample>,
    /// After the events stop and the failure heals: how long until the next sync.
    heal_wait: Duration,
}

async fn scenario(
    limiter: impl RateLimiter<String> + 'static,
    run: Duration,
    event_period: Duration,
    sample_at: &[Duration],
) -> Outcome {
    let limiter = Arc::new(Recording {
        inner: limiter,
        last: Mutex::new(Duration::ZERO),
    });
    let queue = RateLimitingQueue::new(limiter.clone());
    let key = KEY.to_string();
    let syncs = Arc::new(AtomicU64::new(0));
    let healed = Arc::new(Mutex::new(None::<Instant>));
    let healed_sync = Arc::new(Mutex::new(None::<Instant>));

    // The worker: every sync fails until `healed` is set.
    let worker = tokio::spawn({
        let (queue, syncs, healed, healed_sync) = (
            queue.clone(),
            syncs.clone(),
            healed.clone(),
            healed_sync.clone(),
        );
        async move {
            while let Some(item) = queue.get().await {
                syncs.fetch_add(1, Ordering::Relaxed);
                if healed.lock().is_some() {
                    *healed_sync.lock() = Some(Instant::now());
                    queue.forget(&item);
                } else {
                    queue.add_rate_limited(&item);
                }
            }
        }
    });

    let start = Instant::now();
    queue.add(key.clone());
    let mut samples = Vec::new();
    let mut next_sample = sample_at.iter().peekable();
    let mut next_event = start + event_period;
    while start.elapsed() < run {
        // The other events: re-add the key every `event_period`.
        tokio::time::sleep_until(next_event).await;
        queue.add(key.clone());
        next_event += event_period;
        while let Some(at) = next_sample.next_if(|at| start.elapsed() >= **at) {
            samples.push(Sample {
                at: *at,
                delay: *limiter.last.lock(),
                failures: limiter.num_requeues(&key),
                syncs: syncs.load(Ordering::Relaxed),
            });
        }
    }
    // The events stop and the cause of the failure goes away: the key now waits for
    // the retry its backoff scheduled.
    tokio::time::sleep(Duration::from_millis(1)).await;
    let heal = Instant::now();
    *healed.lock() = Some(heal);
    while healed_sync.lock().is_none() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let heal_wait = healed_sync.lock().expect("the loop above waited for it") - heal;
    queue.shut_down();
    worker.await.expect("the worker does not panic");
    Outcome { samples, heal_wait }
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: run seconds, event period ms"))
        .collect();
    let run = Duration::from_secs(args.first().copied().unwrap_or(600));
    let event_period = Duration::from_millis(args.get(1).copied().unwrap_or(1000));
    let sample_at: Vec<Duration> = [10, 30, 60, 120, 300, 600, 1200, 3600]
        .into_iter()
        .map(Duration::from_secs)
        .filter(|at| *at <= run)
        .collect();

    println!(
        "one key failing on every sync, re-added by other events every {} ms, for {} s",
        event_period.as_millis(),
        run.as_secs()
    );
    println!(
        "(asked delay: what the last add_rate_limited got; the coalescing limiter answers a \
         re-trigger during a pending backoff with the time left of that backoff)"
    );
    for (name, outcome) in [
        (
            "client-go (DefaultTypedControllerRateLimiter)",
            scenario(
                default_controller_rate_limiter::<String>(),
                run,
                event_period,
                &sample_at,
            )
            .await,
        ),
        (
            "coalescing (controllers' default)",
            scenario(
                CoalescingRateLimiter::new(default_controller_rate_limiter::<String>()),
                run,
                event_period,
                &sample_at,
            )
            .await,
        ),
    ] {
        println!("\n{name}");
        println!(
            "{:>8}  {:>14}  {:>16}  {:>6}",
            "at", "asked delay", "failures counted", "syncs"
        );
        for s in &outcome.samples {
            println!(
                "{:>8}  {:>14}  {:>16}  {:>6}",
                format!("{} s", s.at.as_secs()),
                secs(s.delay),
                s.failures,
                s.syncs
            );
        }
        println!(
            "events stop and the failure heals at {} s: next sync after {}",
            run.as_secs(),
            secs(outcome.heal_wait)
        );
    }
}
