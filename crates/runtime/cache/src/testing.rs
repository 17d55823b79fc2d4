//! A scripted [`ListerWatcher`] for unit tests: every list and watch answer is queued
//! up front (or pushed live through a channel), and every call is recorded. Unit
//! tests of reflectors, informers and controllers use it instead of an API server;
//! the e2e tests use a real one.
//!
//! **Requires the `testing` feature.** A test double is not part of the production API:
//! this module is compiled for the crate's own unit tests and, elsewhere, only with the
//! `testing` cargo feature, which the tests that use it enable under
//! `[dev-dependencies]`: `cache = { workspace = true, features = ["testing"] }`.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use cache::testing::ScriptedListerWatcher;
//! use cache::{ListOptions, ListPage, ListerWatcher};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let lw = ScriptedListerWatcher::<ConfigMap>::new();
//! lw.push_list(Ok(ListPage::new(vec![], "7", None)));
//! let page = lw.list(&ListOptions::default()).await.unwrap();
//! assert_eq!(page.resource_version, "7");
//! assert_eq!(lw.list_calls().len(), 1);
//! # }
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, WatchEvent};
use kube::core::watch::{Bookmark, BookmarkMeta};
use kube::core::{Status, TypeMeta};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_stream_shim::UnboundedReceiverStream;

use crate::lister_watcher::{ListOptions, ListPage, ListerWatcher, WatchOptions, WatchStream};
use crate::reflector::INITIAL_EVENTS_END;

/// One scripted answer to a watch call.
enum WatchAnswer<K> {
    Fail(kube::Error),
    Stream(WatchStream<K>),
}

/// A [`ListerWatcher`] that answers from a script. See the [module docs](self).
///
/// When the list script runs out, `list` fails with a 500; when the watch script runs
/// out, `watch` returns a stream that never ends (a quiet, healthy watch).
///
/// Streaming lists (watches with `send_initial_events`) have a script and a call log
/// of their own ([`push_watch_list`](Self::push_watch_list),
/// [`watch_list_calls`](Self::watch_list_calls)). When that script is empty the answer
/// is a `422 Invalid`, as from a server without the WatchList feature, so a reflector
/// falls back to paged lists and the plain list/watch scripts apply unchanged.
pub struct ScriptedListerWatcher<K> {
    lists: Mutex<VecDeque<Result<ListPage<K>, kube::Error>>>,
    watches: Mutex<VecDeque<WatchAnswer<K>>>,
    watch_lists: Mutex<VecDeque<WatchAnswer<K>>>,
    list_calls: Mutex<Vec<ListOptions>>,
    watch_calls: Mutex<Vec<WatchOptions>>,
    watch_list_calls: Mutex<Vec<WatchOptions>>,
}

impl<K> fmt::Debug for ScriptedListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedListerWatcher")
            .field("lists_left", &self.lists.lock().len())
            .field("watches_left", &self.watches.lock().len())
            .finish_non_exhaustive()
    }
}

impl<K> Default for ScriptedListerWatcher<K> {
    fn default() -> Self {
        Self {
            lists: Mutex::new(VecDeque::new()),
            watches: Mutex::new(VecDeque::new()),
            watch_lists: Mutex::new(VecDeque::new()),
            list_calls: Mutex::new(Vec::new()),
            watch_calls: Mutex::new(Vec::new()),
            watch_list_calls: Mutex::new(Vec::new()),
        }
    }
}

