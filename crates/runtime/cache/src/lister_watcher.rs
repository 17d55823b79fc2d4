//! The list/watch source of a reflector: client-go's `ListerWatcher`
//! (tools/cache/listwatch.go).
//!
//! The reflector needs exactly two calls from the API server: *list* (a page of
//! objects and the resourceVersion the list was taken at) and *watch* (a stream of
//! changes after a resourceVersion). Putting them behind a trait lets unit tests script
//! both (see `tests/informer.rs`), while [`ApiListerWatcher`] makes the real calls
//! with a [`kube::Client`]: lists through the [`pager`], which asks for the next page
//! before decoding the current one, and watches through [`watch_stream`], which
//! decodes the event lines where they arrived. Both can leave `managedFields` out of
//! what they decode ([`ApiListerWatcher::strip_managed_fields`]). Built-in types are
//! asked for as protobuf, as client-go's informers do ([`protobuf`], [`Wire`]). Over
//! [`PartialObjectMeta<K>`](kube::core::PartialObjectMeta) the same lister-watcher is
//! client-go's metadata-only one: the server sends each object's `metadata` alone
//! ([`metadata`]).

use std::fmt;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use kube::api::{Api, ListParams, VersionMatch, WatchEvent, WatchParams};
use kube::core::Request;
use serde::de::DeserializeOwned;

pub mod json_scan;
pub mod metadata;
pub mod pager;
pub mod protobuf;
pub mod sharded;
pub mod watch_stream;
pub mod wire;
use metadata::Verb;
use pager::Pager;
use sharded::{SHARD_SELECTOR_PARAM, ShardState};
use wire::Answered;
pub use wire::Wire;

use crate::shard::ShardFilter;
use crate::unreadable::Unreadable;

/// The default page size of a list, as client-go's pager uses.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// What to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `""` = most recent (a consistent read from etcd); `"0"` = any version (served
    /// from the API server's watch cache); anything else = not older than that.
    pub resource_version: String,
    /// Page size; 0 = no paging.
    pub limit: u32,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListPage<K> {
    /// The objects on this page.
    pub items: Vec<K>,
    /// The resourceVersion of the list (the same on every page).
    pub resource_version: String,
    /// The token for the next page; `None` on the last page.
    pub continue_token: Option<String>,
    /// The objects on this page that `K` cannot hold: left out of `items` and
    /// reported ([`crate::unreadable`]).
    pub unreadable: Vec<Unreadable>,
}

impl<K> ListPage<K> {
    /// A page of `items` at `resource_version`; `continue_token` for the next one.
    pub fn new(
        items: Vec<K>,
        resource_version: impl Into<String>,
        continue_token: Option<String>,
    ) -> Self {
        Self {
            items,
            resource_version: resource_version.into(),
            continue_token,
            unreadable: Vec::new(),
        }
    }
}

/// What to watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    /// Deliver changes after this resourceVersion.
    pub resource_version: String,
    /// The server ends the watch after this many seconds.
    pub timeout_seconds: u32,
    /// Ask for BOOKMARK events, which advance the resourceVersion without a change,
    /// so a re-watch after a quiet period does not start from a compacted version.
    pub allow_bookmarks: bool,
    /// A *streaming list* (`sendInitialEvents=true`, KEP-3157, on by default in
    /// Kubernetes 1.34 servers): first an `ADDED` event for every existing object, then
    /// a bookmark annotated `k8s.io/initial-events-end`, then ordinary watch events.
    /// Needs `allow_bookmarks`; `resource_version` is then a lower bound ("" = now).
    pub send_initial_events: bool,
}

/// A stream of watch events.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube::Error>>;

/// Lists and watches one kind of object: client-go's `ListerWatcher`.
pub trait ListerWatcher<K>: Send + Sync {
    /// Lists one page.
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>>;
    /// Starts a watch.
    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>>;
    /// A signal that changes when what this lister-watcher selects changes (a sharded
    /// informer's ranges, [`crate::shard`]); the reflector then relists. `None` (the
    /// default): the selection never changes.
    fn relist_signal(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }

    /// The wire format of the API server's latest answer (see [`wire`]), shown on the
    /// pipeline page; `None` before the first answer, or when there is no server (the
    /// default).
    fn answered_wire(&self) -> Option<Wire> {
        None
    }
}

