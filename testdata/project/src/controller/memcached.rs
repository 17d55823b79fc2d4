//! The Memcached controller: kubebuilder's deploy-image plugin
//! (`kcr create api ... --image memcached:1.6-alpine --image-container-port 11211`),
//! `internal/controller/memcached_controller.go`.
//!
//! A Memcached owns one Deployment of its name running the image (default
//! [`DEFAULT_IMAGE`], or the environment variable [`IMAGE_ENV`]) with `spec.size`
//! replicas listening on `spec.containerPort`. [`MemcachedReconciler::reconcile`], step
//! by step:
//!
//! 1. Read the Memcached from the cache. Gone, or being deleted? Nothing to do: its
//!    Deployment has a controller owner reference to it, so the garbage collector
//!    deletes the Deployment (no finalizer needed: nothing outside the cluster).
//! 2. Check the spec. A bad one (`size < 0`) can only be fixed by the user: report it
//!    (`Ready=False`, reason [`REASON_INVALID_SPEC`], a Warning Event) and stop, with
//!    `Ok`: retrying would change nothing, and the user's fix triggers a new reconcile.
//! 3. The Deployment ([`deployment_for_memcached`]), as found in the cache:
//!    - absent: **create** it, by server-side apply (so that later applies own every
//!      field it set). A Memcached reconciled
//!      before that lost its Deployment is first looked up on the API server (one GET):
//!      the cache may not have seen its own deletion yet, and a Deployment for a
//!      deleted owner is only more work for the garbage collector;
//!    - controlled by this Memcached: **server-side apply** the desired fields, with
//!      `force`: a `kubectl scale` or edit of those fields is put back;
//!    - anyone else's: never touched. Warning Event, `Ready=False`, and an error, so
//!      the request is retried with backoff in case it goes away.
//! 4. `Ready`: `True` once every replica is available, written only when it changes.
//!
//! Because [`setup`] declares `.owns::<Deployment>()`, a change to the Deployment (its
//! pods becoming available, someone scaling it) reconciles the Memcached again.

use std::collections::BTreeMap;

use builder::{Action, Reconciler, Request};
use cache::Lister;
use controller::{ApiError, Freshness, is_controlled_by, new_controller_ref, owner_still_exists};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, PodSecurityContext, PodSpec, PodTemplateSpec,
    SeccompProfile, SecurityContext,
};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use manager::{Manager, ManagerError};
use record::{EventRecorder, EventType};
use tracing::{debug, info};

use super::{CONDITION_READY, Error, find_status_condition, policy_rule, set_status_condition};
use crate::api::memcached_v1alpha1::Memcached;

/// The controller's name: in logs, metrics, `/readyz/memcached`, and the field manager
/// of its writes.
pub const CONTROLLER_NAME: &str = "memcached";

/// The image the Deployment runs unless [`IMAGE_ENV`] names another.
pub const DEFAULT_IMAGE: &str = "memcached:1.6-alpine";
/// The environment variable that overrides [`DEFAULT_IMAGE`] (kubebuilder's
/// `MEMCACHED_IMAGE`, set in the manager's Deployment).
pub const IMAGE_ENV: &str = "MEMCACHED_IMAGE";

/// `Ready=True` reason: every replica is available.
pub const REASON_AVAILABLE: &str = "Available";
/// `Ready=False` reason: the Deployment is rolling out.
pub const REASON_PROGRESSING: &str = "Progressing";
/// `Ready=False` reason and Warning Event reason: the spec cannot be honoured.
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";

/// Adds the Memcached controller to `mgr`: controller-runtime's `SetupWithManager`,
///
/// ```text
/// ctrl.NewControllerManagedBy(mgr).For(&cachev1alpha1.Memcached{}).Owns(&appsv1.Deployment{}).Complete(r)
/// ```
pub fn setup(mgr: &mut Manager) -> Result<(), ManagerError> {
    let builder = mgr
        .controller_managed_by(CONTROLLER_NAME)
        .for_::<Memcached>()
        .owns::<Deployment>();
    let reconciler = MemcachedReconciler {
        client: builder.client().clone(),
        memcacheds: builder.lister(),
        deployments: builder.lister(),
        recorder: mgr.recorder(),
        freshness: builder.freshness_guard(),
        image: image_from_env(),
    };
    mgr.add(builder.complete(reconciler))
}

