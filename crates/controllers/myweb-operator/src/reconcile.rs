//! The MyWeb operator's `Reconcile`: make a ConfigMap, a Deployment and a NodePort
//! Service match a MyWeb, and say how it went in the MyWeb's status.
//!
//! Level-triggered and idempotent: the reconciler gets a [`Request`] (never the event
//! that caused it), reads the MyWeb and the objects from the informers' caches, and
//! sends the same apply configuration whatever happened before. Step by step:
//!
//! 1. Read the MyWeb from the cache. Gone, or being deleted? Nothing to do: its objects
//!    carry a controller ownerReference, so the garbage collector deletes them. No
//!    finalizer is needed because nothing outside the cluster has to be cleaned up
//!    (compare the VirtualMachine controller, whose VMs live outside it).
//! 2. For the ConfigMap, the Deployment and the Service, in that order:
//!    - an object of that name the MyWeb does **not** control (another controller's, or
//!      nobody's) is never touched: Warning Event `ErrResourceExists`, `Ready=False`,
//!      and an error so the request is retried with backoff;
//!    - missing from the cache: **create** it (POST). If someone else's object of that
//!      name appeared since the cache last looked, the API server answers 409
//!      AlreadyExists and we retry; an apply would have adopted it. A MyWeb that was
//!      reconciled before and has lost an object is first read from the API server
//!      (one GET): if it is gone, nothing is created (see "A deleted owner" below);
//!    - ours: **server-side apply** the desired configuration ([`objects`])
//!      as field manager [`FIELD_MANAGER`], with `force`. The ConfigMap goes first
//!      and is the fence against a stale cache (below): when the cache is behind
//!      what the operator last wrote, nothing is written and the MyWeb is looked at
//!      again in a second ([`STALE_CACHE_RETRY`]).
//! 3. Compute `Ready` from the Deployment the API server returned, and write the status
//!    if it changed. A refused write (a node port another Service holds) becomes a
//!    Warning Event and `Ready=False` with the server's message, then an error:
//!    backoff, never a hot loop.
//!
//! Two answers are expected states while the namespace is being deleted, not errors
//! ([`controller::expected`]): a create refused with the `NamespaceTerminating` cause
//! ends the reconcile at step 2 with `Ok` (no Event, no status: the namespace deletion
//! takes the MyWeb too, as the ReplicaSet controller reasons for its pods), and a 404 on
//! the status write (the MyWeb is gone) ends it at step 3 with `Ok`. Both log at debug.
//!
//! # Why server-side apply
//!
//! sample-controller (crates/controllers/foo-controller) reads the Deployment, changes `replicas` on
//! the copy and sends an update carrying the resourceVersion it read: a stale cache or
//! a concurrent writer costs a 409 and a retry, and it can only correct the fields it
//! compares by hand. With server-side apply the request *is* the desired state: one
//! PATCH per object, no resourceVersion, no read-modify-write, and the API server
//! merges it field by field. `force` is safe because the configuration holds only the
//! fields this operator owns; if `kubectl edit` or `kubectl scale` changed one of them,
//! force takes it back (drift corrected), while fields we never send (annotations
//! other tools add, say) are left alone. An apply that changes nothing writes nothing,
//! so the repeated request is cheap for etcd.
//!
//! The apply also carries the UID the cache saw: if the object was deleted and
//! replaced by someone else's since, the UID no longer matches and the API server
//! refuses the change (UIDs are immutable) instead of us adopting it.
//!
//! # A deleted owner: read it live before recreating what it lost
//!
//! Each informer applies its own watch stream, so an event of an owned object can
//! overtake its owner's. When a MyWeb is deleted, the garbage collector deletes its
//! ConfigMap, Deployment and Service; their `DELETED` events queue the MyWeb, and the
//! MyWeb informer may not have applied the MyWeb's own `DELETED` yet. The cache then
//! holds a MyWeb that no longer exists, missing its objects, and a create would make
//! one for an owner that is gone (the garbage collector deletes it again; Sieve counts
//! it as a write on behalf of a deleted owner, docs/reliability.md). So before a
//! create, a MyWeb that has a status (it was reconciled before: its objects existed)
//! is read from the API server, once per reconcile: not found, or another UID (deleted
//! and recreated under the same name), and the reconcile ends with `Ok` and writes
//! nothing; the newer MyWeb's own events queue it again. Creates are rare (three per
//! MyWeb, and one per object someone deletes), so the GET costs nothing in the steady
//! state; a first reconcile, which has no status, skips it. The Foo controller does
//! the same (crates/controllers/foo-controller/src/sync.rs, `is_live`).
//!
//! # Stale caches: the ConfigMap is the fence
//!
//! An apply is the desired state of the MyWeb *the cache holds*. After a restart onto
//! an API server that lags (an HA replica behind the others), that MyWeb can be older
//! than the one the operator last applied from, and applying it would put the old page
//! back and roll the Deployment backwards, then forwards again once the watch catches
//! up (Sieve's stale-state perturbation found exactly that; docs/reliability.md). The
//! staleness guard ([`controller::freshness`]) cannot help: it remembers this
//! process's writes, and a new process has none. So the cluster remembers instead:
//!
//! - the ConfigMap carries the generation of the MyWeb it was applied from
//!   ([`objects::WEB_GENERATION_ANNOTATION`]); a cached MyWeb older than that is not
//!   applied;
//! - the ConfigMap's apply, alone of the three, carries the resourceVersion the cache
//!   saw: if the cached ConfigMap is itself behind (so its annotation may be too), the
//!   API server answers 409 Conflict and nothing else is written.
//!
//! An apply of the ConfigMap that succeeds therefore proves the MyWeb we act on is no
//! older than any the operator applied before, and the Deployment and the Service
//! follow unconditionally. Only the operator writes that ConfigMap, so the
//! precondition costs no conflicts in normal running (a `kubectl edit` racing a
//! reconcile costs one retry). Either way the reconcile ends with a requeue, not an
//! error: no Warning Event, no `Ready=False`; the events that bring the cache up to
//! date queue the MyWeb again too.

