//! The {{kind}} controller: kubebuilder's `internal/controller/{{kind_snake}}_controller.go`.
//!
//! [`setup`] declares what the controller watches ({{kind}}s) and adds it to the
//! manager. [`{{kind}}Reconciler::reconcile`] is called with the name of a {{kind}}
//! whenever it (or anything the controller watches for it) changes, and again after a
//! failure, with backoff. Step by step:
//!
//! 1. Read the {{kind}} from the informer's cache (never a GET: the watch keeps the
//!    cache up to date). Gone? Nothing to do.
//! 2. Being deleted (`deletionTimestamp` set)? Clean up, then remove [`FINALIZER`]:
//!    the API server deletes the object once its last finalizer is gone.
//! 3. Otherwise make sure [`FINALIZER`] is on the object **before** creating anything
//!    it will have to clean up, so a deletion can never skip the cleanup.
//! 4. Make the world match `spec`: TODO(user), your logic goes here.
//! 5. Report a `Ready` condition with the generation it describes
//!    (`observedGeneration`), written only when it changes.
//!
//! Every write goes to the API server; the cache sees it a moment later, through the
//! watch. Each write is reported to the staleness guard ([`Freshness`]), so the next
//! reconcile of the same {{kind}} waits until the cache has caught up and never acts
//! on the state from before its own write.

use std::sync::Arc;

use builder::{Action, Reconciler, Request};
use cache::Lister;
use controller::{ApiError, Freshness};
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use manager::{Manager, ManagerError};
use record::{EventRecorder, EventType};
use serde_json::json;
use tracing::debug;

use super::{CONDITION_READY, Error, policy_rule, set_status_condition};
use crate::api::{{api_module}}::{{kind}};

/// The controller's name: in logs, metrics (`controller="{{kind_lower}}"`), `/readyz/{{kind_lower}}`,
/// and the field manager of its writes.
pub const CONTROLLER_NAME: &str = "{{kind_lower}}";

/// The finalizer this controller puts on every {{kind}}, so that a deletion waits for
/// its cleanup (step 2 of the [module docs](self)).
pub const FINALIZER: &str = "{{api_group}}/finalizer";

/// `Ready=True` reason: the {{kind}} is reconciled.
pub const REASON_RECONCILED: &str = "Reconciled";
/// Event reason: the {{kind}} is being deleted and cleaned up.
pub const REASON_FINALIZING: &str = "Finalizing";

/// Adds the {{kind}} controller to `mgr`: controller-runtime's `SetupWithManager`,
///
/// ```text
/// ctrl.NewControllerManagedBy(mgr).For(&{{group}}{{version}}.{{kind}}{}).Named("{{kind_lower}}").Complete(r)
/// ```
///
/// The manager hands the builder the process's settings (`--namespace`, `--workers`,
/// the loop's options, the shard); [`Manager::run`] starts the informers and the
/// workers.
pub fn setup(mgr: &mut Manager) -> Result<(), ManagerError> {
    let builder = mgr
        .controller_managed_by(CONTROLLER_NAME)
        .for_::<{{kind}}>();
    // TODO(user): watch what a {{kind}} owns, so a change to it reconciles the
    // {{kind}}: e.g. `.owns::<k8s_openapi::api::core::v1::ConfigMap>()`.
    let reconciler = {{kind}}Reconciler {
        client: builder.client().clone(),
        {{plural}}: builder.lister(),
        recorder: mgr.recorder(),
        freshness: builder.freshness_guard(),
    };
    mgr.add(builder.complete(reconciler))
}

/// The RBAC rules this controller needs, exactly (`cargo run --bin manifests` writes
/// them to `deploy/rbac/role.yaml`): kubebuilder's `+kubebuilder:rbac` markers.
///
/// TODO(user): add a rule for every kind your reconcile reads or writes.
pub fn rbac() -> Vec<PolicyRule> {
    vec![
        // The informer (list, watch) and the finalizer (a metadata patch).
        policy_rule(
            "{{api_group}}",
            "{{plural}}",
            &["get", "list", "watch", "patch"],
        ),
        // The Ready condition, through the status subresource.
        policy_rule("{{api_group}}", "{{plural}}/status", &["update"]),
        // Finalizers and owner references that block the {{kind}}'s deletion.
        policy_rule("{{api_group}}", "{{plural}}/finalizers", &["update"]),
        // Events, in both Event APIs (`--events-api`).
        policy_rule("", "events", &["create", "patch"]),
        policy_rule("events.k8s.io", "events", &["create", "patch"]),
    ]
}

