//! A bounded least-recently-used map: what client-go gets from
//! `github.com/golang/groupcache/lru` (later `k8s.io/utils/lru`).
//!
//! Every cache of the correlator is bounded (4096 entries by default, client-go's
//! `maxLruCacheEntries`), because the keys come from the outside world: a
//! controller that records events about a million short-lived Pods must not keep
//! a million spam buckets. When the map is full, the entry used longest ago is
//! forgotten; forgetting is always safe here, it only means that entry's next event
//! is treated as the first one (a create instead of a patch, a fresh token bucket).
//!
//! The implementation is the textbook one: a hash map from key to (value, tick)
//! plus an ordered map from tick to key, so the oldest entry is the first in order.
//! Both lookups and evictions are `O(log n)`.

use std::collections::{BTreeMap, HashMap};

/// A map that holds at most `capacity` entries and evicts the least recently used.
#[derive(Debug)]
pub struct LruCache<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<String, (V, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> LruCache<V> {
    /// An empty cache holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// The value for `key`, marking it as most recently used.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let next = self.next_tick();
        let (value, tick) = self.entries.get_mut(key)?;
        if let Some(k) = self.order.remove(tick) {
            self.order.insert(next, k);
        }
        *tick = next;
        Some(value)
    }

    /// The value for `key` (inserted with `default()` first if missing), marking it
    /// as most recently used.
    pub fn get_or_insert_with(&mut self, key: &str, default: impl FnOnce() -> V) -> &mut V {
        let next = self.next_tick();
        if let Some((_, tick)) = self.entries.get_mut(key) {
            if let Some(k) = self.order.remove(tick) {
                self.order.insert(next, k);
            }
            *tick = next;
        } else {
            // Make room first, so the new entry can never be the one evicted.
            while self.entries.len() >= self.capacity {
                let Some((_, oldest)) = self.order.pop_first() else {
                    break;
                };
                self.entries.remove(&oldest);
            }
            self.order.insert(next, key.to_string());
        }
        let (value, _) = self
            .entries
            .entry(key.to_string())
            .or_insert_with(|| (default(), next));
        value
    }

    /// The value for `key` without touching its recency.
    pub fn peek(&self, key: &str) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| v)
    }

    /// Inserts or replaces `key` as most recently used, evicting the least recently
    /// used entry when the cache is over capacity.
    pub fn put(&mut self, key: String, value: V) {
        let next = self.next_tick();
        if let Some((old, tick)) = self.entries.get_mut(&key) {
            *old = value;
            self.order.remove(tick);
            *tick = next;
            self.order.insert(next, key);
            return;
        }
        self.order.insert(next, key.clone());
        self.entries.insert(key, (value, next));
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most entries this cache holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut lru = LruCache::new(2);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        // Touch "a": "b" is now the oldest.
        assert_eq!(lru.get_mut("a"), Some(&mut 1));
        lru.put("c".into(), 3);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.peek("b"), None);
        assert_eq!(lru.peek("a"), Some(&1));
        assert_eq!(lru.peek("c"), Some(&3));
    }

    #[test]
    fn replacing_refreshes_and_does_not_grow() {
        let mut lru = LruCache::new(2);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        lru.put("a".into(), 10);
        lru.put("c".into(), 3);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.peek("a"), Some(&10));
        assert_eq!(lru.peek("b"), None);
    }

    #[test]
    fn stays_bounded_under_many_keys() {
        let mut lru = LruCache::new(4096);
        for i in 0..10_000 {
            lru.put(format!("k{i}"), i);
        }
        assert_eq!(lru.len(), 4096);
        assert_eq!(lru.order.len(), 4096);
        assert_eq!(lru.peek("k5903"), None);
        assert_eq!(lru.peek("k5904"), Some(&5904));
        assert_eq!(lru.peek("k9999"), Some(&9999));
    }

    #[test]
    fn zero_capacity_means_one() {
        let mut lru = LruCache::new(0);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        assert_eq!(lru.capacity(), 1);
        assert_eq!(lru.len(), 1);
        assert!(!lru.is_empty());
        assert_eq!(lru.peek("b"), Some(&2));
    }
}
