//! An in-memory lock for deterministic tests and examples (client-go tests its
//! elector against fake clientsets the same way).
//!
//! A [`MemoryLease`] plays the API server's Lease: one record with a resourceVersion
//! that increases on every write, and conditional updates that fail with
//! [`LockError::Conflict`] exactly like a 409. Each candidate gets its own
//! [`MemoryLock`] on it, whose network can be scripted: [`MemoryLock::set_failing`]
//! (every request fails, like an unreachable API server), [`MemoryLock::set_hanging`]
//! (requests never complete), [`MemoryLock::set_latency`] and
//! [`MemoryLock::set_write_latency`] (requests reach the "server" only after a delay,
//! which makes races between candidates certain). All
//! waiting is `tokio::time`, so tests run with paused time. Every request is logged
//! ([`MemoryLease::operations`]).
//!
//! **Requires the `testing` feature.** A test double is not part of the production API:
//! this module is compiled for the crate's own unit tests and, elsewhere, only with the
//! `testing` cargo feature, which the tests that use it enable under
//! `[dev-dependencies]`: `leaderelection = { workspace = true, features = ["testing"] }`.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::record::LeaderElectionRecord;
use crate::resource_lock::{LockError, LockRecord, ResourceLock};

/// What a logged request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// [`ResourceLock::get`].
    Get,
    /// [`ResourceLock::create`].
    Create,
    /// [`ResourceLock::update`].
    Update,
}

/// How a logged request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpOutcome {
    /// It succeeded.
    Ok,
    /// An update based on an outdated resourceVersion (409).
    Conflict,
    /// A create of an existing lease (409).
    AlreadyExists,
    /// An update of a lease that does not exist (404).
    NotFound,
    /// Failed by [`MemoryLock::set_failing`].
    Failed,
}

/// One request that reached the in-memory "server".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockOp {
    /// The identity of the lock that sent it.
    pub identity: String,
    /// What it was.
    pub kind: OpKind,
    /// How it ended.
    pub outcome: OpOutcome,
    /// When (tokio time) it was handled.
    pub at: Instant,
    /// For successful writes, the record written.
    pub written: Option<LeaderElectionRecord>,
}

#[derive(Debug, Default)]
struct LeaseState {
    current: Option<LockRecord>,
    last_resource_version: u64,
    log: Vec<LockOp>,
}

impl LeaseState {
    fn write(&mut self, record: LeaderElectionRecord) -> String {
        self.last_resource_version += 1;
        let resource_version = self.last_resource_version.to_string();
        self.current = Some(LockRecord {
            record,
            resource_version: resource_version.clone(),
        });
        resource_version
    }
}

/// An in-memory Lease shared by several [`MemoryLock`]s. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct MemoryLease {
    state: Arc<Mutex<LeaseState>>,
    name: Arc<str>,
}

impl MemoryLease {
    /// A lease that does not exist yet (the first candidate creates it).
    pub fn new(name: &str) -> Self {
        Self {
            state: Arc::default(),
            name: name.into(),
        }
    }

    /// A lock on this lease for the candidate `identity`.
    pub fn lock(&self, identity: &str) -> MemoryLock {
        MemoryLock {
            lease: self.clone(),
            identity: identity.to_string(),
            network: Arc::default(),
        }
    }

    /// The current record and resourceVersion, if the lease exists.
    pub fn get(&self) -> Option<LockRecord> {
        self.state.lock().current.clone()
    }

    /// Writes `record` unconditionally, as some other client would; returns the new
    /// resourceVersion. Not logged.
    pub fn set(&self, record: LeaderElectionRecord) -> String {
        self.state.lock().write(record)
    }

    /// Every request so far, in the order handled.
    pub fn operations(&self) -> Vec<LockOp> {
        self.state.lock().log.clone()
    }

    /// How many updates failed with a conflict.
    pub fn conflicts(&self) -> usize {
        self.state
            .lock()
            .log
            .iter()
            .filter(|op| op.outcome == OpOutcome::Conflict)
            .count()
    }
}

#[derive(Debug, Default)]
struct Network {
    failing: bool,
    hanging: bool,
    latency: Duration,
    write_latency: Duration,
    answer_latency: Duration,
}

/// One candidate's [`ResourceLock`] on a [`MemoryLease`]. Cloning shares the
/// scripted network settings.
#[derive(Debug, Clone)]
pub struct MemoryLock {
    lease: MemoryLease,
    identity: String,
    network: Arc<Mutex<Network>>,
}

impl MemoryLock {
    /// From now on every request fails (`true`) or works again (`false`).
    pub fn set_failing(&self, failing: bool) {
        self.network.lock().failing = failing;
    }

    /// From now on every request never completes (`true`), or completes again
    /// (`false`; requests already hanging keep hanging).
    pub fn set_hanging(&self, hanging: bool) {
        self.network.lock().hanging = hanging;
    }

