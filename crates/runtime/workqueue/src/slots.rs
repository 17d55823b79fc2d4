//! Where the queue keeps its items: each distinct item is stored **once**, in a slot
//! that never moves, and found through a hash index of its slots ([`IndexEntry`]: their
//! addresses for the queue, their numbers for the large waiting set of `add_after`).
//!
//! Why not a `HashMap<T, State>` plus a `VecDeque<T>`, as before? Measured on an
//! add + get + done cycle, that layout hashed the item five times and compared keys
//! byte by byte three times, and kept two copies of every item (a reference-count
//! increment and decrement each for `Arc<str>` keys, an allocation for `String`s).
//! With slots:
//!
//! * the item is hashed once, in `add`, outside the queue's lock; the hash is kept in
//!   the slot, so the index never rehashes a key when it grows (and a numbered index
//!   keeps 32 bits of it beside each number, so it does not even read a slot then);
//! * the FIFO and the [`WorkItem`](crate::WorkItem) hold the slot's address, so `get`
//!   and `done` reach it without hashing or comparing keys; `done` removes the index
//!   entry through the bucket the slot remembers from its insertion, without a probe
//!   (checked, and found by hash and address only if the index has grown since);
//! * slots live in chunks that are never moved or freed while the queue exists, so a
//!   `WorkItem` can lend out the stored item itself instead of a clone of it.
//!
//! The `unsafe` here rests on two rules. A [`SlotRef`] is only made by [`Slots`] and
//! points into its chunks, which live as long as the `Slots`: [`Slots::get`] turns it
//! back into a reference bounded by the `Slots`' lifetime. And a slot's item is
//! written only when the slot is filled, and taken out only by [`Slots::release`],
//! whose caller promises that no reader of [`Slots::key_ptr`] is left (the queue
//! counts its `WorkItem`s per slot under its lock).
//!
//! A `SlotRef` may outlive its item: the queue's stale places in line still point at
//! slots that may have been released and refilled since. [`Slots::get`] on such a
//! `SlotRef` is sound (the chunk is still there) and its `meta` can be read; only
//! [`Slot::key`] of a free slot panics. Telling a refilled slot from the one the
//! `SlotRef` was made for is the owner's business (the queue uses tickets in `meta`).
//!
//! # How the `unsafe` is checked
//!
//! Each `unsafe` block names the tests that run it. The single-threaded paths (every
//! chunk, reuse, release and drop) are run by the unit tests below. The one concurrent
//! path, a worker reading its item through a [`key_ptr`](Slots::key_ptr) pointer
//! while other threads add, end and free items under the lock, is model-checked with
//! loom (`src/loom_models.rs`): the item's cell is a loom cell then, and the models
//! fail if that read is not ordered before the slot is released or refilled.

use std::any::TypeId;
use std::borrow::Cow;
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;

use hashbrown::HashTable;
use hashbrown::hash_table;

use crate::sync::UnsafeCell;

/// Slots in the first chunk; every new chunk doubles the total, so a queue with n
/// items has about log2(n / 16) chunks and never copies a slot when it grows.
const FIRST_CHUNK: usize = 16;

/// One stored item with its hash and the owner's per-item state `M`.
pub(crate) struct Slot<T, M> {
    /// `Some` while the slot is in use. Written only by [`Slots`] methods that take
    /// `&mut self`, and only when no pointer from [`Slots::key_ptr`] is outstanding.
    key: UnsafeCell<Option<T>>,
    hash: Cell<u64>,
    /// Where the index put this slot when it was inserted: `unindex` tries that
    /// bucket first (it is still right unless the index has grown since).
    bucket: Cell<u32>,
    /// The slot's number (its place among all slots, chunk after chunk): what the
    /// index stores for it. Set when the chunk is made, never changed.
    number: u32,
    /// The owner's state for this item (for the queue: dirty/processing, handouts,
    /// priority), interior-mutable (`Cell`s) so that it can be changed through the
    /// shared references [`Slots::get`] gives. Left as it is when the slot is freed
    /// or refilled: the owner sets it up after [`Slots::find_or_insert`] stores an
    /// item.
    pub(crate) meta: M,
}

