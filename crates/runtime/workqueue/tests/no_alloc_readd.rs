//! "No allocation per re-add of an already-queued key" (the workqueue benchmark
//! issue), checked with a counting global allocator; likewise no allocation per
//! add + get + done cycle once the queue's storage is warm (freed slots are reused).
//!
//! The allocator counts only while the current thread's `COUNTING` flag is set, so
//! the test harness (and other tests running in parallel on other threads) cannot
//! disturb the count: the result is deterministic.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::time::Duration;

use workqueue::{DelayingQueue, ItemState, Queue};

struct CountingAllocator;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn note_allocation() {
    // `try_with`: the thread-locals may already be gone while a thread exits.
    let _ = COUNTING.try_with(|counting| {
        if counting.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counting
// touches only const-initialized thread-locals without destructors (no allocation).
// A global allocator can only be written with `unsafe`: the one item allowed it.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Runs `f` and returns how many allocations (alloc, alloc_zeroed, realloc) it made
/// on this thread.
fn allocations_in(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.with(|n| n.get())
}

const KEYS: usize = 1_000;
const READDS: usize = 100;

fn keys() -> Vec<Arc<str>> {
    (0..KEYS)
        .map(|i| Arc::from(format!("ns-{}/name-{i}", i % 100)))
        .collect()
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the other tests against passing because nothing is counted.
    let n = allocations_in(|| {
        std::hint::black_box(Box::new(1u64));
        std::hint::black_box(vec![0u8; 100]);
    });
    assert_eq!(n, 2);
    // ...and the queue's own allocations: growing its map and FIFO for new keys.
    let queue: Queue<Arc<str>> = Queue::new();
    let keys = keys();
    let n = allocations_in(|| {
        for k in &keys {
            queue.add(k.clone());
        }
    });
    assert!(n > 0, "first adds grow the queue's storage");
}

#[test]
fn re_adding_queued_keys_does_not_allocate() {
    let queue: Queue<Arc<str>> = Queue::new();
    let keys = keys();
    for k in &keys {
        queue.add(k.clone());
    }
    assert_eq!(queue.len(), KEYS);

    let n = allocations_in(|| {
        for _ in 0..READDS {
            for k in &keys {
                queue.add(k.clone());
            }
        }
    });
    assert_eq!(
        n,
        0,
        "{} re-adds of queued keys allocated {n} times",
        KEYS * READDS
    );
    assert_eq!(queue.len(), KEYS, "re-adds are deduplicated");
}

#[test]
fn re_adding_queued_keys_by_reference_does_not_allocate() {
    let queue: Queue<String> = Queue::new();
    let keys: Vec<String> = keys().iter().map(|k| k.to_string()).collect();
    for k in &keys {
        queue.add(k);
    }
    // `String` keys: a clone would allocate, so this also shows that `add(&key)` of a
    // known key clones nothing.
    let n = allocations_in(|| {
        for _ in 0..READDS {
            for k in &keys {
                queue.add(k);
            }
        }
    });
    assert_eq!(n, 0, "add(&key) of queued String keys allocated {n} times");
    assert_eq!(queue.len(), KEYS);
}

#[test]
fn add_get_done_cycles_do_not_allocate_once_warm() {
    let queue: Queue<Arc<str>> = Queue::new();
    let keys = keys();
    let cycle = |queue: &Queue<Arc<str>>, k: &Arc<str>| {
        queue.add(k);
        queue.add(k.clone());
        queue.try_get().expect("queued").done();
    };
    // Warm up: the slots, index and FIFO reach their working size.
    for k in &keys {
        cycle(&queue, k);
    }
    // Every cycle stores a key, hands it out and frees it again: the freed slot is
    // reused, so nothing grows.
    let n = allocations_in(|| {
        for _ in 0..READDS {
            for k in &keys {
                cycle(&queue, k);
            }
        }
    });
    assert_eq!(
        n,
        0,
        "{} add+get+done cycles allocated {n} times",
        KEYS * READDS
    );
}

#[test]
fn re_adding_keys_being_processed_does_not_allocate() {
    let queue: Queue<Arc<str>> = Queue::new();
    let keys = keys();
    for k in &keys {
        queue.add(k.clone());
    }
    let held: Vec<_> = (0..KEYS)
        .map(|_| queue.try_get().expect("queued"))
        .collect();
    assert_eq!(queue.state_of(&keys[0]), Some(ItemState::Processing));

    // The first re-add marks each key dirty (Processing -> ProcessingDirty), the
    // others find it dirty already: none of them may allocate.
    let n = allocations_in(|| {
        for _ in 0..READDS {
            for k in &keys {
                queue.add(k.clone());
            }
        }
    });
    assert_eq!(
        n,
        0,
        "{} re-adds of keys being processed allocated {n} times",
        KEYS * READDS
    );
    assert_eq!(queue.state_of(&keys[0]), Some(ItemState::ProcessingDirty));
    assert_eq!(queue.len(), 0, "dirty keys wait for done");

    drop(held); // done: every dirty key goes back in line once
    assert_eq!(queue.len(), KEYS);
}

#[test]
fn re_adding_waiting_keys_with_add_after_does_not_allocate() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let queue: DelayingQueue<Arc<str>> = DelayingQueue::new();
        let keys = keys();
        for k in &keys {
            queue.add_after(k.clone(), Duration::from_secs(3600));
        }
        // Waiting already with an earlier (or the same) ready time: kept as is.
        let n = allocations_in(|| {
            for _ in 0..READDS {
                for k in &keys {
                    queue.add_after(k.clone(), Duration::from_secs(7200));
                    queue.add_after(k, Duration::from_secs(7200));
                }
            }
        });
        assert_eq!(
            n,
            0,
            "{} add_after re-adds of waiting keys allocated {n} times",
            KEYS * READDS
        );
        assert_eq!(queue.waiting_len(), KEYS);
        queue.shut_down();
    });
}
