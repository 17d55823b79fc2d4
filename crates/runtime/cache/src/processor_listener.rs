//! Event handlers and their delivery: client-go's `ResourceEventHandler`,
//! `ResourceEventHandlerFuncs` and `processorListener` (tools/cache/controller.go,
//! shared_informer.go).
//!
//! Every handler registered on a shared informer gets its **own unbounded buffer and
//! its own thread**. The informer only pushes notifications into buffers, which never
//! blocks, so a slow handler can neither hold up the other handlers nor the reflector;
//! it only falls behind on its own. (client-go does the same with a growing ring buffer
//! and two goroutines per listener.)
//!
//! Why a thread and not a Tokio task: handlers are plain synchronous functions, as in
//! client-go, and a goroutine that blocks is harmless in Go, but a *task* that blocks
//! holds a runtime worker thread hostage, and with it whatever tasks are queued on
//! that worker (the informer's own loop included). A dedicated thread per handler (a
//! handful per process) keeps a slow or blocking handler truly isolated. The thread
//! enters the Tokio runtime it was registered from, so a handler may still call
//! `tokio::spawn`.
//!
//! Handlers are meant to do very little (compute a key, put it on a workqueue). A
//! handler that panics is logged and keeps receiving events; it never takes the
//! informer down. Two differences from client-go here, on purpose:
//!
//! * client-go's listener restarts its loop through `wait.Until` with a one-second
//!   period, so a handler that panics waits a second before its next event; here the
//!   next event follows at once. A panic about one bad object should not hold up every
//!   later event of that handler, and the error log already says what happened.
//! * A panicking call still counts as handled: a registration whose handler panics on
//!   an initial-list object still reaches
//!   [`has_synced`](crate::ResourceEventHandlerRegistration::has_synced). In
//!   client-go it never does (kubernetes/kubernetes#129024).
//!
//! **Inline delivery, for handlers that only enqueue.** A thread per handler costs a
//! hand-off per event: the informer pushes, the handler's thread wakes up (a futex call
//! and a context switch), handles one event and goes back to sleep. For the handlers
//! most controllers register (compute a key, look an owner up in a lister, add to a
//! workqueue: a few microseconds, never blocking) that hand-off is most of the cost. A
//! handler whose [`EventHandler::delivers_inline`] says `true` gets no buffer and no
//! thread: the informer calls it right where it distributes the notification, in
//! order, on its own task (panics still caught and logged). It runs while the informer
//! holds its handler list's lock, so it must not block, sleep, wait for the API, or
//! register or remove handlers of the same informer. client-go has no such mode (a
//! goroutine hand-off is cheap in Go); what it saves is in docs/benchmarks.md
//! (converge, "handlers called on the informer's task").
//!
//! Removing a handler ([`remove_event_handler`](crate::SharedIndexInformer::remove_event_handler))
//! does not wait for it: notifications already buffered are still delivered, on its
//! thread, afterwards. Wait for
//! [`wait_shut_down`](crate::ResourceEventHandlerRegistration::wait_shut_down) before
//! tearing down what the handler uses (client-go's `ShutDownEventHandler`).

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use std::sync::mpsc;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::delta::DeletedObject;
use crate::steps;

/// Receives an informer's notifications: client-go's `ResourceEventHandler`.
///
/// All methods default to doing nothing, so implement only what you need.
pub trait EventHandler<K>: Send + Sync + 'static {
    /// An object appeared: from the initial list (`is_in_initial_list`), a watch
    /// `ADDED`, or a synthetic add for a handler registered after the informer started.
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        let _ = (obj, is_in_initial_list);
    }
    /// An object changed, or a periodic resync re-delivered it (then `old` and `new`
    /// have the same resourceVersion).
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        let _ = (old, new);
    }
    /// An object was deleted; during a watch gap the final state is unknown and a
    /// tombstone is delivered instead.
    fn on_delete(&self, obj: &DeletedObject<K>) {
        let _ = obj;
    }
    /// The informer's cache has caught up with `resource_version`: every add, update
    /// and delete up to that version has already been delivered to this handler
    /// (KEP-5647's `BookmarkFunc`). Called after each list and each watch BOOKMARK,
    /// with the atomic [`RealFifo`](crate::RealFifo) only (the default queue). A
    /// controller that remembers the resourceVersion of its own writes can use it to
    /// know when its cache has seen them.
    fn on_bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
    /// Whether this handler may be called on the informer's own task instead of a
    /// thread of its own (see "Inline delivery" in the [module docs](self)). Say `true`
    /// only for a handler that never blocks and returns in microseconds: it then holds
    /// up the informer (and every other handler of it) while it runs. Defaults to
    /// `false`, client-go's behaviour.
    fn delivers_inline(&self) -> bool {
        false
    }
}