impl<T, M> Slot<T, M> {
    /// The stored item's hash.
    pub(crate) fn hash(&self) -> u64 {
        self.hash.get()
    }

    /// The stored item.
    ///
    /// # Panics
    ///
    /// If the slot is free (a bug in the caller's bookkeeping).
    pub(crate) fn key(&self) -> &T {
        // SAFETY: the item is only written through `&mut Slots` (`find_or_insert`,
        // `release`), which cannot coexist with the `&Slots` this `&self` borrows.
        // Run by every test here (`stores_once_finds_and_reuses_slots`) and, through
        // the queue's lookups and `key_ptr`, by every loom model.
        self.key
            .with(|p| unsafe { &*p })
            .as_ref()
            .expect("slot in use")
    }
}

/// The address of a slot of some [`Slots`]; only [`Slots`] makes them.
pub(crate) struct SlotRef<T, M>(NonNull<Slot<T, M>>);

impl<T, M> Clone for SlotRef<T, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, M> Copy for SlotRef<T, M> {}

impl<T, M> PartialEq for SlotRef<T, M> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

// SAFETY: a `SlotRef` is an address; every access goes through `Slots::get`, that is
// through the owner of the slots (which is `Send` only when `T` and `M` are). Sent
// between threads in the queue's FIFO and `WorkItem`s: tests/stress.rs and the loom
// models (`owned_work_item_read_on_another_thread`).
unsafe impl<T: Send, M: Send> Send for SlotRef<T, M> {}

/// How the index refers to a slot: by address ([`SlotRef`], the queue's) or by
/// number ([`Numbered`], the waiting set's). Both are eight bytes.
///
/// Why two: growing the index rehashes every entry. With addresses, the hash is read
/// from each slot, 100k+ reads at random addresses for a large index (the `add_after`
/// of a new key among 100k waiting ones paid that inside its timed run). A numbered
/// entry carries 32 bits of the hash and rehashes without reading a slot, but every
/// lookup turns the number into an address: measurable on the queue's hits in a small
/// index (+11 % instructions on the dedup-heavy row), where growth is rare. So the
/// queue keeps addresses and the waiting set, the large index that grows, numbers
/// (docs/benchmarks.md, workqueue History).
pub(crate) trait IndexEntry<T, M>: Copy + 'static {
    /// What turns an entry into a slot's address: nothing for an address, the chunk
    /// table for a number. A zero-sized `()` for addresses keeps the index's closures
    /// as small as they were before entries had kinds (the queue's hit paths are
    /// counted in instructions: docs/benchmarks.md, workqueue History).
    type Resolver<'a>: Copy
    where
        T: 'a,
        M: 'a;
    /// The resolver for slots in `chunks`.
    fn resolver(chunks: &[(NonNull<Slot<T, M>>, usize)]) -> Self::Resolver<'_>;
    /// The hash the index is given for an item hashed to `hash`.
    fn index_hash(hash: u64) -> u64;
    /// The entry for `at` (which is `slot`), holding an item hashed to `hash`.
    fn new(at: SlotRef<T, M>, slot: &Slot<T, M>, hash: u64) -> Self;
    /// The entry's [`index_hash`](Self::index_hash), when the index grows.
    fn rehash(&self) -> u64;
    /// Whether it may refer to an item hashed to `hash` (a check before the slot is read).
    fn may_be(&self, hash: u64) -> bool;
    /// The slot it refers to.
    fn slot(&self, resolver: Self::Resolver<'_>) -> SlotRef<T, M>;
    /// Whether it refers to `slot`.
    fn is(&self, slot: &Slot<T, M>) -> bool;
}

