//! A reflector over a recorded scripted source, feeding a queue that [`Harness::drain`]
//! applies to an indexer (client-go's tests hand the reflector a `Store`).

// Test code: an unwrap is an assertion.
#![allow(clippy::unwrap_used)]
#![allow(dead_code)] // each test module uses its own subset

use std::sync::Arc;
use std::time::Duration;

use cache::testing::ScriptedListerWatcher;
use cache::{
    Delta, DeltaFifo, Indexer, InformerQueue, ListOptions, ListPage, ListerWatcher, RealFifo,
    Reflector, TransformFunc, WatchOptions, WatchStream,
};
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One call the reflector made to its source.
#[derive(Debug, Clone)]
pub enum Call {
    /// A page of a list.
    List(ListOptions),
    /// A watch, or a streaming list (`send_initial_events`).
    Watch(WatchOptions),
}

impl Call {
    /// A short description, compared in the tests: `list rv="" limit=500`,
    /// `list rv="" limit=4 continue=C1`, `watch rv="1"`, `watchlist rv=""`.
    pub fn summary(&self) -> String {
        match self {
            Self::List(o) => {
                let cont = o
                    .continue_token
                    .as_deref()
                    .map(|c| format!(" continue={c}"))
                    .unwrap_or_default();
                format!("list rv={:?} limit={}{cont}", o.resource_version, o.limit)
            }
            Self::Watch(o) => {
                let kind = if o.send_initial_events {
                    "watchlist"
                } else {
                    "watch"
                };
                let bookmarks = if o.allow_bookmarks {
                    ""
                } else {
                    " no-bookmarks"
                };
                format!("{kind} rv={:?}{bookmarks}", o.resource_version)
            }
        }
    }
}

type Hook = Box<dyn FnMut(&Call) + Send>;

/// A [`ScriptedListerWatcher`] that logs every call in order with the (virtual) time
/// it came at, and can run a hook on each call (client-go's tests cancel the context
/// from their `WatchFunc`).
pub struct Recorded {
    /// The script.
    pub script: ScriptedListerWatcher<ConfigMap>,
    calls: Mutex<Vec<(Duration, Call)>>,
    start: Instant,
    hook: Mutex<Option<Hook>>,
}

impl Recorded {
    pub fn new() -> Self {
        Self {
            script: ScriptedListerWatcher::new(),
            calls: Mutex::new(Vec::new()),
            start: Instant::now(),
            hook: Mutex::new(None),
        }
    }

    /// Runs `hook` on every later call, before it is answered.
    pub fn on_call(&self, hook: impl FnMut(&Call) + Send + 'static) {
        *self.hook.lock() = Some(Box::new(hook));
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().iter().map(|(_, c)| c.clone()).collect()
    }

    /// Every call so far, as [`Call::summary`].
    pub fn summaries(&self) -> Vec<String> {
        self.calls.lock().iter().map(|(_, c)| c.summary()).collect()
    }

    /// When each call came, since this source was made.
    pub fn times(&self) -> Vec<Duration> {
        self.calls.lock().iter().map(|(t, _)| *t).collect()
    }

    fn record(&self, call: Call) {
        if let Some(hook) = self.hook.lock().as_mut() {
            hook(&call);
        }
        self.calls.lock().push((self.start.elapsed(), call));
    }
}

impl ListerWatcher<ConfigMap> for Recorded {
    fn list(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<ConfigMap>, kube::Error>> {
        self.record(Call::List(options.clone()));
        self.script.list(options).boxed()
    }

    fn watch(
        &self,
        options: &WatchOptions,
    ) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.record(Call::Watch(options.clone()));
        self.script.watch(options).boxed()
    }
}

/// Which queue the reflector feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// [`RealFifo`]: every event an entry.
    Real,
    /// [`DeltaFifo`]: deltas grouped per key, like client-go's `FIFO`/`DeltaFIFO`.
    Delta,
    /// [`RealFifo::new_atomic`]: a relist is one entry, bookmarks are queued (the
    /// informers' default). Its relists carry no tombstones: [`Harness::drain`] keeps
    /// what a relist left out.
    Atomic,
}

