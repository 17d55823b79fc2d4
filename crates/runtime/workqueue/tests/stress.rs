//! Concurrency stress: 8 workers, 100k adds over 1k keys, with random re-adds from
//! inside processing. Asserts the two promises a controller relies on:
//!
//! 1. no key is ever held by two workers at once;
//! 2. no lost update: for every key, a processing started after its last add.
//!
//! Both are checked with a global logical clock (an atomic counter): an adder takes a
//! ticket *before* calling `add`, a worker takes one *after* `get` returned.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use workqueue::Queue;

const KEYS: usize = 1_000;
const WORKERS: usize = 8;
const PRODUCERS: usize = 2;
const PRODUCER_ADDS: usize = 40_000; // per producer
const RE_ADDS: usize = 20_000; // from inside workers
const TOTAL_ADDS: usize = PRODUCERS * PRODUCER_ADDS + RE_ADDS;

struct Book {
    clock: AtomicU64,
    in_flight: Vec<AtomicBool>,
    last_add: Vec<AtomicU64>,
    last_start: Vec<AtomicU64>,
    double_holds: AtomicUsize,
    re_add_budget: AtomicUsize,
    adds_done: AtomicUsize,
    processed: AtomicUsize,
}

impl Book {
    fn add(&self, q: &Queue<usize>, key: usize) {
        let ticket = self.clock.fetch_add(1, SeqCst);
        self.last_add[key].fetch_max(ticket, SeqCst);
        q.add(key);
        self.adds_done.fetch_add(1, SeqCst);
    }

    fn take_re_add(&self) -> bool {
        self.re_add_budget
            .fetch_update(SeqCst, SeqCst, |b| b.checked_sub(1))
            .is_ok()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_never_share_a_key_and_never_lose_an_update() {
    let q = Queue::<usize>::new();
    let book = Arc::new(Book {
        clock: AtomicU64::new(1),
        in_flight: (0..KEYS).map(|_| AtomicBool::new(false)).collect(),
        last_add: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        last_start: (0..KEYS).map(|_| AtomicU64::new(0)).collect(),
        double_holds: AtomicUsize::new(0),
        re_add_budget: AtomicUsize::new(RE_ADDS),
        adds_done: AtomicUsize::new(0),
        processed: AtomicUsize::new(0),
    });

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (q, book) = (q.clone(), book.clone());
            tokio::spawn(async move {
                let mut rng = SmallRng::seed_from_u64(1000 + w as u64);
                while let Some(item) = q.get().await {
                    let key = *item;
                    let start = book.clock.fetch_add(1, SeqCst);
                    book.last_start[key].fetch_max(start, SeqCst);
                    if book.in_flight[key].swap(true, SeqCst) {
                        book.double_holds.fetch_add(1, SeqCst);
                    }
                    // "Work": sometimes yield so other workers interleave.
                    if rng.random_bool(0.3) {
                        tokio::task::yield_now().await;
                    }
                    // Re-add this very key while still holding it (while the budget
                    // lasts: this also keeps work flowing until every re-add is spent),
                    // and sometimes a random other key.
                    if book.take_re_add() {
                        book.add(&q, key);
                    }
                    if rng.random_bool(0.5) && book.take_re_add() {
                        book.add(&q, rng.random_range(0..KEYS));
                    }
                    book.in_flight[key].store(false, SeqCst);
                    book.processed.fetch_add(1, SeqCst);
                    item.done();
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (q, book) = (q.clone(), book.clone());
            tokio::spawn(async move {
                let mut rng = SmallRng::seed_from_u64(p as u64);
                for i in 0..PRODUCER_ADDS {
                    book.add(&q, rng.random_range(0..KEYS));
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    // Workers spend the re-add budget while processing; every re-add of a held key
    // guarantees another processing, so the budget always runs out. Wait for that.
    while book.adds_done.load(SeqCst) < TOTAL_ADDS {
        tokio::task::yield_now().await;
    }
    let adds = book.adds_done.load(SeqCst);
    // Every add has returned: shutting down now loses none of them, because items
    // already queued (or dirty while held) are still handed out after shutdown.
    q.shut_down();
    for w in workers {
        w.await.unwrap();
    }

    assert_eq!(book.double_holds.load(SeqCst), 0, "a key was held twice");
    let mut lost = Vec::new();
    for key in 0..KEYS {
        let (added, started) = (
            book.last_add[key].load(SeqCst),
            book.last_start[key].load(SeqCst),
        );
        if added > 0 && started <= added {
            lost.push((key, added, started));
        }
    }
    assert!(
        lost.is_empty(),
        "keys whose last add was never processed: {lost:?}"
    );
    assert_eq!(adds, TOTAL_ADDS);
    let processed = book.processed.load(SeqCst);
    assert!(
        processed <= adds,
        "deduplication: never more processings ({processed}) than adds ({adds})"
    );
    assert!(q.is_empty());
    println!("adds: {adds}, processings: {processed}");
}
