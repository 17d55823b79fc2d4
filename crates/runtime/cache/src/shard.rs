//! Caching a slice of a collection: the hash ranges of KEP-5866 ("Server-side Sharded
//! List and Watch", alpha in Kubernetes 1.36, gate `ShardedListAndWatch`).
//!
//! A sharded controller runs N replicas, and each one caches and reconciles only the
//! objects whose **hash** falls in the ranges it holds. The hash is FNV-1a 64 over
//! the bytes of one metadata field (`metadata.uid` for the controller's own objects),
//! exactly as apimachinery's `pkg/sharding.HashField` computes it, so the API server
//! and this crate always agree on which object belongs where. A [`RangeSet`] becomes
//! the `shardSelector` query parameter of every list and watch:
//!
//! ```text
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')
//! ```
//!
//! With the gate on, the API server filters; without it (or on a server before 1.36)
//! the parameter is silently ignored, so the informer **also** filters every object
//! on the client with the same hash ([`ShardFilter::matches`]): the result is the same,
//! only more bytes travel. Which of the two happened is found out by a one-item LIST
//! (the answer carries `metadata.shardInfo` only when the server filtered), logged
//! once and exported as a metric.
//!
//! Objects a controller *owns* (the Deployment of a Foo) have their own UIDs, which
//! hash elsewhere. They follow their **owner** instead: [`ShardBy::ControllerUid`]
//! hashes the UID in the object's controller ownerReference, so a replica caches
//! exactly the Deployments of the Foos it holds. The API server cannot select on an
//! ownerReference, so that filter is always applied on the client.
//!
//! The ranges a replica holds change when replicas join and leave (the `sharding`
//! crate decides them). [`ShardRanges::set`] swaps them in and tells every
//! reflector reading through the filter to **relist**: a watch cannot widen its
//! selector, and objects of ranges given up must leave the cache.
//!
//! client-go has no helper for any of this yet (a controller would tweak its list
//! options by hand); this module is what such a helper looks like.

use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kube::Resource;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

/// FNV-1a 64 of `bytes`: Go's `hash/fnv.New64a`, which apimachinery's
/// `sharding.HashField` applies to a field's string value.
///
/// ```
/// // The reference vectors of the FNV specification.
/// assert_eq!(cache::shard::fnv1a64(b""), 0xcbf29ce484222325);
/// assert_eq!(cache::shard::fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(PRIME)
    })
}

/// An inclusive range of hashes `first..=last`. Inclusive, so that the whole space
/// (`0..=u64::MAX`) fits in `u64`; on the wire the end is exclusive and may be
/// `0x10000000000000000` (2^64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HashRange {
    /// The first hash in the range.
    pub first: u64,
    /// The last hash in the range.
    pub last: u64,
}

impl HashRange {
    /// The whole hash space.
    pub const ALL: HashRange = HashRange {
        first: 0,
        last: u64::MAX,
    };

    /// `first..=last`; `None` if `first > last`.
    pub fn new(first: u64, last: u64) -> Option<Self> {
        (first <= last).then_some(Self { first, last })
    }

    /// Whether `hash` is in the range.
    pub fn contains(&self, hash: u64) -> bool {
        self.first <= hash && hash <= self.last
    }

    /// How many hashes the range holds, as a fraction of the whole space.
    pub fn fraction(&self) -> f64 {
        (u128::from(self.last - self.first) + 1) as f64 / 2f64.powi(64)
    }

    /// The exclusive end as the selector writes it: 16 lowercase hex digits, or
    /// `0x10000000000000000` for a range that ends at the top of the space.
    fn end_hex(&self) -> String {
        match self.last.checked_add(1) {
            Some(end) => format!("0x{end:016x}"),
            None => "0x10000000000000000".to_string(),
        }
    }
}

impl fmt::Display for HashRange {
    /// `[0x0000000000000000, 0x5555555555555555)`: the wire's exclusive end.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[0x{:016x}, {})", self.first, self.end_hex())
    }
}

/// A set of hashes as sorted, disjoint, non-adjacent ranges (adjacent ranges are
/// merged, so two equal sets always have the same ranges and the same selector).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RangeSet {
    ranges: Vec<HashRange>,
}

impl RangeSet {
    /// The empty set.
    pub fn empty() -> Self {
        Self::default()
    }