/// The image to run: [`IMAGE_ENV`] if set, else [`DEFAULT_IMAGE`].
pub fn image_from_env() -> String {
    std::env::var(IMAGE_ENV)
        .ok()
        .filter(|image| !image.is_empty())
        .unwrap_or_else(|| DEFAULT_IMAGE.to_string())
}

/// The RBAC rules this controller needs, exactly (`cargo run --bin manifests` writes
/// them to `deploy/rbac/role.yaml`).
pub fn rbac() -> Vec<PolicyRule> {
    vec![
        // The informer (list, watch); the controller never writes spec or metadata.
        policy_rule("cache.my.domain", "memcacheds", &["get", "list", "watch"]),
        // The Ready condition, through the status subresource.
        policy_rule("cache.my.domain", "memcacheds/status", &["update"]),
        // The Deployment's owner reference blocks the Memcached's deletion
        // (`blockOwnerDeletion`), which needs this where the
        // OwnerReferencesPermissionEnforcement admission plugin is on.
        policy_rule("cache.my.domain", "memcacheds/finalizers", &["update"]),
        // The Deployment: its informer, create when missing, server-side apply.
        policy_rule(
            "apps",
            "deployments",
            &["get", "list", "watch", "create", "patch"],
        ),
        // Events, in both Event APIs (`--events-api`).
        policy_rule("", "events", &["create", "patch"]),
        policy_rule("events.k8s.io", "events", &["create", "patch"]),
    ]
}

/// The labels of the Deployment and its pods; the Deployment selects its pods by them.
pub fn labels_for_memcached(memcached: &Memcached) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "memcached".to_string(),
        ),
        (
            "app.kubernetes.io/instance".to_string(),
            memcached.metadata.name.clone().unwrap_or_default(),
        ),
        (
            "app.kubernetes.io/managed-by".to_string(),
            CONTROLLER_NAME.to_string(),
        ),
    ])
}

/// The Deployment `memcached` asks for (kubebuilder's `deploymentForMemcached`): only
/// the fields this controller owns, since server-side apply records exactly these as
/// ours. Fails when `memcached` has no UID (it was not read from the API server).
pub fn deployment_for_memcached(memcached: &Memcached, image: &str) -> Result<Deployment, Error> {
    let labels = labels_for_memcached(memcached);
    let container = Container {
        name: "memcached".to_string(),
        image: Some(image.to_string()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        // TODO(user): the image's command and arguments, if its defaults do not fit:
        // command: Some(vec!["...".to_string()]),
        ports: Some(vec![ContainerPort {
            // A port name is at most 15 characters (an IANA service name).
            name: Some("memcached".to_string()),
            container_port: memcached.spec.container_port,
            // Part of the list's merge key under server-side apply: always set it.
            protocol: Some("TCP".to_string()),
            ..ContainerPort::default()
        }]),
        // The restricted Pod Security Standard. TODO(user): an image that must run as
        // root (or bind a port below 1024) needs these relaxed.
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(1001),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                drop: Some(vec!["ALL".to_string()]),
                ..Capabilities::default()
            }),
            ..SecurityContext::default()
        }),
        ..Container::default()
    };
    let pod = PodSpec {
        containers: vec![container],
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_string(),
                ..SeccompProfile::default()
            }),
            ..PodSecurityContext::default()
        }),
        ..PodSpec::default()
    };
    Ok(Deployment {
        metadata: ObjectMeta {
            name: memcached.metadata.name.clone(),
            namespace: memcached.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            // The Memcached controls the Deployment: the garbage collector deletes it
            // with the Memcached, and `.owns::<Deployment>()` maps its events back.
            owner_references: Some(vec![
                new_controller_ref(memcached).map_err(Error::OwnerRef)?,
            ]),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(memcached.spec.size),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(pod),
            },
            ..DeploymentSpec::default()
        },
        ..Deployment::default()
    })
}

