//! How one sync ended ([`Outcome`]), and the reconcile timeout that can end it.
//!
//! # The reconcile timeout
//!
//! A sync that never returns (an API call with no timeout against a server that
//! accepted the connection and went silent, a driver call that hangs) holds its worker
//! for ever, and its key with it: the queue never hands a key to two workers, so no
//! later event for that object is acted on. controller-runtime v0.22 added
//! `ReconciliationTimeout` for this (a context deadline per reconcile; v0.23 counts
//! them in `controller_runtime_reconcile_timeouts_total`). Here the loop's option is
//! [`LoopOptions::reconcile_timeout`](crate::LoopOptions::reconcile_timeout), the
//! binaries' flag `--reconcile-timeout`, off by default as there.
//!
//! Cancellation is cooperative, as Go's context is, but needs nothing from the sync:
//! a Rust future runs only when polled, so when the deadline passes the loop stops
//! polling it and drops it, and the sync ends at the `.await` it was suspended at
//! (its in-flight request is dropped with it; Drop impls run). Code between two
//! awaits is never cut in half. The key then goes back with backoff, like an error
//! (a timeout is a failed sync), at the priority it was handed out with.
//!
//! What a timeout cannot undo: a write the server received before the sync was
//! dropped may still happen. That is the same for a crash, and the reason syncs are
//! level-triggered: the retry reads the world again.

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use crate::metrics::ReconcileResult;
use crate::sync_handler::Action;

/// How one sync ended.
pub(crate) enum Outcome<E> {
    /// It returned `Ok`.
    Synced(Action),
    /// It returned `Err`.
    Failed(E),
    /// It panicked (caught).
    Panicked(Box<dyn Any + Send>),
    /// The reconcile timeout passed first; the sync was dropped.
    TimedOut(Duration),
}

impl<E: Display> Outcome<E> {
    /// The metrics' and the pipeline's name for it.
    pub(crate) fn result(&self) -> ReconcileResult {
        match self {
            Outcome::Synced(Action::Done) => ReconcileResult::Success,
            Outcome::Synced(_) => ReconcileResult::RequeueAfter,
            Outcome::Failed(_) => ReconcileResult::Error,
            Outcome::Panicked(_) => ReconcileResult::Panic,
            Outcome::TimedOut(_) => ReconcileResult::Timeout,
        }
    }

    /// What went wrong, if anything.
    pub(crate) fn message(&self) -> Option<String> {
        match self {
            Outcome::Synced(_) => None,
            Outcome::Failed(err) => Some(err.to_string()),
            Outcome::Panicked(panic) => Some(panic_message(&**panic).to_string()),
            Outcome::TimedOut(after) => Some(timeout_message(*after)),
        }
    }
}

/// The message of a sync cut short after `after`.
pub(crate) fn timeout_message(after: Duration) -> String {
    format!("reconcile timed out after {after:?} (--reconcile-timeout); the sync was cancelled")
}

/// Runs `sync` (a sync with its panics caught) to its end, or until `timeout` passes
/// (`None`: no limit), and says how it ended.
pub(crate) async fn with_timeout<F, E>(timeout: Option<Duration>, sync: F) -> Outcome<E>
where
    F: Future<Output = std::thread::Result<Result<Action, E>>>,
{
    let ended = match timeout {
        None => sync.await,
        Some(limit) => match tokio::time::timeout(limit, sync).await {
            Ok(ended) => ended,
            Err(_) => return Outcome::TimedOut(limit),
        },
    };
    match ended {
        Ok(Ok(action)) => Outcome::Synced(action),
        Ok(Err(err)) => Outcome::Failed(err),
        Err(panic) => Outcome::Panicked(panic),
    }
}

/// The text of a panic payload (`panic!("...")` carries a `&str` or a `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "non-string panic payload"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_extracted() {
        let p = std::panic::catch_unwind(|| panic!("boom")).unwrap_err();
        assert_eq!(panic_message(&*p), "boom");
        let p = std::panic::catch_unwind(|| panic!("{} {}", "formatted", 1)).unwrap_err();
        assert_eq!(panic_message(&*p), "formatted 1");
        let p = std::panic::catch_unwind(|| std::panic::panic_any(7u8)).unwrap_err();
        assert_eq!(panic_message(&*p), "non-string panic payload");
    }

    #[tokio::test(start_paused = true)]
    async fn a_sync_past_the_timeout_is_dropped_and_reported() {
        let dropped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        struct SetOnDrop(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Drop for SetOnDrop {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let guard = SetOnDrop(dropped.clone());
        let hung = async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok::<_, String>(Action::Done)
        };
        let started = tokio::time::Instant::now();
        let outcome = with_timeout(Some(Duration::from_secs(5)), async { Ok(hung.await) }).await;
        assert!(matches!(outcome, Outcome::TimedOut(d) if d == Duration::from_secs(5)));
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert!(
            dropped.load(std::sync::atomic::Ordering::SeqCst),
            "the sync was dropped"
        );
        assert_eq!(outcome.result(), ReconcileResult::Timeout);
        assert!(outcome.message().unwrap().contains("timed out after 5s"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_sync_within_the_timeout_or_without_one_ends_as_it_returns() {
        let quick = async {
            Ok(Ok::<_, String>(Action::requeue_after(Duration::from_secs(
                1,
            ))))
        };
        let outcome = with_timeout(Some(Duration::from_secs(5)), quick).await;
        assert!(matches!(outcome, Outcome::Synced(Action::RequeueAfter(_))));
        let failing = async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(Err::<Action, _>("boom".to_string()))
        };
        let outcome = with_timeout(None, failing).await;
        assert_eq!(outcome.message().as_deref(), Some("boom"));
        assert_eq!(outcome.result(), ReconcileResult::Error);
    }
}
