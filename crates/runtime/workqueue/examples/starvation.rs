//! What the priority queue's starvation bound costs and buys, simulated on paused
//! Tokio time (so minutes take milliseconds and every figure is exact and the same
//! on every machine: this measures the queue's policy, not its speed).
//!
//! Two scenarios, one worker taking `WORK` per item, each for three queues: client-go's
//! FIFO (`QueueConfig::fifo`), controller-runtime's strict priorities
//! (`starvation_bound: None`) and ours (the default bound, 10):
//!
//! * **restart**: a controller restarts over `LISTED` objects (the initial list, at
//!   `LOW`) while ordinary events keep coming at half what the worker can take; one
//!   second in, a user changes an object. How long until that change is handed out
//!   (the priority queue's reason to exist), and until the list is through.
//! * **stream**: the same list, but the events come at twice what the worker can take,
//!   for `RUN`. The longest an initial-list item waited for its hand-out, and how many
//!   never got one (strictly by priority: all of them, for ever).
//!
//! ```sh
//! cargo run --release -p kcr-workqueue --example starvation
//! cargo run --release -p kcr-workqueue --example starvation -- 500 60   # listed items, run (s)
//! ```

use std::num::NonZeroU32;
use std::time::Duration;

use tokio::time::Instant;
use workqueue::priority::{LOW, STARVATION_BOUND};
use workqueue::{AddOpts, QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

/// How long the worker takes per item.
const WORK: Duration = Duration::from_millis(10);

/// The three queues compared.
#[derive(Clone, Copy)]
enum Policy {
    Fifo,
    Strict,
    Bounded,
}

impl Policy {
    fn name(self) -> String {
        match self {
            Policy::Fifo => "client-go FIFO".into(),
            Policy::Strict => "strict priority (controller-runtime)".into(),
            Policy::Bounded => format!("bounded (ours, N = {STARVATION_BOUND})"),
        }
    }

    fn config(self) -> QueueConfig {
        match self {
            Policy::Fifo => QueueConfig::default().with_fifo(true),
            Policy::Strict => QueueConfig::default().with_starvation_bound(None),
            Policy::Bounded => {
                QueueConfig::default().with_starvation_bound(NonZeroU32::new(STARVATION_BOUND))
            }
        }
    }
}

/// What one run saw.
struct Outcome {
    /// From the user's change to its hand-out.
    change_wait: Option<Duration>,
    /// From the start to the hand-out of the last listed item.
    list_done: Option<Duration>,
    /// The longest a listed item waited.
    longest_listed_wait: Duration,
    /// Listed items never handed out.
    listed_left: usize,
}

/// Runs one worker for `run` on `policy`'s queue: `listed` items at `LOW` from the
/// start, an event every `event_period` (a new key each time), and, if
/// `change_at` is set, a user's change then.
async fn simulate(
    policy: Policy,
    listed: usize,
    event_period: Duration,
    change_at: Option<Duration>,
    run: Duration,
) -> Outcome {
    let q = RateLimitingQueue::with_config(default_controller_rate_limiter(), policy.config());
    let low = AddOpts {
        priority: LOW,
        ..AddOpts::default()
    };
    for i in 0..listed {
        q.add_with_opts(format!("listed-{i}"), low);
    }
    let start = Instant::now();
    q.add("event-0".to_string());
    let events = {
        let q = q.clone();
        tokio::spawn(async move {
            for i in 1.. {
                tokio::time::sleep(event_period).await;
                q.add(format!("event-{i}"));
            }
        })
    };
    let change = change_at.map(|at| {
        let q = q.clone();
        tokio::spawn(async move {
            tokio::time::sleep(at).await;
            q.add("user-change".to_string());
        })
    });
    let mut outcome = Outcome {
        change_wait: None,
        list_done: None,
        longest_listed_wait: Duration::ZERO,
        listed_left: listed,
    };
    while start.elapsed() < run {
        let Ok(Some(item)) = tokio::time::timeout(run - start.elapsed(), q.get()).await else {
            break;
        };
        let now = start.elapsed();
        if item.starts_with("listed-") {
            outcome.longest_listed_wait = outcome.longest_listed_wait.max(now);
            outcome.listed_left -= 1;
            if outcome.listed_left == 0 {
                outcome.list_done = Some(now);
            }
        } else if *item == "user-change" {
            outcome.change_wait = change_at.map(|at| now.saturating_sub(at));
        }
        tokio::time::sleep(WORK).await;
        item.done();
    }
    events.abort();
    if let Some(change) = change {
        change.abort();
    }
    q.shut_down();
    outcome
}

fn secs(d: Option<Duration>) -> String {
    d.map_or_else(|| "never".into(), |d| format!("{:.2} s", d.as_secs_f64()))
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let listed: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    let run = Duration::from_secs(args.next().and_then(|a| a.parse().ok()).unwrap_or(60));
    let policies = [Policy::Fifo, Policy::Strict, Policy::Bounded];

    println!(
        "restart: {listed} listed items at LOW, events at half the worker's rate, a user's change 1 s in ({} ms per item, one worker)\n",
        WORK.as_millis()
    );
    println!("| queue | user's change handed out after | initial list through after |");
    println!("|---|---:|---:|");
    for policy in policies {
        let o = simulate(policy, listed, WORK * 2, Some(Duration::from_secs(1)), run).await;
        println!(
            "| {} | {} | {} |",
            policy.name(),
            secs(o.change_wait),
            secs(o.list_done)
        );
    }

    println!(
        "\nstream: {listed} listed items at LOW, events at twice the worker's rate for {} s\n",
        run.as_secs()
    );
    println!(
        "| queue | longest wait of a listed item handed out | listed items never handed out |"
    );
    println!("|---|---:|---:|");
    for policy in policies {
        let o = simulate(policy, listed, WORK / 2, None, run).await;
        let longest = if o.listed_left == listed {
            "-".to_string()
        } else {
            secs(Some(o.longest_listed_wait))
        };
        println!(
            "| {} | {} | {} of {listed} |",
            policy.name(),
            longest,
            o.listed_left
        );
    }
}