impl<T: 'static, M: 'static> IndexEntry<T, M> for SlotRef<T, M> {
    type Resolver<'a> = ();
    fn resolver(_: &[(NonNull<Slot<T, M>>, usize)]) {}
    fn index_hash(hash: u64) -> u64 {
        hash
    }
    fn new(at: SlotRef<T, M>, _: &Slot<T, M>, _: u64) -> Self {
        at
    }
    fn rehash(&self) -> u64 {
        // SAFETY: the index holds only slots of its `Slots`' live chunks. Run when the
        // index grows (`stores_once_finds_and_reuses_slots` stores 100 items).
        unsafe { deref(*self) }.hash.get()
    }
    fn may_be(&self, _: u64) -> bool {
        true
    }
    fn slot(&self, (): ()) -> SlotRef<T, M> {
        *self
    }
    fn is(&self, slot: &Slot<T, M>) -> bool {
        std::ptr::eq(self.0.as_ptr(), slot)
    }
}

/// A numbered index entry: a slot's number and 32 bits of its item's hash ([`Folded`]).
#[derive(Clone, Copy)]
pub(crate) struct Numbered {
    number: u32,
    hash: u32,
}

impl<T: 'static, M: 'static> IndexEntry<T, M> for Numbered {
    type Resolver<'a> = &'a [(NonNull<Slot<T, M>>, usize)];
    fn resolver(chunks: &[(NonNull<Slot<T, M>>, usize)]) -> &[(NonNull<Slot<T, M>>, usize)] {
        chunks
    }
    fn index_hash(hash: u64) -> u64 {
        Folded::of(hash).full()
    }
    fn new(_: SlotRef<T, M>, slot: &Slot<T, M>, hash: u64) -> Self {
        Numbered {
            number: slot.number,
            hash: Folded::of(hash).0,
        }
    }
    fn rehash(&self) -> u64 {
        Folded(self.hash).full()
    }
    fn may_be(&self, hash: u64) -> bool {
        self.hash == Folded::of(hash).0
    }
    fn slot(&self, chunks: &[(NonNull<Slot<T, M>>, usize)]) -> SlotRef<T, M> {
        numbered(chunks, self.number)
    }
    fn is(&self, slot: &Slot<T, M>) -> bool {
        self.number == slot.number
    }
}

/// The hash the index is given for an item with [`Numbered`] entries: 32 bits of the
/// item's hash, repeated in both halves, so that an entry can give it back. hashbrown takes a bucket from
/// the low bits and a tag from the top seven; with the 32 bits in both halves they
/// stay independent up to 2^25 buckets.
#[derive(Clone, Copy)]
struct Folded(u32);

impl Folded {
    fn of(hash: u64) -> Self {
        Self((hash ^ (hash >> 32)) as u32)
    }

    fn full(self) -> u64 {
        (u64::from(self.0) << 32) | u64::from(self.0)
    }
}

/// Items stored once each, in slots that never move, indexed by hash.
///
/// Lives behind the queue's lock: nothing here is synchronized by itself.
pub(crate) struct Slots<T, M, E = SlotRef<T, M>> {
    /// Slots in use, found by the item's hash and compared by item.
    index: HashTable<E>,
    /// Each chunk is a leaked `Box<[Slot]>` (address and length), freed in `Drop`.
    chunks: Vec<(NonNull<Slot<T, M>>, usize)>,
    /// Slots of the last chunk not handed out yet.
    fresh: usize,
    /// Released slots, reused last-in first-out (the most recently used memory).
    free: Vec<SlotRef<T, M>>,
}

// SAFETY: `Slots` owns its items and chunks like a `Vec<T>` would; the raw chunk
// pointers are only shared through `SlotRef`s and `key_ptr`, whose holders (the
// queue's FIFO and `WorkItem`s) are `Send`/`Sync` only when `T` is. Every loom model
// shares a queue (and so its `Slots`) between threads.
unsafe impl<T: Send, M: Send, E: Send> Send for Slots<T, M, E> {}

