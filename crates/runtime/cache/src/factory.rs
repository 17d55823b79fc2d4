//! The shared informer factory: client-go's `SharedInformerFactory`
//! (informers/factory.go).
//!
//! In a process that runs several controllers, each of them wants informers for some
//! kinds, and several want the same kind (the Foo controller and a metrics exporter
//! both watch Deployments). The factory hands out **one informer per (kind, scope,
//! label selector, field selector)** and remembers it, so the second request gets the
//! same informer: one watch connection and one cache instead of two. Controllers ask
//! for informers while they are being built, then the binary calls
//! [`start`](SharedInformerFactory::start) once and waits for
//! [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync).

use crate::informer_metrics::InformerNameAndResource;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::lister_watcher::{ApiListerWatcher, Wire};
use crate::shard::{ShardBy, ShardFilter, ShardRanges};
use crate::shared_informer::SharedIndexInformer;
use crate::unreadable::UnreadableHook;

/// Server-side filters for an informer: only matching objects are listed and watched.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InformerOptions {
    /// A label selector, e.g. `app=foo`.
    pub label_selector: Option<String>,
    /// A field selector, e.g. `metadata.name=bar`.
    pub field_selector: Option<String>,
    /// How the objects are sharded when the process is one replica of a sharded
    /// controller ([`SharedInformerFactory::with_shard_ranges`]): by their UID (a
    /// controller's own objects) or by their controller's UID (the objects it owns).
    /// Ignored by a factory without shard ranges, so a controller can always say it.
    pub shard: Option<ShardBy>,
}

/// What identifies a shared informer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InformerKey {
    kind: TypeId,
    /// The collection URL, which carries the namespace.
    url: String,
    options: InformerOptions,
}

impl InformerKey {
    /// The key of `K`'s informer for `api` filtered by `options`.
    fn of<K: Resource + 'static>(api: &Api<K>, options: &InformerOptions) -> Self {
        Self {
            kind: TypeId::of::<K>(),
            url: api.resource_url().to_string(),
            options: options.clone(),
        }
    }
}

/// Type-erased operations on an informer of any kind.
trait AnyInformer: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn start(&self, cancel: CancellationToken);
    /// Waits until synced or cancelled; whether it synced.
    fn wait_for_cache_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool>;
    fn name(&self) -> String;
    /// Stops the informer if it runs (see [`SharedInformerFactory::remove_informer`]).
    fn stop(&self);
}

struct Entry<K> {
    informer: SharedIndexInformer<K>,
    name: String,
    /// Stops this informer alone: a child of the token `start` was given.
    stop: Mutex<Option<CancellationToken>>,
}

impl<K: Resource + Send + Sync + 'static> AnyInformer for Entry<K> {
    fn as_any(&self) -> &dyn Any {
        &self.informer
    }
    fn start(&self, cancel: CancellationToken) {
        if self.informer.is_started() {
            return;
        }
        let informer = self.informer.clone();
        let own = cancel.child_token();
        *self.stop.lock() = Some(own.clone());
        tokio::spawn(async move { informer.run(own).await });
    }
    fn stop(&self) {
        self.informer.mark_removed();
        if let Some(own) = self.stop.lock().take() {
            own.cancel();
        }
    }
    fn wait_for_cache_sync<'a>(&'a self, cancel: &'a CancellationToken) -> BoxFuture<'a, bool> {
        self.informer.wait_for_cache_sync(cancel).boxed()
    }
    fn name(&self) -> String {
        self.name.clone()
    }
}

/// Hands out shared informers and starts them: client-go's `SharedInformerFactory`.
/// A cheap-to-clone handle.
#[derive(Clone)]
pub struct SharedInformerFactory {
    client: Client,
    default_resync_period: Duration,
    strip_managed_fields: bool,
    wire: Wire,
    /// The name informers are known by in the informer metrics (client-go's
    /// `InformerName`); `None`: no informer metrics.
    name: Option<String>,
    shard_ranges: Option<ShardRanges>,
    informers: Arc<Mutex<HashMap<InformerKey, Arc<dyn AnyInformer>>>>,
    /// The sharded informers handed out so far.
    shard_filters: Arc<Mutex<Vec<ShardedInformer>>>,
    /// Given to every typed informer it creates ([`crate::unreadable`]).
    on_unreadable: Option<UnreadableHook>,
}

/// A sharded informer the factory handed out: its name, its filter (whose
/// [`server_filtering`](ShardFilter::server_filtering) says what the server did) and
/// the size of its cache.
#[derive(Clone)]
pub struct ShardedInformer {
    /// The informer's name (kind, scope, filters).
    pub name: String,
    /// Its shard filter.
    pub filter: ShardFilter,
    /// How many objects its cache holds now.
    pub cached: Arc<dyn Fn() -> usize + Send + Sync>,
}

