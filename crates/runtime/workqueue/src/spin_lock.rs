//! The lock behind the queues: a test-and-test-and-set spin lock whose unlock is a
//! plain store.
//!
//! # Why not `parking_lot::Mutex`?
//!
//! An add + get + done cycle takes the queue's lock three times, for a few dozen
//! instructions each. What such a cycle costs is mostly its atomic read-modify-write
//! instructions (about 4-8 ns each on the 2-vCPU machines the benchmarks run on, as
//! much as a hundred ordinary instructions), and a parking mutex needs two per
//! critical section: one to lock and one to unlock, because the unlock must learn
//! atomically whether a thread went to sleep waiting for the lock. This lock never
//! puts a thread to sleep, so its unlock is a plain release store, and a critical
//! section costs one read-modify-write. Measured (`examples/cycle_cost.rs`, fastest
//! of 2,000 batches): a single-worker cycle 61 -> 53 ns, two producers + two workers
//! on two threads 75 -> 65 ns per item (median of 200 runs 79 -> 69 ns).
//!
//! # When it spins
//!
//! Only while another thread holds the lock, which the queues do for short, bounded
//! work: a hash probe, a FIFO push or pop, a state change. The rare long holds are a
//! table or FIFO growing (amortized) and the metrics hooks, when a queue has metrics.
//! A waiter spins with exponential backoff for about a hundred `spin_loop` hints,
//! then yields its thread to the OS scheduler a few times (a holder preempted on this
//! CPU gets it back), then sleeps a few microseconds between attempts. Nothing is
//! ever awaited or dropped (item drops run user code) while the lock is held.
//!
//! Why sleep at the end: on a busy machine the holder is most often preempted on the
//! *other* CPU, queued behind another process. A waiter that only yields keeps its own
//! CPU busy (a yield with nothing else to run returns at once) until the holder's CPU
//! comes back to it, milliseconds later; a sleeping waiter leaves its CPU to the rest
//! of the machine meanwhile. Measured with the machine shared with a control plane
//! (`examples/cycle_cost.rs two_by_two 1000000`, 10 interleaved runs each, ns per
//! item): yielding only, median 232 (168-647), 43,000-285,000 `sched_yield` calls a
//! run; with the sleep, median 153 (139-320), 5,000-9,000. Unloaded, a wait never
//! gets that far, so nothing changes there. The unlock stays a plain store: a sleeper
//! is never woken, it wakes by itself and tries again.
//!
//! # Checked by a model checker
//!
//! Mutual exclusion rests on two orderings: the `Acquire` of a successful lock and
//! the `Release` of the unlock. The loom models in `src/loom_models.rs`
//! (`spin_lock_*`) run two and three threads through the lock under every
//! interleaving loom explores and fail if two critical sections could overlap or one
//! could miss the writes of the one before (docs/testing.md, "Loom").

#[cfg(not(loom))]
use parking_lot::lock_api;

use crate::sync::{AtomicBool, Ordering, sleep_briefly, spin_loop, yield_now};

/// The raw lock: `true` while held.
pub(crate) struct RawSpinLock(AtomicBool);

/// Spin rounds (each twice as long as the last) before a waiter starts yielding.
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 6;
/// Yields to the OS scheduler, after the spin rounds, before a waiter starts sleeping
/// between attempts (see "When it spins" in the [module docs](self)).
const YIELD_ROUNDS: u32 = 4;

/// Under loom a `spin_loop` hint is a yield to the model's scheduler, and 63 of them
/// per wait make every model exceed loom's limit of branches per execution. One round
/// still runs both ways of waiting.
#[cfg(loom)]
const SPIN_ROUNDS: u32 = 1;

