//! The resync clock: client-go's reflector `resyncChan` + `processor.shouldResync`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use kube::Resource;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::informer_queue::InformerQueue;

/// Periodically asks which handlers are due for a resync and, if any, queues `Sync`
/// deltas: client-go's reflector `resyncChan` + `processor.shouldResync`.
pub(super) async fn resync_loop<K: Resource + Send + Sync + 'static>(
    inner: Weak<Inner<K>>,
    fifo: Arc<InformerQueue<K>>,
    cancel: CancellationToken,
) {
    loop {
        let period = match inner.upgrade() {
            Some(inner) => inner.resync_check_period(),
            None => return,
        };
        // With no handler wanting resyncs, look again later (handlers may be added).
        let wait = period.unwrap_or(Duration::from_secs(1));
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        let Some(inner) = inner.upgrade() else { return };
        let now = Instant::now();
        let any_due = {
            let mut processor = inner.processor.lock();
            let mut any = false;
            for listener in processor.listeners.iter_mut() {
                any |= listener.check_resync(now);
            }
            any
        };
        if any_due {
            fifo.resync();
        }
    }
}
