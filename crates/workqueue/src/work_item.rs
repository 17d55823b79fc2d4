//! The guard `get` returns: client-go's `defer queue.Done(key)`, made impossible to
//! forget.
//!
//! In client-go every worker must call `Done(key)` when it is finished with a key,
//! whatever happened; forgetting it (an early return, a panic) leaves the key in the
//! processing set forever, and it is never processed again. [`WorkItem`] calls
//! [`Queue::done`] when it is dropped, so the compiler and the unwinder take care of
//! it. Learners who want to see the explicit call can still write `item.done()`, or
//! take the key out with [`WorkItem::into_inner`] and call `queue.done(&key)`.

use std::fmt;
use std::ops::Deref;

use crate::queue::{Item, Queue};

/// An item handed out by [`Queue::get`], held until processing ends.
///
/// Dereferences to the item. Dropping it calls [`Queue::done`], so the item can never
/// be left in the processing set by a forgotten `done`, an early `return` or a panic.
/// Call [`done`](Self::done) to make the end of processing explicit, as client-go
/// code does with `defer queue.Done(key)`.
#[must_use = "dropping a WorkItem at once marks it done without processing it"]
pub struct WorkItem<T: Item> {
    item: Option<T>,
    queue: Queue<T>,
}

impl<T: Item> WorkItem<T> {
    pub(crate) fn new(item: T, queue: Queue<T>) -> Self {
        Self {
            item: Some(item),
            queue,
        }
    }

    /// The item.
    pub fn item(&self) -> &T {
        self.item.as_ref().expect("item is present until drop")
    }

    /// Marks the item done now (the same as dropping the guard, but says so).
    pub fn done(self) {
        drop(self);
    }

    /// Takes the item out of the guard **without** marking it done: the caller must
    /// call [`Queue::done`] for it, exactly like client-go code.
    pub fn into_inner(mut self) -> T {
        self.item.take().expect("item is present until drop")
    }
}

impl<T: Item> Deref for WorkItem<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.item()
    }
}

impl<T: Item + fmt::Debug> fmt::Debug for WorkItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkItem").field(&self.item).finish()
    }
}

impl<T: Item> Drop for WorkItem<T> {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            self.queue.done(&item);
        }
    }
}
