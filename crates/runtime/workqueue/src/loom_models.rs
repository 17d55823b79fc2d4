//! Model tests: the spin lock and the slot arena under every interleaving that loom
//! explores (a few threads, a bounded number of preemptions).
//!
//! Built only with `--cfg loom`, where `crate::sync` hands out loom's atomics and
//! cells; run them with (docs/testing.md, "Loom"):
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!   cargo test -p kcr-workqueue --lib loom_models -- --nocapture
//! ```
//!
//! What they check, beyond their assertions: loom fails a model when a cell is
//! written while another thread reads or writes it without a happens-before order
//! between the two. Under loom the queue's state lives in a loom cell held for
//! writing from `lock` to unlock (`spin_lock`), and each stored item in a loom cell
//! that a worker's guard reads (`slots`, `work_item`). So a lock that let two
//! critical sections overlap, or one that missed the previous one's writes (an
//! unlock weaker than `Release`, a lock weaker than `Acquire`), fails here; so does a
//! slot freed or refilled while a worker may still be reading its item.
//!
//! Only the model tests can run in a `--cfg loom` build: loom's types panic outside
//! `loom::model`, which is why the command above filters on `loom_models`.

use std::sync::atomic::Ordering::SeqCst;

use loom::sync::Arc;
use loom::thread;

use crate::Queue;
use crate::spin_lock::Mutex;

/// The controllers' key type; it takes `item_eq`'s pointer shortcut.
type Key = std::sync::Arc<str>;

/// Runs `f` under loom and prints how many executions it explored (shown with
/// `--nocapture`). `bound` caps the preemptions per execution (`None`: every
/// interleaving); `LOOM_MAX_PREEMPTIONS` can lower it, not raise it.
fn model(bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = match (builder.preemption_bound, bound) {
        (Some(env), Some(bound)) => Some(env.min(bound)),
        (env, bound) => env.or(bound),
    };
    let preemptions = builder.preemption_bound;
    let counted = std::sync::Arc::clone(&executions);
    builder.check(move || {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f();
    });
    let executions = executions.load(std::sync::atomic::Ordering::Relaxed);
    match preemptions {
        Some(n) => println!("{executions} executions (at most {n} preemptions each)"),
        None => println!("{executions} executions (every interleaving)"),
    }
}

/// Two threads: loom explores every interleaving (measured: 17 executions for the
/// lock, about 1,300 and 18,600 for the queue models: 8 s in all in the test profile,
/// under a second in release).
const EXHAUSTIVE: Option<usize> = None;

/// Three threads, of which two may wait for the lock: one preemption. From two on,
/// loom fails on its limit of branches per execution (raising it to 20,000 did not
/// help): it explores schedules in which the waiters keep spinning and yielding to
/// each other while the holder never runs, a livelock no real scheduler produces.
const THREE_THREADS: Option<usize> = Some(1);

/// Adds one to the counter the mutex guards: a read, then a write, in one critical
/// section (lost updates without mutual exclusion).
fn increment(counter: &Mutex<usize>) {
    let mut guard = counter.lock();
    let seen = *guard;
    *guard = seen + 1;
}

#[test]
fn spin_lock_excludes_two_threads() {
    model(EXHAUSTIVE, || {
        let counter = Arc::new(Mutex::new(0));
        let other = {
            let counter = Arc::clone(&counter);
            thread::spawn(move || increment(&counter))
        };
        increment(&counter);
        other.join().expect("no panic");
        assert_eq!(*counter.lock(), 2);
    });
}

#[test]
fn spin_lock_excludes_three_threads() {
    model(THREE_THREADS, || {
        let counter = Arc::new(Mutex::new(0));
        let others: Vec<_> = (0..2)
            .map(|_| {
                let counter = Arc::clone(&counter);
                thread::spawn(move || increment(&counter))
            })
            .collect();
        increment(&counter);
        for other in others {
            other.join().expect("no panic");
        }
        assert_eq!(*counter.lock(), 3);
    });
}

