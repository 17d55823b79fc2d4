//! client-go's `LeaderCallbacks`: what the elector tells the program.
//!
//! * `on_started_leading(token)`: we became leader. The elector **spawns** the
//!   returned future (client-go: `go OnStartedLeading(ctx)`) and hands it a
//!   [`CancellationToken`] that is cancelled the moment leadership ends, whether
//!   `run` was cancelled, the renew deadline passed, or the `run` future was dropped.
//!   Everything the leader does must stop when that token fires.
//! * `on_stopped_leading()`: `run` is returning. As in client-go it is called on
//!   **every** return of `run`, also when this candidate never led (e.g. cancelled
//!   while waiting to acquire); a typical implementation exits the process or
//!   just logs. It is not called if the `run` future is dropped (the analogue of the
//!   process being killed).
//! * `on_new_leader(identity)`: we observed a different holder than we last reported,
//!   including the first holder we see and ourselves. Not called for an empty holder
//!   at start-up (nothing to report yet). client-go runs it in a goroutine; here it is
//!   called inline, in order, from the election loop, so it must be quick and must not
//!   block (send to a channel or spawn if you need more).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

type StartedFn = dyn Fn(CancellationToken) -> BoxFuture<'static, ()> + Send + Sync;
type StoppedFn = dyn Fn() + Send + Sync;
type NewLeaderFn = dyn Fn(&str) + Send + Sync;

/// The callbacks of a [`LeaderElector`](crate::LeaderElector). See the
/// [module docs](self) for when each runs.
///
/// ```
/// use leaderelection::LeaderCallbacks;
///
/// let callbacks = LeaderCallbacks::new(
///     |token| async move {
///         // Run the controller until leadership ends.
///         token.cancelled().await;
///     },
///     || tracing::info!("leader election stopped"),
/// )
/// .on_new_leader(|identity| tracing::info!(%identity, "new leader"));
/// # let _ = callbacks;
/// ```
#[derive(Clone)]
pub struct LeaderCallbacks {
    pub(crate) on_started_leading: Arc<StartedFn>,
    pub(crate) on_stopped_leading: Arc<StoppedFn>,
    pub(crate) on_new_leader: Option<Arc<NewLeaderFn>>,
}

impl LeaderCallbacks {
    /// The two callbacks client-go requires (`OnStartedLeading`, `OnStoppedLeading`).
    pub fn new<S, Fut, T>(on_started_leading: S, on_stopped_leading: T) -> Self
    where
        S: Fn(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
        T: Fn() + Send + Sync + 'static,
    {
        Self {
            on_started_leading: Arc::new(move |token| on_started_leading(token).boxed()),
            on_stopped_leading: Arc::new(on_stopped_leading),
            on_new_leader: None,
        }
    }

    /// Adds the optional `OnNewLeader` callback.
    pub fn on_new_leader(mut self, on_new_leader: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Arc::new(on_new_leader));
        self
    }
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_new_leader", &self.on_new_leader.is_some())
            .finish_non_exhaustive()
    }
}
