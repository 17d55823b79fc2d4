//! client-go's `FakeControllerSource` (tools/cache/testing/fake_controller_source.go),
//! shared by the ported controller and shared-informer tests: a source the test changes
//! while the informer runs (the scripted lister-watcher answers from a script fixed in
//! advance).

use std::collections::BTreeMap;
use std::sync::Arc;

use cache::testing::{api_error, gone};
use cache::{ListOptions, ListPage, ListerWatcher, WatchOptions, WatchStream};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::Resource;
use kube::api::WatchEvent;
use parking_lot::Mutex;
use tokio::sync::mpsc;

type Sender<K> = mpsc::UnboundedSender<Result<WatchEvent<K>, kube::Error>>;

#[derive(Clone, Copy)]
enum Change {
    Added,
    Modified,
    Deleted,
}

struct State<K> {
    /// By namespace, name and uid, as client-go's `nnu`.
    items: BTreeMap<(String, String, String), K>,
    /// One change per resourceVersion, oldest first; flushed by `reset_watch`.
    changes: Vec<(Change, K)>,
    watchers: Vec<Sender<K>>,
    last_rv: u64,
    list_error: Option<String>,
    watch_calls: usize,
}

/// A live, versioned set of objects to list and watch. See the module docs.
pub struct FakeControllerSource<K> {
    state: Mutex<State<K>>,
}

fn event<K>(change: Change, obj: K) -> WatchEvent<K> {
    match change {
        Change::Added => WatchEvent::Added(obj),
        Change::Modified => WatchEvent::Modified(obj),
        Change::Deleted => WatchEvent::Deleted(obj),
    }
}

#[allow(dead_code)] // each test binary uses its own subset
impl<K: Resource + Clone + Send + Sync + 'static> FakeControllerSource<K> {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                items: BTreeMap::new(),
                changes: Vec::new(),
                watchers: Vec::new(),
                last_rv: 0,
                list_error: None,
                watch_calls: 0,
            }),
        })
    }

    /// Adds `obj` (its resourceVersion set) and tells the watchers.
    pub fn add(&self, obj: K) {
        self.change(Change::Added, obj, true);
    }
    /// Updates `obj` and tells the watchers.
    pub fn modify(&self, obj: K) {
        self.change(Change::Modified, obj, true);
    }
    /// Deletes `obj` and tells the watchers.
    pub fn delete(&self, obj: K) {
        self.change(Change::Deleted, obj, true);
    }
    /// Adds `obj` without telling the watchers.
    pub fn add_drop_watch(&self, obj: K) {
        self.change(Change::Added, obj, false);
    }
    /// Updates `obj` without telling the watchers.
    pub fn modify_drop_watch(&self, obj: K) {
        self.change(Change::Modified, obj, false);
    }
    /// Deletes `obj` without telling the watchers.
    pub fn delete_drop_watch(&self, obj: K) {
        self.change(Change::Deleted, obj, false);
    }

    /// Connection problems: every watch ends and the change history is flushed,
    /// so that a watcher has to relist.
    pub fn reset_watch(&self) {
        let mut state = self.state.lock();
        state.watchers.clear();
        state.changes.clear();
    }

    /// Makes every list fail with `message` (`None`: succeed again).
    pub fn set_list_error(&self, message: Option<&str>) {
        self.state.lock().list_error = message.map(str::to_string);
    }

    /// How many watches were started.
    pub fn watch_calls(&self) -> usize {
        self.state.lock().watch_calls
    }

    /// The keys (`namespace/name`) of the objects that exist now, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .state
            .lock()
            .items
            .values()
            .map(|o| cache::meta_namespace_key(o).unwrap())
            .collect();
        keys.sort();
        keys
    }

    fn change(&self, change: Change, mut obj: K, broadcast: bool) {
        let mut state = self.state.lock();
        state.last_rv += 1;
        obj.meta_mut().resource_version = Some(state.last_rv.to_string());
        state.changes.push((change, obj.clone()));
        let meta = obj.meta();
        let key = (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
            meta.uid.clone().unwrap_or_default(),
        );
        match change {
            Change::Added | Change::Modified => {
                state.items.insert(key, obj.clone());
            }
            Change::Deleted => {
                state.items.remove(&key);
            }
        }
        if broadcast {
            let event = event(change, obj);
            state.watchers.retain(|w| w.send(Ok(event.clone())).is_ok());
        }
    }

    fn start_watch(&self, resource_version: &str) -> Result<WatchStream<K>, kube::Error> {
        let mut state = self.state.lock();
        state.watch_calls += 1;
        let rv: u64 = resource_version
            .parse()
            .map_err(|_| api_error(400, "BadRequest", "unparsable resourceVersion"))?;
        let replay = if rv < state.last_rv {
            let Some((_, first)) = state.changes.first() else {
                return Err(gone());
            };
            let oldest: u64 = first
                .meta()
                .resource_version
                .as_deref()
                .unwrap()
                .parse()
                .unwrap();
            if rv < oldest {
                return Err(gone());
            }
            state.changes[usize::try_from(rv + 1 - oldest).unwrap()..].to_vec()
        } else if rv > state.last_rv {
            return Err(api_error(
                500,
                "InternalError",
                "resource version in the future",
            ));
        } else {
            Vec::new()
        };
        let (tx, rx) = mpsc::unbounded_channel();
        for (change, obj) in replay {
            tx.send(Ok(event(change, obj))).unwrap();
        }
        state.watchers.push(tx);
        Ok(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|event| (event, rx))
        })
        .boxed())
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> ListerWatcher<K> for FakeControllerSource<K> {
    fn list(&self, _: &ListOptions) -> BoxFuture<'_, Result<ListPage<K>, kube::Error>> {
        let state = self.state.lock();
        let answer = match &state.list_error {
            Some(message) => Err(api_error(403, "Forbidden", message)),
            None => Ok(ListPage {
                items: state.items.values().cloned().collect(),
                resource_version: state.last_rv.to_string(),
                continue_token: None,
                unreadable: Vec::new(),
            }),
        };
        futures::future::ready(answer).boxed()
    }

    fn watch(&self, options: &WatchOptions) -> BoxFuture<'_, Result<WatchStream<K>, kube::Error>> {
        let answer = if options.send_initial_events {
            // Like a server without streaming lists: the reflector lists in pages.
            Err(api_error(
                422,
                "Invalid",
                "sendInitialEvents is not supported",
            ))
        } else {
            self.start_watch(&options.resource_version)
        };
        futures::future::ready(answer).boxed()
    }
}