/// A [`ListerWatcher`] over a [`kube::Api`], with optional label and field selectors:
/// client-go's `NewFilteredListWatchFromClient`.
pub struct ApiListerWatcher<K> {
    api: Api<K>,
    /// Lists with one page of read-ahead (see [`pager`]).
    pager: Pager,
    label_selector: Option<String>,
    field_selector: Option<String>,
    strip_managed_fields: bool,
    /// Protobuf or JSON (see [`Self::wire`]).
    wire: Wire,
    /// What the server answered in.
    answered: Answered,
    /// Only the objects of a shard (see [`Self::shard`]).
    shard: Option<ShardState>,
}

impl<K> fmt::Debug for ApiListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiListerWatcher")
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("strip_managed_fields", &self.strip_managed_fields)
            .field("wire", &self.wire)
            .field("shard", &self.shard.as_ref().map(|s| &s.filter))
            .finish_non_exhaustive()
    }
}

impl<K: kube::Resource + Clone> ApiListerWatcher<K> {
    /// Lists and watches everything `api` can see, on the process's wire
    /// ([`Wire::process_default`]: protobuf unless the process or `KUBE_API_CONTENT_TYPE` says JSON).
    pub fn new(api: Api<K>) -> Self {
        Self {
            pager: Pager::new(api.clone().into_client(), api.resource_url()),
            api,
            label_selector: None,
            field_selector: None,
            strip_managed_fields: false,
            wire: Wire::process_default(),
            answered: Answered::default(),
            shard: None,
        }
    }

    /// Protobuf (the default, for the types that have a decoder) or JSON: client-go's
    /// `rest.Config.ContentType`. Whatever is asked, the answer's `Content-Type`
    /// decides how it is read.
    pub fn wire(mut self, wire: Wire) -> Self {
        self.wire = wire;
        self
    }

    /// Only the objects whose hash is in the ranges of `filter` (a sharded
    /// controller's slice, [`crate::shard`]): the `shardSelector` parameter on every
    /// list and watch (when the rule is one the server can filter), and the same
    /// filter on the client. Lists wait until ranges are assigned; a change of ranges
    /// makes the reflector relist.
    pub fn shard(mut self, filter: ShardFilter) -> Self {
        self.shard = Some(ShardState::new(filter, self.api.resource_url()));
        self
    }

    /// Decodes every object without `metadata.managedFields`: client-go's
    /// `TransformStripManagedFields`, which controller-runtime recommends for caches,
    /// applied to the raw JSON *before* decoding rather than to decoded objects.
    ///
    /// Server-side apply's field ownership is rarely read from a cache, yet it is
    /// about half of a typical object's decoded size (a `serde_json::Value` tree per
    /// entry) and a large share of its decoding time; cutting it out of the bytes
    /// saves both, where a transform after decoding saves only the memory.
    /// Objects that could not be cut (an unusual layout) lose the field after
    /// decoding instead, so the result is the same either way.
    pub fn strip_managed_fields(mut self, strip: bool) -> Self {
        self.strip_managed_fields = strip;
        self
    }

    /// Only objects matching a label selector (server-side filtering).
    pub fn labels(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into()).filter(|s| !s.is_empty());
        self
    }

    /// Only objects matching a field selector (server-side filtering).
    pub fn fields(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into()).filter(|s| !s.is_empty());
        self
    }
}

