//! The synchronization primitives under the spin lock and the slot arena, from std,
//! or from [loom](https://docs.rs/loom) when the crate is built with `--cfg loom`.
//!
//! loom is a model checker: inside `loom::model` it runs a few threads under every
//! interleaving (and every outcome the C++/Rust memory model allows for their atomic
//! operations), and fails when an `UnsafeCell` is accessed by two threads without a
//! happens-before order between them. It can only see the operations it simulates,
//! so the code whose `unsafe` rests on an ordering argument takes its atomics and
//! cells from here. The model tests are in `src/loom_models.rs`; how to run them is
//! in docs/testing.md ("Loom").
//!
//! Without `--cfg loom` every item is std's own, or a wrapper that compiles to the
//! same code (`UnsafeCell::with` is an inlined call of its closure): the queues are
//! unchanged in behaviour and speed.

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{AtomicBool, Ordering},
    thread::yield_now,
};

/// Sleeps a few microseconds (the kernel's timer slack, 50 us by default, makes it
/// longer): how a spin-lock waiter lets its CPU go once spinning and yielding have
/// not got it the lock (`spin_lock`, "When it spins").
#[cfg(not(loom))]
pub(crate) fn sleep_briefly() {
    std::thread::sleep(std::time::Duration::from_micros(5));
}

/// Under loom, a yield to the model's scheduler: loom has no clock, and a sleep is
/// one more way of waiting that changes no ordering.
#[cfg(loom)]
pub(crate) fn sleep_briefly() {
    loom::thread::yield_now();
}

#[cfg(loom)]
pub(crate) use loom::{
    cell::UnsafeCell,
    hint::spin_loop,
    sync::atomic::{AtomicBool, Ordering},
    thread::yield_now,
};

/// `std::cell::UnsafeCell` with loom's interface: the pointer is only handed to a
/// closure, so that under loom the closure's run is the tracked access.
#[cfg(not(loom))]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// A cell holding `value`.
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a pointer for reading the value.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Runs `f` with a pointer for writing the value.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