/// Reconciles {{kind}}s; see the [module docs](self).
pub struct {{kind}}Reconciler {
    /// Writes go through this client.
    pub client: kube::Client,
    /// The {{kind}} informer's cache.
    pub {{plural}}: Lister<{{kind}}>,
    /// Events about {{kind}}s.
    pub recorder: EventRecorder,
    /// The staleness guard of the controller's loop (the builder's `freshness_guard()`).
    pub freshness: Option<Freshness>,
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
                debug!(%request, "{{kind}} is gone; nothing to do");
                return Ok(Action::Done);
            }
            Err(err) => return Err(err.into()),
        };
        // The cache shares its objects: change a copy, never the cached one.
        let mut {{kind_snake}} = Arc::unwrap_or_clone({{kind_snake}});

        // 2. Being deleted: clean up, then let the API server delete it.
        if {{kind_snake}}.metadata.deletion_timestamp.is_some() {
            if has_finalizer(&{{kind_snake}}) {
                // TODO(user): delete what this {{kind}} created outside the cluster
                // (objects inside it that carry an owner reference to the {{kind}}
                // are deleted by the garbage collector). Return an error to retry.
                self.recorder.event(
                    &{{kind_snake}},
                    EventType::Normal,
                    REASON_FINALIZING,
                    "Cleaning up before the {{kind}} is deleted",
                );
                self.remove_finalizer(&{{kind_snake}}).await?;
            }
            return Ok(Action::Done);
        }

        // 3. The finalizer first, before anything needs cleaning up.
        if !has_finalizer(&{{kind_snake}}) {
            self.add_finalizer(&mut {{kind_snake}}).await?;
        }

        // 4. TODO(user): make the world match `{{kind_snake}}.spec` here: create or update
        // the objects it asks for (with an owner reference to the {{kind}}, see
        // `controller::new_controller_ref`), reading them from listers. Return
        // `Err(..)` to retry with backoff, `Ok(Action::RequeueAfter(d))` to look again
        // after `d` (e.g. to poll something outside the cluster).

        // 5. Ready, for the generation just reconciled.
        self.set_ready({{kind_snake}}).await?;
        Ok(Action::Done)
    }
}

impl {{kind}}Reconciler {
    /// Adds [`FINALIZER`] with a JSON merge patch of `metadata` only, carrying the
    /// resourceVersion read: if the {{kind}} changed since, the API server answers
    /// 409 Conflict and the request is retried with the newer object, instead of our
    /// stale copy overwriting someone else's change.
    async fn add_finalizer(&self, {{kind_snake}}: &mut {{kind}}) -> Result<(), Error> {
        let mut finalizers = {{kind_snake}}.metadata.finalizers.clone().unwrap_or_default();
        finalizers.push(FINALIZER.to_string());
        let written = self.patch_finalizers({{kind_snake}}, finalizers).await?;
        // The status write below must carry the new resourceVersion.
        {{kind_snake}}.metadata.resource_version = written.resource_version;
        {{kind_snake}}.metadata.finalizers = written.finalizers;
        Ok(())
    }