/// Item equality with a shortcut for `Arc<str>`, the usual controller key: two
/// clones of one `Arc` are equal without comparing their bytes (std's pointer
/// shortcut for `Arc` does not apply to unsized `str`). The type test is resolved at
/// compile time.
pub(crate) fn item_eq<T: Eq + 'static>(a: &T, b: &T) -> bool {
    if TypeId::of::<T>() == TypeId::of::<Arc<str>>() {
        // SAFETY: `T` is `Arc<str>`, checked just above. Run by
        // `arc_str_equality_shortcut_agrees_with_eq` below and the `Arc<str>` loom model
        // (`worker_reads_its_item_while_another_ends_and_re_adds_it`).
        let (a, b) = unsafe {
            (
                &*(a as *const T).cast::<Arc<str>>(),
                &*(b as *const T).cast::<Arc<str>>(),
            )
        };
        return Arc::ptr_eq(a, b) || a == b;
    }
    a == b
}

/// What [`Slots::find_or_insert`] did.
pub(crate) enum Found<'k, T: Clone, M> {
    /// An equal item was already stored in this slot; the caller's item is handed
    /// back so that it can be dropped after the queue's lock is released.
    Existing(SlotRef<T, M>, Cow<'k, T>),
    /// The item was stored in this new slot.
    Inserted(SlotRef<T, M>),
}

/// Reads a slot. Free function so that the index's closures can use it while the
/// index is borrowed mutably.
///
/// # Safety
///
/// `slot` must point into chunks that are still allocated.
unsafe fn deref<'a, T, M>(slot: SlotRef<T, M>) -> &'a Slot<T, M> {
    // SAFETY: the caller's promise; slots are only ever borrowed shared. Every test
    // here and every loom model goes through it.
    unsafe { slot.0.as_ref() }
}

/// The chunk holding slot number `n`, and the slot's offset in it. Chunk `k` holds
/// `FIRST_CHUNK << k` slots (each chunk doubles the last) and starts at slot
/// `FIRST_CHUNK * (2^k - 1)`, so `n + FIRST_CHUNK` has its top bit at `k` plus
/// log2(`FIRST_CHUNK`).
fn chunk_of(n: u32) -> (usize, usize) {
    let shifted = n as usize + FIRST_CHUNK;
    let top = (usize::BITS - 1 - shifted.leading_zeros()) as usize;
    let k = top - FIRST_CHUNK.trailing_zeros() as usize;
    (k, shifted - (1 << top))
}

/// The slot numbered `n`: free function for the same reason as [`deref`].
fn numbered<T, M>(chunks: &[(NonNull<Slot<T, M>>, usize)], n: u32) -> SlotRef<T, M> {
    let (k, offset) = chunk_of(n);
    let (start, len) = chunks[k];
    // `chunk_of` gives chunk `k` an offset below `FIRST_CHUNK << k`, which is its
    // length: the chunks double from `FIRST_CHUNK` (`find_or_insert`).
    debug_assert!(offset < len, "slot number {n} outside its chunk");
    // SAFETY: `offset < len` (above), inside the chunk's allocation. Run by every test
    // here (`slot_numbers_map_to_their_chunk_and_offset`) and every lookup of the queue.
    SlotRef(unsafe { start.add(offset) })
}

impl<T, M> SlotRef<T, M> {
    /// Under loom: records a read of the slot's item, for the reads through a
    /// [`Slots::key_ptr`] pointer, which loom cannot see (they bypass the cell).
    ///
    /// # Safety
    ///
    /// The slot's chunk is still allocated (its `Slots` is alive).
    #[cfg(loom)]
    pub(crate) unsafe fn loom_read_key(self) {
        // SAFETY: the caller's promise. Run by every queue model in
        // src/loom_models.rs (each read of a guard's item).
        unsafe { deref(self) }.key.with(|_| ());
    }
}

