//! A small map from item to value for the per-item rate limiters (failure counts,
//! backoff deadlines).
//!
//! Two things make it cheaper than a `Mutex<HashMap<T, V>>` on a worker's hot path:
//!
//! * one hash per call: the item is hashed once (foldhash, outside the lock) and the
//!   lookup, insert or removal reuse that hash through `hashbrown`'s `HashTable`, so
//!   "count a failure" is one probe whether the item is new or not;
//! * an empty map is answered without the lock: a length mirror, written under the
//!   lock after every change, lets `get` and `remove` of any item return at once when
//!   the map is empty. That is the common case: a worker calls `forget` after every
//!   successful sync, and most items never fail. (A call that sees the mirror at 0
//!   takes effect before any concurrent insert, which is a valid order for calls that
//!   overlap; a call that happens after an insert, in the same thread or through any
//!   synchronization, sees the insert's length.)
//!
//! The lock is a parking `parking_lot::Mutex`, not the queues' spin lock: `update`
//! runs a closure under it, and the coalescing limiter's closure calls the wrapped
//! limiter, which may be anyone's code.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use parking_lot::Mutex;

use crate::queue::{FastState, Item};
use crate::slots::item_eq;

/// A map from item to a `Copy` value; see the [module docs](self).
pub(crate) struct ItemMap<T, V> {
    hasher: FastState,
    /// The table's length, for lock-free "is it empty?" checks.
    len: AtomicUsize,
    table: Mutex<HashTable<(u64, T, V)>>,
}

impl<T: Item, V: Copy> ItemMap<T, V> {
    pub(crate) fn new() -> Self {
        Self {
            hasher: FastState::default(),
            len: AtomicUsize::new(0),
            table: Mutex::new(HashTable::new()),
        }
    }

    fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// `item`'s value, if it has one.
    pub(crate) fn get(&self, item: &T) -> Option<V> {
        if self.is_empty() {
            return None;
        }
        let hash = self.hasher.hash_one(item);
        let table = self.table.lock();
        table
            .find(hash, |(h, k, _)| *h == hash && item_eq(k, item))
            .map(|&(_, _, v)| v)
    }

    /// Forgets `item`'s value. The removed item is dropped after unlocking.
    pub(crate) fn remove(&self, item: &T) {
        if self.is_empty() {
            return;
        }
        let hash = self.hasher.hash_one(item);
        let mut table = self.table.lock();
        let removed = match table.find_entry(hash, |(h, k, _)| *h == hash && item_eq(k, item)) {
            Ok(entry) => Some(entry.remove().0),
            Err(_) => None,
        };
        self.len.store(table.len(), Ordering::Release);
        drop(table);
        drop(removed);
    }

    /// Replaces `item`'s value by `f(current value)`: `Some` stores (cloning the item
    /// only if it had no value), `None` removes. One probe; `f` runs under the lock.
    pub(crate) fn update<R>(&self, item: &T, f: impl FnOnce(Option<V>) -> (Option<V>, R)) -> R {
        let hash = self.hasher.hash_one(item);
        let mut table = self.table.lock();
        let entry = table.entry(
            hash,
            |(h, k, _)| *h == hash && item_eq(k, item),
            |(h, _, _)| *h,
        );
        let (result, removed) = match entry {
            Entry::Occupied(mut entry) => match f(Some(entry.get().2)) {
                (Some(v), r) => {
                    entry.get_mut().2 = v;
                    (r, None)
                }
                (None, r) => (r, Some(entry.remove().0.1)),
            },
            Entry::Vacant(entry) => {
                let (value, r) = f(None);
                if let Some(v) = value {
                    entry.insert((hash, item.clone(), v));
                }
                (r, None)
            }
        };
        self.len.store(table.len(), Ordering::Release);
        drop(table);
        drop(removed);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_update_remove() {
        let map: ItemMap<&str, u32> = ItemMap::new();
        assert_eq!(map.get(&"a"), None);
        map.remove(&"a"); // empty: nothing to do
        let bump = |v: Option<u32>| {
            let n = v.unwrap_or(0) + 1;
            (Some(n), n)
        };
        assert_eq!(map.update(&"a", bump), 1);
        assert_eq!(map.update(&"a", bump), 2);
        assert_eq!(map.update(&"b", bump), 1);
        assert_eq!(map.get(&"a"), Some(2));
        map.remove(&"a");
        assert_eq!(map.get(&"a"), None);
        assert_eq!(map.get(&"b"), Some(1));
        assert_eq!(map.update(&"b", |_| (None, ())), ());
        assert_eq!(map.get(&"b"), None);
        assert!(map.is_empty());
    }
}
