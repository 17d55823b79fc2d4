//! Tutorial chapter 1, the workqueue alone (docs/tutorial/01-workqueue.md).
//!
//! Six short scenes, each printing what the queue does step by step: deduplication,
//! one worker per key, rate-limited retries, re-triggers during a backoff (the
//! coalescing limiter), priorities, and shutdown with drain. No API server: the queue
//! has no Kubernetes dependency. Everything runs on *paused* Tokio time, so the
//! backoffs take no real time and the output is the same on every run, to the
//! millisecond (the chapter's test compares it with the chapter).
//!
//! Mirrors client-go's util/workqueue: queue.go, delaying_queue.go,
//! rate_limiting_queue.go and default_rate_limiters.go, plus controller-runtime's
//! pkg/controller/priorityqueue.
//!
//! ```sh
//! cargo run -p kcr-workqueue --example tutorial_01_workqueue
//! ```

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;
use workqueue::{
    AddOpts, CoalescingRateLimiter, ItemExponentialFailureRateLimiter, ItemState, Queue,
    QueueConfig, RateLimiter, RateLimitingQueue, default_controller_rate_limiter, priority,
};

/// Prints the example's lines and keeps them, so the chapter's test can compare the
/// whole output with the chapter. Times are virtual: milliseconds since the scene
/// started, on the paused clock.
#[derive(Clone)]
pub struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    scene_start: Arc<Mutex<Instant>>,
}

impl Log {
    fn new() -> Self {
        Self {
            lines: Arc::new(Mutex::new(Vec::new())),
            scene_start: Arc::new(Mutex::new(Instant::now())),
        }
    }

    fn line(&self, line: String) {
        println!("{line}");
        self.lines.lock().push(line);
    }

    /// Starts a scene: a title, and the clock back at 0.
    fn scene(&self, title: &str) {
        *self.scene_start.lock() = Instant::now();
        if !self.lines.lock().is_empty() {
            self.line(String::new());
        }
        self.line(title.to_string());
    }

    /// A step, without a time.
    fn say(&self, what: impl AsRef<str>) {
        self.line(format!("  {}", what.as_ref()));
    }

    /// A step, with the virtual time since the scene started.
    fn at(&self, what: impl AsRef<str>) {
        let ms = self.scene_start.lock().elapsed().as_millis();
        self.line(format!("  [{ms:>5} ms] {}", what.as_ref()));
    }

    fn text(&self) -> String {
        self.lines.lock().join("\n") + "\n"
    }
}

/// Runs every scene and returns what was printed.
pub async fn run() -> String {
    let log = Log::new();
    dedup(&log).await;
    one_worker_per_key(&log).await;
    retries(&log).await;
    coalescing(&log).await;
    priorities(&log).await;
    drain(&log).await;
    log.text()
}

/// Keys: "namespace/name", as an informer's event handlers make them.
fn key(name: &str) -> String {
    format!("default/{name}")
}

/// A key waiting in line is queued once, however often it is added.
async fn dedup(log: &Log) {
    log.scene("1. dedup: a key waiting in line is queued once");
    let queue = Queue::new();
    for name in ["a", "b", "a", "a"] {
        queue.add(key(name));
        log.say(format!("add {} -> len {}", key(name), queue.len()));
    }
    while let Some(item) = queue.try_get() {
        log.say(format!("get -> {}", *item));
        // Dropping `item` calls `done`.
    }
}

/// Where `item` stands in `queue`, for printing.
fn state(queue: &Queue<String>, item: &str) -> String {
    match queue.state_of(&item.to_owned()) {
        Some(state) => format!("{state:?}"),
        None => "unknown".to_string(),
    }
}

/// A key added while a worker holds it is marked dirty and waits for `done`: two
/// workers never hold the same key, and the change that arrived mid-sync is not lost.
async fn one_worker_per_key(log: &Log) {
    log.scene("2. one worker per key: a key added while it is processed waits for done");
    let queue = Queue::new();
    let a = key("a");
    queue.add(a.clone());
    let Some(held) = queue.get().await else {
        return log.say("the queue shut down");
    };
    log.say(format!(
        "worker 1: get -> {}, state {}",
        *held,
        state(&queue, &a)
    ));
    queue.add(a.clone());
    log.say(format!(
        "add {a} while worker 1 holds it -> state {}, len {}",
        state(&queue, &a),
        queue.len()
    ));
    let second = queue.try_get().map(|item| item.to_string());
    log.say(format!(
        "worker 2: try_get -> {}",
        second
            .as_deref()
            .unwrap_or("nothing (not handed out twice)")
    ));
    held.done();
    log.say(format!(
        "worker 1: done -> state {}, len {}",
        state(&queue, &a),
        queue.len()
    ));
    if let Some(item) = queue.try_get() {
        log.say(format!(
            "worker 2: get -> {} (the add made during the sync is seen)",
            *item
        ));
    }
}

