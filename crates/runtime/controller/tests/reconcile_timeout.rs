//! The reconcile timeout (controller-runtime's `ReconciliationTimeout`) and a sync's
//! own requeue priority (controller-runtime's `Result.Priority`), on paused time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use controller::metrics::{ReconcileObserver, ReconcileResult, set_global_reconcile_observer};
use controller::{Action, Controller, SyncHandler};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;
use workqueue::priority::LOW;

/// What one call of a key does.
#[derive(Clone, Copy)]
enum Step {
    Ok,
    /// Never returns.
    Hang,
    /// Sleeps, then succeeds.
    Slow(Duration),
    /// Succeeds and asks to be synced again after 1 s, at `LOW` if `true`.
    RequeueLow(bool),
}

/// Follows a per-key script (then `Ok`) and records when each call started.
#[derive(Default)]
struct Scripted {
    script: Mutex<HashMap<&'static str, Vec<Step>>>,
    calls: Mutex<Vec<(String, Instant)>>,
}

impl Scripted {
    fn with(script: &[(&'static str, &[Step])]) -> Self {
        let s = Self::default();
        for (key, steps) in script {
            s.script.lock().insert(key, steps.to_vec());
        }
        s
    }

    fn keys(&self) -> Vec<String> {
        self.calls.lock().iter().map(|(k, _)| k.clone()).collect()
    }

    fn calls_for(&self, key: &str) -> Vec<Duration> {
        let start = self.calls.lock()[0].1;
        self.calls
            .lock()
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, t)| *t - start)
            .collect()
    }
}

impl SyncHandler for Scripted {
    type Error = String;

    async fn sync(&self, key: &str) -> Result<Action, String> {
        self.calls.lock().push((key.to_string(), Instant::now()));
        let step = match self.script.lock().get_mut(key) {
            Some(steps) if !steps.is_empty() => steps.remove(0),
            _ => Step::Ok,
        };
        match step {
            Step::Ok => Ok(Action::Done),
            Step::Hang => std::future::pending().await,
            Step::Slow(d) => {
                tokio::time::sleep(d).await;
                Ok(Action::Done)
            }
            Step::RequeueLow(low) => {
                let action = Action::requeue_after(Duration::from_secs(1));
                Ok(if low {
                    action.with_priority(LOW)
                } else {
                    action
                })
            }
        }
    }
}

/// The observations of the controller named [`OBSERVED`], in order. The hook is
/// process-wide and the other tests of this binary run at the same time, so their
/// controllers (named `timeouts`) report here too and are left out.
#[derive(Default)]
struct Results(Mutex<Vec<ReconcileResult>>);

/// The name of the one controller whose results [`Results`] keeps.
const OBSERVED: &str = "timeouts-observed";

impl ReconcileObserver for Results {
    fn observe(&self, controller: &str, result: ReconcileResult, _: Duration) {
        if controller == OBSERVED {
            self.0.lock().push(result);
        }
    }
}

fn start(
    handler: Scripted,
    timeout: Option<Duration>,
) -> (
    Controller<Scripted>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    start_named("timeouts", handler, timeout)
}

fn start_named(
    name: &str,
    handler: Scripted,
    timeout: Option<Duration>,
) -> (
    Controller<Scripted>,
    CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let queue = RateLimitingQueue::with_default_rate_limiter(name);
    let controller = Controller::new(name, queue, handler).with_reconcile_timeout(timeout);
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (c, cancel) = (controller.clone(), cancel.clone());
        async move { c.run(1, cancel).await.expect("the controller ran") }
    });
    (controller, cancel, run)
}

#[tokio::test(start_paused = true)]
async fn a_hung_sync_is_cancelled_at_the_timeout_its_worker_freed_and_its_key_retried() {
    let results = Arc::new(Results::default());
    assert!(set_global_reconcile_observer(results.clone()));
    let handler = Scripted::with(&[("ns/hung", &[Step::Hang])]);
    let (c, cancel, run) = start_named(OBSERVED, handler, Some(Duration::from_secs(10)));
    c.queue().add("ns/hung".to_string());
    c.queue().add("ns/other".to_string());
    tokio::time::sleep(Duration::from_secs(60)).await;

    let h = c.handler();
    // The one worker was freed at 10 s: the other key was synced then.
    assert_eq!(h.calls_for("ns/other"), [Duration::from_secs(10)]);
    // The hung key came back with backoff (the default limiter's first delay, 5 ms)
    // and succeeded on its second try.
    assert_eq!(
        h.calls_for("ns/hung"),
        [
            Duration::ZERO,
            Duration::from_secs(10) + Duration::from_millis(5)
        ]
    );
    assert_eq!(
        c.queue().num_requeues(&"ns/hung".to_string()),
        0,
        "forgotten on success"
    );
    let seen = results.0.lock().clone();
    assert_eq!(
        seen,
        [
            ReconcileResult::Timeout,
            ReconcileResult::Success,
            ReconcileResult::Success
        ]
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn without_a_timeout_a_slow_sync_runs_to_its_end() {
    let handler = Scripted::with(&[("ns/slow", &[Step::Slow(Duration::from_secs(600))])]);
    let (c, cancel, run) = start(handler, None);
    c.queue().add("ns/slow".to_string());
    c.queue().add("ns/other".to_string());
    tokio::time::sleep(Duration::from_secs(700)).await;
    assert_eq!(c.handler().calls_for("ns/slow").len(), 1);
    assert_eq!(
        c.handler().calls_for("ns/other"),
        [Duration::from_secs(600)]
    );
    cancel.cancel();
    run.await.unwrap();
}

/// One worker: "a" asks to come back after 1 s while "slow" holds the worker until
/// 2 s; "b", a real change, arrives at 1.5 s. At 2 s the worker takes the first of
/// "a" and "b" by priority.
async fn order_after_a_requeue(low: bool) -> Vec<String> {
    let handler = Scripted::with(&[
        ("a", &[Step::RequeueLow(low), Step::Ok]),
        ("slow", &[Step::Slow(Duration::from_secs(2))]),
    ]);
    let (c, cancel, run) = start(handler, None);
    c.queue().add("a".to_string());
    c.queue().add("slow".to_string());
    tokio::time::sleep(Duration::from_millis(1500)).await;
    c.queue().add("b".to_string());
    tokio::time::sleep(Duration::from_secs(5)).await;
    cancel.cancel();
    run.await.expect("the controller task ended");
    c.handler().keys()
}

#[tokio::test(start_paused = true)]
async fn a_requeue_with_a_priority_goes_back_at_it() {
    // At the key's own (default) priority, "a" was in line first.
    assert_eq!(order_after_a_requeue(false).await, ["a", "slow", "a", "b"]);
    // At LOW (`Action::with_priority`), the real change goes first.
    assert_eq!(order_after_a_requeue(true).await, ["a", "slow", "b", "a"]);
}