/// Hands out and ends every item in line; returns them in order.
fn drain(queue: &Queue<Key>) -> Vec<String> {
    let mut items = Vec::new();
    while let Some(item) = queue.try_get() {
        items.push(item.to_string());
    }
    items
}

/// A worker reads its item through the guard's pointer into the slot while another
/// thread ends that processing by key (`Queue::done`, which must leave the slot to
/// the guard), adds the item again (a new slot, or a refill of a freed one) and adds
/// another (a slot handed out from the same chunk).
#[test]
fn worker_reads_its_item_while_another_ends_and_re_adds_it() {
    model(EXHAUSTIVE, || {
        let a = Key::from("ns/a");
        let b = Key::from("ns/b");
        let queue = Queue::new();
        queue.add(a.clone());
        let worker = {
            let queue = queue.clone();
            // Reads the item through the guard, then drops the guard: the end of this
            // processing if `done` has not ended it, and the slot's release if
            // `done` has already unindexed it.
            thread::spawn(move || queue.try_get().map(|item| item.to_string()))
        };
        queue.done(&a);
        queue.add(a.clone());
        queue.add(b.clone());
        // "ns/a" is first in line whenever the worker looks.
        assert_eq!(worker.join().expect("no panic").as_deref(), Some("ns/a"));
        // "ns/a" is in line again if one of its adds came while the worker held it
        // (or after `done` ended that processing); "ns/b" is in line once.
        let rest = drain(&queue);
        assert_eq!(rest.iter().filter(|i| *i == "ns/b").count(), 1, "{rest:?}");
        assert!(
            rest.iter().filter(|i| *i == "ns/a").count() <= 1,
            "{rest:?}"
        );
        assert_eq!(queue.state_of(&a), None);
        assert_eq!(queue.state_of(&b), None);
    });
}

/// An `OwnedWorkItem` moved to another thread is read there and taken out with
/// `into_inner` (which drops its queue handle in place), then ended by key; the
/// first thread meanwhile adds the item again (dirty while processing) and adds
/// another.
#[test]
fn owned_work_item_read_on_another_thread() {
    model(EXHAUSTIVE, || {
        let a = Key::from("ns/a");
        let b = Key::from("ns/b");
        let queue = Queue::new();
        queue.add(a.clone());
        let owned = queue.try_get().expect("queued").into_owned();
        let worker = {
            let queue = queue.clone();
            thread::spawn(move || {
                assert_eq!(&**owned, "ns/a");
                let item = owned.into_inner();
                queue.done(&item);
            })
        };
        queue.add(a.clone());
        queue.add(b.clone());
        worker.join().expect("no panic");
        // The re-add of "ns/a" came during its processing or after it: in line
        // once either way, and "ns/b" behind or before it.
        let mut rest = drain(&queue);
        rest.sort();
        assert_eq!(rest, ["ns/a", "ns/b"]);
        assert_eq!(queue.state_of(&a), None);
    });
}

/// Two workers and a producer: the queue's promise that two workers never hold one
/// item at once, with the item added again while one holds it (it goes back in line
/// when that worker is done, and the other worker may take it then).
#[test]
fn two_workers_never_hold_one_item_at_once() {
    model(THREE_THREADS, || {
        let a = Key::from("ns/a");
        let queue = Queue::new();
        queue.add(a.clone());
        let held = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (queue, held) = (queue.clone(), Arc::clone(&held));
                thread::spawn(move || {
                    let Some(item) = queue.try_get() else {
                        return 0;
                    };
                    assert!(!held.swap(true, SeqCst), "held by two workers");
                    assert_eq!(&**item, "ns/a");
                    held.store(false, SeqCst);
                    1
                })
            })
            .collect();
        queue.add(a.clone());
        let got: usize = workers
            .into_iter()
            .map(|w| w.join().expect("no panic"))
            .sum();
        // Handed out once or twice (twice if the re-add came during a processing);
        // whatever is left is in line once.
        let rest = drain(&queue);
        assert!(rest.len() <= 1, "{rest:?}");
        assert!((1..=2).contains(&(got + rest.len())), "{got} + {rest:?}");
    });
}
