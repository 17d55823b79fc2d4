//! A [`ResourceLock`] on a `coordination.k8s.io/v1` Lease: client-go's
//! `resourcelock.LeaseLock`.
//!
//! Leases exist for exactly this job (and for Node heartbeats): a tiny object whose
//! spec *is* the election record (`holderIdentity`, `leaseDurationSeconds`,
//! `acquireTime`, `renewTime`, `leaseTransitions`), cheap to write every couple of
//! seconds, and not watched by half the cluster the way Endpoints or ConfigMaps are
//! (which is why client-go dropped those locks).
//!
//! # How the update is conditional
//!
//! [`LeaseLock::update`](ResourceLock::update) sends a JSON merge patch carrying the
//! new spec **and** `metadata.resourceVersion`. The API server treats a
//! resourceVersion in a patch as a precondition: if the Lease has changed since, the
//! patch fails with `409 Conflict` ([`LockError::Conflict`]). That is the same
//! guarantee client-go gets by `PUT`ting back the Lease it read, without having to
//! keep the whole object: labels or annotations that others put on the Lease are left
//! alone.

use std::fmt;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};

use crate::record::{
    LeaderElectionRecord, leader_election_record_to_lease_spec,
    lease_spec_to_leader_election_record,
};
use crate::resource_lock::{LockError, LockRecord, ResourceLock};

/// A lock on the Lease `namespace/name`, held as `identity`.
///
/// ```no_run
/// # fn example(client: kube::Client) {
/// use std::sync::Arc;
/// use leaderelection::{LeaseLock, ResourceLock, default_identity};
///
/// let lock: Arc<dyn ResourceLock> =
///     Arc::new(LeaseLock::new(client, "kube-system", "foo-controller", default_identity()));
/// # }
/// ```
#[derive(Clone)]
pub struct LeaseLock {
    /// Protobuf on the wire, as client-go's typed Lease client speaks.
    api: gentype::Client<Lease>,
    namespace: String,
    name: String,
    identity: String,
}

impl LeaseLock {
    /// A lock on the Lease `namespace/name` for the candidate `identity`.
    pub fn new(
        client: kube::Client,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let namespace = namespace.into();
        Self {
            api: gentype::Client::new(Api::namespaced(client, &namespace)),
            namespace,
            name: name.into(),
            identity: identity.into(),
        }
    }

    /// The Lease's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Lease's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn api_error(&self, source: kube::Error) -> LockError {
        LockError::Api {
            lock: self.describe(),
            source,
        }
    }

    fn resource_version_of(&self, lease: &Lease) -> Result<String, LockError> {
        lease
            .metadata
            .resource_version
            .clone()
            .ok_or_else(|| LockError::Other {
                lock: self.describe(),
                message: "the API server returned a Lease without metadata.resourceVersion".into(),
            })
    }

    async fn get_lease(&self) -> Result<Option<LockRecord>, LockError> {
        let Some(lease) = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.api_error(e))?
        else {
            return Ok(None);
        };
        let record = lease
            .spec
            .as_ref()
            .map(lease_spec_to_leader_election_record)
            .unwrap_or_default();
        Ok(Some(LockRecord {
            record,
            resource_version: self.resource_version_of(&lease)?,
        }))
    }

    async fn create_lease(&self, record: LeaderElectionRecord) -> Result<String, LockError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(leader_election_record_to_lease_spec(&record)),
        };
        match self.api.create(&PostParams::default(), &lease).await {
            Ok(created) => self.resource_version_of(&created),
            Err(kube::Error::Api(status)) if status.is_already_exists() => {
                Err(LockError::AlreadyExists {
                    lock: self.describe(),
                })
            }
            Err(e) => Err(self.api_error(e)),
        }
    }

    async fn update_lease(
        &self,
        record: LeaderElectionRecord,
        resource_version: String,
    ) -> Result<String, LockError> {
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": resource_version },
            "spec": leader_election_record_to_lease_spec(&record),
        });
        match self
            .api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(updated) => self.resource_version_of(&updated),
            Err(kube::Error::Api(status)) if status.is_conflict() => Err(LockError::Conflict {
                lock: self.describe(),
                resource_version,
                message: status.message.clone(),
            }),
            Err(e) => Err(self.api_error(e)),
        }
    }
}

impl ResourceLock for LeaseLock {
    fn get(&self) -> BoxFuture<'_, Result<Option<LockRecord>, LockError>> {
        self.get_lease().boxed()
    }

    fn create(&self, record: LeaderElectionRecord) -> BoxFuture<'_, Result<String, LockError>> {
        self.create_lease(record).boxed()
    }

    fn update(
        &self,
        record: LeaderElectionRecord,
        resource_version: String,
    ) -> BoxFuture<'_, Result<String, LockError>> {
        self.update_lease(record, resource_version).boxed()
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    /// `namespace/name`, like client-go.
    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

impl fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseLock")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}