impl<T: Clone + Eq + 'static, M: Default + 'static, E: IndexEntry<T, M>> Slots<T, M, E> {
    pub(crate) fn new() -> Self {
        Self {
            index: HashTable::new(),
            chunks: Vec::new(),
            fresh: 0,
            free: Vec::new(),
        }
    }

    /// Number of items in the index.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The slot `slot` points at.
    pub(crate) fn get(&self, slot: SlotRef<T, M>) -> &Slot<T, M> {
        // SAFETY: `slot` was made by this `Slots` (only `Slots` makes them, and the
        // queue never mixes the slots of two queues); chunks are freed only in `Drop`,
        // and the returned reference borrows `self`. Run as `deref` above.
        unsafe { deref(slot) }
    }

    /// A pointer to the slot's item that stays valid until the slot is released;
    /// reading through it is sound as long as the caller keeps `release` from being
    /// called for the slot meanwhile.
    pub(crate) fn key_ptr(&self, slot: SlotRef<T, M>) -> NonNull<T> {
        NonNull::from(self.get(slot).key())
    }

    /// The slot holding an item equal to `key`, if it is indexed.
    pub(crate) fn find(&self, hash: u64, key: &T) -> Option<SlotRef<T, M>> {
        let resolver = E::resolver(&self.chunks);
        self.index
            .find(E::index_hash(hash), |e| {
                if !e.may_be(hash) {
                    return false;
                }
                let slot = self.get(e.slot(resolver));
                slot.hash.get() == hash && item_eq(slot.key(), key)
            })
            .map(|e| e.slot(resolver))
    }

    /// Finds the slot holding an item equal to `key`, or stores `key` (cloned only if
    /// borrowed) in a new slot, whose `meta` the caller then sets up (it holds
    /// whatever the slot's last item left there). One probe of the index either way.
    pub(crate) fn find_or_insert<'k>(&mut self, hash: u64, key: Cow<'k, T>) -> Found<'k, T, M> {
        let probe: &T = &key;
        let resolver = E::resolver(&self.chunks);
        // SAFETY: the index holds only slots of `self.chunks`. Run by every test here
        // (`stores_once_finds_and_reuses_slots` grows the index, with either entry).
        let entry = self.index.entry(
            E::index_hash(hash),
            |e| {
                if !e.may_be(hash) {
                    return false;
                }
                let slot = unsafe { deref(e.slot(resolver)) };
                slot.hash.get() == hash && item_eq(slot.key(), probe)
            },
            E::rehash,
        );
        match entry {
            hash_table::Entry::Occupied(found) => Found::Existing(found.get().slot(resolver), key),
            hash_table::Entry::Vacant(vacant) => {
                // Clone (user code, which may panic) before anything is changed.
                let item = key.into_owned();
                let s = match self.free.pop() {
                    Some(s) => s,
                    None => {
                        if self.fresh == 0 {
                            let len = self.chunks.last().map_or(FIRST_CHUNK, |c| c.1 * 2);
                            // Slot numbers are u32s: the chunk's last one must fit.
                            assert!(
                                2 * len - FIRST_CHUNK - 1 <= u32::MAX as usize,
                                "fewer than 2^32 items in one queue"
                            );
                            let first = (len - FIRST_CHUNK) as u32;
                            self.chunks.push((new_chunk(len, first), len));
                            self.fresh = len;
                        }
                        let (start, len) = *self.chunks.last().expect("a chunk");
                        let offset = len - self.fresh;
                        self.fresh -= 1;
                        // SAFETY: `offset < len`, inside the chunk's allocation. Every
                        // slot of three chunks in `stores_once_finds_and_reuses_slots`.
                        SlotRef(unsafe { start.add(offset) })
                    }
                };
                // SAFETY: `s` is a slot of `self.chunks` (tests as above).
                let slot = unsafe { deref(s) };
                let bucket = vacant.insert(E::new(s, slot, hash)).bucket_index();
                slot.bucket
                    .set(u32::try_from(bucket).expect("fewer than 2^32 buckets"));
                // SAFETY: `s` was free (fresh, or released), so it holds `None` (no
                // drop needed), no `key_ptr` for it is outstanding, and `&mut self`
                // excludes `key()` borrows. Fresh and reused slots:
                // `stores_once_finds_and_reuses_slots`; refilled while a worker reads
                // another slot: the loom models.
                slot.key.with_mut(|p| unsafe { p.write(Some(item)) });
                slot.hash.set(hash);
                Found::Inserted(s)
            }
        }
    }

    /// Removes the slot from the index (it can no longer be found by item); it keeps
    /// its item until [`release`](Self::release).
    pub(crate) fn unindex(&mut self, slot: SlotRef<T, M>) {
        // SAFETY: `slot` is one of ours (as in `get`); this reference does not borrow
        // `self`, so the index can be changed while it is held.
        let stored = unsafe { deref(slot) };
        let bucket = stored.bucket.get() as usize;
        match self.index.get_bucket_entry(bucket) {
            Ok(entry) if entry.get().is(stored) => {
                entry.remove();
            }
            _ => {
                let hash = E::index_hash(stored.hash.get());
                if let Ok(entry) = self.index.find_entry(hash, |e| e.is(stored)) {
                    entry.remove();
                }
            }
        }
    }

    /// Frees the slot (already unindexed) and returns its item.
    ///
    /// # Safety
    ///
    /// No pointer from [`key_ptr`](Self::key_ptr) for this slot may be used after
    /// this.
    pub(crate) unsafe fn release(&mut self, slot: SlotRef<T, M>) -> T {
        // SAFETY: `&mut self` excludes `key()` borrows, the caller excludes
        // `key_ptr` readers. The loom models check the queue's way of excluding them
        // (a count of guards per slot, under the lock): they fail if a worker's read
        // of its item is not ordered before this write.
        let key = self
            .get(slot)
            .key
            .with_mut(|p| unsafe { (*p).take() })
            .expect("slot in use");
        self.free.push(slot);
        key
    }
}

