//! The stages a key passes through, in pipeline order.

use serde::Serialize;

/// One stage of the pipeline, in the order a change passes through them (the page
/// draws them left to right in this order).
///
/// | stage | where | client-go |
/// |---|---|---|
/// | [`Fifo`](Stage::Fifo) | a watch event or list item queued in the informer's FIFO | `reflector.go` `watchHandler`, `the_real_fifo.go` / `delta_fifo.go` `Add` |
/// | [`Indexer`](Stage::Indexer) | popped from the FIFO and written to the indexer | `shared_informer.go` `HandleDeltas` |
/// | [`Handler`](Stage::Handler) | an event handler called | `shared_informer.go` `processorListener.run` |
/// | [`Queue`](Stage::Queue) | the key added to the workqueue | `util/workqueue/queue.go` `Add`, `delaying_queue.go` `AddAfter` |
/// | [`Worker`](Stage::Worker) | a worker took the key | `processNextWorkItem`'s `Get` |
/// | [`Sync`](Stage::Sync) | the sync handler started or ended | `syncHandler` |
/// | [`Write`](Stage::Write) | an API write made by that sync | the clientset's `Create` / `Update` / `Patch` / `Delete` |
/// | [`Requeue`](Stage::Requeue) | the key put back (error backoff, requeue-after, parked) | `AddRateLimited`, `AddAfter` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// A watch event or list item queued in an informer's FIFO.
    Fifo,
    /// Popped from the FIFO and applied to the indexer.
    Indexer,
    /// An informer event handler was called.
    Handler,
    /// The key was added to a workqueue (queued, deduplicated, or delayed).
    Queue,
    /// A worker took the key from the queue.
    Worker,
    /// The sync handler started or ended.
    Sync,
    /// The sync made an API write.
    Write,
    /// The key was put back in the queue.
    Requeue,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 8] = [
        Stage::Fifo,
        Stage::Indexer,
        Stage::Handler,
        Stage::Queue,
        Stage::Worker,
        Stage::Sync,
        Stage::Write,
        Stage::Requeue,
    ];

    /// The stage's position in [`Stage::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The stage's name, as the JSON and the page spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Fifo => "fifo",
            Stage::Indexer => "indexer",
            Stage::Handler => "handler",
            Stage::Queue => "queue",
            Stage::Worker => "worker",
            Stage::Sync => "sync",
            Stage::Write => "write",
            Stage::Requeue => "requeue",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order() {
        for (i, stage) in Stage::ALL.iter().enumerate() {
            assert_eq!(stage.index(), i, "{stage:?}");
        }
    }
}
