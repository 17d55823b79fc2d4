//! The {{kind}} controller: kubebuilder's deploy-image plugin
//! (`kcr create api ... --image {{image}} --image-container-port {{container_port}}`),
//! `internal/controller/{{kind_snake}}_controller.go`.
//!
//! A {{kind}} owns one Deployment of its name running the image (default
//! [`DEFAULT_IMAGE`], or the environment variable [`IMAGE_ENV`]) with `spec.size`
//! replicas listening on `spec.containerPort`. [`{{kind}}Reconciler::reconcile`], step
//! by step:
//!
//! 1. Read the {{kind}} from the cache. Gone, or being deleted? Nothing to do: its
//!    Deployment has a controller owner reference to it, so the garbage collector
//!    deletes the Deployment (no finalizer needed: nothing outside the cluster).
//! 2. Check the spec. A bad one (`size < 0`) can only be fixed by the user: report it
//!    (`Ready=False`, reason [`REASON_INVALID_SPEC`], a Warning Event) and stop, with
//!    `Ok`: retrying would change nothing, and the user's fix triggers a new reconcile.
//! 3. The Deployment ([`deployment_for_{{kind_snake}}`]), as found in the cache:
//!    - absent: **create** it, by server-side apply (so that later applies own every
//!      field it set). A {{kind}} reconciled
//!      before that lost its Deployment is first looked up on the API server (one GET):
//!      the cache may not have seen its own deletion yet, and a Deployment for a
//!      deleted owner is only more work for the garbage collector;
//!    - controlled by this {{kind}}: **server-side apply** the desired fields, with
//!      `force`: a `kubectl scale` or edit of those fields is put back;
//!    - anyone else's: never touched. Warning Event, `Ready=False`, and an error, so
//!      the request is retried with backoff in case it goes away.
//! 4. `Ready`: `True` once every replica is available, written only when it changes.
//!
//! Because [`setup`] declares `.owns::<Deployment>()`, a change to the Deployment (its
//! pods becoming available, someone scaling it) reconciles the {{kind}} again.

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
use crate::api::{{api_module}}::{{kind}};

/// The controller's name: in logs, metrics, `/readyz/{{kind_lower}}`, and the field manager
/// of its writes.
pub const CONTROLLER_NAME: &str = "{{kind_lower}}";

/// The image the Deployment runs unless [`IMAGE_ENV`] names another.
pub const DEFAULT_IMAGE: &str = "{{image}}";
/// The environment variable that overrides [`DEFAULT_IMAGE`] (kubebuilder's
/// `{{kind_upper}}_IMAGE`, set in the manager's Deployment).
pub const IMAGE_ENV: &str = "{{kind_upper}}_IMAGE";

/// `Ready=True` reason: every replica is available.
pub const REASON_AVAILABLE: &str = "Available";
/// `Ready=False` reason: the Deployment is rolling out.
pub const REASON_PROGRESSING: &str = "Progressing";
/// `Ready=False` reason and Warning Event reason: the spec cannot be honoured.
pub const REASON_INVALID_SPEC: &str = "InvalidSpec";

/// Adds the {{kind}} controller to `mgr`: controller-runtime's `SetupWithManager`,
///
/// ```text
/// ctrl.NewControllerManagedBy(mgr).For(&{{group}}{{version}}.{{kind}}{}).Owns(&appsv1.Deployment{}).Complete(r)
/// ```
pub fn setup(mgr: &mut Manager) -> Result<(), ManagerError> {
    let builder = mgr
        .controller_managed_by(CONTROLLER_NAME)
        .for_::<{{kind}}>()
        .owns::<Deployment>();
    let reconciler = {{kind}}Reconciler {
        client: builder.client().clone(),
        {{plural}}: builder.lister(),
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
        policy_rule("{{api_group}}", "{{plural}}", &["get", "list", "watch"]),
        // The Ready condition, through the status subresource.
        policy_rule("{{api_group}}", "{{plural}}/status", &["update"]),
        // The Deployment's owner reference blocks the {{kind}}'s deletion
        // (`blockOwnerDeletion`), which needs this where the
        // OwnerReferencesPermissionEnforcement admission plugin is on.
        policy_rule("{{api_group}}", "{{plural}}/finalizers", &["update"]),
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
pub fn labels_for_{{kind_snake}}({{kind_snake}}: &{{kind}}) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_string(),
            "{{kind_lower}}".to_string(),
        ),
        (
            "app.kubernetes.io/instance".to_string(),
            {{kind_snake}}.metadata.name.clone().unwrap_or_default(),
        ),
        (
            "app.kubernetes.io/managed-by".to_string(),
            CONTROLLER_NAME.to_string(),
        ),
    ])
}