/// A reflector, its source, its queue and the indexer the queue is applied to.
pub struct Harness {
    pub lw: Arc<Recorded>,
    pub indexer: Indexer<ConfigMap>,
    pub queue: Arc<InformerQueue<ConfigMap>>,
    pub reflector: Arc<Reflector<ConfigMap>>,
}

impl Harness {
    /// A reflector over `lw` feeding a RealFIFO, configured by `configure`.
    pub fn new(
        lw: Recorded,
        configure: impl FnOnce(Reflector<ConfigMap>) -> Reflector<ConfigMap>,
    ) -> Self {
        Self::with_queue(lw, Queue::Real, None, configure)
    }

    /// A reflector over `lw` feeding `queue` (with `transform`), configured by
    /// `configure`.
    pub fn with_queue(
        lw: Recorded,
        queue: Queue,
        transform: Option<TransformFunc<ConfigMap>>,
        configure: impl FnOnce(Reflector<ConfigMap>) -> Reflector<ConfigMap>,
    ) -> Self {
        let lw = Arc::new(lw);
        let indexer = Indexer::new();
        let known = Arc::new(indexer.clone());
        let queue: Arc<InformerQueue<ConfigMap>> = Arc::new(match queue {
            Queue::Real => RealFifo::new(known, transform).into(),
            Queue::Delta => DeltaFifo::new(Some(known), transform).into(),
            Queue::Atomic => RealFifo::new_atomic(transform).into(),
        });
        let reflector = Arc::new(configure(Reflector::new(
            "test-reflector",
            lw.clone(),
            queue.clone(),
        )));
        Self {
            lw,
            indexer,
            queue,
            reflector,
        }
    }

    /// Another reflector on the same queue and source (client-go's tests make a new
    /// `Reflector` per table row over one store).
    pub fn new_reflector(
        &mut self,
        lw: Recorded,
        configure: impl FnOnce(Reflector<ConfigMap>) -> Reflector<ConfigMap>,
    ) {
        self.lw = Arc::new(lw);
        self.reflector = Arc::new(configure(Reflector::new(
            "test-reflector",
            self.lw.clone(),
            self.queue.clone(),
        )));
    }

    /// Starts the reflector in the background.
    pub fn spawn(&self) -> Running {
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (reflector, cancel) = (self.reflector.clone(), cancel.clone());
            async move { reflector.run(cancel).await }
        });
        Running { cancel, task }
    }

    /// Runs the reflector until the first call `stop_at` picks, then cancels it and
    /// waits for `run` to return (client-go's "stop once the reflector begins
    /// watching", a `cancel` in a `WatchFunc`).
    pub async fn run_until(&self, stop_at: impl FnMut(&Call) -> bool + Send + 'static) {
        self.run_until_after(stop_at, Duration::ZERO).await;
    }

    /// As [`Self::run_until`], cancelling `delay` after that call.
    pub async fn run_until_after(
        &self,
        mut stop_at: impl FnMut(&Call) -> bool + Send + 'static,
        delay: Duration,
    ) {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        self.lw.on_call(move |call| {
            if stop_at(call) {
                let stop = stop.clone();
                if delay.is_zero() {
                    stop.cancel();
                } else {
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        stop.cancel();
                    });
                }
            }
        });
        tokio::time::timeout(Duration::from_secs(3600), self.reflector.run(cancel))
            .await
            .expect("the reflector stops once cancelled");
    }

    /// Runs the reflector until its `n`th call that `pick` picks (1-based).
    pub async fn run_until_nth(
        &self,
        n: usize,
        mut pick: impl FnMut(&Call) -> bool + Send + 'static,
    ) {
        let mut seen = 0;
        self.run_until(move |call| {
            if pick(call) {
                seen += 1;
            }
            seen == n
        })
        .await;
    }

    /// Runs the reflector until it starts a plain watch.
    pub async fn run_until_watch(&self) {
        self.run_until(is_watch).await;
    }

    /// Applies everything queued to the indexer, as an informer would.
    pub async fn drain(&self) -> Vec<String> {
        let mut popped = Vec::new();
        while !self.queue.is_empty() {
            let indexer = self.indexer.clone();
            let applied = self
                .queue
                .pop(move |key, deltas, _initial| apply(&indexer, key, deltas))
                .await;
            popped.extend(applied.into_iter().flatten());
        }
        popped
    }

    /// The indexer's contents as `name rv`, sorted by name.
    pub fn store(&self) -> Vec<String> {
        let mut objects: Vec<String> = self.indexer.list().iter().map(|o| describe(o)).collect();
        objects.sort();
        objects
    }
}

