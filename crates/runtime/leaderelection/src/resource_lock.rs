//! The lock abstraction: client-go's `resourcelock.Interface`.
//!
//! The election algorithm ([`LeaderElector`](crate::LeaderElector)) never talks to the
//! API server itself; it reads and writes a [`LeaderElectionRecord`] through a
//! [`ResourceLock`]. client-go used to offer locks on Endpoints and ConfigMaps
//! (annotations) and now only on Leases; here [`LeaseLock`](crate::LeaseLock) is the
//! real lock and `testing::MemoryLock` (with the `testing` feature) is an in-memory
//! one for deterministic tests.
//!
//! # Optimistic concurrency is the whole trick
//!
//! Two candidates may both decide "the lock has expired, I take it" at the same
//! moment. What stops both from becoming leader is that every write names the
//! `resourceVersion` it was based on: [`ResourceLock::update`] succeeds only if the
//! object has not changed since that version, and otherwise fails with the typed
//! [`LockError::Conflict`] (HTTP 409). Of two racing candidates exactly one write
//! lands; the other gets the conflict, and its next read shows the new holder.
//! Likewise [`ResourceLock::create`] of a lock that someone else created first fails
//! with [`LockError::AlreadyExists`].
//!
//! # Differences from client-go
//!
//! client-go's `LeaseLock` caches the last Lease it read and `Update` writes that
//! cached object back, so the resourceVersion travels hidden inside the lock. Here the
//! version is explicit: [`ResourceLock::get`] returns it, `create` and `update` return
//! the new one, and `update` takes the version it is based on. The lock is stateless,
//! the elector keeps the version, and tests can see exactly which version every write
//! was based on. A missing lock is `Ok(None)` rather than a NotFound error.
//! `RecordEvent` is not part of the trait (events arrive with the controller crate).

use std::fmt;

use futures::future::BoxFuture;

use crate::record::LeaderElectionRecord;

/// A record as read from the lock, with the `resourceVersion` it was read at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockRecord {
    /// The election record.
    pub record: LeaderElectionRecord,
    /// The lock object's `metadata.resourceVersion`: the precondition for the next
    /// [`ResourceLock::update`].
    pub resource_version: String,
}

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock changed since the resourceVersion the update was based on (HTTP 409
    /// `Conflict`): somebody else wrote it first. Not a fault; the next read shows
    /// what they wrote.
    #[error("lock {lock} was modified since resourceVersion {resource_version}: {message}")]
    Conflict {
        /// [`ResourceLock::describe`] of the lock.
        lock: String,
        /// The version the failed update was based on.
        resource_version: String,
        /// The server's message.
        message: String,
    },
    /// `create` found the lock already there (HTTP 409 `AlreadyExists`): another
    /// candidate created it first.
    #[error("lock {lock} already exists")]
    AlreadyExists {
        /// [`ResourceLock::describe`] of the lock.
        lock: String,
    },
    /// The API server or the connection to it failed.
    #[error("lock {lock}: {source}")]
    Api {
        /// [`ResourceLock::describe`] of the lock.
        lock: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// Any other failure (used by in-memory locks in tests, e.g. an injected outage).
    #[error("lock {lock}: {message}")]
    Other {
        /// [`ResourceLock::describe`] of the lock.
        lock: String,
        /// What went wrong.
        message: String,
    },
}

impl LockError {
    /// Whether this is a [`LockError::Conflict`] (client-go's `errors.IsConflict`).
    pub fn is_conflict(&self) -> bool {
        matches!(self, LockError::Conflict { .. })
    }

    /// Whether this is a [`LockError::AlreadyExists`] (client-go's
    /// `errors.IsAlreadyExists`).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, LockError::AlreadyExists { .. })
    }
}

/// client-go's `resourcelock.Interface`: where the election record lives.
///
/// Object safe (the elector holds an `Arc<dyn ResourceLock>`), so the async methods
/// return boxed futures. Implementations must make [`update`](Self::update)
/// conditional on the resourceVersion: that precondition is what makes the election
/// safe when two candidates race (see the [module docs](self)).
pub trait ResourceLock: Send + Sync + fmt::Debug {
    /// Reads the record and the resourceVersion it was read at; `Ok(None)` when the
    /// lock object does not exist yet.
    fn get(&self) -> BoxFuture<'_, Result<Option<LockRecord>, LockError>>;

    /// Creates the lock object holding `record`; returns its resourceVersion. Fails
    /// with [`LockError::AlreadyExists`] when it exists already.
    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>>;

    /// Replaces the record, **only if** the lock is still at `resource_version`;
    /// returns the new resourceVersion. Fails with [`LockError::Conflict`] when the
    /// lock has changed since.
    fn update(
        &self,
        record: LeaderElectionRecord,
        resource_version: String,
    ) -> BoxFuture<'_, Result<String, LockError>>;

    /// This candidate's identity: what it writes as `holder_identity`. Must be unique
    /// among all candidates of one election.
    fn identity(&self) -> &str;

    /// The lock for humans (logs, errors), e.g. `namespace/name`.
    fn describe(&self) -> String;
}
