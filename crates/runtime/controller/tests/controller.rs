//! The loop's contract (sample-controller's processNextWorkItem plus controller-runtime's
//! RequeueAfter and panic recovery), on paused Tokio time so every delay is exact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use controller::{Action, Controller, Error, InformerSynced, SyncHandler};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;

/// What a scripted sync does on one call.
#[derive(Clone, Copy, Debug)]
enum Step {
    Ok,
    Fail,
    Panic,
    Requeue(Duration),
    /// Sleep this long, then succeed.
    Slow(Duration),
}

/// A handler that follows a per-key script (then `Ok` forever) and records when each
/// call started, plus how many syncs run at once.
#[derive(Default)]
struct Scripted {
    script: Mutex<HashMap<String, Vec<Step>>>,
    calls: Mutex<Vec<(String, Instant)>>,
    running: AtomicUsize,
    max_running: AtomicUsize,
    same_key_overlap: AtomicUsize,
    in_flight: Mutex<Vec<String>>,
}

impl Scripted {
    fn with(script: &[(&str, &[Step])]) -> Self {
        let s = Self::default();
        for (key, steps) in script {
            s.script.lock().insert(key.to_string(), steps.to_vec());
        }
        s
    }
    fn calls_for(&self, key: &str) -> Vec<Instant> {
        self.calls
            .lock()
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, t)| *t)
            .collect()
    }
}

impl SyncHandler for Scripted {
    type Error = String;

    async fn sync(&self, key: &str) -> Result<Action, String> {
        self.calls.lock().push((key.to_string(), Instant::now()));
        {
            let mut in_flight = self.in_flight.lock();
            if in_flight.iter().any(|k| k == key) {
                self.same_key_overlap.fetch_add(1, Ordering::SeqCst);
            }
            in_flight.push(key.to_string());
        }
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        let step = {
            let mut script = self.script.lock();
            match script.get_mut(key) {
                Some(steps) if !steps.is_empty() => steps.remove(0),
                _ => Step::Ok,
            }
        };
        struct Leave<'a>(&'a Scripted, String);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.running.fetch_sub(1, Ordering::SeqCst);
                self.0.in_flight.lock().retain(|k| *k != self.1);
            }
        }
        let _leave = Leave(self, key.to_string());
        match step {
            Step::Ok => Ok(Action::Done),
            Step::Fail => Err(format!("{key}: scripted failure")),
            Step::Panic => panic!("{key}: scripted panic"),
            Step::Requeue(after) => Ok(Action::RequeueAfter(after)),
            Step::Slow(d) => {
                tokio::time::sleep(d).await;
                Ok(Action::Done)
            }
        }
    }
}

fn start(
    handler: Scripted,
    workers: usize,
    synced: Vec<InformerSynced>,
) -> (
    Controller<Scripted>,
    CancellationToken,
    tokio::task::JoinHandle<controller::Result<()>>,
) {
    let queue = RateLimitingQueue::with_default_rate_limiter("test");
    let controller = Controller::new("test", queue, handler).with_synced(synced);
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (c, cancel) = (controller.clone(), cancel.clone());
        async move { c.run(workers, cancel).await }
    });
    (controller, cancel, run)
}

fn key(s: &str) -> String {
    s.to_string()
}

/// Lets spawned tasks run until the (paused) clock has advanced by `d`.
async fn advance(d: Duration) {
    tokio::time::sleep(d).await;
}

