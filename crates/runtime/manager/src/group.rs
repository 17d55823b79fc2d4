//! Runnables started and stopped together: controller-runtime's `runnableGroup`
//! (`pkg/manager/runnable_group.go`).
//!
//! The [`Manager`](crate::Manager) keeps two groups: what runs on every replica, started
//! at once, and what needs leadership, started when this replica leads. A group spawns
//! one task per runnable, all told to stop by one token, and reports the first runnable
//! that fails. A runnable that returns `Ok` before it was told to stop simply ends, as
//! in controller-runtime; the others keep running.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::task::{JoinError, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::manager::ManagerError;
use crate::runnable::Runnable;

type StartFn =
    dyn FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), ManagerError>> + Send + Sync;

/// A runnable as [`Manager::add`](crate::Manager::add) keeps it until the run: its
/// type erased into "start with this token".
pub(crate) struct Added {
    pub(crate) name: String,
    pub(crate) need_leader_election: bool,
    // Sync too, so that a `&Manager` holding it is Send (its run is spawned).
    start: Box<StartFn>,
}

impl Added {
    pub(crate) fn new<R: Runnable>(runnable: Arc<R>) -> Self {
        let name = runnable.name().to_string();
        Self {
            name: name.clone(),
            need_leader_election: runnable.need_leader_election(),
            start: Box::new(move |stop| {
                Box::pin(async move {
                    runnable
                        .start(stop)
                        .await
                        .map_err(|err| ManagerError::Runnable {
                            name,
                            source: Box::new(err),
                        })
                })
            }),
        }
    }
}

/// Runnables running together until [`stop`](Self::stop) or [`abort`](Self::abort).
pub(crate) struct RunnableGroup {
    stop: CancellationToken,
    tasks: JoinSet<Result<(), ManagerError>>,
}

impl RunnableGroup {
    /// Starts every runnable of `added`, each on a task of its own.
    pub(crate) fn start(added: Vec<Added>) -> Self {
        let stop = CancellationToken::new();
        let mut tasks = JoinSet::new();
        for runnable in added {
            info!(runnable = %runnable.name, "starting");
            tasks.spawn((runnable.start)(stop.clone()));
        }
        Self { stop, tasks }
    }

    /// The error of the first runnable that fails; never resolves while none does
    /// (also when the group is empty). Cancel-safe, for `select!`.
    pub(crate) async fn failed(&mut self) -> ManagerError {
        while let Some(joined) = self.tasks.join_next().await {
            if let Err(err) = outcome(joined) {
                return err;
            }
        }
        std::future::pending().await
    }

    /// Tells every runnable to stop and waits until all have drained: the first error,
    /// if one failed.
    pub(crate) async fn stop(mut self) -> Result<(), ManagerError> {
        self.stop.cancel();
        let mut result = Ok(());
        while let Some(joined) = self.tasks.join_next().await {
            let joined = outcome(joined);
            if result.is_ok() {
                result = joined;
            }
        }
        result
    }

    /// Drops every runnable mid-work (their futures, and so their workers) and waits
    /// until they are gone: after this returns, none of them writes again.
    pub(crate) async fn abort(mut self) {
        self.tasks.abort_all();
        while let Some(joined) = self.tasks.join_next().await {
            let _ = outcome(joined);
        }
    }
}

/// What a runnable's task ended with. A runnable that panicked panics the run, as it
/// would have had it been awaited in place (its task only caught the panic); one
/// cancelled (by [`RunnableGroup::abort`], or a runtime shutting down) just ended.
fn outcome(joined: Result<Result<(), ManagerError>, JoinError>) -> Result<(), ManagerError> {
    match joined {
        Ok(result) => result,
        Err(err) => match err.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_cancelled) => Ok(()),
        },
    }
}
