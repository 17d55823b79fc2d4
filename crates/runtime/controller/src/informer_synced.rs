//! "Have the caches been filled?": client-go's `cache.InformerSynced` and
//! `cache.WaitForNamedCacheSync`.
//!
//! A controller must not sync a single key before its informers have delivered their
//! initial lists: against a half-filled cache an existing Deployment looks missing and
//! gets created twice. So each event handler registration gives the controller an
//! [`InformerSynced`] ([`registration_synced`]), the [`Controller`](crate::Controller)
//! keeps them ([`with_synced`](crate::Controller::with_synced)), and
//! [`run`](crate::Controller::run) starts no worker before [`wait_for_cache_sync`] says
//! every one of them is true.
//!
//! client-go's `InformerSynced` is a `func() bool`, and `WaitForCacheSync` calls them
//! every 100 ms until all are true. Ours can also be *waited on*: the informer wakes
//! the wait when its initial list is in the cache and the handler's thread wakes it
//! when it has processed that list (client-go's newer `HasSyncedChecker` does the same
//! with a channel). A controller starts the moment its caches are ready, and a
//! controller waiting for a slow informer costs nothing meanwhile.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use controller::{InformerSynced, wait_for_cache_sync};
//! use tokio_util::sync::CancellationToken;
//!
//! // A readiness flag someone else sets (here: by hand; usually a registration's).
//! let (ready, flag) = tokio::sync::watch::channel(false);
//! let synced = InformerSynced::from_watch(flag);
//! assert!(!synced.has_synced());
//!
//! tokio::spawn(async move { ready.send_replace(true) });
//! let cancel = CancellationToken::new();
//! assert!(wait_for_cache_sync("example", &cancel, &[synced]).await);
//! # }
//! ```

use std::fmt;
use std::sync::Arc;

use cache::ResourceEventHandlerRegistration;
use futures::future::{BoxFuture, FutureExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// client-go's `cache.InformerSynced`: whether an informer (or one event handler
/// registration) has delivered its initial list, as a check
/// ([`has_synced`](Self::has_synced)) and as a wait
/// ([`wait_for_cache_sync`](Self::wait_for_cache_sync)). Cheap to clone.
#[derive(Clone)]
pub struct InformerSynced {
    source: Arc<dyn SyncSource>,
}

/// What an [`InformerSynced`] looks at.
trait SyncSource: Send + Sync {
    fn has_synced(&self) -> bool;
    fn wait_for_cache_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool>;
}

impl<K: 'static> SyncSource for ResourceEventHandlerRegistration<K> {
    fn has_synced(&self) -> bool {
        ResourceEventHandlerRegistration::has_synced(self)
    }

    fn wait_for_cache_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool> {
        ResourceEventHandlerRegistration::wait_for_cache_sync(self, cancel).boxed()
    }
}

impl SyncSource for watch::Receiver<bool> {
    fn has_synced(&self) -> bool {
        *self.borrow()
    }

    fn wait_for_cache_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool> {
        let mut flag = self.clone();
        async move {
            let synced = async {
                if flag.wait_for(|synced| *synced).await.is_err() {
                    // The sender is gone while false: it never syncs.
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                _ = synced => true,
                _ = cancel.cancelled() => *flag.borrow(),
            }
        }
        .boxed()
    }
}

impl InformerSynced {
    /// The check of a flag that turns `true` once something is ready: for a cache of
    /// your own, and for tests. (For an informer's handler, use
    /// [`registration_synced`].) A flag whose sender is dropped while `false` never
    /// syncs.
    pub fn from_watch(flag: watch::Receiver<bool>) -> Self {
        Self {
            source: Arc::new(flag),
        }
    }

    /// Whether the initial list has been delivered: client-go's `InformerSynced()`.
    pub fn has_synced(&self) -> bool {
        self.source.has_synced()
    }

    /// Waits until [`has_synced`](Self::has_synced) is true, woken when it turns true
    /// (never polled); `false` if `cancel` fires first.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> bool {
        self.source.wait_for_cache_sync(cancel).await
    }
}

impl fmt::Debug for InformerSynced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerSynced")
            .field("has_synced", &self.has_synced())
            .finish()
    }
}

/// The [`InformerSynced`] of one event handler registration: true once its informer
/// listed *and* the handler processed that list, so a controller's first sync sees
/// every object that existed at start (client-go's `registration.HasSynced`).
pub fn registration_synced<K: 'static>(
    registration: ResourceEventHandlerRegistration<K>,
) -> InformerSynced {
    InformerSynced {
        source: Arc::new(registration),
    }
}

/// Waits until every check is true (`true`), or until `cancel` fires (`false`):
/// client-go's `cache.WaitForNamedCacheSync`, woken instead of polling.
pub async fn wait_for_cache_sync(
    controller_name: &str,
    cancel: &CancellationToken,
    synced: &[InformerSynced],
) -> bool {
    info!(controller = controller_name, "waiting for caches to sync");
    let waits = synced.iter().map(|s| s.wait_for_cache_sync(cancel));
    if futures::future::join_all(waits)
        .await
        .into_iter()
        .all(|synced| synced)
    {
        info!(controller = controller_name, "caches are synced");
        true
    } else {
        warn!(
            controller = controller_name,
            "unable to sync caches: cancelled"
        );
        false
    }
}
