//! What a controller implements: the `syncHandler`.
//!
//! In sample-controller the interesting code is one method, `syncHandler(ctx, key)`:
//! given a `namespace/name` key it reads the desired state from a lister, looks at the
//! actual state, and makes the actual state match. Everything else (queue, workers,
//! retries, shutdown) is plumbing that is the same for every controller; that plumbing
//! is [`Controller`](crate::Controller), and this trait is the seam between the two.
//!
//! Three rules from client-go carry over, and they shape the signature:
//!
//! - **Level, not edge.** The handler gets only a key, never the event that caused it.
//!   It must read the current state (from the informer's lister) and converge from
//!   there, so that ten events for one object collapse into one sync, a missed event
//!   costs nothing, and a restart needs no memory of the past.
//! - **Errors mean "try again later".** Returning `Err` puts the key back with
//!   per-key exponential backoff (`AddRateLimited`). Do not retry inside the handler,
//!   not even on a 409 Conflict: the next sync will read the newer object from the
//!   cache.
//! - **Permanent problems are not errors.** An object that is gone, or a spec that can
//!   never work, should be logged (and reported as a Warning Event) and answered with
//!   `Ok`: retrying would only burn API calls until the user changes the object, and
//!   that change arrives as a new event anyway.
//!
//! controller-runtime added one more answer, which we keep:
//! [`Action::RequeueAfter`] - "nothing failed, but look at this key again in a while"
//! (for example to refresh usage figures in a status every 20 seconds), at the key's
//! priority or, with [`Action::with_priority`], at one the sync chooses.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

/// What a successful sync asks the loop to do next with its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Converged: forget the key's backoff and wait for the next event.
    #[default]
    Done,
    /// Converged for now, but sync this key again after the duration
    /// (controller-runtime's `Result{RequeueAfter: d}`), at the priority the key was
    /// handed out with. The key's failure backoff is reset, exactly as for
    /// [`Action::Done`]; an event for the key in the meantime still syncs it at once.
    RequeueAfter(Duration),
    /// [`RequeueAfter`](Action::RequeueAfter) at a priority of the sync's choosing
    /// (controller-runtime's `Result{RequeueAfter: d, Priority: &p}`): a periodic
    /// refresh can go back at [`workqueue::priority::LOW`] so it never delays a
    /// user's change, or a key another object waits on above the default. Made with
    /// [`with_priority`](Action::with_priority).
    RequeueWithPriority {
        /// How long until the key is added again.
        after: Duration,
        /// The priority it is added at (higher goes first; see [`workqueue::priority`]).
        priority: i32,
    },
}

impl Action {
    /// Shorthand for [`Action::RequeueAfter`].
    pub fn requeue_after(after: Duration) -> Self {
        Action::RequeueAfter(after)
    }

    /// The same requeue at `priority` instead of the key's own; [`Action::Done`]
    /// stays `Done` (nothing goes back in line).
    ///
    /// ```
    /// use std::time::Duration;
    /// use controller::Action;
    /// use workqueue::priority::LOW;
    ///
    /// let refresh = Action::requeue_after(Duration::from_secs(20)).with_priority(LOW);
    /// assert_eq!(refresh, Action::RequeueWithPriority { after: Duration::from_secs(20), priority: LOW });
    /// assert_eq!(refresh.requeue(), Some(Duration::from_secs(20)));
    /// assert_eq!(refresh.priority(), Some(LOW));
    /// assert_eq!(Action::requeue_after(Duration::from_secs(20)).priority(), None);
    /// assert_eq!(Action::Done.with_priority(LOW), Action::Done);
    /// ```
    pub fn with_priority(self, priority: i32) -> Self {
        match self {
            Action::Done => Action::Done,
            Action::RequeueAfter(after) | Action::RequeueWithPriority { after, .. } => {
                Action::RequeueWithPriority { after, priority }
            }
        }
    }

    /// When the key goes back in line (`None`: it does not).
    pub fn requeue(&self) -> Option<Duration> {
        match *self {
            Action::Done => None,
            Action::RequeueAfter(after) | Action::RequeueWithPriority { after, .. } => Some(after),
        }
    }

    /// The priority the sync chose for the requeue (`None`: the key's own).
    pub fn priority(&self) -> Option<i32> {
        match *self {
            Action::RequeueWithPriority { priority, .. } => Some(priority),
            Action::Done | Action::RequeueAfter(_) => None,
        }
    }
}

/// A controller's reconcile function: client-go's `syncHandler`.
///
/// Called by the [`Controller`](crate::Controller)'s workers with a key from the work
/// queue (`namespace/name`, or `name` for cluster-scoped objects; split it with
/// `cache::split_meta_namespace_key`). The loop guarantees that one key is never
/// synced by two workers at the same time, so a handler needs no per-key locking.
///
/// A panic inside `sync` is caught by the loop, logged and treated like an `Err`
/// (client-go's `HandleCrash`, minus the crash): one bad object cannot take a worker
/// down. It is still a bug: return errors instead.
///
/// # Example
///
/// ```
/// use controller::{Action, SyncHandler};
///
/// struct Printer;
///
/// impl SyncHandler for Printer {
///     type Error = std::convert::Infallible;
///
///     async fn sync(&self, key: &str) -> Result<Action, Self::Error> {
///         println!("syncing {key}");
///         Ok(Action::Done)
///     }
/// }
/// ```
pub trait SyncHandler: Send + Sync + 'static {
    /// Why a sync failed. Logged with the key, then the key is retried with backoff.
    type Error: Display + Send + 'static;

    /// Converges the object named by `key`. See the [module docs](self) for the rules.
    fn sync(&self, key: &str) -> impl Future<Output = Result<Action, Self::Error>> + Send;
}
