//! The sync gate: a per-key "may this replica sync it now?" asked by the loop before
//! every sync, for controllers that run as several **active** replicas, each owning a
//! slice of the keys (the `sharding` crate implements it; leader election needs no
//! gate, since only the leader runs the loop at all).
//!
//! The loop asks [`SyncGate::admit`] after taking a key from the queue:
//!
//! - [`Admission::Skip`]: the key belongs to another replica. It is forgotten (no
//!   retry, no backoff): its owner reconciles it, and if the key comes back to this
//!   replica the gate's owner queues it again.
//! - [`Admission::Admit`] with a [`Pass`]: sync it. The pass is held for the whole
//!   sync (the gate counts syncs in flight, so a replica giving up a slice can wait
//!   for them before it lets another replica start), and it carries a *revocation*:
//!   if the replica must stop at once (it could not renew its membership in time, or
//!   it wakes from a freeze past its deadline), the sync is dropped mid-flight,
//!   before its next API call, exactly as a leader that lost its Lease drops its
//!   controllers.
//!
//! The revocation is checked before every *poll* of the sync; nothing can check in
//! the middle of one. A process frozen (or a thread descheduled) halfway through a
//! poll finishes that poll when it runs again, and a request the poll starts goes
//! out; the next poll is then revoked. Such a request carries the resourceVersion
//! the sync read, so a successor's write in between turns it into a 409 Conflict.
//! The loop logs when each sync's last poll began (`last_poll_at`, see
//! `sync_clock`) so that the chaos soak can tell the two cases apart.

use std::fmt;
use std::future::Future;

use futures::future::BoxFuture;

/// Decides, key by key, whether this replica may sync now. See the [module docs](self).
pub trait SyncGate: Send + Sync + 'static {
    /// Whether to sync `key` now.
    fn admit(&self, key: &str) -> Admission;
}

/// The gate's answer for one key.
#[derive(Debug)]
pub enum Admission {
    /// Sync it, holding the pass until the sync ends.
    Admit(Pass),
    /// Not this replica's key: forget it.
    Skip,
}

/// Permission for one sync: dropped when the sync ends; the sync is abandoned if
/// [`revoked`](Pass::new) completes first.
pub struct Pass {
    revoked: BoxFuture<'static, ()>,
    held: Box<dyn Send + Sync>,
    object: Option<u64>,
}

impl fmt::Debug for Pass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pass").finish_non_exhaustive()
    }
}

impl Pass {
    /// A pass that is revoked when `revoked` completes, and releases `held` (the
    /// gate's in-flight record) when dropped.
    pub fn new(
        revoked: impl Future<Output = ()> + Send + 'static,
        held: impl Send + Sync + 'static,
    ) -> Self {
        Self {
            revoked: Box::pin(revoked),
            held: Box::new(held),
            object: None,
        }
    }

    /// Names the object the pass was given for (the sharding crate uses the hash of
    /// its uid). The loop logs it with the sync (`object_hash`), because a *key* is a
    /// name and a name can outlive its object: deleted and created again, it is a new
    /// object with a new uid, which a uid-sharded group may place on another replica
    /// while the first still syncs the old one's "not found". The invariant the chaos
    /// soak checks is per object (no object synced by two replicas at once), so it
    /// needs to tell the two apart.
    pub fn for_object(mut self, hash: u64) -> Self {
        self.object = Some(hash);
        self
    }

    /// The object this pass is for, if the gate named one ([`for_object`](Self::for_object)).
    pub fn object(&self) -> Option<u64> {
        self.object
    }

    /// Runs `sync` under this pass: its output, or `None` if the pass was revoked
    /// first. Revocation is checked before every poll of `sync` (a replica that wakes
    /// up past its deadline must not send one more request). `sync` is dropped
    /// before the in-flight record is released.
    pub async fn run<F: Future>(self, sync: F) -> Option<F::Output> {
        let Pass { revoked, held, .. } = self;
        let out = tokio::select! {
            biased;
            _ = revoked => None,
            out = sync => Some(out),
        };
        drop(held);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[tokio::test]
    async fn a_revoked_pass_drops_the_sync_before_releasing() {
        let released = Arc::new(AtomicBool::new(false));
        struct Held(Arc<AtomicBool>);
        impl Drop for Held {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let pass = Pass::new(async {}, Held(released.clone()));
        let out = pass.run(std::future::pending::<u8>()).await;
        assert_eq!(out, None);
        assert!(released.load(Ordering::SeqCst));

        let pass = Pass::new(std::future::pending(), ());
        assert_eq!(pass.run(async { 7 }).await, Some(7));
    }
}