use std::fmt::Debug;
use std::ops::ControlFlow::{self, Break, Continue};
use std::time::Duration;

use apis::operator::v1::MyWeb;
use builder::{Action, Reconciler, Request};
use cache::{Lister, MetadataLister};
use controller::{ApiError, Freshness, is_controlled_by};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use record::{EventRecorder, EventType};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::{debug, info};

use crate::error::{Error, Result};
use crate::status::{Readiness, deployment_readiness, next_status};
use crate::{FIELD_MANAGER, REASON_READY, objects};

/// How soon a MyWeb is looked at again when the fence found the cache behind what the
/// operator last wrote (see "Stale caches" in the [module docs](self)).
pub const STALE_CACHE_RETRY: Duration = Duration::from_secs(1);

/// What the reconciler reads and writes with: the caches of the four informers, a
/// client for writes, and the Event recorder.
#[derive(Clone)]
pub struct MyWebReconciler {
    client: kube::Client,
    webs: Lister<MyWeb>,
    config_maps: MetadataLister<ConfigMap>,
    deployments: Lister<Deployment>,
    services: Lister<Service>,
    recorder: EventRecorder,
    freshness: Option<Freshness>,
}

/// The listers a [`MyWebReconciler`] reads from.
#[derive(Clone)]
pub struct Listers {
    /// MyWebs.
    pub webs: Lister<MyWeb>,
    /// ConfigMaps, their metadata only: the reconciler reads nothing else of a
    /// ConfigMap from the cache (whose it is, its UID), and never its `data`
    /// (it applies the page from the MyWeb's spec). See `controller::setup`.
    pub config_maps: MetadataLister<ConfigMap>,
    /// Deployments.
    pub deployments: Lister<Deployment>,
    /// Services.
    pub services: Lister<Service>,
}

impl MyWebReconciler {
    /// A reconciler reading `listers` and writing with `client`.
    pub fn new(client: kube::Client, listers: Listers, recorder: EventRecorder) -> Self {
        Self {
            client,
            webs: listers.webs,
            config_maps: listers.config_maps,
            deployments: listers.deployments,
            services: listers.services,
            recorder,
            freshness: None,
        }
    }