/// Reconciles Memcacheds; see the [module docs](self).
pub struct MemcachedReconciler {
    /// Writes go through this client.
    pub client: kube::Client,
    /// The Memcached informer's cache.
    pub memcacheds: Lister<Memcached>,
    /// The Deployment informer's cache.
    pub deployments: Lister<Deployment>,
    /// Events about Memcacheds.
    pub recorder: EventRecorder,
    /// The staleness guard of the controller's loop (the builder's `freshness_guard()`).
    pub freshness: Option<Freshness>,
    /// The image the Deployments run.
    pub image: String,
}

impl Reconciler for MemcachedReconciler {
    type Error = Error;

    async fn reconcile(&self, request: &Request) -> Result<Action, Error> {
        // 1. The Memcached, from the cache.
        let memcached = match self
            .memcacheds
            .get(request.namespace_or_empty(), &request.name)
        {
            Ok(memcached) => memcached,
            Err(err) if err.is_not_found() => {
                debug!(%request, "Memcached is gone; the garbage collector deletes its Deployment");
                return Ok(Action::Done);
            }
            Err(err) => return Err(err.into()),
        };
        if memcached.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }

        // 2. A spec only the user can fix: say so, and wait for the fix.
        if memcached.spec.size < 0 {
            let message = format!("spec.size must be 0 or more, not {}", memcached.spec.size);
            self.recorder.event(
                &*memcached,
                EventType::Warning,
                REASON_INVALID_SPEC,
                &message,
            );
            self.set_ready(&memcached, false, REASON_INVALID_SPEC, message)
                .await?;
            return Ok(Action::Done);
        }

        // 3. The Deployment. A failure is reported, then retried with backoff.
        let deployment = match self.ensure_deployment(&memcached).await {
            Ok(Some(deployment)) => deployment,
            // The Memcached is gone: its own delete event is on its way.
            Ok(None) => return Ok(Action::Done),
            Err(err) => {
                let message = err.user_message();
                self.recorder
                    .event(&*memcached, EventType::Warning, err.reason(), &message);
                self.set_ready(&memcached, false, err.reason(), message)
                    .await?;
                return Err(err);
            }
        };

        // 4. Ready once every replica is available.
        let want = memcached.spec.size;
        let status = deployment.status.unwrap_or_default();
        let rolled_out = status.observed_generation >= deployment.metadata.generation;
        let available = status.available_replicas.unwrap_or(0);
        if rolled_out && available >= want {
            let message = format!("{available} of {want} pods available");
            self.set_ready(&memcached, true, REASON_AVAILABLE, message)
                .await?;
        } else {
            let message =
                format!("Waiting for the Deployment: {available} of {want} pods available");
            self.set_ready(&memcached, false, REASON_PROGRESSING, message)
                .await?;
        }
        Ok(Action::Done)
    }
}

impl MemcachedReconciler {
    /// Step 3 of the [module docs](self): creates, applies or refuses; returns the
    /// Deployment as the API server has it now, or `None` when the Memcached itself
    /// turned out to be gone.
    async fn ensure_deployment(&self, memcached: &Memcached) -> Result<Option<Deployment>, Error> {
        let mut desired = deployment_for_memcached(memcached, &self.image)?;
        let namespace = memcached.metadata.namespace.clone().unwrap_or_default();
        let name = memcached.metadata.name.clone().unwrap_or_default();
        // The typed client: protobuf on the wire for built-in kinds, as client-go's.
        let api =
            gentype::Client::<Deployment>::new(Api::namespaced(self.client.clone(), &namespace));
        let written = match self.deployments.get(&namespace, &name) {
            Ok(current) if !is_controlled_by(&*current, memcached) => {
                return Err(Error::ResourceExists {
                    kind: "Deployment",
                    name,
                });
            }
            Ok(current) => {
                // The UID the cache saw: if the Deployment was replaced by someone
                // else's since, the API server refuses the apply.
                desired.metadata.uid = current.metadata.uid.clone();
                let params = PatchParams::apply(CONTROLLER_NAME).force();
                api.patch(&name, &params, &Patch::Apply(&desired))
                    .await
                    .map_err(|e| ApiError::new("apply Deployment", &namespace, &name, e))?
            }
            Err(err) if err.is_not_found() => {
                // A Memcached reconciled before (it has a status) whose Deployment is gone
                // may be gone itself: the garbage collector deletes the Deployment after
                // the Memcached, and each informer follows its own watch, so the
                // Deployment's delete can reach this cache before the Memcached's. One
                // GET tells; a create would make a Deployment for an owner that no
                // longer exists (`kcr sieve` finds that: a crash, or a withheld event,
                // right at the delete).
                if memcached.status.is_some() {
                    let owners = Api::<Memcached>::namespaced(self.client.clone(), &namespace);
                    let live = owner_still_exists(&owners, memcached)
                        .await
                        .map_err(|e| ApiError::new("get Memcached", &namespace, &name, e))?;
                    if !live {
                        info!(
                            namespace,
                            name, "Memcached is gone or replaced: not recreating its Deployment"
                        );
                        return Ok(None);
                    }
                }
                info!(namespace, name, "creating Deployment");
                // Created by server-side apply too, not POSTed: then this controller's
                // applies own every field it ever set. A POSTed Deployment keeps the
                // POST's entries of keyed lists under later applies: a changed
                // `containerPort` became a second port of the same name, which the API
                // server refuses (`kcr sieve`'s workload derived from the schema found it).
                let params = PatchParams::apply(CONTROLLER_NAME).force();
                api.patch(&name, &params, &Patch::Apply(&desired))
                    .await
                    .map_err(|e| ApiError::new("create Deployment", &namespace, &name, e))?
            }
            Err(err) => return Err(err.into()),
        };
        self.wrote(memcached, &written);
        Ok(Some(written))
    }

