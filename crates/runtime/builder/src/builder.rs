//! The builder: controller-runtime's `pkg/builder`
//! (`ControllerManagedBy(mgr).For(..).Owns(..).Watches(..).Complete(r)`).
//!
//! It writes, from a few declarative lines, exactly the wiring that
//! crates/controllers/foo-controller/src/controller.rs writes by hand:
//!
//! 1. a named, rate-limited work queue ([`LoopOptions::new_queue`]: by default a
//!    priority queue with the coalescing backoff);
//! 2. for each watched kind, the **shared** informer from the factory (one watch and one
//!    cache per kind and scope, whoever asks) and an event handler on it
//!    ([`EnqueueHandler`]: predicates, then a map to requests, then `queue.add`);
//! 3. the "has this handler seen its initial list" checks
//!    ([`registration_synced`]) the loop waits for before any worker starts;
//! 4. the sync loop ([`controller::Controller`]) with the reconciler as its handler,
//!    and, when given one ([`Builder::freshness`]), the staleness guard following
//!    every watched informer.
//!
//! With [`Builder::shard`] (a replica of a shard group, `--shard-group`), the `For`
//! kind's informer caches only the objects whose UID hashes into this replica's
//! ranges, each `Owns` kind's informer only the objects those control, and the loop
//! syncs only this replica's keys (see the `sharding` crate). `Watches` kinds stay
//! whole: which of them map to this replica's keys is the map function's business.
//!
//! Go's builder fails at run time when `For` is missing or given twice; here
//! [`Builder::for_`] changes the builder's type, so both mistakes do not compile and
//! [`complete`](Builder::complete) cannot fail.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use cache::shard::ShardBy;
use cache::{InformerOptions, Lister, SharedIndexInformer, SharedInformerFactory};
use controller::{
    Controller, ControllerOptions, Freshness, InformerSynced, LoopOptions, registration_synced,
};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use workqueue::RateLimitingQueue;

use crate::handler::{EnqueueHandler, MapFn, request_for_object, request_for_owner};
use crate::predicate::{BoxPredicate, Predicate};
use crate::reconcile::{Reconciler, ReconcilerAdapter, Request};

mod only_metadata;

/// How to build the `Api` an informer lists and watches for a kind's scope: all
/// namespaces, or one, for namespaced kinds; always the whole cluster for
/// cluster-scoped kinds.
pub trait ScopedApi: 'static {
    /// The `Api` for `K` in `namespace` (`None`: every namespace).
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>;
}

impl ScopedApi for NamespaceResourceScope {
    fn api<K>(client: Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        match namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        }
    }
}

impl ScopedApi for ClusterResourceScope {
    fn api<K>(client: Client, _namespace: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = Self, DynamicType = ()>,
    {
        Api::all(client)
    }
}

/// What the builder can watch: a typed Kubernetes object (k8s-openapi's types, or a
/// `#[derive(CustomResource)]` one).
pub trait Object:
    Resource<DynamicType = (), Scope: ScopedApi>
    + Clone
    + DeserializeOwned
    + fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<T> Object for T where
    T: Resource<DynamicType = (), Scope: ScopedApi>
        + Clone
        + DeserializeOwned
        + fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// The type a [`Builder`] has before [`for_`](Builder::for_) names its kind.
#[derive(Debug, Clone, Copy)]
pub enum NoFor {}

/// What registering one watch needs; a watch is registered at `complete`.
struct WatchContext<'a> {
    client: &'a Client,
    factory: &'a SharedInformerFactory,
    namespace: Option<&'a str>,
    queue: &'a RateLimitingQueue<String>,
    filters: &'a [BoxPredicate],
    freshness: Option<&'a Freshness>,
    roles: &'a Roles,
}

/// How each watched kind is sharded (when the factory has shard ranges).
#[derive(Clone, Default)]
struct Roles(HashMap<TypeId, ShardBy>);

impl Roles {
    /// The informer options for `W`: its shard rule if the factory shards.
    fn options<W: 'static>(&self, factory: &SharedInformerFactory) -> InformerOptions {
        InformerOptions {
            shard: factory
                .shard_ranges()
                .and(self.0.get(&TypeId::of::<W>()).copied()),
            ..InformerOptions::default()
        }
    }
}

