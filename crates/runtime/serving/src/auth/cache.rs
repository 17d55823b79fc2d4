//! A small bounded cache whose entries expire: k8s.io/apimachinery's `LRUExpireCache`,
//! which k8s.io/apiserver's delegating authenticator and authorizer keep their answers
//! in.
//!
//! Bounded, because its keys come from clients: without a bound, a client sending a new
//! made-up token with every request would grow the process's memory without end. When
//! full, expired entries go first, then the one that expires soonest (close enough to
//! LRU for a cache that holds a handful of scrapers' answers, and needs no list).
//!
//! Time is tokio's, so tests with paused time step over the TTLs exactly.
//!
//! Written here rather than taken from a crate: nothing in the dependency tree has
//! per-entry TTLs with a bound (`lru` has no TTLs; `moka` has both but brings its own
//! runtime and a long build for a map that holds a few entries), and tests need the
//! clock to be tokio's.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Entries of `V` under `K`, each until its own deadline, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct TtlCache<K, V> {
    capacity: usize,
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    /// An empty cache holding at most `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value under `key`, unless it has expired (then it is dropped).
    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some((value, deadline)) if Instant::now() < *deadline => Some(value.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    /// Stores `value` under `key` for `ttl`, evicting if the cache is full.
    pub(crate) fn insert(&self, key: K, value: V, ttl: Duration) {
        let now = Instant::now();
        let mut entries = self.entries.lock();
        if !entries.contains_key(&key) && entries.len() >= self.capacity {
            entries.retain(|_, (_, deadline)| *deadline > now);
            if entries.len() >= self.capacity {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, (_, deadline))| *deadline)
                    .map(|(k, _)| k.clone());
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(key, (value, now + ttl));
    }

    /// How many entries are held (expired ones included until they are dropped).
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn entries_expire_after_their_own_ttl() {
        let cache = TtlCache::new(8);
        cache.insert("short", 1, Duration::from_secs(30));
        cache.insert("long", 2, Duration::from_secs(300));
        tokio::time::advance(Duration::from_secs(29)).await;
        assert_eq!(cache.get(&"short"), Some(1));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(cache.get(&"short"), None);
        assert_eq!(cache.get(&"long"), Some(2));
        tokio::time::advance(Duration::from_secs(270)).await;
        assert_eq!(cache.get(&"long"), None);
        assert_eq!(cache.len(), 0, "expired entries are dropped when read");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_cache_drops_expired_entries_then_the_soonest_to_expire() {
        let cache = TtlCache::new(3);
        cache.insert(1, "a", Duration::from_secs(10));
        cache.insert(2, "b", Duration::from_secs(100));
        cache.insert(3, "c", Duration::from_secs(50));
        // Full: 1 expires soonest and goes.
        cache.insert(4, "d", Duration::from_secs(100));
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&1), None);
        assert_eq!(cache.get(&3), Some("c"));
        // Once 3 has expired, it goes first, though 2 and 4 are older.
        tokio::time::advance(Duration::from_secs(60)).await;
        cache.insert(5, "e", Duration::from_secs(1));
        assert_eq!(cache.len(), 3);
        assert_eq!(
            (cache.get(&2), cache.get(&4), cache.get(&5)),
            (Some("b"), Some("d"), Some("e"))
        );
        // Replacing a key never evicts another.
        cache.insert(2, "b2", Duration::from_secs(100));
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&2), Some("b2"));
        // A flood of distinct keys never grows it past its capacity.
        for k in 100..1100 {
            cache.insert(k, "flood", Duration::from_secs(60));
        }
        assert_eq!(cache.len(), 3);
    }
}