/// A failing key is retried with per-key exponential backoff; success forgets it.
async fn retries(log: &Log) {
    log.scene("3. rate-limited retries: add_rate_limited backs off, forget resets");
    // client-go's DefaultTypedControllerRateLimiter: max(5 ms * 2^failures, 10 qps).
    let queue = RateLimitingQueue::with_default_rate_limiter("tutorial");
    let flaky = key("flaky");
    queue.add(flaky.clone());
    for attempt in 1..=5 {
        let Some(item) = queue.get().await else {
            return log.say("the queue shut down");
        };
        if attempt < 5 {
            queue.add_rate_limited(&item);
            log.at(format!(
                "sync {} attempt {attempt} failed -> add_rate_limited (requeues {})",
                *item,
                queue.num_requeues(&item)
            ));
        } else {
            queue.forget(&item);
            log.at(format!(
                "sync {} attempt {attempt} succeeded -> forget (requeues {})",
                *item,
                queue.num_requeues(&item)
            ));
        }
        // `item` is dropped here: `done`.
    }
    // A periodic refresh: add_after parks the key without counting a failure.
    let refresh = key("refresh");
    queue.add_after(refresh.clone(), Duration::from_secs(30));
    log.at(format!(
        "add_after({refresh}, 30 s) -> waiting {}, in line {}",
        queue.waiting_len(),
        queue.len()
    ));
    if let Some(item) = queue.get().await {
        log.at(format!("get -> {}", *item));
    }
    queue.shut_down();
}

/// Re-triggers during a pending backoff: client-go's per-item limiter counts every
/// call as a failure (kubernetes/kubernetes issue 132805); the coalescing limiter
/// answers with the time left.
async fn coalescing(log: &Log) {
    log.scene("4. re-triggers during a backoff: client-go escalates, coalescing does not");
    let base = Duration::from_millis(5);
    let cap = Duration::from_secs(1000);
    let client_go = ItemExponentialFailureRateLimiter::new(base, cap);
    let coalescing = CoalescingRateLimiter::new(ItemExponentialFailureRateLimiter::new(base, cap));
    let k = key("busy");
    log.say(format!(
        "{k} fails once, then 4 more events rate-limit it again, 1 ms apart"
    ));
    let (mut go_delays, mut co_delays) = (Vec::new(), Vec::new());
    for i in 0..5 {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        go_delays.push(format!("{:?}", client_go.when(&k)));
        co_delays.push(format!("{:?}", coalescing.when(&k)));
    }
    log.say(format!(
        "client-go:  delays {} ({} failures counted)",
        go_delays.join(", "),
        client_go.num_requeues(&k)
    ));
    log.say(format!(
        "coalescing: delays {} ({} failure counted)",
        co_delays.join(", "),
        coalescing.num_requeues(&k)
    ));
    // The backoff runs out, the retry fails again: the next real failure.
    tokio::time::sleep(Duration::from_millis(1)).await;
    log.at(format!(
        "the retry fails: client-go waits {:?}, coalescing {:?}",
        client_go.when(&k),
        coalescing.when(&k)
    ));
}

/// controller-runtime's priority queue: the initial list at LOW goes behind a real
/// change; with `with_fifo(true)` the same adds give client-go's order. A priority is
/// given with `add_with_opts` (controller-runtime's `AddWithOpts`), the one add method
/// with options; `add` is client-go's `Add`, at the default priority.
async fn priorities(log: &Log) {
    log.scene("5. priorities: the initial list waits behind a real change");
    for fifo in [false, true] {
        let queue = RateLimitingQueue::with_config(
            default_controller_rate_limiter(),
            QueueConfig::default().with_fifo(fifo),
        );
        let low = AddOpts {
            priority: priority::LOW,
            ..AddOpts::default()
        };
        for i in 0..5 {
            queue.add_with_opts(key(&format!("listed-{i}")), low);
        }
        queue.add(key("changed"));
        queue.add(key("listed-3"));
        let mut order = Vec::new();
        while let Some(item) = queue.try_get() {
            order.push(format!(
                "{} ({})",
                item.trim_start_matches("default/"),
                item.priority()
            ));
        }
        if fifo {
            log.say("with_fifo(true), client-go's FIFO (--fifo-queue), same adds:");
        } else {
            log.say("restart: add_with_opts(listed-0..4, priority LOW = -100)");
            log.say("then watch events: add(changed), add(listed-3) at DEFAULT = 0");
        }
        log.say(format!("  get order: {}", order.join(", ")));
    }
}

/// Shutdown with drain: no new keys, keys in line are still handed out, and the
/// call returns once nothing is in flight.
async fn drain(log: &Log) {
    log.scene("6. shutdown with drain: in-flight keys finish, then workers exit");
    let queue: Queue<String> = Queue::new();
    let (slow, next) = (key("slow"), key("next"));
    queue.add(slow.clone());
    queue.add(next.clone());
    let worker = tokio::spawn({
        let (queue, log) = (queue.clone(), log.clone());
        async move {
            while let Some(item) = queue.get().await {
                log.at(format!("worker: get -> {}, syncing for 50 ms", *item));
                tokio::time::sleep(Duration::from_millis(50)).await;
                log.at(format!("worker: done {}", *item));
            }
            log.at("worker: get -> None, the worker exits");
        }
    });
    // Let the worker take the first key.
    while queue.state_of(&slow) != Some(ItemState::Processing) {
        tokio::task::yield_now().await;
    }
    let drainer = tokio::spawn({
        let (queue, log) = (queue.clone(), log.clone());
        async move {
            log.at("shut_down_with_drain() called");
            queue.shut_down_with_drain().await;
            log.at("shut_down_with_drain() returned: nothing in flight");
        }
    });
    while !queue.shutting_down() {
        tokio::task::yield_now().await;
    }
    queue.add(key("late"));
    log.at(format!(
        "add {} after shutdown -> ignored, len {} ({next} still in line)",
        key("late"),
        queue.len()
    ));
    for task in [worker, drainer] {
        if let Err(e) = task.await {
            log.say(format!("a task failed: {e}"));
        }
    }
}

#[tokio::main(flavor = "current_thread", start_paused = true)]
async fn main() {
    run().await;
}
