//! Membership: one `coordination.k8s.io/v1` Lease per replica, labelled with the
//! shard group. The Lease says who the replica is (`holderIdentity`), how long it
//! stays alive without renewing (`leaseDurationSeconds`), and, in an annotation, the
//! ranges it holds right now (its *announcement*).
//!
//! ```yaml
//! apiVersion: coordination.k8s.io/v1
//! kind: Lease
//! metadata:
//!   name: sample-controller-7f9c-x2l4k        # <group>-<identity, DNS-safe>
//!   labels: {sharding.kube-controllers-rs.io/group: sample-controller}
//!   annotations: {sharding.kube-controllers-rs.io/ranges: "0000000000000000-5555555555555554"}
//! spec: {holderIdentity: sample-controller-7f9c-x2l4k_3b1f..., leaseDurationSeconds: 15, renewTime: ...}
//! ```
//!
//! Replicas judge each other's liveness the way leader election does: never by
//! comparing `renewTime` with their own clock, only by whether the record
//! **changed** (its resourceVersion) within `leaseDurationSeconds` of the moment they
//! saw it change (see [`crate::coordinator`]).

use std::fmt;
use std::time::Duration;

use cache::shard::RangeSet;
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};

/// The label naming a Lease's shard group.
pub const GROUP_LABEL: &str = "sharding.kube-controllers-rs.io/group";
/// The annotation with the ranges a member holds ([`RangeSet::encode`]).
pub const RANGES_ANNOTATION: &str = "sharding.kube-controllers-rs.io/ranges";

/// One member as read from its Lease.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRecord {
    /// The member's identity (`holderIdentity`).
    pub identity: String,
    /// The ranges it announces holding (claims included).
    pub held: RangeSet,
    /// How long it stays alive without a change to its record.
    pub lease_duration: Duration,
    /// Changes whenever the record is written (the Lease's resourceVersion).
    pub version: String,
}

/// Why the member store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The API call failed.
    #[error("{action} shard member Leases in {namespace}: {source}")]
    Api {
        /// What was being done.
        action: &'static str,
        /// The Leases' namespace.
        namespace: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
    /// Someone else wrote our record since we read it (a second process with our
    /// identity, or a stale write of ours).
    #[error("our shard member Lease {name} was changed by someone else")]
    Conflict {
        /// The Lease's name.
        name: String,
    },
}

/// Where members announce themselves: the Leases of a group, or an in-memory double
/// in tests (`testing::MemoryMembers`).
pub trait MemberStore: Send + Sync {
    /// Every member record of the group (live or not).
    fn list(&self) -> BoxFuture<'_, Result<Vec<MemberRecord>, StoreError>>;
    /// Writes our own record (creating it the first time); returns its new version.
    fn write(&self, record: &MemberRecord) -> BoxFuture<'_, Result<String, StoreError>>;
    /// Deletes the record of `identity` (ours on shutdown; a long-dead member's),
    /// only if it still has `version`.
    fn delete(&self, identity: &str, version: &str) -> BoxFuture<'_, Result<(), StoreError>>;
}

/// The members of a shard group as Leases in `namespace` (a cheap handle).
#[derive(Clone)]
pub struct LeaseMembers {
    api: Api<Lease>,
    namespace: String,
    group: String,
}

impl fmt::Debug for LeaseMembers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseMembers")
            .field("namespace", &self.namespace)
            .field("group", &self.group)
            .finish()
    }
}

impl LeaseMembers {
    /// The Leases of `group` in `namespace`.
    pub fn new(client: kube::Client, namespace: &str, group: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            group: group.to_string(),
        }
    }

    /// The Lease name of `identity`: `<group>-<identity>`, lowercased, with every
    /// character a DNS name cannot hold replaced by `-`, cut to 253 characters.
    pub fn lease_name(&self, identity: &str) -> String {
        lease_name(&self.group, identity)
    }

    fn error(&self, action: &'static str, source: kube::Error) -> StoreError {
        StoreError::Api {
            action,
            namespace: self.namespace.clone(),
            source,
        }
    }

    fn lease_of(&self, record: &MemberRecord) -> Lease {
        let now = MicroTime(leaderelection::record::now_micros());
        Lease {
            metadata: ObjectMeta {
                name: Some(self.lease_name(&record.identity)),
                namespace: Some(self.namespace.clone()),
                labels: Some([(GROUP_LABEL.to_string(), self.group.clone())].into()),
                annotations: Some([(RANGES_ANNOTATION.to_string(), record.held.encode())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(record.identity.clone()),
                lease_duration_seconds: Some(leaderelection::record::lease_duration_seconds(
                    record.lease_duration,
                )),
                renew_time: Some(now),
                ..LeaseSpec::default()
            }),
        }
    }
}

