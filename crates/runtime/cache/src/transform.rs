//! What happens to an object on its way into a queue: client-go's `TransformFunc`
//! (`delta_fifo.go` since 1.27, `controller.go` before), applied by both FIFOs.
//!
//! Every object enters the cache through exactly one queue call (a watch event or a
//! list item), so that is where a transform runs: once per object, before anything
//! else sees it, and before the object is shared behind an `Arc`. The usual transform
//! strips what a controller never reads (`managedFields`, often half an object's
//! size), and the cache then never holds the untransformed object.

use std::sync::Arc;

use kube::Resource;

/// A function applied to every object before it is queued (and so before it is
/// stored): client-go's `TransformFunc`. Typically strips `managedFields` to save
/// memory.
pub type TransformFunc<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Applies the transform (if any) and wraps the object for storing; both FIFOs call it
/// for every object they queue. A list is transformed page by page as it arrives
/// ([`Replacement`](crate::Replacement)), so a large initial list is never held
/// untransformed all at once.
///
/// Without a transform it trims `metadata.managedFields` to its length: JSON
/// decoding grows that vector by doubling (one entry usually sits in room for four),
/// and every cached object would keep the slack for its lifetime.
pub(crate) fn prepare_object<K: Resource>(transform: Option<&TransformFunc<K>>, obj: K) -> Arc<K> {
    Arc::new(match transform {
        Some(transform) => transform(obj),
        None => {
            let mut obj = obj;
            if let Some(fields) = obj.meta_mut().managed_fields.as_mut() {
                fields.shrink_to_fit();
            }
            obj
        }
    })
}