    /// Removes [`FINALIZER`]; the API server then deletes the {{kind}}. A 404 means
    /// it is gone already: done.
    async fn remove_finalizer(&self, {{kind_snake}}: &{{kind}}) -> Result<(), Error> {
        let finalizers = {{kind_snake}}
            .metadata
            .finalizers
            .iter()
            .flatten()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        match self.patch_finalizers({{kind_snake}}, finalizers).await {
            Err(Error::Api(err)) if err.is_not_found() => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Sets the {{kind}}'s finalizers to `finalizers` (a merge patch replaces the
    /// list as a whole) and returns the metadata the API server answered.
    async fn patch_finalizers(
        &self,
        {{kind_snake}}: &{{kind}},
        finalizers: Vec<String>,
    ) -> Result<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, Error> {
        let (namespace, name) = namespace_and_name({{kind_snake}});
// kcr:if namespaced
        let api: Api<{{kind}}> = Api::namespaced(self.client.clone(), namespace);
// kcr:end
// kcr:if cluster
        let api: Api<{{kind}}> = Api::all(self.client.clone());
// kcr:end
        let patch = json!({
            "metadata": {
                "finalizers": finalizers,
                "resourceVersion": {{kind_snake}}.metadata.resource_version,
            }
        });
        let params = PatchParams {
            field_manager: Some(CONTROLLER_NAME.to_string()),
            ..PatchParams::default()
        };
        let written = api
            .patch_metadata(name, &params, &Patch::Merge(&patch))
            .await
            .map_err(|e| ApiError::new("patch {{kind}} finalizers", namespace, name, e))?;
        self.wrote({{kind_snake}}, written.metadata.resource_version.as_deref());
        Ok(written.metadata)
    }

    /// Sets `Ready=True` for the current generation and writes the status if that
    /// changed it, through the status subresource, with the resourceVersion read (a
    /// 409 Conflict retries). Records a `Ready` Event when the {{kind}} becomes ready.
    async fn set_ready(&self, mut {{kind_snake}}: {{kind}}) -> Result<(), Error> {
        let ready = Condition {
            type_: CONDITION_READY.to_string(),
            status: "True".to_string(),
            reason: REASON_RECONCILED.to_string(),
            message: "The {{kind}} is reconciled".to_string(),
            observed_generation: {{kind_snake}}.metadata.generation,
            last_transition_time: Time(Timestamp::now()),
        };
        let mut status = {{kind_snake}}.status.clone().unwrap_or_default();
        let was_ready = super::find_status_condition(&status.conditions, CONDITION_READY)
            .is_some_and(|c| c.status == "True");
        if !set_status_condition(&mut status.conditions, ready) {
            return Ok(());
        }
        {{kind_snake}}.status = Some(status);
        let (namespace, name) = namespace_and_name(&{{kind_snake}});
// kcr:if namespaced
        let api: Api<{{kind}}> = Api::namespaced(self.client.clone(), namespace);
// kcr:end
// kcr:if cluster
        let api: Api<{{kind}}> = Api::all(self.client.clone());
// kcr:end
        let params = PostParams {
            field_manager: Some(CONTROLLER_NAME.to_string()),
            ..PostParams::default()
        };
        let written = match api.replace_status(name, &params, &{{kind_snake}}).await {
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
        self.wrote(&written, written.metadata.resource_version.as_deref());
        if !was_ready {
            self.recorder.event(
                &{{kind_snake}},
                EventType::Normal,
                CONDITION_READY,
                "The {{kind}} is ready",
            );
        }
        Ok(())
    }

    /// Tells the staleness guard (and the `/debug/pipeline` view) that this
    /// reconcile wrote `{{kind_snake}}` at `resource_version`.
    fn wrote(&self, {{kind_snake}}: &{{kind}}, resource_version: Option<&str>) {
        let (namespace, name) = namespace_and_name({{kind_snake}});
        controller::record_write_version::<{{kind}}>(namespace, name, resource_version);
        if let (Some(freshness), Some(rv)) = (&self.freshness, resource_version) {
// kcr:if namespaced
            freshness.wrote_version::<{{kind}}>(&format!("{namespace}/{name}"), rv);
// kcr:end
// kcr:if cluster
            freshness.wrote_version::<{{kind}}>(name, rv);
// kcr:end
        }
    }
}

/// Whether `{{kind_snake}}` carries [`FINALIZER`].
pub fn has_finalizer({{kind_snake}}: &{{kind}}) -> bool {
    {{kind_snake}}
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER)
}

fn namespace_and_name({{kind_snake}}: &{{kind}}) -> (&str, &str) {
    (
        {{kind_snake}}.metadata.namespace.as_deref().unwrap_or_default(),
        {{kind_snake}}.metadata.name.as_deref().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    //! Unit tests on a fake API server, in the style of sample-controller's
    //! `controller_test.go`: fill the cache by hand, reconcile once, then check the
    //! requests the controller sent and the Events it recorded.

    use super::*;
    use crate::api::{{api_module}}::{{{kind}}Spec, {{kind}}Status};
    use cache::Indexer;
    use controller::testing::FakeApi;
    use record::FakeRecorder;

    /// A {{kind}} as the API server would have stored it.
    fn stored_{{kind_snake}}(name: &str) -> {{kind}} {
        let mut {{kind_snake}} = {{kind}}::new(name, {{kind}}Spec::default());
// kcr:if namespaced
        {{kind_snake}}.metadata.namespace = Some("default".into());
// kcr:end
        {{kind_snake}}.metadata.uid = Some(format!("uid-{name}"));
        {{kind_snake}}.metadata.resource_version = Some("7".into());
        {{kind_snake}}.metadata.generation = Some(2);
        {{kind_snake}}
    }

    /// One test's world: a cache filled by hand, the fake API, the fake recorder.
    struct Fixture {
        {{plural}}: Indexer<{{kind}}>,
        api: FakeApi,
        events: FakeRecorder,
    }

    impl Fixture {
        fn with({{plural}}: Vec<{{kind}}>) -> Self {
            let indexer = Indexer::new();
            for {{kind_snake}} in {{plural}} {
                let key = cache::meta_namespace_key(&{{kind_snake}}).unwrap();
                indexer.add(key, Arc::new({{kind_snake}}));
            }
            Self {
                {{plural}}: indexer,
                api: FakeApi::new(),
                events: FakeRecorder::new(),
            }
        }

        async fn reconcile(&self, name: &str) -> Result<Action, Error> {
            let reconciler = {{kind}}Reconciler {
                client: self.api.client(),
                {{plural}}: Lister::new(self.{{plural}}.clone()),
                recorder: self.events.recorder(),
                freshness: None,
            };
            reconciler
// kcr:if namespaced
                .reconcile(&Request::new(Some("default"), name))
// kcr:end
// kcr:if cluster
                .reconcile(&Request::new(None::<String>, name))
// kcr:end
                .await
        }
    }

    #[tokio::test]
    async fn a_new_{{kind_snake}}_gets_the_finalizer_then_ready() {
        let f = Fixture::with(vec![stored_{{kind_snake}}("sample")]);

        assert_eq!(f.reconcile("sample").await.unwrap(), Action::Done);

        assert_eq!(
            f.api.action_names(),
            ["patch {{plural}}", "update {{plural}}/status"]
        );
        let actions = f.api.actions();
        let patch = actions[0].body.as_ref().unwrap();
        assert_eq!(patch["metadata"]["finalizers"][0], FINALIZER);
        assert_eq!(
            patch["metadata"]["resourceVersion"], "7",
            "optimistic concurrency"
        );
        let status = actions[1].body.as_ref().unwrap();
        let ready = &status["status"]["conditions"][0];
        assert_eq!(ready["type"], "Ready");
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["reason"], REASON_RECONCILED);
        assert_eq!(ready["observedGeneration"], 2);
        assert_eq!(f.events.events(), ["Normal Ready The {{kind}} is ready"]);
    }

    #[tokio::test]
    async fn a_ready_{{kind_snake}}_is_left_alone() {
        let mut {{kind_snake}} = stored_{{kind_snake}}("sample");
        {{kind_snake}}.metadata.finalizers = Some(vec![FINALIZER.into()]);
        let mut status = {{kind}}Status::default();
        set_status_condition(
            &mut status.conditions,
            Condition {
                type_: CONDITION_READY.into(),
                status: "True".into(),
                reason: REASON_RECONCILED.into(),
                message: "The {{kind}} is reconciled".into(),
                observed_generation: Some(2),
                last_transition_time: Time(Timestamp::now()),
            },
        );
        {{kind_snake}}.status = Some(status);
        let f = Fixture::with(vec![{{kind_snake}}]);

        f.reconcile("sample").await.unwrap();

        assert!(f.api.actions().is_empty(), "{:?}", f.api.action_names());
        assert!(f.events.events().is_empty());
    }

    #[tokio::test]
    async fn a_deleted_{{kind_snake}}_loses_its_finalizer() {
        let mut {{kind_snake}} = stored_{{kind_snake}}("sample");
        {{kind_snake}}.metadata.finalizers = Some(vec!["other/keep".into(), FINALIZER.into()]);
        {{kind_snake}}.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
        let f = Fixture::with(vec![{{kind_snake}}]);

        f.reconcile("sample").await.unwrap();

        assert_eq!(f.api.action_names(), ["patch {{plural}}"]);
        let patch = f.api.actions()[0].body.clone().unwrap();
        assert_eq!(
            patch["metadata"]["finalizers"],
            json!(["other/keep"]),
            "only our finalizer is removed"
        );
        assert_eq!(
            f.events.events(),
            ["Normal Finalizing Cleaning up before the {{kind}} is deleted"]
        );
    }

    #[tokio::test]
    async fn a_{{kind_snake}}_that_is_gone_needs_nothing() {
        let f = Fixture::with(vec![]);
        assert_eq!(f.reconcile("missing").await.unwrap(), Action::Done);
        assert!(f.api.actions().is_empty());
    }

    #[tokio::test]
    async fn a_conflict_is_an_error_to_retry() {
        let f = Fixture::with(vec![stored_{{kind_snake}}("sample")]);
        f.api.fail_next("patch", "{{plural}}", 409, "Conflict");
        let err = f.reconcile("sample").await.unwrap_err();
        assert!(matches!(&err, Error::Api(e) if e.is_conflict()), "{err}");
    }
}
