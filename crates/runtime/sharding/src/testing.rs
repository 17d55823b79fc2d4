//! Test doubles (the `testing` feature): [`MemoryMembers`], an in-memory member store
//! shared by several replicas of one test, each through its own [`MemberClient`]
//! whose calls can be made to fail or to hang (a partition, a frozen process).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::FutureExt;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::member::{MemberRecord, MemberStore, StoreError};

/// The Leases of one group, in memory. Cheap to clone.
#[derive(Clone, Default)]
pub struct MemoryMembers {
    records: Arc<Mutex<BTreeMap<String, MemberRecord>>>,
    versions: Arc<AtomicU64>,
}

impl std::fmt::Debug for MemoryMembers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryMembers")
            .field("records", &*self.records.lock())
            .finish()
    }
}

impl MemoryMembers {
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// A client of the store for one replica.
    pub fn client(&self) -> Arc<MemberClient> {
        Arc::new(MemberClient {
            members: self.clone(),
            failing: AtomicBool::new(false),
            hung: watch::Sender::new(false),
        })
    }

    /// The record of `identity`, as stored.
    pub fn record(&self, identity: &str) -> Option<MemberRecord> {
        self.records.lock().get(identity).cloned()
    }

    /// Every stored record.
    pub fn records(&self) -> Vec<MemberRecord> {
        self.records.lock().values().cloned().collect()
    }
}

/// One replica's connection to a [`MemoryMembers`].
#[derive(Debug)]
pub struct MemberClient {
    members: MemoryMembers,
    failing: AtomicBool,
    hung: watch::Sender<bool>,
}

impl MemberClient {
    /// Makes every call fail (`true`) or succeed again.
    pub fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Makes every call hang until unset (a frozen process: nothing it sends arrives).
    pub fn set_hung(&self, hung: bool) {
        self.hung.send_replace(hung);
    }

    async fn gate(&self) -> Result<(), StoreError> {
        let mut hung = self.hung.subscribe();
        while *hung.borrow_and_update() {
            if hung.changed().await.is_err() {
                break;
            }
        }
        if self.failing.load(Ordering::SeqCst) {
            return Err(StoreError::Api {
                action: "reaching",
                namespace: "memory".into(),
                source: kube::Error::Api(
                    kube::core::Status::failure("injected failure", "ServiceUnavailable")
                        .with_code(503)
                        .boxed(),
                ),
            });
        }
        Ok(())
    }
}

impl MemberStore for MemberClient {
    fn list(&self) -> BoxFuture<'_, Result<Vec<MemberRecord>, StoreError>> {
        async move {
            self.gate().await?;
            Ok(self.members.records())
        }
        .boxed()
    }

    fn write(&self, record: &MemberRecord) -> BoxFuture<'_, Result<String, StoreError>> {
        let record = record.clone();
        async move {
            self.gate().await?;
            let mut records = self.members.records.lock();
            let current = records.get(&record.identity).map(|r| r.version.clone());
            if let Some(current) = &current
                && !record.version.is_empty()
                && current != &record.version
            {
                return Err(StoreError::Conflict {
                    name: record.identity.clone(),
                });
            }
            let version = (self.members.versions.fetch_add(1, Ordering::SeqCst) + 1).to_string();
            records.insert(
                record.identity.clone(),
                MemberRecord {
                    version: version.clone(),
                    ..record
                },
            );
            Ok(version)
        }
        .boxed()
    }

    fn delete(&self, identity: &str, version: &str) -> BoxFuture<'_, Result<(), StoreError>> {
        let (identity, version) = (identity.to_string(), version.to_string());
        async move {
            self.gate().await?;
            let mut records = self.members.records.lock();
            if records.get(&identity).is_some_and(|r| r.version == version) {
                records.remove(&identity);
            }
            Ok(())
        }
        .boxed()
    }
}
