//! A handler's registration: client-go's `ResourceEventHandlerRegistration`, what
//! [`SharedIndexInformer::add_event_handler`](crate::SharedIndexInformer::add_event_handler)
//! returns.
//!
//! Its [`has_synced`](ResourceEventHandlerRegistration::has_synced) is what a
//! controller waits for before its first sync: true once the informer has put its
//! initial list in the cache *and* this handler has processed every notification of
//! it, so the keys of every object that existed at start are in the controller's
//! queue. [`wait_for_cache_sync`](ResourceEventHandlerRegistration::wait_for_cache_sync)
//! waits for it, woken rather than polling.

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Weak};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::processor_listener::SyncTracker;

/// A handler's registration: client-go's `ResourceEventHandlerRegistration`.
pub struct ResourceEventHandlerRegistration<K> {
    id: u64,
    tracker: Arc<SyncTracker>,
    /// The informer's "initial list cached" flag; gone with the informer.
    informer_synced: Weak<watch::Sender<bool>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for ResourceEventHandlerRegistration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerRegistration")
            .field("id", &self.id)
            .field("pending_initial", &self.tracker.pending())
            .finish()
    }
}

impl<K> ResourceEventHandlerRegistration<K> {
    /// The registration of the listener whose initial-list count (and process-wide
    /// id) is `tracker`, on the informer whose synced flag is `informer_synced`.
    pub(crate) fn new(
        _informer_local_id: u64,
        tracker: Arc<SyncTracker>,
        informer_synced: Weak<watch::Sender<bool>>,
    ) -> Self {
        Self {
            // The listener's process-wide id, which the informer removes by: an id
            // counted per informer would let another informer's handler be removed.
            id: tracker.uid,
            tracker,
            informer_synced,
            _kind: PhantomData,
        }
    }

    /// The registration of a handler a stopped informer refused: shut down, never
    /// synced, removing it removes nothing.
    pub(crate) fn refused() -> Self {
        let tracker = Arc::new(SyncTracker::refused());
        Self {
            id: tracker.uid,
            tracker,
            informer_synced: Weak::new(),
            _kind: PhantomData,
        }
    }

    /// The listener's id in the informer's processor.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Whether the informer has synced and this handler has processed every
    /// notification of the initial list.
    pub fn has_synced(&self) -> bool {
        let Some(informer_synced) = self.informer_synced.upgrade() else {
            return false;
        };
        *informer_synced.borrow() && self.tracker.pending() == 0
    }

    /// Waits until the handler has been called for the last time: every notification
    /// buffered for it is delivered, its thread has ended and the handler is dropped.
    /// Together with
    /// [`remove_event_handler`](crate::SharedIndexInformer::remove_event_handler) this
    /// is client-go's `ShutDownEventHandler`: after both, whatever the handler used
    /// may be torn down. A handler's thread also ends when its informer stops, and
    /// never before either: without one of them this waits for ever.
    pub async fn wait_shut_down(&self) {
        self.tracker.wait_shut_down().await;
    }

    /// Whether the handler has been called for the last time (see
    /// [`wait_shut_down`](Self::wait_shut_down)).
    pub fn is_shut_down(&self) -> bool {
        self.tracker.is_shut_down()
    }

    /// Waits until [`has_synced`](Self::has_synced); `false` if `cancel` fires first
    /// (a registration whose informer is gone never syncs). Woken by the informer when
    /// it syncs and by the handler's thread when it has processed the initial list: no
    /// polling (client-go polls `HasSynced` every 100 ms, or waits on the channel of
    /// its newer `HasSyncedChecker`).
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> bool {
        let informer_synced = self.informer_synced.upgrade().map(|s| s.subscribe());
        let synced = async {
            let Some(mut informer_synced) = informer_synced else {
                return std::future::pending().await;
            };
            // First the informer's initial list (no more initial notifications are
            // queued after that), then this handler's share of it.
            if informer_synced.wait_for(|synced| *synced).await.is_err() {
                return std::future::pending().await; // the informer is gone
            }
            self.tracker.wait_caught_up().await;
            true
        };
        tokio::select! {
            synced = synced => synced,
            _ = cancel.cancelled() => self.has_synced(),
        }
    }
}