impl RawSpinLock {
    /// Takes the lock if it is free: one compare-exchange.
    #[inline]
    fn try_acquire(&self) -> bool {
        self.0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock, waiting for it if needed.
    #[inline]
    fn acquire(&self) {
        if !self.try_acquire() {
            self.acquire_contended();
        }
    }

    #[cold]
    fn acquire_contended(&self) {
        let mut round = 0;
        loop {
            // Wait with plain loads (no cache-line ping-pong), then try again.
            while self.0.load(Ordering::Relaxed) {
                if round < SPIN_ROUNDS {
                    for _ in 0..1 << round {
                        spin_loop();
                    }
                    round += 1;
                } else if round < SPIN_ROUNDS + YIELD_ROUNDS {
                    yield_now();
                    round += 1;
                } else {
                    sleep_briefly();
                }
            }
            if self.try_acquire() {
                return;
            }
        }
    }

    /// Lets the lock go: a plain release store.
    ///
    /// # Safety
    ///
    /// The caller holds the lock (took it with `acquire` or `try_acquire`).
    #[inline]
    unsafe fn release(&self) {
        self.0.store(false, Ordering::Release);
    }
}

// SAFETY: mutual exclusion: the lock is taken only by a successful
// `false -> true` compare-exchange (Acquire) and released by storing `false`
// (Release), so every critical section happens-after the previous one. Checked by
// the loom models `spin_lock_excludes_two_threads` and
// `spin_lock_excludes_three_threads` (src/loom_models.rs) and the unit test
// `excludes_concurrent_critical_sections` below.
#[cfg(not(loom))]
unsafe impl lock_api::RawMutex for RawSpinLock {
    // A `const` item is the `lock_api` way to spell the initial state.
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: Self = RawSpinLock(AtomicBool::new(false));
    type GuardMarker = lock_api::GuardSend;

    #[inline]
    fn lock(&self) {
        self.acquire();
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.try_acquire()
    }

    #[inline]
    unsafe fn unlock(&self) {
        // SAFETY: `lock_api` calls `unlock` only for a lock its guard holds (the
        // contract of `RawMutex::unlock`), as the same tests check.
        unsafe { self.release() }
    }
}

/// A mutex on [`RawSpinLock`].
#[cfg(not(loom))]
pub(crate) type Mutex<T> = lock_api::Mutex<RawSpinLock, T>;
/// Its guard.
#[cfg(not(loom))]
pub(crate) type MutexGuard<'a, T> = lock_api::MutexGuard<'a, RawSpinLock, T>;

#[cfg(loom)]
pub(crate) use loom_mutex::{Mutex, MutexGuard};

/// Under loom, the mutex `lock_api` would make, written out: `lock_api` needs the
/// initial state as a `const` (`RawMutex::INIT`), and loom's atomics cannot be made
/// in one. Same [`RawSpinLock`], same calls; the data lives in a loom `UnsafeCell`
/// held for writing from `lock` to unlock, so that loom fails on any access to it
/// that the lock does not order.
#[cfg(loom)]
mod loom_mutex {
    use std::mem::ManuallyDrop;
    use std::ops::{Deref, DerefMut};

    use loom::cell::{MutPtr, UnsafeCell};

    use super::RawSpinLock;
    use crate::sync::AtomicBool;

    pub(crate) struct Mutex<T> {
        raw: RawSpinLock,
        data: UnsafeCell<T>,
    }

    // SAFETY: as for `lock_api::Mutex`: the lock hands the data to one thread at a
    // time (what the loom models check).
    unsafe impl<T: Send> Sync for Mutex<T> {}

    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Self {
                raw: RawSpinLock(AtomicBool::new(false)),
                data: UnsafeCell::new(value),
            }
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.raw.acquire();
            MutexGuard {
                mutex: self,
                data: ManuallyDrop::new(self.data.get_mut()),
            }
        }
    }

    pub(crate) struct MutexGuard<'a, T> {
        mutex: &'a Mutex<T>,
        /// loom's record of the write access, from `lock` until the guard drops.
        data: ManuallyDrop<MutPtr<T>>,
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: the guard holds the lock, so no other reference to the data
            // exists outside it; the borrow is bounded by the guard's. Run by every
            // loom model (src/loom_models.rs), which also checks the exclusion.
            self.data.with(|p| unsafe { &*p })
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: as above, and `&mut self` excludes the guard's other borrows.
            self.data.with(|p| unsafe { &mut *p })
        }
    }

    impl<T> Drop for MutexGuard<'_, T> {
        fn drop(&mut self) {
            // SAFETY: dropped once, here; the access ends before the lock is let go
            // (every loom model).
            unsafe { ManuallyDrop::drop(&mut self.data) };
            // SAFETY: the guard holds the lock (every loom model).
            unsafe { self.mutex.raw.release() };
        }
    }
}

// Real threads (loom's types panic outside a model: src/loom_models.rs has its own).
#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn excludes_concurrent_critical_sections() {
        let counter = Arc::new(Mutex::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let counter = Arc::clone(&counter);
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        // A non-atomic read-modify-write: loses updates without
                        // mutual exclusion.
                        let mut guard = counter.lock();
                        let v = *guard;
                        std::hint::black_box(&v);
                        *guard = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*counter.lock(), 400_000);
    }
}
