//! Helpers shared by the informer test suites: a recording handler, waits in virtual
//! and in real time, and a running informer over a scripted source.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]
#![allow(dead_code)] // each test binary uses its own subset

pub mod fake_source;

use std::sync::Arc;
use std::time::Duration;

use cache::testing::ScriptedListerWatcher;
use cache::{DeletedObject, EventHandler, QueueKind, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// What a handler saw, as short strings: "add a 1 initial", "update a 1->2",
/// "delete default/a tombstone", and with [`Recorder::with_bookmarks`] "bookmark 10".
#[derive(Clone, Default)]
pub struct Recorder {
    events: Arc<Mutex<Vec<String>>>,
    bookmarks: bool,
}

impl Recorder {
    /// A recorder that also records bookmarks.
    pub fn with_bookmarks() -> Self {
        Self {
            bookmarks: true,
            ..Self::default()
        }
    }
    pub fn events(&self) -> Vec<String> {
        self.events.lock().clone()
    }
}

fn describe(obj: &ConfigMap) -> String {
    format!(
        "{} {}",
        obj.metadata.name.as_deref().unwrap_or("?"),
        obj.metadata.resource_version.as_deref().unwrap_or("?")
    )
}

impl EventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        let tag = if initial { " initial" } else { "" };
        self.events
            .lock()
            .push(format!("add {}{tag}", describe(obj)));
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let old_rv = old.metadata.resource_version.as_deref().unwrap_or("?");
        let name = new.metadata.name.as_deref().unwrap_or("?");
        let new_rv = new.metadata.resource_version.as_deref().unwrap_or("?");
        self.events
            .lock()
            .push(format!("update {name} {old_rv}->{new_rv}"));
    }
    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let what = match obj {
            DeletedObject::Object(o) => describe(o),
            DeletedObject::Tombstone(t) => format!("{} tombstone", t.key),
        };
        self.events.lock().push(format!("delete {what}"));
    }
    fn on_bookmark(&self, resource_version: &str) {
        if self.bookmarks {
            self.events
                .lock()
                .push(format!("bookmark {resource_version}"));
        }
    }
}

/// Waits for `cond` on informer state (driven by Tokio tasks): polls in *virtual*
/// time, which auto-advances, so backoffs and resync periods pass instantly.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Waits for `cond` on what handlers saw. Handlers run on threads of their own, which
/// paused Tokio time knows nothing about, so this waits in *real* time (a blocking
/// sleep on the blocking pool, during which Tokio does not auto-advance the clock).
pub async fn delivered(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..5000 {
        if cond() {
            return;
        }
        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(2)))
            .await
            .unwrap();
    }
    panic!("timed out waiting for handlers: {what}");
}

/// The environment variable that picks the informers' queue in these suites: `delta`
/// for the DeltaFIFO, `real` for the plain RealFIFO, `atomic` (or unset) for the
/// RealFIFO with atomic events, the default. hack/test.sh runs the informer suites
/// once with each.
pub const QUEUE_ENV: &str = "CACHE_TEST_QUEUE";

/// The queue these suites run on (see [`QUEUE_ENV`]). An unknown value fails loudly
/// rather than silently testing the default.
pub fn queue_kind() -> QueueKind {
    match std::env::var(QUEUE_ENV).as_deref() {
        Ok("delta") => QueueKind::DeltaFifo,
        Ok("real") => QueueKind::RealFifo,
        Ok("atomic") | Ok("") | Err(_) => QueueKind::AtomicFifo,
        Ok(other) => panic!("{QUEUE_ENV}={other}: expected delta, real or atomic"),
    }
}

/// Whether the queue of these suites gives the store a resourceVersion and the
/// handlers bookmarks (the atomic RealFIFO only; see `QueueKind::tracks_store_version`).
pub fn tracks_store_version() -> bool {
    queue_kind().tracks_store_version()
}

/// `SharedIndexInformer::new`, on the queue of [`queue_kind`].
pub fn new_informer<K>(
    name: &str,
    lw: Arc<dyn cache::ListerWatcher<K>>,
    resync: Duration,
) -> SharedIndexInformer<K>
where
    K: kube::Resource + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    let informer = SharedIndexInformer::new(name, lw, resync);
    informer.set_queue_kind(queue_kind());
    informer
}

/// An informer running over a scripted source until `stop`.
pub struct Running {
    pub informer: SharedIndexInformer<ConfigMap>,
    pub lw: Arc<ScriptedListerWatcher<ConfigMap>>,
    pub stop: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts an informer over `lw`, with `handler` registered before it runs.
pub fn start(
    lw: ScriptedListerWatcher<ConfigMap>,
    handler: Option<Recorder>,
    resync: Duration,
) -> Running {
    let lw = Arc::new(lw);
    let informer = new_informer("configmaps", lw.clone(), resync);
    if let Some(h) = handler {
        informer.add_event_handler(h);
    }
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    Running {
        informer,
        lw,
        stop,
        task,
    }
}

impl Running {
    pub async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }
    pub fn keys(&self) -> Vec<String> {
        let mut keys = self.informer.indexer().list_keys();
        keys.sort();
        keys
    }
}
