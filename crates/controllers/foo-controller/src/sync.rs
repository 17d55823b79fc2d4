//! The Foo controller's `syncHandler`: compare a Foo with its Deployment and converge.
//!
//! This is sample-controller's `syncHandler`, step for step, with three deliberate
//! improvements (each marked "Better:" below):
//!
//! 1. Read the Foo from the lister (the informer's cache, never the API server). Gone?
//!    It was deleted after its key was queued: nothing to do, and no retry - the
//!    garbage collector removes its Deployment through the owner reference.
//! 2. An empty `spec.deploymentName` can never work: report it (a Warning Event the
//!    user sees in `kubectl describe foo`) and stop, without retrying.
//! 3. Read the Deployment from its lister; missing -> create it. A create the API
//!    server refuses because the namespace is being deleted (403 with the
//!    `NamespaceTerminating` cause) ends the sync quietly: the namespace deletion takes
//!    the Foo too, as the ReplicaSet controller reasons for its pods
//!    ([`controller::expected`]). Better: when the API
//!    server refuses the Deployment as invalid (422: a `deploymentName` such as
//!    `Bad_Name!`), that is the user's to fix: a Warning Event naming
//!    `spec.deploymentName` and the server's reason, and no retry (editing the Foo
//!    enqueues it again). sample-controller retries it forever with only a log line.
//!    Better: a Foo that was synced before (it has a status) and has lost its
//!    Deployment is first read from the API server: if it is gone or was replaced by
//!    a new Foo of the same name, the cache is stale (the garbage collector deleted
//!    the Deployment *because* the Foo was deleted) and nothing is created. Without
//!    this, a Deployment is created for a deleted owner; the garbage collector removes
//!    it again, but until it does (its retries back off to minutes after API server
//!    outages) it blocks a recreated Foo of the same name (found by the chaos soak).
//! 4. A Deployment of that name that this Foo does not control is someone else's:
//!    Warning Event `ErrResourceExists`, return an error (retried with backoff), and
//!    never modify it.
//! 5. Replicas differ -> scale the Deployment (a merge patch of `spec.replicas`).
//! 6. Copy the Deployment's `availableReplicas` into the Foo's status. A 404 there
//!    means the Foo was deleted since the cache saw it: the sync ends, `Ok`, at debug
//!    (its deletion event follows); sample-controller returns the error and retries.
//! 7. Normal Event `Synced`.
//!
//! Better: every write is reported to the staleness guard ([`Freshness`], when the
//! controller has one), so the Foo's next sync waits until the informers have seen
//! it: a sync that follows its own create at once does not find "no Deployment" in a
//! cache that lags and create it again (409 AlreadyExists), nor update the status
//! from the Foo it read before its own status write (409 Conflict).
//!
//! Every write goes through optimistic concurrency: the object we send carries the
//! resourceVersion we read, so a stale cache yields a 409 Conflict, which is returned
//! as an error and retried through the queue (never in a loop here) - by then the
//! informer has delivered the newer object.

use std::sync::Arc;

use apis::samplecontroller::v1alpha1::{Foo, FooStatus};
use cache::{Lister, split_meta_namespace_key};
use controller::{Action, ApiError, Freshness, SyncHandler, is_controlled_by};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use record::{EventRecorder, EventType};
use tracing::{debug, info, warn};

use crate::deployment::new_deployment;
use crate::error::{Error, Result};

/// The field manager our writes are recorded under in `managedFields`
/// (sample-controller's `FieldManager`).
pub const FIELD_MANAGER: &str = "sample-controller";

/// Event reason when a Foo is synced successfully.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Event message when a Foo is synced successfully.
pub const MESSAGE_RESOURCE_SYNCED: &str = "Foo synced successfully";
/// Event reason when the Deployment a Foo names exists but belongs to someone else.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Event reason when a Foo has no `spec.deploymentName`.
pub const ERR_DEPLOYMENT_NAME_MISSING: &str = "ErrDeploymentNameMissing";
/// Event reason when the API server refuses the Deployment built from the Foo's spec
/// as invalid (for example a `spec.deploymentName` that is not a valid name).
pub const ERR_INVALID_DEPLOYMENT: &str = "ErrInvalidDeployment";