impl<K> ListerWatcher<K> for ApiListerWatcher<K>
where
    K: kube::Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        let mut params = ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            limit: (options.limit > 0).then_some(options.limit),
            continue_token: options.continue_token.clone(),
            ..ListParams::default()
        };
        if !options.resource_version.is_empty() {
            params.resource_version = Some(options.resource_version.clone());
            // A continued list must not carry a version match (the token has it).
            if options.continue_token.is_none() {
                params.version_match = Some(VersionMatch::NotOlderThan);
            }
        }
        let first_page = options.continue_token.is_none();
        async move {
            let shard = match &self.shard {
                Some(state) => {
                    let (generation, ranges) = state.filter.ranges.assigned().await;
                    if first_page {
                        state.list_started();
                    }
                    Some((state, generation, ranges))
                }
                None => None,
            };
            let selector = shard.as_ref().and_then(|(s, _, r)| s.filter.selector(r));
            // With strip_managed_fields, the pager leaves them out of every item.
            let (list, unreadable, answered) = self
                .pager
                .list::<K>(
                    &params,
                    self.strip_managed_fields,
                    selector.as_deref(),
                    self.wire.decoder::<K>(),
                )
                .await?;
            self.answered
                .record(self.api.resource_url(), self.wire, answered);
            let (items, unreadable) = match &shard {
                Some((state, generation, ranges)) => {
                    if selector.is_some() && list.metadata.shard_info.is_some() {
                        state.shard_info_seen();
                    }
                    if list
                        .metadata
                        .continue_
                        .as_deref()
                        .unwrap_or_default()
                        .is_empty()
                    {
                        state.filter.mark_listed(*generation);
                    }
                    let unreadable = unreadable
                        .into_iter()
                        .filter(|u| state.filter.matches(ranges, &u.as_partial::<K>()))
                        .collect();
                    (state.filter_page(ranges, list.items), unreadable)
                }
                None => (list.items, unreadable),
            };
            Ok(ListPage {
                items,
                resource_version: list.metadata.resource_version.unwrap_or_default(),
                continue_token: list.metadata.continue_.filter(|c| !c.is_empty()),
                unreadable,
            })
        }
        .boxed()
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        let params = WatchParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            timeout: Some(options.timeout_seconds),
            bookmarks: options.allow_bookmarks,
            send_initial_events: options.send_initial_events,
        };
        let request = Request::new(self.api.resource_url())
            .watch(&params, &options.resource_version)
            .map_err(kube::Error::BuildRequest);
        let strip = self.strip_managed_fields;
        let client = self.api.clone().into_client();
        let initial = options.send_initial_events;
        let protobuf = self.wire.decoder::<K>();
        let accept = metadata::accept::<K>(Verb::Watch, protobuf.is_some());
        async move {
            let mut request = request?;
            let shard = match &self.shard {
                Some(state) => {
                    let (generation, ranges) = state.filter.ranges.assigned().await;
                    let selector = state.filter.selector(&ranges);
                    if initial {
                        // A streaming list: the list starts over, and its events say
                        // nothing about the server's filtering, so a one-item LIST asks.
                        state.list_started();
                        if let Some(selector) = &selector
                            && self.probe_server_filtering(selector).await?
                        {
                            state.shard_info_seen();
                        }
                    }
                    if let Some(selector) = &selector {
                        sharded::append_query(&mut request, SHARD_SELECTOR_PARAM, selector);
                    }
                    Some((state, initial.then_some(generation), ranges))
                }
                None => None,
            };
            request.extensions_mut().insert("watch");
            // One event per line (or frame), uncompressed (as kube asks for watches).
            request.headers_mut().insert(
                http::header::ACCEPT_ENCODING,
                http::HeaderValue::from_static("identity"),
            );
            // Protobuf for built-in types, PartialObjectMetadata for a metadata-only
            // informer ([`metadata`]), else kube's JSON.
            metadata::set_accept(&mut request, accept);
            let response = client.send(request.map(kube::client::Body::from)).await?;
            let answered = Wire::of_response(response.headers());
            let body = pager::check_status(response).await?;
            self.answered
                .record(self.api.resource_url(), self.wire, answered);
            let events = match protobuf.filter(|_| answered == Wire::Protobuf) {
                Some(decode) => protobuf::events::<K, _>(body, decode, strip),
                None => watch_stream::events::<K, _>(body, strip),
            };
            Ok(match shard {
                Some((state, initial, ranges)) => state.filter_stream(ranges, initial, events),
                None => events,
            })
        }
        .boxed()
    }

    fn relist_signal(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.shard.as_ref().map(|s| s.filter.ranges.subscribe())
    }

    fn answered_wire(&self) -> Option<Wire> {
        self.answered.get()
    }
}

impl<K: kube::Resource + Clone> ApiListerWatcher<K> {
    /// A one-item LIST with `selector`: whether the answer carries
    /// `metadata.shardInfo`, i.e. whether the server filtered (KEP-5866; a server
    /// without the feature ignores the parameter and answers without it, and so do
    /// 1.37's answers for custom resources: see [`sharded`] for how the objects
    /// decide then).
    async fn probe_server_filtering(&self, selector: &str) -> Result<bool, kube::Error> {
        let params = ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            limit: Some(1),
            ..ListParams::default()
        };
        let mut request = Request::new(self.api.resource_url())
            .list(&params)
            .map_err(kube::Error::BuildRequest)?;
        sharded::append_query(&mut request, SHARD_SELECTOR_PARAM, selector);
        // A metadata-only informer probes for metadata too; JSON otherwise.
        metadata::set_accept(&mut request, metadata::accept::<K>(Verb::List, false));
        request.extensions_mut().insert("list");
        let client = self.api.clone().into_client();
        let answer: serde_json::Value = client.request(request).await?;
        Ok(answer
            .pointer("/metadata/shardInfo")
            .is_some_and(|info| !info.is_null()))
    }
}
