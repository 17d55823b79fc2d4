//! What every `add` method takes: an item by value or by reference.
//!
//! client-go's `Add(item T)` copies `item` into the queue's maps on every call. Most
//! adds in a controller are *repeats*: a key already waiting, re-added by the next
//! event. Taking the item by reference lets the queue clone it only when it stores it,
//! so a repeated add costs no clone at all (for `String` keys, no allocation; for
//! `Arc<str>` keys, no reference-count traffic). Taking it by value lets a caller that
//! owns a fresh key move it in without a clone.
//!
//! Rather than two methods per verb (`add` and `add_ref`, `add_after` and
//! `add_after_ref`, ...), each `add` method takes `impl IntoItem<T>`: `T`, `&T`, or a
//! worker's `&WorkItem<T>` / `&OwnedWorkItem<T>`. The choice is made at compile time
//! (no branch, no allocation on the hot path).
//!
//! ```
//! use workqueue::Queue;
//!
//! let queue: Queue<String> = Queue::new();
//! queue.add("default/a".to_string()); // moved in
//! let key = "default/a".to_string();
//! queue.add(&key); // already waiting: deduplicated, nothing cloned
//! assert_eq!(queue.len(), 1);
//! ```

use std::borrow::Cow;

use crate::{Item, OwnedWorkItem, WorkItem};

/// An item handed to an `add` method: `T` (moved in if the queue stores it) or a
/// reference to one (cloned only if the queue stores it). See the [module
/// docs](self) for why.
pub trait IntoItem<'a, T: Item> {
    /// The item, owned or borrowed.
    fn into_item(self) -> Cow<'a, T>;
}

impl<'a, T: Item> IntoItem<'a, T> for T {
    #[inline]
    fn into_item(self) -> Cow<'a, T> {
        Cow::Owned(self)
    }
}

impl<'a, T: Item> IntoItem<'a, T> for &'a T {
    #[inline]
    fn into_item(self) -> Cow<'a, T> {
        Cow::Borrowed(self)
    }
}

/// A worker re-adding the item it holds (`queue.add_rate_limited(&item)`).
impl<'a, T: Item> IntoItem<'a, T> for &'a WorkItem<'_, T> {
    #[inline]
    fn into_item(self) -> Cow<'a, T> {
        Cow::Borrowed(&**self)
    }
}

/// A task re-adding the item it holds, as for [`WorkItem`].
impl<'a, T: Item> IntoItem<'a, T> for &'a OwnedWorkItem<T> {
    #[inline]
    fn into_item(self) -> Cow<'a, T> {
        Cow::Borrowed(&**self)
    }
}

/// An item already in hand as a `Cow` (the queues pass it on between themselves).
impl<'a, T: Item> IntoItem<'a, T> for Cow<'a, T> {
    #[inline]
    fn into_item(self) -> Cow<'a, T> {
        self
    }
}