type Watch = Box<dyn FnOnce(&WatchContext<'_>) -> InformerSynced + Send>;

/// Builds a controller from declarations. See the [crate docs](crate) for an example.
///
/// `K` is the kind the controller reconciles, set by [`for_`](Self::for_).
pub struct Builder<K = NoFor> {
    name: String,
    client: Client,
    factory: SharedInformerFactory,
    namespace: Option<String>,
    workers: usize,
    filters: Vec<BoxPredicate>,
    watches: Vec<Watch>,
    loop_options: LoopOptions,
    freshness: Option<Freshness>,
    shard: Option<sharding::Shard>,
    roles: Roles,
    _for: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for Builder<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("name", &self.name)
            .field("namespace", &self.namespace)
            .field("workers", &self.workers)
            .field("filters", &self.filters.len())
            .field("watches", &self.watches.len())
            .field("loop_options", &self.loop_options)
            .field("freshness", &self.freshness)
            .field("shard", &self.shard)
            .finish_non_exhaustive()
    }
}

impl Builder<NoFor> {
    /// A builder for the controller `name` (its queue's metrics name, its log field,
    /// and a good server-side apply field manager), taking every informer from
    /// `factory` and watching every namespace until [`namespace`](Self::namespace)
    /// says otherwise. controller-runtime's `ControllerManagedBy(mgr).Named(name)`.
    pub fn new(name: impl Into<String>, client: Client, factory: &SharedInformerFactory) -> Self {
        Self {
            name: name.into(),
            client,
            factory: factory.clone(),
            namespace: None,
            workers: 1,
            filters: Vec::new(),
            watches: Vec::new(),
            loop_options: LoopOptions::default(),
            freshness: None,
            shard: None,
            roles: Roles::default(),
            _for: PhantomData,
        }
    }

    /// The kind this controller reconciles: every add, update and delete of a `K`
    /// enqueues that `K` (controller-runtime's `For`).
    pub fn for_<K: Object>(self) -> Builder<K> {
        self.for_with::<K>(Vec::new())
    }

    /// [`for_`](Self::for_), with predicates for this watch only (controller-runtime's
    /// `For(obj, WithPredicates(...))`).
    pub fn for_with<K: Object>(self, predicates: Vec<BoxPredicate>) -> Builder<K> {
        let for_watch = watch::<K>(Arc::new(request_for_object::<K>), predicates);
        let mut watches = self.watches;
        watches.insert(0, for_watch);
        let mut roles = self.roles;
        roles.0.insert(TypeId::of::<K>(), ShardBy::UID);
        Builder {
            name: self.name,
            client: self.client,
            factory: self.factory,
            namespace: self.namespace,
            workers: self.workers,
            filters: self.filters,
            watches,
            loop_options: self.loop_options,
            freshness: self.freshness,
            shard: self.shard,
            roles,
            _for: PhantomData,
        }
    }
}

impl<K> Builder<K> {
    /// Takes a process's settings for its controllers in one call: `options`'
    /// namespace, workers, loop options, the staleness guard those make
    /// ([`LoopOptions::freshness`]) and shard (controller-runtime's `WithOptions`).
    /// A `manager::Manager` hands them over this way in `controller_managed_by`, so
    /// no binary repeats them line by line; each may still be changed afterwards.
    pub fn with_options(self, options: ControllerOptions<sharding::Shard>) -> Self {
        let freshness = options.loop_options.freshness();
        self.namespace(options.namespace.as_deref())
            .workers(options.workers)
            .loop_options(options.loop_options)
            .freshness(freshness)
            .shard(options.shard.as_ref())
    }

    /// The staleness guard the loop will hold ([`freshness`](Self::freshness), or
    /// [`with_options`](Self::with_options)), a clone for the reconciler: it must
    /// report its writes ([`Freshness::wrote`]) to the very guard the loop checks,
    /// and a builder from `controller_managed_by` made that guard itself.
    pub fn freshness_guard(&self) -> Option<Freshness> {
        self.freshness.clone()
    }

    /// The client the informers list and watch through, for the reconciler to
    /// write through as well (controller-runtime's `mgr.GetClient()`).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The queue order and backoff of the controller's loop (default: priority queue,
    /// coalescing backoff; see [`LoopOptions`]). Its staleness guard is
    /// [`freshness`](Self::freshness), since the reconciler needs a clone of it.
    pub fn loop_options(mut self, options: LoopOptions) -> Self {
        self.loop_options = options;
        self
    }