/// What [`FooSyncer::sync`] reads and writes with: the listers of the two informers,
/// a client for writes, and the event recorder.
#[derive(Clone)]
pub struct FooSyncer {
    client: kube::Client,
    foos: Lister<Foo>,
    deployments: Lister<Deployment>,
    recorder: EventRecorder,
    freshness: Option<Freshness>,
}

impl FooSyncer {
    /// A syncer reading from the given listers and writing with `client`.
    pub fn new(
        client: kube::Client,
        foos: Lister<Foo>,
        deployments: Lister<Deployment>,
        recorder: EventRecorder,
    ) -> Self {
        Self {
            client,
            foos,
            deployments,
            recorder,
            freshness: None,
        }
    }

    /// Reports every write to `freshness` (see [`controller::freshness`]); the
    /// [`Controller`](controller::Controller) running this syncer must use the same
    /// guard.
    pub fn with_freshness(mut self, freshness: Option<Freshness>) -> Self {
        self.freshness = freshness;
        self
    }

    /// Tells the staleness guard that this sync of `key` wrote `obj`
    /// (and the pipeline view, which shows it as a step of `key`'s trip).
    fn wrote<K: kube::Resource + 'static>(&self, key: &str, obj: &K) {
        controller::record_write(obj);
        if let Some(freshness) = &self.freshness {
            freshness.wrote(key, obj);
        }
    }

    /// Whether `foo` (from the cache) still exists on the API server
    /// ([`controller::owner_still_exists`]). One GET, only when a Foo that was synced
    /// before has lost its Deployment.
    async fn is_live(&self, foo: &Foo, namespace: &str, name: &str) -> Result<bool> {
        let foos: Api<Foo> = Api::namespaced(self.client.clone(), namespace);
        controller::owner_still_exists(&foos, foo)
            .await
            .map_err(|source| ApiError::new("get Foo", namespace, name, source).into())
    }

    /// Converges the Foo named by `key` (`namespace/name`). See the [module docs](self).
    pub async fn sync_foo(&self, key: &str) -> Result<()> {
        let (namespace, name) = split_meta_namespace_key(key).map_err(Error::Key)?;

        // 1. The Foo, from the cache.
        let foo = match self.foos.get(namespace, name) {
            Ok(foo) => foo,
            Err(err) if err.is_not_found() => {
                info!(key, "Foo in work queue no longer exists");
                return Ok(());
            }
            Err(err) => return Err(Error::Key(err)),
        };

        // 2. A Foo without a Deployment name cannot be converged until the user fixes
        //    it; that edit will enqueue the Foo again.
        let deployment_name = foo.spec.deployment_name.as_str();
        if deployment_name.is_empty() {
            warn!(key, "Foo has no spec.deploymentName");
            self.recorder.event(
                &*foo,
                EventType::Warning,
                ERR_DEPLOYMENT_NAME_MISSING,
                "spec.deploymentName must be set to the name of the Deployment to manage",
            );
            return Ok(());
        }

        // Whether this sync wrote anything (step 7 reports it).
        let mut changed = false;

        // 3. The Deployment, from the cache; create it when missing.
        // Through the typed client: protobuf on the wire, as client-go's clientset.
        let deployments =
            gentype::Client::<Deployment>::new(Api::namespaced(self.client.clone(), namespace));
        let post = PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PostParams::default()
        };
        let api_error = |action, source| ApiError::new(action, namespace, deployment_name, source);
        let mut deployment = match self.deployments.get(namespace, deployment_name) {
            Ok(deployment) => deployment,
            Err(err) if err.is_not_found() => {
                if foo.status.is_some() && !self.is_live(&foo, namespace, name).await? {
                    info!(
                        key,
                        "Foo lost its Deployment and is deleted or replaced: not recreating it"
                    );
                    return Ok(());
                }
                info!(key, deployment = deployment_name, "creating Deployment");
                changed = true;
                // Only the metadata the server assigned is read back: the rest of the
                // stored Deployment is what was sent (plus defaults the sync does not
                // read), so the server does not encode it nor this process decode it.
                let mut created = new_deployment(&foo)?;
                match deployments.create_metadata(&post, &created).await {
                    Ok(metadata) => {
                        created.metadata = metadata;
                        self.wrote(key, &created);
                        Arc::new(created)
                    }
                    Err(source) => {
                        let err = api_error("create Deployment", source);
                        if err.is_namespace_terminating() {
                            // Expected while the namespace is deleted: it takes the
                            // Foo with it. No Event (it could not be created either),
                            // no error, no retry (controller::expected).
                            debug!(key, error = %err, "namespace is terminating; not creating the Deployment");
                            return Ok(());
                        }
                        if !err.is_invalid() {
                            return Err(err.into());
                        }
                        // The user's error: say so where they look, do not retry.
                        warn!(key, error = %err, "the Deployment built from the Foo is invalid");
                        self.recorder.event(
                            &*foo,
                            EventType::Warning,
                            ERR_INVALID_DEPLOYMENT,
                            format!(
                                "spec.deploymentName {deployment_name:?}: the API server refused the Deployment: {}",
                                err.user_message()
                            ),
                        );
                        return Ok(());
                    }
                }
            }
            Err(err) => return Err(Error::Key(err)),
        };

        // 4. Not ours: say so, and leave it alone.
        if !is_controlled_by(&*deployment, &*foo) {
            let err = Error::ResourceExists {
                name: deployment_name.to_string(),
            };
            self.recorder.event(
                &*foo,
                EventType::Warning,
                ERR_RESOURCE_EXISTS,
                err.to_string(),
            );
            return Err(err);
        }

        // 5. Scale. Better: sample-controller PUTs a freshly built Deployment without a
        //    resourceVersion (an unconditional overwrite of every field, including ones
        //    other tools set); we send only what changes, a merge patch of
        //    spec.replicas, carrying the resourceVersion we read, so a concurrent change
        //    is a 409 and a retry, not a silent overwrite. Sending nothing else is also
        //    what lets the cache hold trimmed Deployments (`trim_deployment`).
        let current = deployment.spec.replicas;
        if current != Some(foo.spec.replicas) {
            info!(
                key,
                ?current,
                desired = foo.spec.replicas,
                "updating Deployment replicas"
            );
            changed = true;
            let scale = Patch::Merge(serde_json::json!({
                "metadata": { "resourceVersion": deployment.metadata.resource_version },
                "spec": { "replicas": foo.spec.replicas },
            }));
            let patch_params = PatchParams {
                field_manager: Some(FIELD_MANAGER.to_string()),
                ..PatchParams::default()
            };
            let updated = deployments
                .patch(deployment_name, &patch_params, &scale)
                .await
                .map_err(|e| api_error("update Deployment", e))?;
            self.wrote(key, &updated);
            deployment = Arc::new(updated);
        }

        // 6. Status. Better: sample-controller writes the status on every sync; we
        //    write only when it changed, so a resync costs no API call.
        let available = deployment
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        let current_status = foo.status.as_ref().map(|s| s.available_replicas);
        if current_status != Some(available) {
            debug!(key, available, "updating Foo status");
            changed = true;
            let mut updated = (*foo).clone();
            updated.status = Some(FooStatus {
                available_replicas: available,
            });
            // As the create: only the server's metadata is read back.
            let foos = gentype::Client::<Foo>::new(Api::namespaced(self.client.clone(), namespace));
            let written = match foos.replace_status_metadata(name, &post, &updated).await {
                Ok(metadata) => Foo {
                    metadata,
                    ..updated
                },
                Err(source) => {
                    let err = ApiError::new("update Foo status", namespace, name, source);
                    if err.is_not_found() {
                        // Deleted since the cache saw it: nothing left to converge,
                        // and its deletion event is on its way (controller::expected).
                        debug!(key, error = %err, "Foo is gone; its status is not written");
                        return Ok(());
                    }
                    return Err(err.into());
                }
            };
            self.wrote(key, &written);
        }

        // 7. Tell the user. Repeats are folded into one Event with a count by the
        //    recorder's correlator. Better: sample-controller records this after every
        //    sync, so each resync of a converged Foo is an Event write (N per resync
        //    period with nothing happening); we record it when the sync changed
        //    something, so an idle controller makes no API calls at all.
        if changed {
            self.recorder.event(
                &*foo,
                EventType::Normal,
                SUCCESS_SYNCED,
                MESSAGE_RESOURCE_SYNCED,
            );
        }
        Ok(())
    }
}

impl SyncHandler for FooSyncer {
    type Error = Error;

    async fn sync(&self, key: &str) -> Result<Action> {
        self.sync_foo(key).await.map(|()| Action::Done)
    }
}
