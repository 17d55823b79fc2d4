//! What the add methods take: the item by value **or** by reference.
//!
//! In Go, `queue.Add(key)` copies a string header (a pointer and a length): the
//! caller keeps its key, and nothing is allocated or counted. In Rust a `String` key
//! moved into `add` is gone from the caller, and a clone to keep one costs an
//! allocation (an atomic increment for `Arc<str>`). Most adds of a busy queue are
//! duplicates (the key is already waiting) or requeues of a key a worker holds by
//! reference, and the queue keeps only one copy of each key, so the cheapest add
//! depends on who holds the key:
//!
//! * a key built for this add (an event handler computing `"namespace/name"`) is
//!   moved in: stored as it is, or dropped if the key is already known;
//! * a key the caller keeps (a worker's [`WorkItem`], a key list) is lent: the queue
//!   clones it only when it stores it, never for a duplicate.
//!
//! So every add method ([`Queue::add`](crate::Queue::add),
//! [`DelayingQueue::add_after`](crate::DelayingQueue::add_after),
//! [`RateLimitingQueue::add_rate_limited`](crate::RateLimitingQueue::add_rate_limited),
//! [`RateLimitingQueue::add_with_opts`](crate::RateLimitingQueue::add_with_opts))
//! takes `impl IntoItem<T>`: a `T`, a `&T`, or a `&`[`WorkItem`] /
//! `&`[`OwnedWorkItem`] of the same queue. One method per Go call, no `_ref` twin.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use workqueue::Queue;
//!
//! let queue: Queue<String> = Queue::new();
//! queue.add("default/foo".to_string()); // by value: moved into the queue
//! let key = "default/foo".to_string();
//! queue.add(&key); // by reference: already waiting, so nothing is cloned
//! assert_eq!(queue.len(), 1);
//!
//! let item = queue.get().await.unwrap();
//! queue.add(&item); // a worker's item: marked dirty, not cloned (stored already)
//! # }
//! ```

use std::borrow::Cow;

use crate::queue::Item;
use crate::work_item::{OwnedWorkItem, WorkItem};

/// An item handed to an add method, by value (`T`) or by reference (`&T`, `&WorkItem<T>`,
/// `&OwnedWorkItem<T>`): see the [module docs](self) for why both.
///
/// Implemented for those four; the queue turns it into a [`Cow`] and calls
/// [`Cow::into_owned`] only when it stores the item.
pub trait IntoItem<T: Item> {
    /// The item, borrowed (for as long as `self` lives) or owned.
    fn into_item<'a>(self) -> Cow<'a, T>
    where
        Self: 'a;
}

impl<T: Item> IntoItem<T> for T {
    #[inline]
    fn into_item<'a>(self) -> Cow<'a, T>
    where
        Self: 'a,
    {
        Cow::Owned(self)
    }
}

impl<T: Item> IntoItem<T> for &T {
    #[inline]
    fn into_item<'a>(self) -> Cow<'a, T>
    where
        Self: 'a,
    {
        Cow::Borrowed(self)
    }
}

impl<T: Item> IntoItem<T> for &WorkItem<'_, T> {
    #[inline]
    fn into_item<'a>(self) -> Cow<'a, T>
    where
        Self: 'a,
    {
        Cow::Borrowed(&**self)
    }
}

impl<T: Item> IntoItem<T> for &OwnedWorkItem<T> {
    #[inline]
    fn into_item<'a>(self) -> Cow<'a, T>
    where
        Self: 'a,
    {
        Cow::Borrowed(&**self)
    }
}