    /// Guards the loop with `freshness` (see [`controller::freshness`]): every watched
    /// informer is tracked on it, and a key's next reconcile waits until they have
    /// seen the writes the reconciler reported with [`Freshness::wrote`]. Give the
    /// reconciler a clone. `None` (the default) leaves the loop unguarded.
    pub fn freshness(mut self, freshness: Option<Freshness>) -> Self {
        self.freshness = freshness;
        self
    }

    /// Runs the controller as one replica of a shard group (see the [module
    /// docs](self)); the factory must have the shard's ranges
    /// ([`SharedInformerFactory::with_shard_ranges`], which a `manager::Manager`
    /// with `--shard-group` sets). `None` (the default): every object.
    pub fn shard(mut self, shard: Option<&sharding::Shard>) -> Self {
        self.shard = shard.cloned();
        self
    }

    /// Watches only `namespace` (`None`: every namespace) for namespaced kinds; the
    /// informers are still shared with any other controller that asks the factory for
    /// the same kind in the same namespace (controller-runtime's cache `DefaultNamespaces`).
    pub fn namespace(mut self, namespace: Option<&str>) -> Self {
        self.namespace = namespace.map(str::to_string);
        self
    }

    /// How many requests are reconciled at once, at least 1 (controller-runtime's
    /// `MaxConcurrentReconciles`, client-go's "threadiness"). Default 1. One request is
    /// never reconciled by two workers at once, however many there are.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers.max(1);
        self
    }

    /// A predicate every watch of this controller must pass (controller-runtime's
    /// `WithEventFilter`). See [`predicate`](crate::predicate) for the defaults.
    pub fn with_event_filter(mut self, predicate: impl Predicate) -> Self {
        self.filters.push(Arc::new(predicate));
        self
    }

    /// The lister of the shared informer for `C` in this builder's scope: the same
    /// cache `for_`/`owns`/`watches` of `C` fill, for the reconciler to read from
    /// (controller-runtime's cached client). Ask before [`complete`](Builder::complete).
    pub fn lister<C: Object>(&self) -> Lister<C> {
        let options = self.roles.options::<C>(&self.factory);
        shared_informer::<C>(
            &self.factory,
            &self.client,
            self.namespace.as_deref(),
            options,
        )
        .lister()
    }
}

/// The factory's shared informer for `W` in `namespace` (cluster-scoped kinds: the
/// whole cluster).
fn shared_informer<W: Object>(
    factory: &SharedInformerFactory,
    client: &Client,
    namespace: Option<&str>,
    options: InformerOptions,
) -> SharedIndexInformer<W> {
    let api = W::Scope::api::<W>(client.clone(), namespace);
    factory.informer_for_api(api, options)
}