/// See [`LeaseMembers::lease_name`].
pub fn lease_name(group: &str, identity: &str) -> String {
    let raw = format!("{group}-{identity}").to_lowercase();
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    name.truncate(253);
    name.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// The record a Lease holds; `None` for a Lease that is not a member's.
pub fn record_of(lease: &Lease) -> Option<MemberRecord> {
    let spec = lease.spec.as_ref()?;
    let held = lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(RANGES_ANNOTATION))
        .map(|text| RangeSet::parse(text))
        // An unreadable announcement is treated as holding everything: nobody
        // claims what an unreadable member might hold until it expires.
        .map_or_else(RangeSet::empty, |parsed| {
            parsed.unwrap_or_else(RangeSet::all)
        });
    Some(MemberRecord {
        identity: spec.holder_identity.clone()?,
        held,
        lease_duration: Duration::from_secs(
            u64::try_from(spec.lease_duration_seconds.unwrap_or(15)).unwrap_or(15),
        ),
        version: lease.metadata.resource_version.clone()?,
    })
}

impl MemberStore for LeaseMembers {
    fn list(&self) -> BoxFuture<'_, Result<Vec<MemberRecord>, StoreError>> {
        async move {
            let params = ListParams::default().labels(&format!("{GROUP_LABEL}={}", self.group));
            let leases = self
                .api
                .list(&params)
                .await
                .map_err(|e| self.error("listing", e))?;
            Ok(leases.items.iter().filter_map(record_of).collect())
        }
        .boxed()
    }

    fn write(&self, record: &MemberRecord) -> BoxFuture<'_, Result<String, StoreError>> {
        let mut lease = self.lease_of(record);
        let name = self.lease_name(&record.identity);
        let version = record.version.clone();
        async move {
            if version.is_empty() {
                match self.api.create(&PostParams::default(), &lease).await {
                    Ok(created) => {
                        return Ok(created.metadata.resource_version.unwrap_or_default());
                    }
                    // Left over from an earlier process with our identity: take it over.
                    Err(kube::Error::Api(s)) if s.code == 409 => {
                        let existing = self
                            .api
                            .get(&name)
                            .await
                            .map_err(|e| self.error("reading", e))?;
                        lease.metadata.resource_version = existing.metadata.resource_version;
                    }
                    Err(e) => return Err(self.error("creating", e)),
                }
            } else {
                lease.metadata.resource_version = Some(version);
            }
            // A replace conditional on the version we wrote last: a 409 means
            // someone else wrote our record.
            match self
                .api
                .replace(&name, &PostParams::default(), &lease)
                .await
            {
                Ok(written) => Ok(written.metadata.resource_version.unwrap_or_default()),
                Err(kube::Error::Api(s)) if s.code == 409 => Err(StoreError::Conflict { name }),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    // Deleted under us (a member that thought we were dead): recreate.
                    lease.metadata.resource_version = None;
                    self.api
                        .create(&PostParams::default(), &lease)
                        .await
                        .map(|c| c.metadata.resource_version.unwrap_or_default())
                        .map_err(|e| self.error("recreating", e))
                }
                Err(e) => Err(self.error("renewing", e)),
            }
        }
        .boxed()
    }

    fn delete(&self, identity: &str, version: &str) -> BoxFuture<'_, Result<(), StoreError>> {
        let name = self.lease_name(identity);
        let params = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                resource_version: Some(version.to_string()),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        async move {
            match self.api.delete(&name, &params).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
                Err(e) => Err(self.error("deleting", e)),
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_names_are_dns_safe() {
        assert_eq!(lease_name("foo", "Host_1234-abcd"), "foo-host-1234-abcd");
        assert_eq!(lease_name("foo", "x_"), "foo-x");
        assert!(lease_name("g", &"a".repeat(400)).len() <= 253);
    }

    #[test]
    fn a_lease_reads_back_as_the_record_written() {
        let client_free = MemberRecord {
            identity: "r1".into(),
            held: RangeSet::all(),
            lease_duration: Duration::from_secs(15),
            version: String::new(),
        };
        let mut lease = Lease {
            metadata: ObjectMeta {
                annotations: Some(
                    [(RANGES_ANNOTATION.to_string(), client_free.held.encode())].into(),
                ),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some("r1".into()),
                lease_duration_seconds: Some(15),
                ..LeaseSpec::default()
            }),
        };
        let read = record_of(&lease).unwrap();
        assert_eq!(read.held, RangeSet::all());
        assert_eq!(read.version, "7");
        // Unreadable: treated as holding everything.
        lease.metadata.annotations =
            Some([(RANGES_ANNOTATION.to_string(), "garbage".to_string())].into());
        assert_eq!(record_of(&lease).unwrap().held, RangeSet::all());
    }
}