/// A chunk of `len` free slots numbered from `first`.
fn new_chunk<T, M: Default>(len: usize, first: u32) -> NonNull<Slot<T, M>> {
    let slots: Box<[Slot<T, M>]> = (0..len)
        .map(|i| Slot {
            key: UnsafeCell::new(None),
            hash: Cell::new(0),
            bucket: Cell::new(0),
            number: first + i as u32,
            meta: M::default(),
        })
        .collect();
    NonNull::new(Box::into_raw(slots).cast::<Slot<T, M>>()).expect("Box pointers are non-null")
}

impl<T, M, E> Drop for Slots<T, M, E> {
    fn drop(&mut self) {
        for &(start, len) in &self.chunks {
            let raw = std::ptr::slice_from_raw_parts_mut(start.as_ptr(), len);
            // SAFETY: made by `Box::into_raw` of a slice of exactly this length in
            // `new_chunk`, freed only here; `&mut self` means no borrow is left. The end
            // of `stores_once_finds_and_reuses_slots` checks every item was dropped.
            drop(unsafe { Box::from_raw(raw) });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::*;
    use crate::queue::FastState;

    type ArcSlots<E> = Slots<Arc<str>, (), E>;

    fn insert<'k, E: IndexEntry<Arc<str>, ()>>(
        slots: &mut ArcSlots<E>,
        h: &FastState,
        k: &'k Arc<str>,
    ) -> Found<'k, Arc<str>, ()> {
        slots.find_or_insert(h.hash_one(k), Cow::Borrowed(k))
    }

    #[test]
    fn stores_once_finds_and_reuses_slots() {
        stores_once_finds_and_reuses::<SlotRef<Arc<str>, ()>>();
    }

    #[test]
    fn stores_once_finds_and_reuses_numbered_slots() {
        stores_once_finds_and_reuses::<Numbered>();
    }

