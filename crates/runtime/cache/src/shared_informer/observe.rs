//! What the informer shows while it runs: the pipeline page's gauges (FIFO depth, the
//! wire the API server answers in, the indexer's size). The informer metrics are
//! resolved in `run`, where each pop is timed.

use std::sync::Arc;

use kube::Resource;

use super::Inner;
use crate::informer_queue::InformerQueue;

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    /// Registers this run's gauges on the pipeline page. Each holds only weak
    /// references to `fifo` (and to the informer), so it reads nothing once the run
    /// that owns `fifo` has ended.
    pub(super) fn register_gauges(self: &Arc<Self>, fifo: &Arc<InformerQueue<K>>) {
        // The page's FIFO depth and indexer size, for as long as this run lasts.
        let fifo_weak = Arc::downgrade(fifo);
        pipeline::gauges().register(
            self.component.to_string(),
            pipeline::Stage::Fifo,
            "depth",
            move || fifo_weak.upgrade().map(|f| count(f.len())),
        );
        // The wire the API server answers this informer in (`-` before its first
        // answer or without a server), for as long as this run lasts.
        let (running, lister_watcher) = (Arc::downgrade(fifo), self.lister_watcher.clone());
        pipeline::gauges().register_text(
            self.component.to_string(),
            pipeline::Stage::Fifo,
            "wire",
            move || {
                running.upgrade()?;
                Some(lister_watcher.answered_wire().map_or("-", |w| w.as_str()))
            },
        );
        let inner_weak = Arc::downgrade(self);
        let running = Arc::downgrade(fifo);
        pipeline::gauges().register(
            self.component.to_string(),
            pipeline::Stage::Indexer,
            "size",
            move || {
                running.upgrade()?;
                inner_weak.upgrade().map(|i| count(i.indexer.len()))
            },
        );
    }
}

/// A size as a gauge value.
fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