    /// The whole hash space.
    pub fn all() -> Self {
        Self {
            ranges: vec![HashRange::ALL],
        }
    }

    /// The union of `ranges`, normalised.
    pub fn from_ranges(ranges: impl IntoIterator<Item = HashRange>) -> Self {
        let mut ranges: Vec<HashRange> = ranges.into_iter().collect();
        ranges.sort();
        let mut merged: Vec<HashRange> = Vec::with_capacity(ranges.len());
        for range in ranges {
            match merged.last_mut() {
                // Overlapping or adjacent: extend.
                Some(prev) if prev.last == u64::MAX || range.first <= prev.last + 1 => {
                    prev.last = prev.last.max(range.last);
                }
                _ => merged.push(range),
            }
        }
        Self { ranges: merged }
    }

    /// The ranges, sorted.
    pub fn ranges(&self) -> &[HashRange] {
        &self.ranges
    }

    /// Whether the set holds no hash.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `hash` is in the set.
    pub fn contains(&self, hash: u64) -> bool {
        // Sorted and disjoint: the candidate is the last range starting at or below.
        let i = self.ranges.partition_point(|r| r.first <= hash);
        i > 0 && self.ranges[i - 1].contains(hash)
    }

    /// The share of the hash space the set holds (1.0 = everything).
    pub fn fraction(&self) -> f64 {
        self.ranges.iter().map(HashRange::fraction).sum()
    }

    /// Hashes in `self` or `other`.
    pub fn union(&self, other: &RangeSet) -> RangeSet {
        Self::from_ranges(self.ranges.iter().chain(&other.ranges).copied())
    }

    /// Hashes in both.
    pub fn intersection(&self, other: &RangeSet) -> RangeSet {
        let mut out = Vec::new();
        for a in &self.ranges {
            for b in &other.ranges {
                if let Some(r) = HashRange::new(a.first.max(b.first), a.last.min(b.last)) {
                    out.push(r);
                }
            }
        }
        Self::from_ranges(out)
    }

    /// Hashes in `self` and not in `other`.
    pub fn difference(&self, other: &RangeSet) -> RangeSet {
        let mut out = Vec::new();
        for a in &self.ranges {
            let mut rest = Some(*a);
            for b in &other.ranges {
                let Some(r) = rest else { break };
                if b.last < r.first || b.first > r.last {
                    continue;
                }
                if b.first > r.first {
                    out.push(HashRange {
                        first: r.first,
                        last: b.first - 1,
                    });
                }
                rest = (b.last < r.last).then(|| HashRange {
                    first: b.last + 1,
                    last: r.last,
                });
            }
            out.extend(rest);
        }
        Self::from_ranges(out)
    }

    /// Whether the two sets share a hash.
    pub fn overlaps(&self, other: &RangeSet) -> bool {
        !self.intersection(other).is_empty()
    }

    /// The `shardSelector` for these ranges over `path`: one `shardRange()` term per
    /// range, joined by `||`. `None` for the empty set (the server refuses an empty
    /// selector, and "nothing" has no selector: see [`ShardFilter`]).
    ///
    /// ```
    /// use cache::shard::{HashRange, RangeSet, ShardPath};
    /// let upper = RangeSet::from_ranges([HashRange::new(0x8000_0000_0000_0000, u64::MAX).unwrap()]);
    /// assert_eq!(
    ///     upper.selector(ShardPath::Uid).unwrap(),
    ///     "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
    /// );
    /// ```
    pub fn selector(&self, path: ShardPath) -> Option<String> {
        if self.ranges.is_empty() {
            return None;
        }
        let terms: Vec<String> = self
            .ranges
            .iter()
            .map(|r| {
                format!(
                    "shardRange({}, '0x{:016x}', '{}')",
                    path.as_str(),
                    r.first,
                    r.end_hex()
                )
            })
            .collect();
        Some(terms.join(" || "))
    }