impl<K: Send + 'static> ScriptedListerWatcher<K> {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues the answer to the next `list` call.
    pub fn push_list(&self, page: Result<ListPage<K>, kube::Error>) {
        self.lists.lock().push_back(page);
    }

    /// Queues a single-page list answer.
    pub fn push_list_items(&self, items: Vec<K>, resource_version: &str) {
        self.push_list(Ok(ListPage {
            items,
            resource_version: resource_version.to_string(),
            continue_token: None,
            unreadable: Vec::new(),
        }));
    }

    /// Queues a watch that delivers `events`, then closes (`close`) or stays open.
    pub fn push_watch(&self, events: Vec<Result<WatchEvent<K>, kube::Error>>, close: bool) {
        self.watches
            .lock()
            .push_back(WatchAnswer::Stream(scripted_stream(events, close)));
    }

    /// Queues a watch call that fails to start with `err`.
    pub fn push_watch_error(&self, err: kube::Error) {
        self.watches.lock().push_back(WatchAnswer::Fail(err));
    }

    /// Queues a watch fed live through the returned sender; dropping the sender closes
    /// the watch.
    pub fn push_watch_channel(&self) -> mpsc::UnboundedSender<Result<WatchEvent<K>, kube::Error>> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.watches.lock().push_back(WatchAnswer::Stream(
            UnboundedReceiverStream::new(rx).boxed(),
        ));
        tx
    }

    /// Queues the answer to the next streaming list (a watch with
    /// `send_initial_events`): `events`, then closed (`close`) or open.
    pub fn push_watch_list(&self, events: Vec<Result<WatchEvent<K>, kube::Error>>, close: bool) {
        self.watch_lists
            .lock()
            .push_back(WatchAnswer::Stream(scripted_stream(events, close)));
    }

    /// Queues a streaming list that fails to start with `err`.
    pub fn push_watch_list_error(&self, err: kube::Error) {
        self.watch_lists.lock().push_back(WatchAnswer::Fail(err));
    }

    /// Every streaming-list call so far.
    pub fn watch_list_calls(&self) -> Vec<WatchOptions> {
        self.watch_list_calls.lock().clone()
    }

    /// Every `list` call so far.
    pub fn list_calls(&self) -> Vec<ListOptions> {
        self.list_calls.lock().clone()
    }

    /// Every `watch` call so far.
    pub fn watch_calls(&self) -> Vec<WatchOptions> {
        self.watch_calls.lock().clone()
    }
}

impl<K: Send + Sync + 'static> ListerWatcher<K> for ScriptedListerWatcher<K> {
    fn list(&self, options: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        self.list_calls.lock().push(options.clone());
        let answer = self
            .lists
            .lock()
            .pop_front()
            .unwrap_or_else(|| Err(api_error(500, "InternalError", "no scripted list left")));
        futures::future::ready(answer).boxed()
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        let (calls, script) = if options.send_initial_events {
            (&self.watch_list_calls, &self.watch_lists)
        } else {
            (&self.watch_calls, &self.watches)
        };
        calls.lock().push(options.clone());
        let answer = match script.lock().pop_front() {
            Some(WatchAnswer::Fail(e)) => Err(e),
            Some(WatchAnswer::Stream(s)) => Ok(s),
            None if options.send_initial_events => Err(api_error(
                422,
                "Invalid",
                "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            )),
            None => Ok(futures::stream::pending().boxed()),
        };
        futures::future::ready(answer).boxed()
    }
}

/// `events` as a watch stream that then ends (`close`) or stays open for ever.
fn scripted_stream<K: Send + 'static>(
    events: Vec<Result<WatchEvent<K>, kube::Error>>,
    close: bool,
) -> WatchStream<K> {
    let events = futures::stream::iter(events);
    if close {
        events.boxed()
    } else {
        events.chain(futures::stream::pending()).boxed()
    }
}

/// An API error with an HTTP code and reason, as the server sends it.
pub fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
}

/// The ConfigMap `default/<name>` at resourceVersion `rv`: the object unit tests of
/// caches and informers pass around.
pub fn config_map(name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A plain bookmark at `rv`.
pub fn bookmark<K>(rv: &str) -> WatchEvent<K> {
    bookmark_with(rv, BTreeMap::new())
}

/// The bookmark that ends the initial events of a streaming list, at `rv`.
pub fn initial_events_end<K>(rv: &str) -> WatchEvent<K> {
    bookmark_with(
        rv,
        [(INITIAL_EVENTS_END.to_string(), "true".to_string())].into(),
    )
}

fn bookmark_with<K>(rv: &str, annotations: BTreeMap<String, String>) -> WatchEvent<K> {
    WatchEvent::Bookmark(Bookmark {
        types: TypeMeta::default(),
        metadata: BookmarkMeta {
            resource_version: rv.to_string(),
            annotations,
        },
    })
}

/// The `410 Gone` (`Expired`) a server answers for a compacted resourceVersion.
pub fn gone() -> kube::Error {
    api_error(410, "Expired", "too old resource version")
}

/// A tiny adapter from an unbounded receiver to a `Stream` (saves a dependency on
/// tokio-stream).
mod tokio_stream_shim {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::sync::mpsc::UnboundedReceiver;

    pub(super) struct UnboundedReceiverStream<T>(UnboundedReceiver<T>);

    impl<T> UnboundedReceiverStream<T> {
        pub(super) fn new(rx: UnboundedReceiver<T>) -> Self {
            Self(rx)
        }
    }

    impl<T> futures::Stream for UnboundedReceiverStream<T> {
        type Item = T;
        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
            self.0.poll_recv(cx)
        }
    }
}