type AddFn<K> = Box<dyn Fn(&Arc<K>, bool) + Send + Sync>;
type UpdateFn<K> = Box<dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync>;
type DeleteFn<K> = Box<dyn Fn(&DeletedObject<K>) + Send + Sync>;
type BookmarkFn = Box<dyn Fn(&str) + Send + Sync>;

/// An [`EventHandler`] built from closures: client-go's `ResourceEventHandlerFuncs`.
///
/// ```
/// use cache::EventHandlerFuncs;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let handler = EventHandlerFuncs::<ConfigMap>::new()
///     .on_add(|cm, _initial| println!("added {:?}", cm.metadata.name))
///     .on_delete(|deleted| println!("deleted (tombstone: {})", deleted.is_tombstone()));
/// # let _ = handler;
/// ```
pub struct EventHandlerFuncs<K> {
    add: Option<AddFn<K>>,
    update: Option<UpdateFn<K>>,
    delete: Option<DeleteFn<K>>,
    bookmark: Option<BookmarkFn>,
}

impl<K> Default for EventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
            bookmark: None,
        }
    }
}

impl<K> fmt::Debug for EventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("bookmark", &self.bookmark.is_some())
            .finish()
    }
}

impl<K> EventHandlerFuncs<K> {
    /// A handler that ignores everything until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `f(obj, is_in_initial_list)` on adds.
    pub fn on_add(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Calls `f(old, new)` on updates.
    pub fn on_update(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Calls `f(obj)` on deletes.
    pub fn on_delete(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Calls `f(resource_version)` on bookmarks (see [`EventHandler::on_bookmark`]).
    pub fn on_bookmark(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.bookmark = Some(Box::new(f));
        self
    }
}

impl<K: Send + Sync + 'static> EventHandler<K> for EventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list);
        }
    }
    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new);
        }
    }
    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj);
        }
    }
    fn on_bookmark(&self, resource_version: &str) {
        if let Some(f) = &self.bookmark {
            f(resource_version);
        }
    }
}

/// One notification for one handler.
pub(crate) enum Notification<K> {
    Add {
        obj: Arc<K>,
        is_in_initial_list: bool,
    },
    Update {
        old: Arc<K>,
        new: Arc<K>,
    },
    Delete(DeletedObject<K>),
    Bookmark(Arc<str>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Add {
                obj,
                is_in_initial_list,
            } => Self::Add {
                obj: obj.clone(),
                is_in_initial_list: *is_in_initial_list,
            },
            Self::Update { old, new } => Self::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Self::Delete(d) => Self::Delete(d.clone()),
            Self::Bookmark(rv) => Self::Bookmark(rv.clone()),
        }
    }
}

/// Counts a handler's initial-list notifications not yet handled: client-go's
/// `synctrack.SingleFileTracker`, plus a wake-up for whoever waits for the count to
/// reach zero (client-go polls `HasSynced` instead, or closes a channel in its newer
/// `HasSyncedChecker`).
#[derive(Debug, Default)]
pub(crate) struct SyncTracker {
    /// The listener's id, unique in the process (not only in its informer), so that a
    /// registration handed to another informer's `remove_event_handler` removes
    /// nothing there (client-go compares listener pointers).
    pub(crate) uid: u64,
    pending_initial: AtomicUsize,
    /// Notified each time the handler catches up with the initial notifications
    /// queued so far.
    caught_up: Notify,
    /// Set once the handler's thread has delivered its last notification (or could
    /// not be started): the handler is never called again.
    shut_down: AtomicBool,
    /// Notified when `shut_down` is set.
    shut_down_notify: Notify,
}

impl SyncTracker {
    /// A tracker with the next process-wide id.
    fn with_next_uid() -> Self {
        static NEXT_UID: AtomicU64 = AtomicU64::new(0);
        Self {
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            ..Self::default()
        }
    }

