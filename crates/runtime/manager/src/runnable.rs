//! What a [`Manager`](crate::Manager) runs: controller-runtime's `manager.Runnable`.
//!
//! controller-runtime's manager runs anything with a `Start(ctx) error` method that you
//! hand to `mgr.Add(r)`: controllers mostly, but also a periodic job or a cache warmer.
//! [`Runnable`] is that interface, with the two other questions the manager asks of a
//! runnable folded in as methods with defaults, so one trait is all there is to learn:
//!
//! | controller-runtime | here |
//! |---|---|
//! | `Runnable`: `Start(ctx) error`, blocks until `ctx` is done | [`Runnable::start`]: returns once `stop` has fired and its work has drained |
//! | `LeaderElectionRunnable`: `NeedLeaderElection() bool` (a runnable without it needs leadership) | [`Runnable::need_leader_election`], `true` unless overridden |
//! | `mgr.AddReadyzCheck(name, check)`, written by hand beside `mgr.Add` | [`Runnable::is_ready`], served as `/readyz/<name>` by [`Manager::add`](crate::Manager::add) |
//!
//! [`Manager::add`](crate::Manager::add) takes a runnable; [`Manager::run`](crate::Manager::run)
//! starts those that need leadership only while this replica leads (at once without
//! `--leader-elect`) and the others at once, as controller-runtime's runnable groups do,
//! and stops them all on shutdown. The first runnable to fail stops the manager.
//!
//! The workspace's two kinds of controller are runnables already:
//!
//! - a builder's [`BuiltController`] is one as it is (it knows its worker count,
//!   controller-runtime's `MaxConcurrentReconciles`);
//! - a hand-wired [`controller::Controller`] becomes one with its worker count,
//!   [`ControllerRunnable::new(controller, workers)`](ControllerRunnable::new): what
//!   kube-controller-manager's `go c.Run(ctx, workers)` says.
//!
//! Both are ready (`/readyz`) once their informers have synced. A runnable of your own
//! is a struct with a `name` and a `start`:
//!
//! ```
//! use manager::Runnable;
//! use tokio_util::sync::CancellationToken;
//!
//! /// Logs a heartbeat every minute, on every replica.
//! struct Heartbeat;
//!
//! impl Runnable for Heartbeat {
//!     type Error = std::convert::Infallible;
//!     fn name(&self) -> &str {
//!         "heartbeat"
//!     }
//!     async fn start(&self, stop: CancellationToken) -> Result<(), Self::Error> {
//!         let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
//!         loop {
//!             tokio::select! {
//!                 _ = stop.cancelled() => return Ok(()),
//!                 _ = tick.tick() => tracing::info!("still here"),
//!             }
//!         }
//!     }
//!     fn need_leader_election(&self) -> bool {
//!         false
//!     }
//! }
//! ```

use std::future::Future;

use builder::{BuiltController, Reconciler};
use controller::{Controller, SyncHandler};
use tokio_util::sync::CancellationToken;

/// A component the [`Manager`](crate::Manager) starts and stops (controller-runtime's
/// `manager.Runnable`). See the [module docs](self).
pub trait Runnable: Send + Sync + 'static {
    /// Why [`start`](Self::start) failed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Its name: in logs, in the manager's error if it fails, and its readiness check
    /// (`/readyz/<name>`); unique among the runnables of one manager.
    fn name(&self) -> &str;

    /// Runs until `stop` fires, then finishes the work in hand and returns `Ok`
    /// (controller-runtime's `Start(ctx)`). An error stops the whole manager. The
    /// manager may also drop the returned future mid-work: when this replica loses
    /// its leadership, a runnable that needs it must not write once more.
    fn start(
        &self,
        stop: CancellationToken,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// Whether it may run only on the elected leader (controller-runtime's
    /// `NeedLeaderElection`). True by default: a controller writes, and two replicas
    /// writing the same objects fight. Return false for what every replica should run.
    fn need_leader_election(&self) -> bool {
        true
    }

    /// Whether it is ready, for `/readyz` (a controller: its informers have synced).
    /// Called on every probe, from the health server's task: read a flag, never call
    /// the API server. True by default.
    fn is_ready(&self) -> bool {
        true
    }
}

/// A hand-wired [`controller::Controller`] and the number of workers to run it with,
/// as a [`Runnable`]: `mgr.add(ControllerRunnable::new(controller, workers))` is
/// kube-controller-manager's `go controller.Run(ctx, workers)`. Needs leadership; ready
/// once the controller's informers have synced ([`Controller::has_synced`]).
#[derive(Debug)]
pub struct ControllerRunnable<H> {
    controller: Controller<H>,
    workers: usize,
}

impl<H: SyncHandler> ControllerRunnable<H> {
    /// `controller`, to run with `workers` workers (0 counts as 1).
    pub fn new(controller: Controller<H>, workers: usize) -> Self {
        Self {
            controller,
            workers,
        }
    }
}

impl<H: SyncHandler> Runnable for ControllerRunnable<H> {
    type Error = controller::Error;

    fn name(&self) -> &str {
        self.controller.name()
    }

    async fn start(&self, stop: CancellationToken) -> Result<(), controller::Error> {
        self.controller.run(self.workers, stop).await
    }

    fn is_ready(&self) -> bool {
        self.controller.has_synced()
    }
}

/// A builder's controller runs with the worker count it was built with
/// ([`BuiltController::workers`]). Needs leadership; ready once its watches have
/// synced.
impl<R: Reconciler> Runnable for BuiltController<R> {
    type Error = controller::Error;

    fn name(&self) -> &str {
        BuiltController::name(self)
    }

    async fn start(&self, stop: CancellationToken) -> Result<(), controller::Error> {
        self.run(stop).await
    }

    fn is_ready(&self) -> bool {
        self.has_synced()
    }
}