    /// Every request reaches the lease only after `latency`.
    pub fn set_latency(&self, latency: Duration) {
        self.network.lock().latency = latency;
    }

    /// Every create and update reaches the lease only after `latency` (on top of
    /// [`set_latency`](Self::set_latency)); reads stay fast. While one candidate's
    /// write is on its way, another's read still sees the old record, so both decide
    /// to write: the race that optimistic concurrency must settle.
    pub fn set_write_latency(&self, latency: Duration) {
        self.network.lock().write_latency = latency;
    }

    /// Every create and update is applied at once, but its answer arrives only after
    /// `latency`: a caller that stops waiting meanwhile (a cancelled renewal) wrote
    /// without learning the new resourceVersion.
    pub fn set_answer_latency(&self, latency: Duration) {
        self.network.lock().answer_latency = latency;
    }

    /// Waits for the answer of an applied write like the network would.
    async fn answer(&self) {
        let latency = self.network.lock().answer_latency;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
    }

    /// Waits like the network would; `Err` if the request fails.
    async fn transmit(&self, write: bool) -> Result<(), LockError> {
        let (hanging, latency) = {
            let network = self.network.lock();
            let extra = if write {
                network.write_latency
            } else {
                Duration::ZERO
            };
            (network.hanging, network.latency + extra)
        };
        if hanging {
            futures::future::pending::<()>().await;
        }
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if self.network.lock().failing {
            return Err(LockError::Other {
                lock: self.describe(),
                message: "injected failure: the API server is unreachable".into(),
            });
        }
        Ok(())
    }

    fn log(&self, state: &mut LeaseState, kind: OpKind, outcome: OpOutcome) {
        let written = match (kind, outcome) {
            (OpKind::Create | OpKind::Update, OpOutcome::Ok) => {
                state.current.as_ref().map(|c| c.record.clone())
            }
            _ => None,
        };
        state.log.push(LockOp {
            identity: self.identity.clone(),
            kind,
            outcome,
            at: Instant::now(),
            written,
        });
    }

    fn log_failure(&self, kind: OpKind) {
        let mut state = self.lease.state.lock();
        self.log(&mut state, kind, OpOutcome::Failed);
    }

    async fn get_record(&self) -> Result<Option<LockRecord>, LockError> {
        if let Err(e) = self.transmit(false).await {
            self.log_failure(OpKind::Get);
            return Err(e);
        }
        let mut state = self.lease.state.lock();
        self.log(&mut state, OpKind::Get, OpOutcome::Ok);
        Ok(state.current.clone())
    }

    async fn create_record(&self, record: LeaderElectionRecord) -> Result<String, LockError> {
        if let Err(e) = self.transmit(true).await {
            self.log_failure(OpKind::Create);
            return Err(e);
        }
        let mut state = self.lease.state.lock();
        if state.current.is_some() {
            self.log(&mut state, OpKind::Create, OpOutcome::AlreadyExists);
            return Err(LockError::AlreadyExists {
                lock: self.describe(),
            });
        }
        let resource_version = state.write(record);
        self.log(&mut state, OpKind::Create, OpOutcome::Ok);
        Ok(resource_version)
    }

    async fn update_record(
        &self,
        record: LeaderElectionRecord,
        resource_version: String,
    ) -> Result<String, LockError> {
        if let Err(e) = self.transmit(true).await {
            self.log_failure(OpKind::Update);
            return Err(e);
        }
        let applied = {
            let mut state = self.lease.state.lock();
            let current_version = state.current.as_ref().map(|c| c.resource_version.clone());
            match current_version {
                None => {
                    self.log(&mut state, OpKind::Update, OpOutcome::NotFound);
                    return Err(LockError::Other {
                        lock: self.describe(),
                        message: "not found".into(),
                    });
                }
                Some(current) if current != resource_version => {
                    self.log(&mut state, OpKind::Update, OpOutcome::Conflict);
                    return Err(LockError::Conflict {
                        lock: self.describe(),
                        resource_version,
                        message: format!("the object has been modified (now at {current})"),
                    });
                }
                Some(_) => {
                    let resource_version = state.write(record);
                    self.log(&mut state, OpKind::Update, OpOutcome::Ok);
                    resource_version
                }
            }
        };
        self.answer().await;
        Ok(applied)
    }
}

impl ResourceLock for MemoryLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<LockRecord>, LockError>> {
        self.get_record().boxed()
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        self.create_record(record).boxed()
    }

    fn update(
        &self,
        record: LeaderElectionRecord,
        resource_version: String,
    ) -> BoxFuture<'_, Result<String, LockError>> {
        self.update_record(record, resource_version).boxed()
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("memory/{}", self.lease.name)
    }
}