    /// The tracker of a handler that was refused (its informer had stopped): shut
    /// down from the start, never called.
    pub(crate) fn refused() -> Self {
        let tracker = Self::with_next_uid();
        tracker.shut_down.store(true, Ordering::SeqCst);
        tracker
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending_initial.load(Ordering::SeqCst)
    }

    /// Resolves once no initial-list notification is pending. Once the informer has
    /// synced no more are queued, so from then on this means "the handler has
    /// processed the whole initial list".
    pub(crate) async fn wait_caught_up(&self) {
        loop {
            // Registered before the look, so a catch-up in between is not missed.
            let caught_up = self.caught_up.notified();
            if self.pending() == 0 {
                return;
            }
            caught_up.await;
        }
    }

    /// Whether the handler's thread has ended.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::SeqCst)
    }

    /// Resolves once the handler's thread has ended.
    pub(crate) async fn wait_shut_down(&self) {
        loop {
            // Registered before the look, so an end in between is not missed.
            let ended = self.shut_down_notify.notified();
            if self.is_shut_down() {
                return;
            }
            ended.await;
        }
    }

    /// The handler's thread has ended.
    fn mark_shut_down(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        self.shut_down_notify.notify_waiters();
    }

    /// One initial-list notification has been handled.
    fn handled_initial(&self) {
        if self.pending_initial.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.caught_up.notify_waiters();
        }
    }
}

/// The informer's side of one registered handler: client-go's `processorListener`.
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    delivery: Delivery<K>,
    pub(crate) tracker: Arc<SyncTracker>,
    resync_period: Option<Duration>,
    next_resync: Instant,
    /// Whether the current resync round includes this listener.
    pub(crate) syncing: bool,
}

/// How a listener's notifications reach its handler.
enum Delivery<K> {
    /// Through an unbounded channel to the handler's own thread (the default). Each
    /// notification travels with its object's key, for the pipeline trace.
    Thread(mpsc::Sender<(Option<Arc<str>>, Notification<K>)>),
    /// By a call where the informer distributes it ([`EventHandler::delivers_inline`]).
    Inline(Inline<K>),
}

/// An inline handler and what its calls need; dropping it (the listener removed or
/// the informer gone) shuts the handler down, as the end of a delivery thread does.
struct Inline<K> {
    informer: String,
    component: Arc<str>,
    /// `None` only while being dropped: the handler goes before anyone hears that it
    /// is done.
    handler: Option<Arc<dyn EventHandler<K>>>,
    tracker: Arc<SyncTracker>,
}

impl<K> Drop for Inline<K> {
    fn drop(&mut self) {
        drop(self.handler.take());
        self.tracker.mark_shut_down();
    }
}