    /// The ranges as an annotation value: `first-last` pairs of 16 hex digits
    /// (inclusive), comma-separated; `""` for the empty set. [`parse`](Self::parse)
    /// reads it back.
    pub fn encode(&self) -> String {
        self.ranges
            .iter()
            .map(|r| format!("{:016x}-{:016x}", r.first, r.last))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads what [`encode`](Self::encode) wrote; `None` if malformed.
    ///
    /// ```
    /// use cache::shard::{HashRange, RangeSet};
    /// let set = RangeSet::from_ranges([HashRange::new(16, 31).unwrap()]);
    /// assert_eq!(RangeSet::parse(&set.encode()), Some(set));
    /// assert_eq!(RangeSet::parse(""), Some(RangeSet::empty()));
    /// assert_eq!(RangeSet::parse("zz-1"), None);
    /// ```
    pub fn parse(text: &str) -> Option<RangeSet> {
        let text = text.trim();
        if text.is_empty() {
            return Some(RangeSet::empty());
        }
        let mut ranges = Vec::new();
        for part in text.split(',') {
            let (first, last) = part.trim().split_once('-')?;
            let first = u64::from_str_radix(first, 16).ok()?;
            let last = u64::from_str_radix(last, 16).ok()?;
            ranges.push(HashRange::new(first, last)?);
        }
        Some(Self::from_ranges(ranges))
    }
}

impl fmt::Display for RangeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranges.is_empty() {
            return f.write_str("(none)");
        }
        for (i, r) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The metadata field a server-side `shardSelector` hashes (the two KEP-5866 allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardPath {
    /// `object.metadata.uid`: spreads the objects of one namespace over every shard.
    Uid,
    /// `object.metadata.namespace`: keeps a namespace on one shard.
    Namespace,
}

impl ShardPath {
    /// The CEL path the selector names.
    pub fn as_str(self) -> &'static str {
        match self {
            ShardPath::Uid => "object.metadata.uid",
            ShardPath::Namespace => "object.metadata.namespace",
        }
    }
}

/// What an informer's objects are sharded by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardBy {
    /// A metadata field the API server can filter on: the controller's own objects.
    Field(ShardPath),
    /// The UID in the object's controller ownerReference: the objects a controller
    /// owns follow their owner. Filtered on the client only (the server cannot select
    /// on ownerReferences); objects without a controller reference are not cached.
    ControllerUid,
}

impl ShardBy {
    /// Sharded by `metadata.uid`.
    pub const UID: ShardBy = ShardBy::Field(ShardPath::Uid);

    /// The hash of `obj` under this rule; `None` when it has none (no controller
    /// ownerReference, no UID yet).
    pub fn hash<K: Resource>(self, obj: &K) -> Option<u64> {
        let meta = obj.meta();
        let value = match self {
            ShardBy::Field(ShardPath::Uid) => meta.uid.as_deref()?,
            ShardBy::Field(ShardPath::Namespace) => meta.namespace.as_deref().unwrap_or(""),
            ShardBy::ControllerUid => meta
                .owner_references
                .as_ref()?
                .iter()
                .find(|r| r.controller == Some(true))
                .map(|r| r.uid.as_str())?,
        };
        Some(fnv1a64(value.as_bytes()))
    }

    /// The path the server can filter on, if any.
    pub fn server_path(self) -> Option<ShardPath> {
        match self {
            ShardBy::Field(path) => Some(path),
            ShardBy::ControllerUid => None,
        }
    }
}

/// Whether the API server filtered by `shardSelector`, as the last probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerFiltering {
    /// Not probed yet.
    Unknown,
    /// The server filters (its list answer carried `metadata.shardInfo`).
    Yes,
    /// The server ignored the parameter (gate off, or a server before 1.36): the
    /// informer filters on the client alone.
    No,
    /// The rule cannot be filtered by the server (ownerReferences).
    NotApplicable,
}

impl ServerFiltering {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Yes,
            2 => Self::No,
            3 => Self::NotApplicable,
            _ => Self::Unknown,
        }
    }
    fn as_u8(self) -> u8 {
        match self {
            Self::Unknown => 0,
            Self::Yes => 1,
            Self::No => 2,
            Self::NotApplicable => 3,
        }
    }
}

/// The ranges a replica caches, shared by every informer of that replica (a cheap
/// handle; clones share). The `sharding` crate's coordinator sets them; informers
/// read them through a [`ShardFilter`].
#[derive(Clone)]
pub struct ShardRanges {
    inner: Arc<RangesInner>,
}

struct RangesInner {
    /// `None` until the first assignment: informers wait for it before listing.
    /// With the generation it was set at.
    ranges: RwLock<Option<(u64, Arc<RangeSet>)>>,
    /// Bumped on every change; reflectors relist when it moves.
    generation: watch::Sender<u64>,
    /// Per filter: the generation of its last completed list.
    listed: Mutex<Vec<Weak<AtomicU64>>>,
}

