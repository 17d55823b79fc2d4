//! Popping a [`RealFifo`]: client-go's `Pop`, `PopBatch` and `whileProcessing_locked`.
//!
//! A pop takes the oldest entry, or with [`pop_batch`](RealFifo::pop_batch) a run of
//! consecutive events for distinct keys, and calls the consumer's process function on
//! it. Two rules come from client-go:
//!
//! * A batch never crosses the end of the initial list, never holds a key twice, and
//!   never holds a bookmark, a `ReplacedAll` or a `SyncAll` (client-go's `batchable`);
//!   one of those comes alone.
//! * The initial population counts down only *after* the process function returned,
//!   so `has_synced` never turns true while the last initial entry is still being
//!   applied (client-go decrements in a `defer`).
//!
//! And one switch, `UnlockWhileProcessing`: see [`RealFifo::with_unlock_while_processing`].

use std::collections::VecDeque;
use std::pin::pin;

use kube::Resource;
use parking_lot::MutexGuard;

use super::entry::{Item, Popped};
use super::{DEFAULT_BATCH_SIZE, RealFifo};
use crate::delta::Delta;
use crate::keys::KeySet;

impl<K: Resource + Send + Sync + 'static> RealFifo<K> {
    /// Waits for the next entry and calls `process` with it (one event, or in atomic
    /// mode possibly a `ReplacedAll` or `SyncAll`) and whether it belongs to the
    /// initial list. Holds the queue's lock while `process` runs, unless
    /// [`with_unlock_while_processing`](Self::with_unlock_while_processing) is on.
    /// `None` once closed and empty: client-go's `Pop`.
    pub async fn pop<R>(&self, process: impl FnOnce(Popped<K>, bool) -> R) -> Option<R> {
        self.pop_with(1, process).await
    }

    /// Like [`pop`](Self::pop), but hands out up to `max` consecutive events at once,
    /// stopping before the first key that repeats (so the batch can be applied in any
    /// order), before an entry that cannot be batched and at the end of the initial
    /// list (client-go's `PopBatch`). `max` of 0 is taken as 1.
    pub async fn pop_batch<R>(
        &self,
        max: usize,
        process: impl FnOnce(Popped<K>, bool) -> R,
    ) -> Option<R> {
        self.pop_with(max.max(1), process).await
    }

    async fn pop_with<R>(
        &self,
        max: usize,
        process: impl FnOnce(Popped<K>, bool) -> R,
    ) -> Option<R> {
        loop {
            let mut ready = pin!(self.ready.notified());
            ready.as_mut().enable();
            {
                let mut st = self.state.lock();
                let initial_count = st.population.initial_count;
                if let Some((popped, taken)) = take_front(&mut st.items, max, initial_count) {
                    let is_in_initial_list = st.population.is_in_initial_list();
                    let result =
                        self.while_processing(&mut st, || process(popped, is_in_initial_list));
                    st.population.initial_count = st.population.initial_count.saturating_sub(taken);
                    self.signal_if_synced(&mut st);
                    return Some(result);
                }
                if st.closed {
                    return None;
                }
            }
            ready.await;
        }
    }

    /// Runs `process` for a popped entry: with the queue's lock held, or, with
    /// unlock-while-processing on and fewer than two full batches queued, with it
    /// released (client-go's `whileProcessing_locked`; the bound keeps a slow consumer
    /// from letting the queue grow without limit, since a locked queue holds the
    /// reflector back).
    fn while_processing<R>(
        &self,
        st: &mut MutexGuard<'_, super::State<K>>,
        process: impl FnOnce() -> R,
    ) -> R {
        if self.unlock_while_processing && st.items.len() < 2 * DEFAULT_BATCH_SIZE {
            MutexGuard::unlocked(st, process)
        } else {
            process()
        }
    }
}

/// Takes what the next pop hands out and how many entries that is, or `None` when
/// nothing is queued. See the [module docs](self) for the batching rules.
fn take_front<K>(
    items: &mut VecDeque<Item<K>>,
    max: usize,
    initial_count: usize,
) -> Option<(Popped<K>, usize)> {
    let first = items.pop_front()?;
    let (key, delta) = match first {
        Item::ReplacedAll(all) => return Some((Popped::ReplacedAll(all), 1)),
        Item::SyncAll => return Some((Popped::SyncAll, 1)),
        Item::Event(key, delta) => (key, delta),
    };
    let mut limit = max;
    if initial_count > 0 {
        limit = limit.min(initial_count);
    }
    let batchable = !matches!(delta, Delta::Bookmark(_));
    let mut batch = Vec::with_capacity(limit.min(items.len() + 1));
    batch.push((key, delta));
    // Distinct keys only. A single pop never builds the set.
    if batchable && limit > 1 {
        let mut seen: KeySet = batch.iter().map(|(key, _)| key.clone()).collect();
        while batch.len() < limit {
            let Some((key, _)) = items.front().and_then(Item::keyed_event) else {
                break;
            };
            if !seen.insert(key.clone()) {
                break;
            }
            if let Some(Item::Event(key, delta)) = items.pop_front() {
                batch.push((key, delta));
            }
        }
    }
    let taken = batch.len();
    Some((Popped::Events(batch), taken))
}