impl<K: Send + Sync + 'static> Listener<K> {
    /// Registers `handler`: starts its delivery thread, or none if it
    /// [delivers inline](EventHandler::delivers_inline).
    pub(crate) fn spawn(
        id: u64,
        name: &str,
        handler: Arc<dyn EventHandler<K>>,
        resync_period: Option<Duration>,
    ) -> Self {
        let tracker = Arc::new(SyncTracker::with_next_uid());
        let delivery = if handler.delivers_inline() {
            Delivery::Inline(Inline {
                informer: name.to_string(),
                component: steps::component::<K>(),
                handler: Some(handler),
                tracker: tracker.clone(),
            })
        } else {
            Delivery::Thread(Self::start_thread(id, name, handler, &tracker))
        };
        Self {
            // The process-wide id (see `SyncTracker::uid`); `id` names the thread.
            id: tracker.uid,
            delivery,
            tracker,
            resync_period: resync_period.filter(|p| !p.is_zero()),
            next_resync: Instant::now() + resync_period.unwrap_or_default(),
            syncing: false,
        }
    }

    /// Starts the delivery thread of `handler`; returns its channel.
    fn start_thread(
        id: u64,
        name: &str,
        handler: Arc<dyn EventHandler<K>>,
        tracker: &Arc<SyncTracker>,
    ) -> mpsc::Sender<(Option<Arc<str>>, Notification<K>)> {
        let (tx, rx) = mpsc::channel();
        let runtime = tokio::runtime::Handle::try_current().ok();
        let (thread_name, thread_tracker) = (format!("handler-{name}-{id}"), tracker.clone());
        let informer = name.to_string();
        let component = steps::component::<K>();
        let spawned = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let _runtime = runtime.as_ref().map(|r| r.enter());
                run(&informer, &component, handler.as_ref(), rx, &thread_tracker);
                // The handler is dropped before anyone hears that it is done.
                drop(handler);
                thread_tracker.mark_shut_down();
            });
        if let Err(e) = spawned {
            tracker.mark_shut_down();
            // The notifications then pile up unread; say so loudly.
            tracing::error!(informer = %name, error = %e, "could not start an event handler thread");
        }
        tx
    }

    /// Queues a notification about the object at `key` (never blocks), or, for an
    /// inline handler, hands it over at once. Takes both by reference: only a
    /// handler thread needs its own copy (reference-count increments), an inline
    /// handler reads the informer's, and one event goes to every listener.
    pub(crate) fn add(&self, key: Option<&Arc<str>>, notification: &Notification<K>) {
        let tx = match &self.delivery {
            Delivery::Thread(tx) => tx,
            Delivery::Inline(inline) => {
                if let Some(handler) = &inline.handler {
                    // Handled before this returns: never pending, so nothing to count.
                    deliver(
                        &inline.informer,
                        &inline.component,
                        &**handler,
                        key,
                        notification,
                    );
                }
                return;
            }
        };
        if let Notification::Add {
            is_in_initial_list: true,
            ..
        } = notification
        {
            self.tracker.pending_initial.fetch_add(1, Ordering::SeqCst);
        }
        // A send fails only when the handler's thread is gone: it could not be
        // started (logged in `spawn`); it runs for as long as the listener exists.
        let _ = tx.send((key.cloned(), notification.clone()));
    }

    /// Marks the listener as part of this resync round if its period is due:
    /// client-go's `shouldResync` per listener.
    pub(crate) fn check_resync(&mut self, now: Instant) -> bool {
        self.syncing = match self.resync_period {
            Some(period) if now >= self.next_resync => {
                self.next_resync = now + period;
                true
            }
            _ => false,
        };
        self.syncing
    }

    /// This listener's resync period, if it has one.
    pub(crate) fn resync_period(&self) -> Option<Duration> {
        self.resync_period
    }
}

/// The delivery loop: hands notifications to the handler in order, one at a time,
/// until the informer drops the listener.
fn run<K: Send + Sync + 'static>(
    name: &str,
    component: &Arc<str>,
    handler: &dyn EventHandler<K>,
    rx: mpsc::Receiver<(Option<Arc<str>>, Notification<K>)>,
    tracker: &SyncTracker,
) {
    while let Ok((key, notification)) = rx.recv() {
        let initial = matches!(
            notification,
            Notification::Add {
                is_in_initial_list: true,
                ..
            }
        );
        deliver(name, component, handler, key.as_ref(), &notification);
        if initial {
            tracker.handled_initial();
        }
    }
}

/// Calls the handler for one notification, recording the step for the pipeline trace;
/// a panic is logged and the notification counts as handled.
fn deliver<K: Send + Sync + 'static>(
    name: &str,
    component: &Arc<str>,
    handler: &dyn EventHandler<K>,
    key: Option<&Arc<str>>,
    notification: &Notification<K>,
) {
    if let Some(key) = key {
        let (call, initial) = match notification {
            Notification::Add {
                is_in_initial_list, ..
            } => ("on_add", *is_in_initial_list),
            Notification::Update { .. } => ("on_update", false),
            Notification::Delete(_) => ("on_delete", false),
            Notification::Bookmark(_) => ("on_bookmark", false),
        };
        steps::handled(component, key, call, initial);
    }
    let result = catch_unwind(AssertUnwindSafe(|| match notification {
        Notification::Add {
            obj,
            is_in_initial_list,
        } => handler.on_add(obj, *is_in_initial_list),
        Notification::Update { old, new } => handler.on_update(old, new),
        Notification::Delete(obj) => handler.on_delete(obj),
        Notification::Bookmark(rv) => handler.on_bookmark(rv),
    }));
    if result.is_err() {
        tracing::error!(informer = %name, "event handler panicked; the event was skipped");
    }
}