impl fmt::Debug for ShardedInformer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedInformer")
            .field("name", &self.name)
            .field("filter", &self.filter)
            .field("cached", &(self.cached)())
            .finish()
    }
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .field("default_resync_period", &self.default_resync_period)
            .field("strip_managed_fields", &self.strip_managed_fields)
            .field("wire", &self.wire)
            .field("informers", &self.informers.lock().len())
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactory {
    /// A factory whose informers use `client` and, for handlers without a period of
    /// their own, `default_resync_period` (zero: no resync). They ask for the process's
    /// wire ([`Wire::process_default`]) unless [`with_wire`](Self::with_wire) says otherwise.
    pub fn new(client: Client, default_resync_period: Duration) -> Self {
        Self {
            client,
            default_resync_period,
            strip_managed_fields: false,
            wire: Wire::process_default(),
            name: None,
            shard_ranges: None,
            informers: Arc::new(Mutex::new(HashMap::new())),
            on_unreadable: None,
            shard_filters: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Makes this process one replica of a sharded controller: informers asked for
    /// with [`InformerOptions::shard`] from now on cache only the objects whose hash
    /// is in `ranges` (see [`crate::shard`]).
    pub fn with_shard_ranges(mut self, ranges: ShardRanges) -> Self {
        self.shard_ranges = Some(ranges);
        self
    }

    /// Asks for `wire` in informers handed out from now on: client-go's
    /// `rest.Config.ContentType` (the binaries' `--kube-api-content-type`). Protobuf
    /// applies to the built-in types that have a decoder; custom resources are JSON
    /// either way.
    pub fn with_wire(mut self, wire: Wire) -> Self {
        self.wire = wire;
        self
    }

    /// Names the informers handed out from now on in the informer metrics
    /// ([`crate::informer_metrics`]): client-go's `InformerName` (the binaries use their
    /// own name). Each (name, resource) gets one set of series: a second informer of
    /// the same resource reports none, as in client-go.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The wire informers ask for (see [`with_wire`](Self::with_wire)).
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The shard ranges given to [`with_shard_ranges`](Self::with_shard_ranges).
    pub fn shard_ranges(&self) -> Option<&ShardRanges> {
        self.shard_ranges.as_ref()
    }

    /// The sharded informers handed out so far.
    pub fn sharded_informers(&self) -> Vec<ShardedInformer> {
        self.shard_filters.lock().clone()
    }

    /// Calls `hook` for each object that an informer created from now on cannot decode
    /// (see [`SharedIndexInformer::on_unreadable`]): a manager writes a Warning Event
    /// on the object there.
    pub fn with_on_unreadable(mut self, hook: UnreadableHook) -> Self {
        self.on_unreadable = Some(hook);
        self
    }

    /// Whether informers created from now on cache objects without
    /// `metadata.managedFields` (see [`ApiListerWatcher::strip_managed_fields`]):
    /// client-go's `WithTransform(cache.TransformStripManagedFields)`. Off by default,
    /// as in client-go; the controller binaries turn it on unless
    /// `--keep-managed-fields` is given.
    pub fn with_strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = strip;
        self
    }

    /// The shared informer for every `K` in the cluster (all namespaces).
    pub fn informer_for<K>(&self) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        self.informer_for_api(Api::all(self.client.clone()), InformerOptions::default())
    }

    /// The shared informer for the objects `api` covers (build it with `Api::all`,
    /// `Api::namespaced`, ...), filtered by `options`. The same (kind, URL, options)
    /// always gets the same informer.
    ///
    /// `K` may be a [`PartialObjectMeta`](kube::core::PartialObjectMeta) of a kind: the
    /// informer is then metadata-only (see
    /// [`metadata_informer_for_api`](Self::metadata_informer_for_api)).
    pub fn informer_for_api<K>(
        &self,
        api: Api<K>,
        options: InformerOptions,
    ) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ()>
            + Clone
            + DeserializeOwned
            + fmt::Debug
            + Send
            + Sync
            + 'static,
    {
        self.shared_informer(api, options, &())
    }

    /// The one informer of `K` for `api` and `options`, made on the first request:
    /// what every `*_informer_for*` method comes down to. `dyntype` is `K`'s dynamic
    /// type (`()` for typed kinds, the [`ApiResource`](kube::core::ApiResource) of a
    /// `DynamicObject`), for the informer's name and metrics labels.
    ///
    /// The key is `K`'s type, the collection URL and the options: a kind's full and
    /// metadata-only informers are two types, so two informers; two dynamic
    /// resources are one type at two URLs, so two informers as well.
    pub(crate) fn shared_informer<K>(
        &self,
        api: Api<K>,
        options: InformerOptions,
        dyntype: &K::DynamicType,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
    {
        let key = InformerKey::of(&api, &options);
        let mut informers = self.informers.lock();
        if let Some(existing) = informers.get(&key)
            && let Some(informer) = existing.as_any().downcast_ref::<SharedIndexInformer<K>>()
        {
            return informer.clone();
        }
        let name = format!(
            "{}{}{}",
            K::kind(dyntype),
            if K::metadata_api() { " metadata" } else { "" },
            describe(&key.url, &options, self.shard_ranges.is_some())
        );
        let mut lister_watcher = ApiListerWatcher::new(api)
            .strip_managed_fields(self.strip_managed_fields)
            .wire(self.wire);
        if let Some(labels) = &options.label_selector {
            lister_watcher = lister_watcher.labels(labels.clone());
        }
        if let Some(fields) = &options.field_selector {
            lister_watcher = lister_watcher.fields(fields.clone());
        }
        let mut sharded = None;
        if let (Some(by), Some(ranges)) = (options.shard, &self.shard_ranges) {
            let filter = ShardFilter::new(ranges.clone(), by);
            lister_watcher = lister_watcher.shard(filter.clone());
            sharded = Some(filter);
        }
        let informer = SharedIndexInformer::new(
            name.clone(),
            Arc::new(lister_watcher),
            self.default_resync_period,
        );
        if let Some(hook) = &self.on_unreadable {
            informer.set_unreadable_hook(hook.clone());
        }
        if let Some(factory_name) = &self.name {
            informer.set_metrics_identity(InformerNameAndResource {
                name: factory_name.clone(),
                group: K::group(dyntype).into_owned(),
                version: K::version(dyntype).into_owned(),
                resource: K::plural(dyntype).into_owned(),
            });
        }
        if let Some(filter) = sharded {
            let indexer = informer.indexer().clone();
            self.shard_filters.lock().push(ShardedInformer {
                name: name.clone(),
                filter,
                cached: Arc::new(move || indexer.len()),
            });
        }
        informers.insert(
            key,
            Arc::new(Entry {
                informer: informer.clone(),
                name,
                stop: Mutex::new(None),
            }),
        );
        informer
    }

    /// The client the informers list and watch through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Starts every informer handed out so far that is not running yet: client-go's
    /// `Start`. Safe to call again after asking for more informers. They run until
    /// `cancel` fires.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn start(&self, cancel: &CancellationToken) {
        let informers: Vec<_> = self.informers.lock().values().cloned().collect();
        for informer in informers {
            informer.start(cancel.clone());
        }
    }

    /// Stops the informer of `K` for `api` and `options` and forgets it: its watch is
    /// closed, its handlers get nothing more (their registrations' `has_synced` turns
    /// false), and the next request for it makes a new one. `false` if the factory had
    /// none. For an informer nobody needs any more, such as a dynamic informer whose
    /// CRD was deleted (controller-runtime's `Cache.RemoveInformer`; client-go's
    /// factory has no such call). Whoever still holds the informer keeps its last cache.
    pub fn remove_informer<K: Resource + 'static>(
        &self,
        api: &Api<K>,
        options: &InformerOptions,
    ) -> bool {
        let removed = self.informers.lock().remove(&InformerKey::of(api, options));
        match removed {
            Some(entry) => {
                tracing::info!(informer = %entry.name(), "informer removed from the factory; stopping it");
                entry.stop();
                true
            }
            None => false,
        }
    }

    /// Waits until every informer handed out so far has synced, or `cancel` fires:
    /// client-go's `WaitForCacheSync`. Returns each informer's name and whether it
    /// synced. Woken by each informer as it syncs (no polling).
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> Vec<(String, bool)> {
        let informers: Vec<_> = self.informers.lock().values().cloned().collect();
        let synced =
            futures::future::join_all(informers.iter().map(|i| i.wait_for_cache_sync(cancel)))
                .await;
        informers.iter().map(|i| i.name()).zip(synced).collect()
    }
}

/// A readable suffix for an informer's name: its scope and filters.
fn describe(url: &str, options: &InformerOptions, sharded: bool) -> String {
    let mut out = String::new();
    if let Some(ns) = url
        .split("/namespaces/")
        .nth(1)
        .and_then(|r| r.split('/').next())
    {
        out.push_str(&format!(" in {ns}"));
    }
    if let Some(l) = &options.label_selector {
        out.push_str(&format!(" labels={l}"));
    }
    if let Some(f) = &options.field_selector {
        out.push_str(&format!(" fields={f}"));
    }
    match options.shard.filter(|_| sharded) {
        Some(ShardBy::ControllerUid) => out.push_str(" sharded by owner"),
        Some(ShardBy::Field(path)) => out.push_str(&format!(" sharded by {}", path.as_str())),
        None => {}
    }
    out
}