    /// Reports every write to `freshness` (see [`controller::freshness`]), so a
    /// MyWeb's next reconcile waits until the informers have seen them; the builder
    /// must be given the same guard.
    pub fn with_freshness(mut self, freshness: Option<Freshness>) -> Self {
        self.freshness = freshness;
        self
    }

    /// Tells the staleness guard that reconciling `web` wrote `obj`
    /// (and the pipeline view, which shows it as a step of `web`'s trip).
    /// `C` is the type of the informer that must catch up with the write: `K` itself,
    /// or `PartialObjectMeta<K>` for a kind cached as metadata only.
    fn wrote<C: 'static, K: kube::Resource>(&self, web: &MyWeb, obj: &K) {
        controller::record_write(obj);
        if let (Some(freshness), Some(version)) =
            (&self.freshness, obj.meta().resource_version.as_deref())
        {
            let namespace = web.metadata.namespace.as_deref().unwrap_or_default();
            let name = web.metadata.name.as_deref().unwrap_or_default();
            freshness.wrote_version::<C>(&format!("{namespace}/{name}"), version);
        }
    }

    /// Reconciles the MyWeb `namespace/name`. See the [module docs](self).
    /// [`Action::RequeueAfter`] when the cache is behind (the fence held), else
    /// [`Action::Done`].
    pub async fn reconcile_web(&self, namespace: &str, name: &str) -> Result<Action> {
        // 1. The MyWeb, from the cache.
        let web = match self.webs.get(namespace, name) {
            Ok(web) => web,
            Err(err) if err.is_not_found() => {
                debug!(
                    namespace,
                    name, "MyWeb no longer exists; the garbage collector removes its objects"
                );
                return Ok(Action::Done);
            }
            Err(err) => return Err(Error::Cache(err)),
        };
        if web.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }

        // 2. The three objects.
        let outcome = match self.apply_objects(&web).await {
            // The fence held: the cache is behind what we last wrote. Nothing written.
            Ok(Break(Stop::CacheBehind)) => return Ok(Action::requeue_after(STALE_CACHE_RETRY)),
            Ok(Break(Stop::OwnerGone)) => {
                // Its DELETED event is on its way to the cache; the garbage collector
                // removes what is left (see "A deleted owner" in the module docs).
                info!(
                    namespace,
                    name, "MyWeb lost an object and is deleted or replaced: not recreating it"
                );
                return Ok(Action::Done);
            }
            Ok(Continue(deployment)) => Ok(deployment),
            Err(Error::Api(err)) if err.is_namespace_terminating() => {
                // Expected while the namespace is deleted: it takes the MyWeb with it. No
                // Warning Event, no Ready=False, no error, no retry (controller::expected).
                debug!(namespace, name, error = %err, "namespace is terminating; not creating");
                return Ok(Action::Done);
            }
            Err(err) => Err(err),
        };

        // 3. Status, from the outcome.
        let readiness = match &outcome {
            Ok(deployment) => deployment_readiness(deployment, web.spec.node_port_number),
            Err(err) => {
                let message = err.user_message();
                self.recorder
                    .event(&*web, EventType::Warning, err.reason(), message.clone());
                Readiness::not_ready(err.reason(), message)
            }
        };
        match self.write_status(&web, &readiness).await {
            Err(Error::Api(err)) if err.is_not_found() => {
                // Deleted since the cache saw it: whatever step 2 found no longer
                // matters, and its deletion event is on its way (controller::expected).
                debug!(namespace, name, error = %err, "MyWeb is gone; its status is not written");
                Ok(Action::Done)
            }
            Err(err) => Err(err),
            Ok(()) => outcome.map(|_| Action::Done),
        }
    }

    /// Step 2: the ConfigMap first (the pods mount it, and it is the fence), then the
    /// Deployment, then the Service. Returns the Deployment as the API server has it
    /// now, or why the writes stopped early.
    async fn apply_objects(&self, web: &MyWeb) -> Result<ControlFlow<Stop, Deployment>> {
        // Whether the MyWeb was found on the API server: asked at most once.
        let mut live = None;
        let config_map = objects::config_map(web)?;
        if let Break(stop) = self
            .ensure(web, &mut live, &self.config_maps, config_map)
            .await?
        {
            return Ok(Break(stop));
        }
        let deployment = objects::deployment(web)?;
        let deployment = match self
            .ensure(web, &mut live, &self.deployments, deployment)
            .await?
        {
            Continue(deployment) => deployment,
            Break(stop) => return Ok(Break(stop)),
        };
        let service = objects::service(web)?;
        if let Break(stop) = self.ensure(web, &mut live, &self.services, service).await? {
            return Ok(Break(stop));
        }
        Ok(Continue(deployment))
    }

    /// Whether `web` (from the cache) still exists on the API server
    /// ([`controller::owner_still_exists`]). `live` remembers the answer for the rest of
    /// the reconcile.
    async fn is_live(&self, web: &MyWeb, live: &mut Option<bool>) -> Result<bool> {
        if let Some(known) = *live {
            return Ok(known);
        }
        let namespace = web.metadata.namespace.as_deref().unwrap_or_default();
        let name = web.metadata.name.as_deref().unwrap_or_default();
        let api: Api<MyWeb> = Api::namespaced(self.client.clone(), namespace);
        let known = controller::owner_still_exists(&api, web)
            .await
            .map_err(|e| Error::Api(ApiError::new("get MyWeb", namespace, name, e)))?;
        *live = Some(known);
        Ok(known)
    }

    /// Creates `desired` if the cache has no object of its name, applies it if the
    /// cached one is controlled by `web`, and refuses otherwise. Reads only the cached
    /// object's metadata (owner references, UID, and for the fence its annotation and
    /// resourceVersion), so the cache may hold the kind whole or its metadata alone
    /// ([`Owned::Cached`]). Returns the object as the API server answered, or
    /// [`Break`] with nothing written: when the kind is the fence ([`Owned::FENCE`]) and
    /// the cache is behind what the operator last wrote ([`Stop::CacheBehind`]), or
    /// when a create would be for a MyWeb that is gone ([`Stop::OwnerGone`]; `live`,
    /// see [`Self::is_live`]).
    async fn ensure<K: Owned>(
        &self,
        web: &MyWeb,
        live: &mut Option<bool>,
        cache: &Lister<K::Cached>,
        mut desired: K,
    ) -> Result<ControlFlow<Stop, K>> {
        let namespace = desired.meta().namespace.clone().unwrap_or_default();
        let name = desired.meta().name.clone().unwrap_or_default();
        // Through the typed client: protobuf on the wire, as client-go's clientset.
        let api = gentype::Client::<K>::new(Api::namespaced(self.client.clone(), &namespace));
        let failed = |action: &'static str, source| {
            Error::Api(ApiError::new(action, &namespace, &name, source))
        };
        let written = match cache.get(&namespace, &name) {
            Ok(current) if !is_controlled_by(&*current, web) => Err(Error::ResourceExists {
                kind: K::KIND,
                name,
            }),
            Ok(current) => {
                desired.meta_mut().uid = current.meta().uid.clone();
                if K::FENCE {
                    let applied = objects::applied_generation(current.meta());
                    let cached = web.metadata.generation.unwrap_or(0);
                    if applied > cached {
                        info!(
                            kind = K::KIND,
                            namespace,
                            name,
                            applied,
                            cached,
                            "the cached MyWeb is older than the one last applied; waiting for the cache"
                        );
                        return Ok(Break(Stop::CacheBehind));
                    }
                    desired.meta_mut().resource_version = current.meta().resource_version.clone();
                }
                let params = PatchParams::apply(FIELD_MANAGER).force();
                match api.patch(&name, &params, &Patch::Apply(&desired)).await {
                    Err(kube::Error::Api(status)) if K::FENCE && status.code == 409 => {
                        info!(kind = K::KIND, namespace, name, message = %status.message,
                            "the cached object is older than the server's; waiting for the cache");
                        return Ok(Break(Stop::CacheBehind));
                    }
                    answer => answer.map_err(|e| failed(K::APPLY, e)),
                }
            }
            Err(err) if err.is_not_found() => {
                if web.status.is_some() && !self.is_live(web, live).await? {
                    return Ok(Break(Stop::OwnerGone));
                }
                info!(kind = K::KIND, namespace, name, "creating");
                let params = PostParams {
                    field_manager: Some(FIELD_MANAGER.to_string()),
                    ..PostParams::default()
                };
                api.create(&params, &desired)
                    .await
                    .map_err(|e| failed(K::CREATE, e))
            }
            Err(err) => Err(Error::Cache(err)),
        }?;
        self.wrote::<K::Cached, _>(web, &written);
        Ok(Continue(written))
    }

    /// Step 3: patches the status subresource when it differs from what the cache has,
    /// and tells the user when the page becomes served.
    async fn write_status(&self, web: &MyWeb, readiness: &Readiness) -> Result<()> {
        let Some(status) = next_status(web, readiness, Timestamp::now()) else {
            return Ok(());
        };
        let namespace = web.metadata.namespace.as_deref().unwrap_or_default();
        let name = web.metadata.name.as_deref().unwrap_or_default();
        let was_ready = web.ready_condition().is_some_and(|c| c.status == "True");
        let api: Api<MyWeb> = Api::namespaced(self.client.clone(), namespace);
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            ..PostParams::default()
        };
        // The whole object with the resourceVersion we read, to the status subresource
        // (the API server ignores everything but `status` there): if the MyWeb changed
        // since the cache saw it, a 409 Conflict retries the request with the newer one.
        let mut updated = web.clone();
        updated.status = Some(status);
        let written = api
            .replace_status(name, &params, &updated)
            .await
            .map_err(|e| Error::Api(ApiError::new("update MyWeb status", namespace, name, e)))?;
        self.wrote::<MyWeb, _>(web, &written);
        if readiness.ready && !was_ready {
            self.recorder.event(
                web,
                EventType::Normal,
                REASON_READY,
                readiness.message.clone(),
            );
        }
        Ok(())
    }
}

