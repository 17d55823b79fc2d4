//! The informer's steps in the [`pipeline`] trace: a delta queued in the FIFO, the
//! indexer written, a handler called. One place, so the FIFOs, the informer and the
//! handler threads label their steps the same way.

use std::sync::Arc;

use kube::Resource;
use pipeline::{Stage, Step};

use crate::delta::{Delta, DeltaType};

/// The component name of `K`'s informer stages: the type's own name (`Foo`,
/// `Deployment`), made once per FIFO or informer so recording shares it.
pub(crate) fn component<K>() -> Arc<str> {
    Arc::from(pipeline::short_type_name::<K>())
}

/// The label of a delta type.
pub(crate) fn delta_name(delta_type: DeltaType) -> &'static str {
    match delta_type {
        DeltaType::Added => "Added",
        DeltaType::Updated => "Updated",
        DeltaType::Deleted => "Deleted",
        DeltaType::Replaced => "Replaced",
        DeltaType::Sync => "Sync",
        DeltaType::Bookmark => "Bookmark",
    }
}

/// A delta for `key` joined the FIFO, which now holds `depth` entries; the step
/// carries the object's resourceVersion. Bookmarks belong to no key and are skipped.
pub(crate) fn queued<K: Resource>(
    component: &Arc<str>,
    key: &Arc<str>,
    delta: &Delta<K>,
    depth: usize,
) {
    if matches!(delta, Delta::Bookmark(_)) {
        return;
    }
    pipeline::record(|| {
        let step = Step::new(
            Stage::Fifo,
            component.clone(),
            key.clone(),
            delta_name(delta.delta_type()),
        )
        .n(i64::try_from(depth).unwrap_or(i64::MAX));
        match delta
            .object()
            .and_then(|o| o.meta().resource_version.as_deref())
        {
            Some(rv) => step.text(rv),
            None => step,
        }
    });
}

/// The indexer applied a delta for `key`: `what` is `add`, `update` or `delete`.
pub(crate) fn indexed(component: &Arc<str>, key: &Arc<str>, what: &'static str) {
    pipeline::record(|| Step::new(Stage::Indexer, component.clone(), key.clone(), what));
}

/// An event handler of the informer was called for `key`: `what` is `on_add`,
/// `on_update` or `on_delete`; `n` is 1 for an add from the initial list.
pub(crate) fn handled(component: &Arc<str>, key: &Arc<str>, what: &'static str, initial: bool) {
    pipeline::record(|| {
        Step::new(Stage::Handler, component.clone(), key.clone(), what).n(i64::from(initial))
    });
}