#[tokio::test(start_paused = true)]
async fn success_forgets_the_key_and_syncs_once() {
    let (c, cancel, run) = start(Scripted::default(), 2, Vec::new());
    c.queue().add(key("ns/a"));
    advance(Duration::from_secs(60)).await;
    assert_eq!(c.handler().calls_for("ns/a").len(), 1);
    assert_eq!(c.queue().num_requeues(&key("ns/a")), 0);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn errors_retry_with_per_key_exponential_backoff_then_forget() {
    let handler = Scripted::with(&[("ns/a", &[Step::Fail, Step::Fail, Step::Fail, Step::Ok])]);
    let (c, cancel, run) = start(handler, 1, Vec::new());
    c.queue().add(key("ns/a"));
    advance(Duration::from_secs(5)).await;
    let calls = c.handler().calls_for("ns/a");
    assert_eq!(calls.len(), 4, "three failures and one success");
    let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1] - w[0]).collect();
    // The default controller limiter: 5 ms * 2^n per key (max'd with a 10 qps bucket,
    // whose burst of 100 is not reached here).
    assert_eq!(
        gaps,
        [
            Duration::from_millis(5),
            Duration::from_millis(10),
            Duration::from_millis(20)
        ]
    );
    assert_eq!(
        c.queue().num_requeues(&key("ns/a")),
        0,
        "success forgets the backoff"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_sync_is_retried_and_the_worker_survives() {
    let handler = Scripted::with(&[("ns/boom", &[Step::Panic, Step::Panic])]);
    // One worker: if the panic killed it, nothing else would ever be synced.
    let (c, cancel, run) = start(handler, 1, Vec::new());
    c.queue().add(key("ns/boom"));
    advance(Duration::from_secs(1)).await;
    c.queue().add(key("ns/after"));
    advance(Duration::from_secs(1)).await;
    let boom = c.handler().calls_for("ns/boom");
    assert_eq!(boom.len(), 3, "two panics, then the retry succeeds");
    assert_eq!(
        boom[1] - boom[0],
        Duration::from_millis(5),
        "a panic backs off like an error"
    );
    assert_eq!(
        c.handler().calls_for("ns/after").len(),
        1,
        "the worker kept working"
    );
    assert_eq!(c.handler().running.load(Ordering::SeqCst), 0);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn requeue_after_syncs_again_after_exactly_that_long() {
    let every = Duration::from_secs(20);
    let handler = Scripted::with(&[(
        "ns/vm",
        &[Step::Requeue(every), Step::Requeue(every), Step::Ok],
    )]);
    let (c, cancel, run) = start(handler, 2, Vec::new());
    c.queue().add(key("ns/vm"));
    advance(Duration::from_secs(120)).await;
    let calls = c.handler().calls_for("ns/vm");
    assert_eq!(calls.len(), 3, "Done ends the requeue chain");
    assert_eq!(calls[1] - calls[0], every);
    assert_eq!(calls[2] - calls[1], every);
    assert_eq!(c.queue().num_requeues(&key("ns/vm")), 0);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn workers_run_keys_in_parallel_but_never_one_key_twice() {
    let slow = Step::Slow(Duration::from_secs(1));
    let handler = Scripted::with(&[
        ("ns/a", &[slow, slow]),
        ("ns/b", &[slow]),
        ("ns/c", &[slow]),
    ]);
    let (c, cancel, run) = start(handler, 3, Vec::new());
    for k in ["ns/a", "ns/b", "ns/c"] {
        c.queue().add(key(k));
    }
    advance(Duration::from_millis(100)).await;
    // "ns/a" changes while it is being synced: it must wait for the first sync.
    c.queue().add(key("ns/a"));
    advance(Duration::from_secs(10)).await;
    let h = c.handler();
    assert_eq!(
        h.max_running.load(Ordering::SeqCst),
        3,
        "three workers, three keys at once"
    );
    assert_eq!(h.same_key_overlap.load(Ordering::SeqCst), 0);
    let a = h.calls_for("ns/a");
    assert_eq!(a.len(), 2, "the change during the sync is not lost");
    assert!(
        a[1] - a[0] >= Duration::from_secs(1),
        "second sync after the first finished"
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn no_worker_starts_before_the_caches_sync() {
    let (synced, flag) = tokio::sync::watch::channel(false);
    let check = InformerSynced::from_watch(flag);
    let (c, cancel, run) = start(Scripted::default(), 2, vec![check]);
    c.queue().add(key("ns/a"));
    advance(Duration::from_secs(5)).await;
    assert!(
        c.handler().calls.lock().is_empty(),
        "cache not synced: nothing may run"
    );
    assert!(!c.has_synced());
    synced.send_replace(true);
    // Woken, not polled: the sync follows at once, without the clock moving.
    for _ in 0..100 {
        if !c.handler().calls.lock().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(c.has_synced());
    assert_eq!(c.handler().calls_for("ns/a").len(), 1);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn cancelled_before_sync_is_an_error_and_runs_nothing() {
    let (_never_set, flag) = tokio::sync::watch::channel(false);
    let never = InformerSynced::from_watch(flag);
    let (c, cancel, run) = start(Scripted::default(), 2, vec![never]);
    c.queue().add(key("ns/a"));
    advance(Duration::from_secs(1)).await;
    cancel.cancel();
    let err = run.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::CachesNotSynced { .. }), "{err}");
    assert!(c.handler().calls.lock().is_empty());
    assert!(c.queue().shutting_down());
}

#[tokio::test(start_paused = true)]
async fn cancellation_drains_in_flight_and_queued_keys_then_refuses_new_ones() {
    let slow = Step::Slow(Duration::from_secs(2));
    let handler = Scripted::with(&[("ns/a", &[slow]), ("ns/b", &[slow]), ("ns/c", &[slow])]);
    let (c, cancel, run) = start(handler, 1, Vec::new());
    for k in ["ns/a", "ns/b", "ns/c"] {
        c.queue().add(key(k));
    }
    advance(Duration::from_millis(500)).await; // "ns/a" is in flight, b and c wait
    let t0 = Instant::now();
    cancel.cancel();
    while !c.queue().shutting_down() {
        tokio::task::yield_now().await;
    }
    c.queue().add(key("ns/late"));
    run.await.unwrap().unwrap();
    let h = c.handler();
    for k in ["ns/a", "ns/b", "ns/c"] {
        assert_eq!(h.calls_for(k).len(), 1, "{k} drained");
    }
    assert!(
        h.calls_for("ns/late").is_empty(),
        "adds after shutdown are refused"
    );
    assert_eq!(
        Instant::now() - t0,
        Duration::from_millis(5500),
        "1.5 s of a + 2 s of b + 2 s of c"
    );
}

#[tokio::test(start_paused = true)]
async fn a_hung_sync_cannot_hold_shutdown_past_the_drain_timeout() {
    let handler = Scripted::with(&[("ns/hung", &[Step::Slow(Duration::from_secs(3600))])]);
    let queue = RateLimitingQueue::with_default_rate_limiter("test");
    let c = Controller::new("test", queue, handler).with_drain_timeout(Duration::from_secs(7));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (c, cancel) = (c.clone(), cancel.clone());
        async move { c.run(1, cancel).await }
    });
    c.queue().add(key("ns/hung"));
    advance(Duration::from_secs(1)).await;
    let t0 = Instant::now();
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert_eq!(Instant::now() - t0, Duration::from_secs(7));
    assert_eq!(
        c.handler().running.load(Ordering::SeqCst),
        0,
        "the hung sync was dropped"
    );
}