/// Why [`MyWebReconciler::ensure`] wrote nothing, and the reconcile writes no more.
#[derive(Debug)]
enum Stop {
    /// The fence found the cache behind (see "Stale caches" in the
    /// [module docs](self)).
    CacheBehind,
    /// The object was missing and the MyWeb is gone from the API server (see "A
    /// deleted owner" in the [module docs](self)).
    OwnerGone,
}

/// A kind the operator owns, with the words its errors use.
trait Owned:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// What the operator's cache holds of this kind: the whole object, or its
    /// metadata alone (`PartialObjectMeta<Self>`, see `controller::setup`).
    type Cached: Resource<DynamicType = ()> + Send + Sync + 'static;
    /// Whether this kind is the fence against a stale cache (see "Stale caches" in
    /// the [module docs](self)): its apply carries the cached resourceVersion, and a
    /// cached MyWeb older than the generation it records is not applied.
    const FENCE: bool;
    const KIND: &'static str;
    const CREATE: &'static str;
    const APPLY: &'static str;
}

impl Owned for ConfigMap {
    type Cached = PartialObjectMeta<ConfigMap>;
    const FENCE: bool = true;
    const KIND: &'static str = "ConfigMap";
    const CREATE: &'static str = "create ConfigMap";
    const APPLY: &'static str = "apply ConfigMap";
}

impl Owned for Deployment {
    type Cached = Deployment;
    const FENCE: bool = false;
    const KIND: &'static str = "Deployment";
    const CREATE: &'static str = "create Deployment";
    const APPLY: &'static str = "apply Deployment";
}

impl Owned for Service {
    type Cached = Service;
    const FENCE: bool = false;
    const KIND: &'static str = "Service";
    const CREATE: &'static str = "create Service";
    const APPLY: &'static str = "apply Service";
}

impl Reconciler for MyWebReconciler {
    type Error = Error;

    async fn reconcile(&self, request: &Request) -> Result<Action> {
        self.reconcile_web(request.namespace_or_empty(), &request.name)
            .await
    }
}
