//! What the runner does to the cluster as the user (with the admin credentials, straight
//! to kube-apiserver, not through the proxy): a namespace per run, the workload's steps,
//! the end state, and the clean-up.

use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, discovery};
use serde_json::Value as Json;

use super::RunError;
use crate::target::Captured;
use crate::workload::{Action, Step};

/// The admin client and the resources a run touches.
#[derive(Clone)]
pub struct Cluster {
    client: Client,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").finish_non_exhaustive()
    }
}

impl Cluster {
    /// The cluster `client` talks to.
    pub fn new(client: Client) -> Self {
        Self { client }
    }

    /// The resource of `captured`'s kind (from discovery).
    pub async fn resource(&self, captured: &Captured) -> Result<ApiResource, RunError> {
        let (group, version) = captured
            .api_version
            .split_once('/')
            .unwrap_or(("", &captured.api_version));
        let gvk = GroupVersionKind::gvk(group, version, &captured.kind);
        let (resource, _) = discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|e| {
                RunError::Setup(format!(
                    "{}.{} is not served by this API server (is its CRD installed?): {e}",
                    captured.kind, captured.api_version
                ))
            })?;
        Ok(resource)
    }

    /// The namespaced kind served as `plural` in `group` (`""`: the core group), at
    /// the group's preferred version, as a [`Captured`] (from discovery); `None` if
    /// this API server does not serve it.
    pub async fn captured_by_plural(&self, group: &str, plural: &str) -> Option<Captured> {
        let discovery = discovery::Discovery::new(self.client.clone())
            .filter(&[group])
            .run()
            .await
            .ok()?;
        discovery.groups().find_map(|g| {
            g.recommended_resources()
                .into_iter()
                .find(|(resource, caps)| {
                    resource.plural == plural && caps.scope == discovery::Scope::Namespaced
                })
                .map(|(resource, _)| Captured::new(&resource.api_version, &resource.kind))
        })
    }

    fn api(&self, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, resource)
    }

    /// Creates the namespace `name`.
    pub async fn create_namespace(&self, name: &str) -> Result<(), RunError> {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
            .map_err(|e| RunError::Setup(format!("a namespace object: {e}")))?;
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .map_err(|e| RunError::kube(format!("creating namespace {name}"), e))?;
        Ok(())
    }

    /// Deletes the namespace `name` (not waiting for it to go).
    pub async fn delete_namespace(&self, name: &str) {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(self.client.clone());
        let _ = namespaces.delete(name, &DeleteParams::background()).await;
    }

    /// Sends `step`'s user operation on `resource` in `namespace`. A `recreate` of an
    /// object that still exists deletes it and creates it again at once, retrying the
    /// create while the old one is still there (finalizers), up to `bound`.
    pub async fn apply(
        &self,
        step: &Step,
        resource: &ApiResource,
        namespace: &str,
        bound: Duration,
    ) -> Result<(), RunError> {
        let api = self.api(resource, namespace);
        let name = &step.target.name;
        let what = |op: &str| format!("step {} ({op} {} {name})", step.number, step.target.kind);
        match &step.action {
            Action::Create { .. } => self.create(&api, step, namespace, bound).await,
            Action::Update { patch } => {
                let body = serde_json::json!({ "spec": patch });
                api.patch(name, &PatchParams::default(), &Patch::Merge(&body))
                    .await
                    .map(drop)
                    .map_err(|e| RunError::kube(what("update"), e))
            }
            Action::Delete => api
                .delete(name, &DeleteParams::background())
                .await
                .map(drop)
                .map_err(|e| RunError::kube(what("delete"), e)),
            Action::Recreate { delete_first, .. } => {
                if *delete_first {
                    api.delete(name, &DeleteParams::background())
                        .await
                        .map_err(|e| RunError::kube(what("recreate: delete"), e))?;
                }
                self.create(&api, step, namespace, bound).await
            }
        }
    }

    /// Creates `step`'s object, retrying while an old one of that name is still there.
    async fn create(
        &self,
        api: &Api<DynamicObject>,
        step: &Step,
        namespace: &str,
        bound: Duration,
    ) -> Result<(), RunError> {
        let manifest = step
            .manifest(namespace)
            .ok_or_else(|| RunError::Setup(format!("step {} creates nothing", step.number)))?;
        let object: DynamicObject = serde_json::from_value(manifest)
            .map_err(|e| RunError::Setup(format!("step {}'s object: {e}", step.number)))?;
        let deadline = Instant::now() + bound;
        loop {
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(status))
                    if status.code == 409 && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => {
                    return Err(RunError::kube(
                        format!(
                            "step {} (create {} {})",
                            step.number, step.target.kind, step.target.name
                        ),
                        e,
                    ));
                }
            }
        }
    }

    /// The core/v1 Events of type Warning in `namespace`, as JSON (none if the list
    /// fails: the complaints oracle then has nothing to judge, the run goes on).
    pub async fn warning_events(&self, namespace: &str) -> Vec<Json> {
        let events: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.client.clone(), namespace);
        match events
            .list(&ListParams::default().fields("type=Warning"))
            .await
        {
            Ok(list) => list
                .items
                .iter()
                .filter_map(|e| serde_json::to_value(e).ok())
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "sieve: listing Warning Events failed");
                Vec::new()
            }
        }
    }

    /// Every object of `resource` in `namespace`, as JSON with its apiVersion and kind.
    pub async fn list(
        &self,
        resource: &ApiResource,
        namespace: &str,
    ) -> Result<Vec<Json>, RunError> {
        let list = self
            .api(resource, namespace)
            .list(&ListParams::default())
            .await
            .map_err(|e| RunError::kube(format!("listing {}", resource.plural), e))?;
        list.items
            .into_iter()
            .map(|item| {
                let mut json = serde_json::to_value(item)
                    .map_err(|e| RunError::Setup(format!("a listed {}: {e}", resource.kind)))?;
                json["apiVersion"] = Json::from(resource.api_version.clone());
                json["kind"] = Json::from(resource.kind.clone());
                Ok(json)
            })
            .collect()
    }

    /// Deletes every object of `resource` in `namespace` and waits up to `bound` until
    /// they are gone (the controller, still running, removes its finalizers). Returns
    /// the names still there after the bound.
    pub async fn delete_all(
        &self,
        resource: &ApiResource,
        namespace: &str,
        bound: Duration,
    ) -> Result<Vec<String>, RunError> {
        self.delete_matching(resource, namespace, bound, |_| true)
            .await
    }

    /// [`delete_all`](Self::delete_all) for the objects that have an owner (what a
    /// controller made), leaving what the cluster keeps in every namespace (the
    /// `kube-root-ca.crt` ConfigMap, made again at once).
    pub async fn delete_owned(
        &self,
        resource: &ApiResource,
        namespace: &str,
        bound: Duration,
    ) -> Result<Vec<String>, RunError> {
        self.delete_matching(resource, namespace, bound, |o| {
            o.metadata
                .owner_references
                .as_ref()
                .is_some_and(|r| !r.is_empty())
        })
        .await
    }

    async fn delete_matching(
        &self,
        resource: &ApiResource,
        namespace: &str,
        bound: Duration,
        wanted: impl Fn(&DynamicObject) -> bool,
    ) -> Result<Vec<String>, RunError> {
        let api = self.api(resource, namespace);
        let names = |list: kube::core::ObjectList<DynamicObject>| -> Vec<String> {
            list.items
                .into_iter()
                .filter(|o| wanted(o))
                .filter_map(|o| o.metadata.name)
                .collect()
        };
        let listed = api
            .list(&ListParams::default())
            .await
            .map_err(|e| RunError::kube(format!("listing {}", resource.plural), e))?;
        for name in names(listed) {
            let _ = api.delete(&name, &DeleteParams::background()).await;
        }
        let deadline = Instant::now() + bound;
        loop {
            let left = names(
                api.list(&ListParams::default())
                    .await
                    .map_err(|e| RunError::kube(format!("listing {}", resource.plural), e))?,
            );
            if left.is_empty() || Instant::now() >= deadline {
                return Ok(left);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