/// The Deployment `{{kind_snake}}` asks for (kubebuilder's `deploymentFor{{kind}}`): only
/// the fields this controller owns, since server-side apply records exactly these as
/// ours. Fails when `{{kind_snake}}` has no UID (it was not read from the API server).
pub fn deployment_for_{{kind_snake}}({{kind_snake}}: &{{kind}}, image: &str) -> Result<Deployment, Error> {
    let labels = labels_for_{{kind_snake}}({{kind_snake}});
    let container = Container {
        name: "{{kind_lower}}".to_string(),
        image: Some(image.to_string()),
        image_pull_policy: Some("IfNotPresent".to_string()),
        // TODO(user): the image's command and arguments, if its defaults do not fit:
        // command: Some(vec!["...".to_string()]),
        ports: Some(vec![ContainerPort {
            // A port name is at most 15 characters (an IANA service name).
            name: Some("{{port_name}}".to_string()),
            container_port: {{kind_snake}}.spec.container_port,
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
            name: {{kind_snake}}.metadata.name.clone(),
            namespace: {{kind_snake}}.metadata.namespace.clone(),
            labels: Some(labels.clone()),
            // The {{kind}} controls the Deployment: the garbage collector deletes it
            // with the {{kind}}, and `.owns::<Deployment>()` maps its events back.
            owner_references: Some(vec![
                new_controller_ref({{kind_snake}}).map_err(Error::OwnerRef)?,
            ]),
            ..ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some({{kind_snake}}.spec.size),
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

/// Reconciles {{kind}}s; see the [module docs](self).
pub struct {{kind}}Reconciler {
    /// Writes go through this client.
    pub client: kube::Client,
    /// The {{kind}} informer's cache.
    pub {{plural}}: Lister<{{kind}}>,
    /// The Deployment informer's cache.
    pub deployments: Lister<Deployment>,
    /// Events about {{kind}}s.
    pub recorder: EventRecorder,
    /// The staleness guard of the controller's loop (the builder's `freshness_guard()`).
    pub freshness: Option<Freshness>,
    /// The image the Deployments run.
    pub image: String,
}

impl Reconciler for {{kind}}Reconciler {
    type Error = Error;

    async fn reconcile(&self, request: &Request) -> Result<Action, Error> {
        // 1. The {{kind}}, from the cache.
        let {{kind_snake}} = match self
            .{{plural}}
            .get(request.namespace_or_empty(), &request.name)
        {
            Ok({{kind_snake}}) => {{kind_snake}},
            Err(err) if err.is_not_found() => {
                debug!(%request, "{{kind}} is gone; the garbage collector deletes its Deployment");
                return Ok(Action::Done);
            }
            Err(err) => return Err(err.into()),
        };
        if {{kind_snake}}.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }

        // 2. A spec only the user can fix: say so, and wait for the fix.
        if {{kind_snake}}.spec.size < 0 {
            let message = format!("spec.size must be 0 or more, not {}", {{kind_snake}}.spec.size);
            self.recorder.event(
                &*{{kind_snake}},
                EventType::Warning,
                REASON_INVALID_SPEC,
                &message,
            );
            self.set_ready(&{{kind_snake}}, false, REASON_INVALID_SPEC, message)
                .await?;
            return Ok(Action::Done);
        }

        // 3. The Deployment. A failure is reported, then retried with backoff.
        let deployment = match self.ensure_deployment(&{{kind_snake}}).await {
            Ok(Some(deployment)) => deployment,
            // The {{kind}} is gone: its own delete event is on its way.
            Ok(None) => return Ok(Action::Done),
            Err(err) => {
                let message = err.user_message();
                self.recorder
                    .event(&*{{kind_snake}}, EventType::Warning, err.reason(), &message);
                self.set_ready(&{{kind_snake}}, false, err.reason(), message)
                    .await?;
                return Err(err);
            }
        };

        // 4. Ready once every replica is available.
        let want = {{kind_snake}}.spec.size;
        let status = deployment.status.unwrap_or_default();
        let rolled_out = status.observed_generation >= deployment.metadata.generation;
        let available = status.available_replicas.unwrap_or(0);
        if rolled_out && available >= want {
            let message = format!("{available} of {want} pods available");
            self.set_ready(&{{kind_snake}}, true, REASON_AVAILABLE, message)
                .await?;
        } else {
            let message =
                format!("Waiting for the Deployment: {available} of {want} pods available");
            self.set_ready(&{{kind_snake}}, false, REASON_PROGRESSING, message)
                .await?;
        }
        Ok(Action::Done)
    }
}

impl {{kind}}Reconciler {
    /// Step 3 of the [module docs](self): creates, applies or refuses; returns the
    /// Deployment as the API server has it now, or `None` when the {{kind}} itself
    /// turned out to be gone.
    async fn ensure_deployment(&self, {{kind_snake}}: &{{kind}}) -> Result<Option<Deployment>, Error> {
        let mut desired = deployment_for_{{kind_snake}}({{kind_snake}}, &self.image)?;
        let namespace = {{kind_snake}}.metadata.namespace.clone().unwrap_or_default();
        let name = {{kind_snake}}.metadata.name.clone().unwrap_or_default();
        // The typed client: protobuf on the wire for built-in kinds, as client-go's.
        let api =
            gentype::Client::<Deployment>::new(Api::namespaced(self.client.clone(), &namespace));
        let written = match self.deployments.get(&namespace, &name) {
            Ok(current) if !is_controlled_by(&*current, {{kind_snake}}) => {
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
                // A {{kind}} reconciled before (it has a status) whose Deployment is gone
                // may be gone itself: the garbage collector deletes the Deployment after
                // the {{kind}}, and each informer follows its own watch, so the
                // Deployment's delete can reach this cache before the {{kind}}'s. One
                // GET tells; a create would make a Deployment for an owner that no
                // longer exists (`kcr sieve` finds that: a crash, or a withheld event,
                // right at the delete).
                if {{kind_snake}}.status.is_some() {
                    let owners = Api::<{{kind}}>::namespaced(self.client.clone(), &namespace);
                    let live = owner_still_exists(&owners, {{kind_snake}})
                        .await
                        .map_err(|e| ApiError::new("get {{kind}}", &namespace, &name, e))?;
                    if !live {
                        info!(namespace, name, "{{kind}} is gone or replaced: not recreating its Deployment");
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
        self.wrote({{kind_snake}}, &written);
        Ok(Some(written))
    }

    /// Sets the `Ready` condition for the current generation and writes the status if
    /// that changed it (status subresource, resourceVersion read: a 409 retries).
    /// Records a `Ready` Event when the {{kind}} becomes ready.
    async fn set_ready(
        &self,
        {{kind_snake}}: &{{kind}},
        ready: bool,
        reason: &str,
        message: String,
    ) -> Result<(), Error> {
        let condition = Condition {
            type_: CONDITION_READY.to_string(),
            status: if ready { "True" } else { "False" }.to_string(),
            reason: reason.to_string(),
            message,
            observed_generation: {{kind_snake}}.metadata.generation,
            last_transition_time: Time(Timestamp::now()),
        };
        let mut status = {{kind_snake}}.status.clone().unwrap_or_default();
        let was_ready = find_status_condition(&status.conditions, CONDITION_READY)
            .is_some_and(|c| c.status == "True");
        if !set_status_condition(&mut status.conditions, condition) {
            return Ok(());
        }
        let mut updated = {{kind_snake}}.clone();
        updated.status = Some(status);
        let namespace = {{kind_snake}}.metadata.namespace.as_deref().unwrap_or_default();
        let name = {{kind_snake}}.metadata.name.as_deref().unwrap_or_default();
        let api: Api<{{kind}}> = Api::namespaced(self.client.clone(), namespace);
        let params = PostParams {
            field_manager: Some(CONTROLLER_NAME.to_string()),
            ..PostParams::default()
        };
        let written = match api.replace_status(name, &params, &updated).await {
            Ok(written) => written,
            Err(e) => {
                let err = ApiError::new("update {{kind}} status", namespace, name, e);
                // Deleted since the cache saw it: nothing left to report on.
                if err.is_not_found() {
                    return Ok(());
                }
                return Err(err.into());
            }
        };
        self.wrote({{kind_snake}}, &written);
        if ready && !was_ready {
            self.recorder.event(
                {{kind_snake}},
                EventType::Normal,
                CONDITION_READY,
                "Every {{kind_lower}} pod is available",
            );
        }
        Ok(())
    }

    /// Tells the staleness guard (and the `/debug/pipeline` view) that reconciling
    /// `{{kind_snake}}` wrote `obj`: the {{kind}}'s next reconcile waits until the cache
    /// has seen it.
    fn wrote<K: kube::Resource + 'static>(&self, {{kind_snake}}: &{{kind}}, obj: &K) {
        controller::record_write(obj);
        if let Some(freshness) = &self.freshness {
            let namespace = {{kind_snake}}.metadata.namespace.as_deref().unwrap_or_default();
            let name = {{kind_snake}}.metadata.name.as_deref().unwrap_or_default();
            freshness.wrote(&format!("{namespace}/{name}"), obj);
        }
    }
}

// The unit tests, on a fake API server: src/controller/{{kind_snake}}/tests.rs.
#[cfg(test)]
mod tests;
