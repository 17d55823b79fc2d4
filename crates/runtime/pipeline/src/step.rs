//! One thing that happened to one key.

use std::sync::Arc;

use serde::Serialize;

use crate::stage::Stage;

/// One thing that happened to one key at one [`Stage`]: "the Foo `default/web`'s
/// MODIFIED event at resourceVersion 812 was queued in the FIFO", "worker 1 took
/// `default/web`", "the sync of `default/web` made a PUT that answered 200".
///
/// Cheap to build: the key and component are shared (`Arc<str>`), `what` is a static
/// label, and only [`text`](Self::text) (a resourceVersion, a path, an error) owns a
/// string.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    /// Order of recording across all stages (set by [`record`](crate::record)).
    pub seq: u64,
    /// Microseconds since the Unix epoch (set by [`record`](crate::record)).
    pub at_us: u64,
    /// The stage.
    pub stage: Stage,
    /// Who recorded it: the informer's kind (`Foo`, `Deployment`) for the informer
    /// stages, the queue's or controller's name for the others.
    pub component: Arc<str>,
    /// The object key, `namespace/name` (or `name` for cluster-scoped objects).
    pub key: Arc<str>,
    /// What happened, a stage-specific label: the delta type (`Added`, `Updated`,
    /// `Deleted`, `Replaced`, `Sync`), the handler call (`on_add`, `on_update`,
    /// `on_delete`), the queue outcome (`queued`, `raised`, `deduped`, `dirty`,
    /// `delayed`), the sync result (`started`, `success`, `requeue_after`, `error`,
    /// `panic`), the HTTP method of a write, the reason for a requeue.
    pub what: &'static str,
    /// A number whose meaning depends on `what`: FIFO depth, queue priority, worker
    /// number, milliseconds of delay or of sync time, HTTP status.
    pub n: i64,
    /// Text, when there is some: a resourceVersion, a request path, an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<Box<str>>,
}

impl Step {
    /// A step with `n` = 0 and no text; [`record`](crate::record) stamps its order and
    /// time.
    pub fn new(stage: Stage, component: Arc<str>, key: Arc<str>, what: &'static str) -> Self {
        Self {
            seq: 0,
            at_us: 0,
            stage,
            component,
            key,
            what,
            n: 0,
            text: None,
        }
    }

    /// Sets [`n`](Self::n).
    pub fn n(mut self, n: i64) -> Self {
        self.n = n;
        self
    }

    /// Sets [`text`](Self::text).
    pub fn text(mut self, text: impl Into<Box<str>>) -> Self {
        self.text = Some(text.into());
        self
    }
}