/// `name rv` of an object.
pub fn describe(obj: &ConfigMap) -> String {
    format!(
        "{} {}",
        obj.metadata.name.as_deref().unwrap_or("?"),
        obj.metadata.resource_version.as_deref().unwrap_or("?")
    )
}

/// Applies one popped entry to `indexer`; describes each delta (`Replaced foo 1`,
/// `Bookmark 10`).
fn apply(
    indexer: &Indexer<ConfigMap>,
    key: &Arc<str>,
    deltas: Vec<Delta<ConfigMap>>,
) -> Vec<String> {
    let mut seen = Vec::new();
    for delta in deltas {
        let kind = delta.delta_type();
        match &delta {
            // Keyed by the object: an atomic FIFO's relist pops under an empty key.
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                seen.push(format!("{kind:?} {}", describe(o)));
                indexer.update(cache::meta_namespace_key(o.as_ref()).unwrap(), o.clone());
            }
            Delta::Deleted(d) => {
                let what = d.object().map_or_else(|| key.to_string(), |o| describe(o));
                seen.push(format!("{kind:?} {what}"));
                let key = match d {
                    cache::DeletedObject::Object(o) => {
                        cache::meta_namespace_key(o.as_ref()).unwrap()
                    }
                    cache::DeletedObject::Tombstone(t) => t.key.clone(),
                };
                indexer.delete(&key);
            }
            Delta::Bookmark(rv) => {
                seen.push(format!("Bookmark {rv}"));
                indexer.bookmark(rv.clone());
            }
        }
    }
    seen
}

/// Whether `call` is a plain watch (not a streaming list).
pub fn is_watch(call: &Call) -> bool {
    matches!(call, Call::Watch(o) if !o.send_initial_events)
}

/// A reflector running in the background.
pub struct Running {
    pub cancel: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Cancels the reflector and waits for `run` to return.
    pub async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(3600), self.task)
            .await
            .expect("the reflector stops once cancelled")
            .unwrap();
    }
}

/// The ConfigMap `default/<name>` at `rv`.
pub fn cm(name: &str, rv: &str) -> ConfigMap {
    cache::testing::config_map(name, rv)
}

/// `count` ConfigMaps `pod-<i>` at rv `<i>` (client-go's tests list pods).
pub fn numbered(count: usize) -> Vec<ConfigMap> {
    (0..count)
        .map(|i| cm(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

/// A list page.
pub fn page(items: Vec<ConfigMap>, rv: &str, continue_token: Option<&str>) -> ListPage<ConfigMap> {
    ListPage {
        items,
        resource_version: rv.to_string(),
        continue_token: continue_token.map(str::to_string),
        unreadable: Vec::new(),
    }
}

/// A refused connection, as the client reports it (client-go's `syscall.ECONNREFUSED`).
pub fn connection_refused() -> kube::Error {
    kube::Error::Service(Box::new(std::io::Error::from(
        std::io::ErrorKind::ConnectionRefused,
    )))
}

/// `429 TooManyRequests` (client-go's `apierrors.NewTooManyRequests`).
pub fn too_many_requests() -> kube::Error {
    cache::testing::api_error(429, "TooManyRequests", "too many requests")
}

/// A watch `ERROR` event carrying a `Status` with `code` and `reason`.
pub fn error_event(code: u16, reason: &str, message: &str) -> WatchEvent<ConfigMap> {
    match cache::testing::api_error(code, reason, message) {
        kube::Error::Api(status) => WatchEvent::Error(status),
        other => panic!("api_error made {other:?}"),
    }
}

/// A plain (non-API) error, as client-go's tests make with `fmt.Errorf`.
pub fn plain_error(message: &str) -> kube::Error {
    kube::Error::Service(Box::new(std::io::Error::other(message.to_string())))
}