    /// Sets the `Ready` condition for the current generation and writes the status if
    /// that changed it (status subresource, resourceVersion read: a 409 retries).
    /// Records a `Ready` Event when the Memcached becomes ready.
    async fn set_ready(
        &self,
        memcached: &Memcached,
        ready: bool,
        reason: &str,
        message: String,
    ) -> Result<(), Error> {
        let condition = Condition {
            type_: CONDITION_READY.to_string(),
            status: if ready { "True" } else { "False" }.to_string(),
            reason: reason.to_string(),
            message,
            observed_generation: memcached.metadata.generation,
            last_transition_time: Time(Timestamp::now()),
        };
        let mut status = memcached.status.clone().unwrap_or_default();
        let was_ready = find_status_condition(&status.conditions, CONDITION_READY)
            .is_some_and(|c| c.status == "True");
        if !set_status_condition(&mut status.conditions, condition) {
            return Ok(());
        }
        let mut updated = memcached.clone();
        updated.status = Some(status);
        let namespace = memcached.metadata.namespace.as_deref().unwrap_or_default();
        let name = memcached.metadata.name.as_deref().unwrap_or_default();
        let api: Api<Memcached> = Api::namespaced(self.client.clone(), namespace);
        let params = PostParams {
            field_manager: Some(CONTROLLER_NAME.to_string()),
            ..PostParams::default()
        };
        let written = match api.replace_status(name, &params, &updated).await {
            Ok(written) => written,
            Err(e) => {
                let err = ApiError::new("update Memcached status", namespace, name, e);
                // Deleted since the cache saw it: nothing left to report on.
                if err.is_not_found() {
                    return Ok(());
                }
                return Err(err.into());
            }
        };
        self.wrote(memcached, &written);
        if ready && !was_ready {
            self.recorder.event(
                memcached,
                EventType::Normal,
                CONDITION_READY,
                "Every memcached pod is available",
            );
        }
        Ok(())
    }

    /// Tells the staleness guard (and the `/debug/pipeline` view) that reconciling
    /// `memcached` wrote `obj`: the Memcached's next reconcile waits until the cache
    /// has seen it.
    fn wrote<K: kube::Resource + 'static>(&self, memcached: &Memcached, obj: &K) {
        controller::record_write(obj);
        if let Some(freshness) = &self.freshness {
            let namespace = memcached.metadata.namespace.as_deref().unwrap_or_default();
            let name = memcached.metadata.name.as_deref().unwrap_or_default();
            freshness.wrote(&format!("{namespace}/{name}"), obj);
        }
    }
}

// The unit tests, on a fake API server: src/controller/memcached/tests.rs.
#[cfg(test)]
mod tests;