impl<K: Object> Builder<K>
where
    K::Scope: 'static,
{
    /// Objects of kind `C` that a `K` controls: a change to one enqueues the `K` named
    /// by its controller ownerReference (controller-runtime's `Owns`, with
    /// `OnlyControllerOwner`). Objects owned but not controlled, or controlled by
    /// another kind, are ignored.
    pub fn owns<C: Object>(self) -> Self {
        self.owns_with::<C>(Vec::new())
    }

    /// [`owns`](Self::owns), with predicates for this watch only.
    pub fn owns_with<C: Object>(mut self, predicates: Vec<BoxPredicate>) -> Self {
        self.roles
            .0
            .insert(TypeId::of::<C>(), ShardBy::ControllerUid);
        self.watches
            .push(watch::<C>(Arc::new(request_for_owner::<K, C>), predicates));
        self
    }

    /// Any kind `W`, mapped to zero or more requests by `map` (controller-runtime's
    /// `Watches(&W{}, handler.EnqueueRequestsFromMapFunc(map))`): for example "every
    /// MyWeb that names this Secret".
    pub fn watches<W: Object>(
        self,
        map: impl Fn(&W) -> Vec<Request> + Send + Sync + 'static,
    ) -> Self {
        self.watches_with::<W>(map, Vec::new())
    }

    /// [`watches`](Self::watches), with predicates for this watch only.
    pub fn watches_with<W: Object>(
        mut self,
        map: impl Fn(&W) -> Vec<Request> + Send + Sync + 'static,
        predicates: Vec<BoxPredicate>,
    ) -> Self {
        self.watches.push(watch::<W>(Arc::new(map), predicates));
        self
    }

    /// Asks the factory for every informer, registers the handlers and returns the
    /// controller, ready to [`run`](BuiltController::run) (controller-runtime's
    /// `Complete`/`Build`). Start the factory afterwards (a `manager::Manager` does).
    pub fn complete<R: Reconciler>(self, reconciler: R) -> BuiltController<R> {
        // Named like client-go's NewNamedRateLimitingQueue, so workqueue metrics carry
        // the controller's name. In a shard group a failed key is retried within a
        // bounded time: the event that would wake it can reach another replica
        // (`LoopOptions::in_shard_group`).
        let queue = self
            .loop_options
            .in_shard_group(self.shard.is_some())
            .new_queue(&self.name);
        let context = WatchContext {
            client: &self.client,
            factory: &self.factory,
            namespace: self.namespace.as_deref(),
            queue: &queue,
            filters: &self.filters,
            freshness: self.freshness.as_ref(),
            roles: &self.roles,
        };
        let synced = self
            .watches
            .into_iter()
            .map(|register| register(&context))
            .collect();
        // Sharded: the loop syncs only the keys of this replica's ranges, placed by
        // the For kind's objects.
        let gate = self.shard.as_ref().map(|shard| {
            let options = self.roles.options::<K>(&self.factory);
            let primary = shared_informer::<K>(
                &self.factory,
                &self.client,
                self.namespace.as_deref(),
                options,
            );
            shard.gate(&primary, queue.clone())
        });
        let controller = Controller::new(self.name, queue, ReconcilerAdapter::new(reconciler))
            .with_synced(synced)
            .with_freshness(self.freshness)
            .with_reconcile_timeout(self.loop_options.reconcile_timeout)
            .with_gate(gate);
        BuiltController {
            controller,
            workers: self.workers,
        }
    }
}

/// One watch of kind `W`: at `complete`, take the shared informer and add an
/// [`EnqueueHandler`] with the controller's filters plus this watch's predicates.
fn watch<W: Object>(map: MapFn<W>, predicates: Vec<BoxPredicate>) -> Watch {
    Box::new(move |context: &WatchContext<'_>| {
        let options = context.roles.options::<W>(context.factory);
        let informer =
            shared_informer::<W>(context.factory, context.client, context.namespace, options);
        if let Some(freshness) = context.freshness {
            freshness.track(&informer);
        }
        let mut all = context.filters.to_vec();
        all.extend(predicates);
        let registration =
            informer.add_event_handler(EnqueueHandler::new(context.queue.clone(), map, all));
        registration_synced(registration)
    })
}

/// A controller made by a [`Builder`]: the workspace's sync loop running a
/// [`Reconciler`] (waiting for the caches of its watches), and how many workers it
/// runs (controller-runtime's `MaxConcurrentReconciles`).
pub struct BuiltController<R> {
    controller: Controller<ReconcilerAdapter<R>>,
    workers: usize,
}

impl<R: Reconciler> fmt::Debug for BuiltController<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltController")
            .field("name", &self.controller.name())
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

impl<R: Reconciler> BuiltController<R> {
    /// The controller's name.
    pub fn name(&self) -> &str {
        self.controller.name()
    }

    /// The work queue (for metrics and tests).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        self.controller.queue()
    }

    /// The reconciler.
    pub fn reconciler(&self) -> &R {
        self.controller.handler().reconciler()
    }

    /// The sync loop underneath.
    pub fn controller(&self) -> &Controller<ReconcilerAdapter<R>> {
        &self.controller
    }

    /// The number of workers [`run`](Self::run) starts.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Whether every watch's handler has processed its informer's initial list (for a
    /// readiness probe).
    pub fn has_synced(&self) -> bool {
        self.controller.has_synced()
    }

    /// Waits for every watch to sync, runs the workers until `cancel` fires, then
    /// drains the queue. See [`Controller::run`].
    pub async fn run(&self, cancel: CancellationToken) -> controller::Result<()> {
        self.controller.run(self.workers, cancel).await
    }
}