    fn stores_once_finds_and_reuses<E: IndexEntry<Arc<str>, ()>>() {
        let h = FastState::default();
        let keys: Vec<Arc<str>> = (0..100).map(|i| Arc::from(format!("k{i}"))).collect();
        let mut slots = ArcSlots::<E>::new();
        let stored: Vec<_> = keys
            .iter()
            .map(|k| match insert(&mut slots, &h, k) {
                Found::Inserted(s) => s,
                Found::Existing(..) => panic!("{k} stored twice"),
            })
            .collect();
        assert_eq!(slots.len(), 100);
        let chunks = slots.chunks.len();
        for (k, s) in keys.iter().zip(&stored) {
            assert!(matches!(insert(&mut slots, &h, k), Found::Existing(e, _) if e == *s));
            assert!(slots.find(h.hash_one(k), k) == Some(*s));
            assert_eq!(Arc::strong_count(k), 2, "stored once");
        }
        // Free every slot, then store 100 other keys: the slots are reused. The index
        // grew while the keys were stored, so most remembered buckets are stale: the
        // removal must still take out exactly the right entry.
        for (i, (k, s)) in keys.iter().zip(&stored).enumerate() {
            slots.unindex(*s);
            assert!(slots.find(h.hash_one(k), k).is_none());
            for (rest, r) in keys[i + 1..].iter().zip(&stored[i + 1..]) {
                assert!(slots.find(h.hash_one(rest), rest) == Some(*r));
            }
            // SAFETY: no `key_ptr` was taken.
            drop(unsafe { slots.release(*s) });
            assert_eq!(Arc::strong_count(k), 1);
        }
        let others: Vec<Arc<str>> = (0..100).map(|i| Arc::from(format!("o{i}"))).collect();
        for k in &others {
            assert!(matches!(insert(&mut slots, &h, k), Found::Inserted(_)));
        }
        assert_eq!(slots.chunks.len(), chunks, "no new chunk");
        drop(slots);
        assert!(
            others.iter().all(|k| Arc::strong_count(k) == 1),
            "dropped with the slots"
        );
    }

    #[test]
    fn slot_numbers_map_to_their_chunk_and_offset() {
        // Chunks of 16, 32, 64, ... slots: 0..16, 16..48, 48..112, ...
        assert_eq!(chunk_of(0), (0, 0));
        assert_eq!(chunk_of(15), (0, 15));
        assert_eq!(chunk_of(16), (1, 0));
        assert_eq!(chunk_of(47), (1, 31));
        assert_eq!(chunk_of(48), (2, 0));
        assert_eq!(chunk_of(111), (2, 63));
        assert_eq!(chunk_of(112), (3, 0));
        let last = u32::MAX - FIRST_CHUNK as u32;
        assert_eq!(chunk_of(last), (27, (FIRST_CHUNK << 27) - 1));
        // Every slot of the first chunks, made the way `find_or_insert` makes them.
        let mut slots: Slots<u32, (), Numbered> = Slots::new();
        for (n, key) in (0..200u32).enumerate() {
            match slots.find_or_insert(
                u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                Cow::Owned(key),
            ) {
                Found::Inserted(s) => {
                    assert_eq!(slots.get(s).number as usize, n);
                    assert!(numbered(&slots.chunks, n as u32) == s);
                    assert!(
                        slots.find(u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15), &key)
                            == Some(s)
                    );
                }
                Found::Existing(..) => panic!("{key} stored twice"),
            }
        }
    }

    #[test]
    fn arc_str_equality_shortcut_agrees_with_eq() {
        let a: Arc<str> = Arc::from("ns/a");
        let a2: Arc<str> = Arc::from("ns/a");
        let b: Arc<str> = Arc::from("ns/b");
        assert!(item_eq(&a, &a.clone()));
        assert!(item_eq(&a, &a2), "equal bytes, different allocations");
        assert!(!item_eq(&a, &b));
        assert!(item_eq(&"x".to_string(), &"x".to_string()));
    }
}