impl fmt::Debug for ShardRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardRanges")
            .field("ranges", &self.get().as_deref())
            .finish()
    }
}

impl Default for ShardRanges {
    fn default() -> Self {
        Self::new()
    }
}

impl ShardRanges {
    /// No ranges assigned yet: informers reading through it wait before listing.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(RangesInner {
                ranges: RwLock::new(None),
                generation: watch::Sender::new(0),
                listed: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Ranges fixed at `ranges` (tests, a static split).
    pub fn fixed(ranges: RangeSet) -> Self {
        let this = Self::new();
        this.set(ranges);
        this
    }

    /// The current ranges; `None` before the first [`set`](Self::set).
    pub fn get(&self) -> Option<Arc<RangeSet>> {
        self.inner.ranges.read().as_ref().map(|(_, r)| r.clone())
    }

    /// The current ranges with their generation (which [`set`](Self::set) bumps).
    pub fn current(&self) -> Option<(u64, Arc<RangeSet>)> {
        self.inner.ranges.read().clone()
    }

    /// Replaces the ranges. If they changed, every reflector reading through a filter
    /// on this handle relists (with the new selector). Returns whether they changed.
    pub fn set(&self, ranges: RangeSet) -> bool {
        let mut current = self.inner.ranges.write();
        if current.as_ref().map(|(_, r)| &**r) == Some(&ranges) {
            return false;
        }
        let generation = current.as_ref().map_or(0, |(g, _)| *g) + 1;
        *current = Some((generation, Arc::new(ranges)));
        drop(current);
        self.inner.generation.send_replace(generation);
        true
    }

    /// Whether every informer reading through these ranges has finished a list with
    /// the current ones (a change of ranges makes each relist).
    pub fn all_listed(&self) -> bool {
        let Some((generation, _)) = self.current() else {
            return false;
        };
        let mut listed = self.inner.listed.lock();
        listed.retain(|w| w.strong_count() > 0);
        listed
            .iter()
            .filter_map(Weak::upgrade)
            .all(|g| g.load(Ordering::Acquire) >= generation)
    }

    /// Waits (up to `timeout`) until [`all_listed`](Self::all_listed); whether they did.
    pub async fn wait_listed(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.all_listed() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A receiver that changes whenever the ranges do.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.generation.subscribe()
    }

