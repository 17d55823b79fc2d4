//! A resource the API server does not serve (any more): a custom resource whose CRD was
//! deleted, or is not created yet.
//!
//! The API server answers a list or a watch of such a collection `404 Not Found`. A
//! reflector cannot tell the two cases apart and needs not: either way it keeps asking
//! (with its usual backoff), and the resource may come (back) at any time. What it does
//! differently from other failures:
//!
//! * **It says so once**: one `warn` line naming the informer when the resource stops
//!   being served, one `info` line when it is served again; the retries in between log
//!   at `debug` (they still count in `reflector_list_errors_total` and keep the pipeline
//!   page's banner up, with the next try). client-go logs the 404 on every retry, every
//!   few seconds, for as long as the process lives.
//! * **`has_synced` turns false** while it is not served (an informer that had synced
//!   and whose resource went away no longer has a cache of it that means anything), and
//!   true again once the relist after its return is in.
//! * **It relists when it is served again**, rather than watching from its last
//!   resourceVersion: a recreated resource's objects are new ones.
//!
//! The objects themselves leave the cache the ordinary way: deleting a CRD deletes its
//! objects first (each a `DELETED` event to open watches), and the relist after the
//! resource's return tombstones whatever was missed.

use std::sync::Arc;

use tokio::sync::watch;

/// Whether `err` says the collection is not served: `404 Not Found`.
pub(crate) fn is_not_served(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

/// One reflector's view of whether its resource is served. See the [module docs](self).
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// The last list or watch start answered 404.
    not_served: bool,
    /// `has_synced` was turned false here (and is to be turned true again here).
    cleared_synced: bool,
}

impl Served {
    /// Whether the retries log quietly: the resource is known not to be served.
    pub(crate) fn quiet(&self) -> bool {
        self.not_served
    }

    /// A list or a watch start failed with `err`. Returns whether the resource is not
    /// served; the first time, says so and turns `synced` (the informer's flag) false.
    pub(crate) fn failed(
        &mut self,
        name: &str,
        err: &kube::Error,
        synced: Option<&Arc<watch::Sender<bool>>>,
    ) -> bool {
        if !is_not_served(err) {
            return false;
        }
        if !self.not_served {
            self.not_served = true;
            tracing::warn!(reflector = %name, error = %err,
                "the API server does not serve this resource (its CRD deleted, or not created yet); not synced until it is served again, asking with backoff");
            if let Some(synced) = synced
                && synced.send_replace(false)
            {
                self.cleared_synced = true;
            }
        }
        true
    }

    /// A list succeeded (`queue_synced`: the informer's queue has applied its first
    /// list). If the resource had been away, says it is back, and turns `synced` true
    /// again if it was turned false here.
    pub(crate) fn listed(
        &mut self,
        name: &str,
        queue_synced: bool,
        synced: Option<&Arc<watch::Sender<bool>>>,
    ) {
        if !self.not_served {
            return;
        }
        self.not_served = false;
        tracing::info!(reflector = %name, "the resource is served again; listed it");
        if self.cleared_synced && queue_synced {
            self.cleared_synced = false;
            if let Some(synced) = synced {
                synced.send_replace(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("x", "NotFound")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn a_404_clears_synced_once_and_the_next_list_restores_it() {
        let synced = Arc::new(watch::Sender::new(true));
        let mut served = Served::default();
        assert!(!served.failed("w", &status(500), Some(&synced)));
        assert!(*synced.borrow() && !served.quiet());
        assert!(served.failed("w", &status(404), Some(&synced)));
        assert!(!*synced.borrow() && served.quiet());
        assert!(served.failed("w", &status(404), Some(&synced)));
        served.listed("w", true, Some(&synced));
        assert!(*synced.borrow() && !served.quiet());
    }

    #[test]
    fn an_informer_that_never_synced_is_left_to_its_queue() {
        let synced = Arc::new(watch::Sender::new(false));
        let mut served = Served::default();
        assert!(served.failed("w", &status(404), Some(&synced)));
        served.listed("w", false, Some(&synced));
        // The queue sets it when the first list is applied, not the reflector.
        assert!(!*synced.borrow());
    }
}
