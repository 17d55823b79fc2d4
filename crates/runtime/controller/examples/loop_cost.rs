//! Runs one turn of the controller loop (`process_next_work_item`) a fixed number of
//! times, for instruction counting under `valgrind --tool=callgrind` (deterministic,
//! unlike wall-clock time on a shared machine), as the workqueue's
//! `examples/cycle_cost.rs` does for the queue.
//!
//! ```sh
//! cargo build --profile bench -p kcr-controller --example loop_cost
//! valgrind --tool=callgrind target/release/examples/loop_cost plain 20000
//! ```
//!
//! Each turn adds a key and processes it with a sync that returns `Action::Done`: get,
//! sync (with the trace, the span, the clock and the metrics hook, no subscriber
//! installed), forget, done. Scenarios: `plain` (no sync gate, no staleness guard) and
//! `gated` (a sync gate admits every key with a [`Pass`] that is never revoked: the
//! sharded replica's per-poll fence). The setup (keys, runtime, controller) is counted
//! too, so run a scenario with two counts and divide the difference of the totals by
//! the difference of the counts: that is the cost of one turn.

use std::convert::Infallible;
use std::sync::Arc;

use controller::{Action, Admission, Controller, Pass, SyncGate, SyncHandler};
use workqueue::RateLimitingQueue;

/// A sync with nothing to do.
struct Noop;

impl SyncHandler for Noop {
    type Error = Infallible;

    async fn sync(&self, _key: &str) -> Result<Action, Infallible> {
        Ok(Action::Done)
    }
}

/// Admits every key with a pass that is never revoked.
struct AdmitAll;

impl SyncGate for AdmitAll {
    fn admit(&self, _key: &str) -> Admission {
        Admission::Admit(Pass::new(std::future::pending(), ()))
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let scenario = args.next().unwrap_or_else(|| "plain".to_string());
    let n: usize = args
        .next()
        .map(|s| s.parse().expect("the count is a number"))
        .unwrap_or(20_000);
    let gate: Option<Arc<dyn SyncGate>> = match scenario.as_str() {
        "plain" => None,
        "gated" => Some(Arc::new(AdmitAll)),
        other => panic!("unknown scenario {other:?} (plain or gated)"),
    };
    let keys: Vec<String> = (0..n).map(|i| format!("ns-{}/foo-{i}", i % 100)).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async {
        let queue = RateLimitingQueue::with_default_rate_limiter("loop-cost");
        let c = Controller::new("loop-cost", queue, Noop).with_gate(gate);
        for key in keys {
            c.queue().add(key);
            assert!(c.process_next_work_item().await);
        }
        assert_eq!(c.queue().len(), 0);
    });
    println!("{scenario}: {n} turns");
}
