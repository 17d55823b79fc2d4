//! What a builder-made controller implements: controller-runtime's `reconcile`
//! package (`Request`, `Result`, `Reconciler`).
//!
//! A [`Reconciler`] is the builder world's name for a sync handler, and it follows the
//! same three rules (see `controller::sync_handler`): level, not edge (it gets a
//! [`Request`], never the event); errors mean "try again later" (the key is requeued
//! with per-key exponential backoff); permanent problems are reported and answered with
//! `Ok`. The only difference from a [`SyncHandler`] is the argument: a parsed
//! `Request { namespace, name }` instead of a `namespace/name` string, which is what
//! controller-runtime's `reconcile.Request` (a `types.NamespacedName`) is.
//!
//! [`ReconcilerAdapter`] is the seam: it turns a `Reconciler` into the `SyncHandler`
//! the workspace's sync loop ([`controller::Controller`]) runs, so panics are contained,
//! errors are retried and metrics are recorded exactly as for the hand-wired
//! controllers.

use std::fmt::{self, Display};
use std::future::Future;

use controller::{Action, SyncHandler};
use tracing::warn;

/// Which object to reconcile: controller-runtime's `reconcile.Request`.
///
/// Its [`key`](Self::key) is the work-queue key (`namespace/name`, or `name` for a
/// cluster-scoped object), the same string `cache::meta_namespace_key` computes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// The object's namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
}

impl Request {
    /// A request for `name` in `namespace` (`None`: cluster-scoped).
    ///
    /// ```
    /// use builder::Request;
    ///
    /// let request = Request::new(Some("default"), "web");
    /// assert_eq!(request.key(), "default/web");
    /// assert_eq!(Request::from_key("default/web").unwrap(), request);
    /// assert_eq!(Request::new(None::<&str>, "node-1").key(), "node-1");
    /// ```
    pub fn new(namespace: Option<impl Into<String>>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.map(Into::into),
            name: name.into(),
        }
    }

    /// The work-queue key: `namespace/name`, or `name`.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// Parses a work-queue key back into a request.
    pub fn from_key(key: &str) -> Result<Self, cache::Error> {
        let (namespace, name) = cache::split_meta_namespace_key(key)?;
        Ok(Self::new(Some(namespace).filter(|ns| !ns.is_empty()), name))
    }

    /// The namespace, or `""` for cluster-scoped objects.
    pub fn namespace_or_empty(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }
}

impl Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// A controller's reconcile function: controller-runtime's `reconcile.Reconciler`.
///
/// Return `Ok(Action::Done)` when the world matches the object,
/// `Ok(Action::RequeueAfter(d))` to look again after `d` (controller-runtime's
/// `Result{RequeueAfter: d}`), and `Err` to be retried with backoff. One request is
/// never reconciled by two workers at the same time.
///
/// ```
/// use builder::{Action, Reconciler, Request};
///
/// struct Hello;
///
/// impl Reconciler for Hello {
///     type Error = std::convert::Infallible;
///
///     async fn reconcile(&self, request: &Request) -> Result<Action, Self::Error> {
///         println!("reconciling {request}");
///         Ok(Action::Done)
///     }
/// }
/// ```
pub trait Reconciler: Send + Sync + 'static {
    /// Why a reconcile failed; logged with the request, which is then retried.
    type Error: Display + Send + 'static;

    /// Makes the world match the object `request` names.
    fn reconcile(
        &self,
        request: &Request,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send;
}

/// Runs a [`Reconciler`] as the workspace loop's [`SyncHandler`].
///
/// The builder wraps every reconciler in one; you only meet it through
/// [`BuiltController::controller`](crate::BuiltController::controller).
#[derive(Debug)]
pub struct ReconcilerAdapter<R> {
    reconciler: R,
}

impl<R> ReconcilerAdapter<R> {
    /// Wraps `reconciler`.
    pub fn new(reconciler: R) -> Self {
        Self { reconciler }
    }

    /// The wrapped reconciler.
    pub fn reconciler(&self) -> &R {
        &self.reconciler
    }
}

impl<R: Reconciler> SyncHandler for ReconcilerAdapter<R> {
    type Error = R::Error;

    async fn sync(&self, key: &str) -> Result<Action, R::Error> {
        match Request::from_key(key) {
            Ok(request) => self.reconciler.reconcile(&request).await,
            // Keys are computed by the builder's handlers, so this is a bug; retrying
            // would not fix it.
            Err(err) => {
                warn!(key, error = %err, "dropping a work-queue key that is not namespace/name");
                Ok(Action::Done)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip() {
        for key in ["ns/name", "cluster-scoped"] {
            assert_eq!(Request::from_key(key).unwrap().key(), key);
        }
        assert!(Request::from_key("a/b/c").is_err());
    }

    struct Echo;
    impl Reconciler for Echo {
        type Error = String;
        async fn reconcile(&self, request: &Request) -> Result<Action, String> {
            Err(format!("{:?}/{}", request.namespace, request.name))
        }
    }

    #[tokio::test]
    async fn the_adapter_parses_the_key_and_drops_malformed_ones() {
        let adapter = ReconcilerAdapter::new(Echo);
        assert_eq!(
            adapter.sync("ns/web").await.unwrap_err(),
            "Some(\"ns\")/web"
        );
        assert_eq!(adapter.sync("web").await.unwrap_err(), "None/web");
        assert_eq!(adapter.sync("a/b/c").await.unwrap(), Action::Done);
    }
}