    /// Waits until ranges have been assigned, and returns them with their generation.
    pub async fn assigned(&self) -> (u64, Arc<RangeSet>) {
        let mut changes = self.subscribe();
        loop {
            if let Some(current) = self.current() {
                return current;
            }
            if changes.changed().await.is_err() {
                // The sender lives in `self`; it cannot be dropped while we hold it.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// One informer's view of a [`ShardRanges`]: which objects it keeps (the rule) and
/// what the server did with the selector. Given to
/// [`ApiListerWatcher::shard`](crate::ApiListerWatcher::shard).
#[derive(Clone)]
pub struct ShardFilter {
    /// The replica's ranges.
    pub ranges: ShardRanges,
    /// What the objects are hashed by.
    pub by: ShardBy,
    server: Arc<AtomicU8>,
    /// The generation of the ranges of the last completed list.
    listed: Arc<AtomicU64>,
}

impl fmt::Debug for ShardFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardFilter")
            .field("ranges", &self.ranges)
            .field("by", &self.by)
            .field("server_filtering", &self.server_filtering())
            .finish()
    }
}

impl ShardFilter {
    /// A filter keeping the objects whose `by` hash is in `ranges`.
    pub fn new(ranges: ShardRanges, by: ShardBy) -> Self {
        let server = match by.server_path() {
            Some(_) => ServerFiltering::Unknown,
            None => ServerFiltering::NotApplicable,
        };
        let listed = Arc::new(AtomicU64::new(0));
        ranges.inner.listed.lock().push(Arc::downgrade(&listed));
        Self {
            ranges,
            by,
            server: Arc::new(AtomicU8::new(server.as_u8())),
            listed,
        }
    }

    /// A list with the ranges of `generation` completed (called by the lister-watcher).
    pub fn mark_listed(&self, generation: u64) {
        self.listed.fetch_max(generation, Ordering::AcqRel);
    }

    /// Whether `obj` belongs in the cache under `ranges`.
    pub fn matches<K: Resource>(&self, ranges: &RangeSet, obj: &K) -> bool {
        self.by.hash(obj).is_some_and(|h| ranges.contains(h))
    }

    /// The `shardSelector` to send for `ranges`, if the server can filter this rule.
    pub fn selector(&self, ranges: &RangeSet) -> Option<String> {
        ranges.selector(self.by.server_path()?)
    }

    /// What the last probe found.
    pub fn server_filtering(&self) -> ServerFiltering {
        ServerFiltering::from_u8(self.server.load(Ordering::Relaxed))
    }

    /// Records a probe's finding; returns the previous one.
    pub fn set_server_filtering(&self, found: ServerFiltering) -> ServerFiltering {
        ServerFiltering::from_u8(self.server.swap(found.as_u8(), Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(first: u64, last: u64) -> HashRange {
        HashRange::new(first, last).unwrap()
    }

    #[test]
    fn fnv_matches_the_reference_vectors() {
        // From the FNV reference implementation's test suite (FNV-1a, 64 bit).
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn sets_normalise_merge_and_subtract() {
        let set = RangeSet::from_ranges([r(10, 19), r(0, 9), r(30, 40), r(35, 50)]);
        assert_eq!(set.ranges(), &[r(0, 19), r(30, 50)]);
        assert!(set.contains(0) && set.contains(19) && set.contains(30) && set.contains(50));
        assert!(!set.contains(20) && !set.contains(51));
        let cut = set.difference(&RangeSet::from_ranges([r(5, 32)]));
        assert_eq!(cut.ranges(), &[r(0, 4), r(33, 50)]);
        let both = set.intersection(&RangeSet::from_ranges([r(15, 35)]));
        assert_eq!(both.ranges(), &[r(15, 19), r(30, 35)]);
        assert_eq!(
            RangeSet::all().difference(&RangeSet::all()),
            RangeSet::empty()
        );
        let top = RangeSet::from_ranges([r(u64::MAX - 1, u64::MAX), r(0, 0)]);
        assert_eq!(
            top.union(&RangeSet::from_ranges([r(1, u64::MAX - 2)])),
            RangeSet::all()
        );
    }

    #[test]
    fn selector_writes_16_digit_bounds_and_2_to_the_64() {
        let set = RangeSet::from_ranges([
            r(0, 0x7fff_ffff_ffff_ffff),
            r(0xc000_0000_0000_0000, u64::MAX),
        ]);
        assert_eq!(
            set.selector(ShardPath::Uid).unwrap(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
        );
        assert_eq!(RangeSet::empty().selector(ShardPath::Uid), None);
        assert!((set.fraction() - 0.75).abs() < 1e-12);
    }

    #[test]
    fn controller_uid_hashes_the_controller_reference() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let mut cm = ConfigMap::default();
        cm.metadata.uid = Some("own".into());
        assert_eq!(ShardBy::ControllerUid.hash(&cm), None);
        cm.metadata.owner_references = Some(vec![
            OwnerReference {
                uid: "not-controller".into(),
                ..OwnerReference::default()
            },
            OwnerReference {
                uid: "owner".into(),
                controller: Some(true),
                ..OwnerReference::default()
            },
        ]);
        assert_eq!(ShardBy::ControllerUid.hash(&cm), Some(fnv1a64(b"owner")));
        assert_eq!(ShardBy::UID.hash(&cm), Some(fnv1a64(b"own")));
    }

    #[tokio::test]
    async fn setting_new_ranges_signals_and_equal_ranges_do_not() {
        let ranges = ShardRanges::new();
        let mut changes = ranges.subscribe();
        assert!(ranges.get().is_none());
        assert!(ranges.set(RangeSet::all()));
        assert!(changes.has_changed().unwrap());
        changes.borrow_and_update();
        assert!(!ranges.set(RangeSet::all()));
        assert!(!changes.has_changed().unwrap());
        assert_eq!(*ranges.assigned().await.1, RangeSet::all());
        let filter = ShardFilter::new(ranges.clone(), ShardBy::UID);
        assert!(!ranges.all_listed());
        filter.mark_listed(ranges.current().unwrap().0);
        assert!(ranges.all_listed());
    }
}
