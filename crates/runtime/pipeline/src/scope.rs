//! Which sync is running on this task, so that layers far from the controller (the
//! HTTP client) can say which key an API write belongs to.

use std::future::Future;
use std::sync::Arc;

/// The controller and key of the sync running on the current task.
#[derive(Debug, Clone)]
pub struct SyncScope {
    /// The controller's name.
    pub controller: Arc<str>,
    /// The key being synced.
    pub key: Arc<str>,
}

tokio::task_local! {
    static CURRENT: SyncScope;
}

/// Runs `sync` with `scope` as the current sync: every API write the HTTP client
/// makes while `sync` runs (on this task) is recorded as a
/// [`Write`](crate::Stage::Write) step of `scope.key`.
///
/// A task-local rather than a parameter: the sync handler is the controller author's
/// code, and a write several calls deep should still land on the right key without
/// threading anything through it. Work the handler spawns onto other tasks is not
/// attributed.
pub async fn in_sync<F: Future>(scope: SyncScope, sync: F) -> F::Output {
    CURRENT.scope(scope, sync).await
}

/// The sync running on the current task, if any.
pub fn current_sync() -> Option<SyncScope> {
    CURRENT.try_with(Clone::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_scope_is_visible_inside_the_sync_only() {
        assert!(current_sync().is_none());
        let scope = SyncScope {
            controller: Arc::from("foo"),
            key: Arc::from("ns/a"),
        };
        let seen = in_sync(scope, async {
            tokio::task::yield_now().await;
            current_sync().map(|s| s.key.to_string())
        })
        .await;
        assert_eq!(seen.as_deref(), Some("ns/a"));
        assert!(current_sync().is_none());
    }
}
