//! client-go v0.37.2's `tools/cache/shared_informer_test.go`, ported onto this crate
//! (issue 32: the cache on client-go's exact semantics). One test per Go test function,
//! each named above it; client-go's expectations are kept, except where this crate
//! differs on purpose (said at the test, and in the module docs it points to).
//!
//! Informers are built with `common::new_informer`, so every queue kind the suites
//! support (`CACHE_TEST_QUEUE`) runs these tests. client-go's `FakeControllerSource`
//! is re-created at the bottom of this file ([`fake::FakeControllerSource`]: a live,
//! versioned object set, which the scripted `cache::testing::ScriptedListerWatcher`
//! cannot play since these tests change the source while the informer runs);
//! client-go's `testListener` is [`TestListener`]; fake clocks and `synctest` become
//! Tokio's paused time. client-go's pods are ConfigMaps without a namespace here.
//!
//! client-go's tests read the informer's insides (`eventHandlerCount`, `isRegistered`,
//! `resyncCheckPeriod`, `IsStopped`). This crate has no such accessors; the tests
//! observe the same facts: a registration is live until its handler is shut down
//! ([`ResourceEventHandlerRegistration::is_shut_down`], which is also client-go's
//! `ShutDownEventHandler`), the resync check period shows in when resyncs arrive, and
//! an informer is stopped when its `run` has returned.
//!
//! # Differences on purpose, asserted as this crate's behaviour
//!
//! * `TestEventPanics`: after a handler panics, its next event follows at once
//!   (client-go pauses it one second), and a registration whose handler panicked on an
//!   initial-list object still syncs (client-go's never does, kubernetes#129024). The
//!   panic is logged through `tracing`, which these tests do not capture.
//!   `processor_listener` module docs.
//! * `TestShutdown` ("no-run"): a handler's thread starts at registration, not when the
//!   informer runs (`processor_listener` module docs); it ends once the informer is
//!   dropped, which the test asserts instead of "nothing running".
//! * `RemoveEventHandler` and `AddEventHandler` return no error: removal cannot fail,
//!   and a handler added to a stopped informer is refused without one: its
//!   registration comes back already shut down and never syncs, and a warning is
//!   logged (`TestAddOnStoppedSharedInformer`; the `add_event_handler_with_resync_period`
//!   docs).
//!
//! # Not ported, or only in part
//!
//! * `TestSharedInformerErrorHandling`: `SetWatchErrorHandler` has no counterpart; the
//!   reflector logs list and watch errors and retries with backoff.
//! * `TestSharedInformerStartRace`: only `SetTransform` (no `SetWatchErrorHandler`).
//! * `TestSharedInformerHandlerAbuse`: each of the 100 workers keeps at most one
//!   registration live (Go's keep a random walk's worth) and pauses 10 ms between
//!   calls: every handler is an OS thread here, not a goroutine, each event wakes
//!   every handler's thread, and Go's numbers took 15 minutes on two CPUs.
//! * `TestListenerResyncPeriodsDelayed`: `sharedProcessorRunHook` has no counterpart
//!   (there is no processor loop to start late: handler threads start at
//!   registration); the scenario runs with the test's own clock offset, as in Go.
//! * `TestResyncCheckPeriod`: the check period and the handlers' periods are not
//!   readable; the test checks when each handler's resyncs arrive instead.

#![allow(clippy::unwrap_used)] // test code: an unwrap is an assertion

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use cache::{
    DeletedObject, Error, EventHandler, EventHandlerFuncs, IndexFunc, Indexers,
    ResourceEventHandlerRegistration, SharedIndexInformer,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use rand::Rng;
use tokio_util::sync::CancellationToken;

mod common;
use common::fake_source as fake;
use common::new_informer;

use fake::FakeControllerSource;

/// A ConfigMap standing in for client-go's test Pods.
fn pod(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Like [`pod`], with labels.
fn labelled_pod(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut obj = pod(name);
    obj.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    obj
}

/// Waits in real time (the handlers' threads), without letting paused time pass.
async fn real_sleep(duration: Duration) {
    tokio::task::spawn_blocking(move || std::thread::sleep(duration))
        .await
        .unwrap();
}

/// Waits for `cond`, letting both virtual time pass (the informer's timers) and real
/// time (the handlers' threads).
async fn until(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        real_sleep(Duration::from_millis(2)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Runs `informer` until the returned token is cancelled.
fn run(
    informer: &SharedIndexInformer<ConfigMap>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    (stop, task)
}

async fn stop(stop: CancellationToken, task: tokio::task::JoinHandle<()>) {
    stop.cancel();
    task.await.unwrap();
}

/// client-go's `testListener`: records the names of the objects it is told about
/// (adds and updates), and compares them, as a set, with what it expects.
#[derive(Clone)]
struct TestListener {
    name: &'static str,
    resync_period: Duration,
    expected: Arc<Mutex<BTreeSet<String>>>,
    received: Arc<Mutex<Vec<String>>>,
}

impl TestListener {
    fn new(name: &'static str, resync_period: Duration, expected: &[&str]) -> Self {
        Self {
            name,
            resync_period,
            expected: Arc::new(Mutex::new(expected.iter().map(|s| s.to_string()).collect())),
            received: Arc::default(),
        }
    }

    fn handle(&self, obj: &ConfigMap) {
        let name = obj.metadata.name.clone().unwrap_or_default();
        self.received.lock().push(name);
    }

    fn satisfied_expectations(&self) -> bool {
        let received: BTreeSet<String> = self.received.lock().iter().cloned().collect();
        received == *self.expected.lock()
    }

    fn expect(&self, expected: &[&str]) {
        *self.expected.lock() = expected.iter().map(|s| s.to_string()).collect();
    }

    fn received(&self) -> Vec<String> {
        self.received.lock().clone()
    }

    fn reset(&self) {
        self.received.lock().clear();
    }

    /// client-go's `ok`: waits up to two seconds for the expectations, then a second
    /// for stragglers (in virtual time when paused, plus a moment in real time for the
    /// handler's thread), and checks again.
    async fn ok(&self) -> bool {
        let mut satisfied = false;
        for _ in 0..1000 {
            if self.satisfied_expectations() {
                satisfied = true;
                break;
            }
            real_sleep(Duration::from_millis(2)).await;
        }
        if !satisfied {
            return false;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        real_sleep(Duration::from_millis(50)).await;
        self.satisfied_expectations()
    }

    fn describe(&self) -> String {
        format!(
            "{}: expected {:?}, got {:?}",
            self.name,
            self.expected.lock(),
            self.received()
        )
    }
}

impl EventHandler<ConfigMap> for TestListener {
    fn on_add(&self, obj: &Arc<ConfigMap>, _: bool) {
        self.handle(obj);
    }
    fn on_update(&self, _: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.handle(new);
    }
}

/// Waits (up to ten seconds of real time: the handler's thread knows nothing of paused
/// time) for a handler's thread to end.
async fn shut_down(
    registration: &ResourceEventHandlerRegistration<ConfigMap>,
) -> Result<(), String> {
    tokio::select! {
        () = registration.wait_shut_down() => Ok(()),
        () = real_sleep(Duration::from_secs(10)) => Err("timed out".to_string()),
    }
}

/// client-go's `ShutDownEventHandler`: removes the handler and waits (up to ten
/// seconds) until it is called no more.
async fn shut_down_event_handler(
    informer: &SharedIndexInformer<ConfigMap>,
    registration: &ResourceEventHandlerRegistration<ConfigMap>,
) -> Result<(), String> {
    informer.remove_event_handler(registration);
    shut_down(registration).await
}

/// client-go's `eventHandlerCount`: the registrations (of those given) whose handler
/// is still live, once the removed ones have shut down.
async fn event_handler_count(
    registrations: &[&ResourceEventHandlerRegistration<ConfigMap>],
) -> usize {
    // Removal ends a handler's thread soon after; give it the moment.
    real_sleep(Duration::from_millis(50)).await;
    registrations.iter().filter(|r| !r.is_shut_down()).count()
}

fn label_keys_index() -> IndexFunc<ConfigMap> {
    Arc::new(|obj: &ConfigMap| {
        obj.metadata
            .labels
            .as_ref()
            .map(|l| l.keys().cloned().collect())
            .unwrap_or_default()
    })
}

fn names(objs: &[Arc<ConfigMap>]) -> Vec<String> {
    let mut names: Vec<String> = objs
        .iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

// client-go: TestIndexer (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn indexer() {
    let source = FakeControllerSource::new();
    source.add(labelled_pod("pod1", &[("a", "a-val"), ("b", "b-val1")]));
    source.add(labelled_pod("pod2", &[("b", "b-val2")]));
    let informer = new_informer("indexer", source.clone(), Duration::from_secs(1));
    informer
        .add_indexers(Indexers::from([("labels".to_string(), label_keys_index())]))
        .unwrap();
    let (cancel, task) = run(&informer);
    assert!(informer.wait_for_cache_sync(&cancel).await);

    // We should be able to look up by index.
    let res = informer.indexer().by_index("labels", "a").unwrap();
    assert_eq!(names(&res), ["pod1"]);

    // Adding an item later is fine as well.
    source.add(labelled_pod("pod3", &[("a", "a-val2")]));
    until("pod3 indexed", || {
        names(&informer.indexer().by_index("labels", "a").unwrap()) == ["pod1", "pod3"]
    })
    .await;

    // Adding an index later is also fine, and immediately available.
    informer
        .add_indexers(Indexers::from([(
            "labels-again".to_string(),
            label_keys_index(),
        )]))
        .unwrap();
    let res = informer.indexer().by_index("labels-again", "a").unwrap();
    assert_eq!(names(&res), ["pod1", "pod3"]);
    for index in ["labels", "labels-again"] {
        let got: BTreeSet<String> = informer
            .indexer()
            .list_index_func_values(index)
            .into_iter()
            .collect();
        assert_eq!(
            got,
            BTreeSet::from(["a".to_string(), "b".to_string()]),
            "{index}"
        );
    }
    stop(cancel, task).await;
}

/// client-go's `testListenerResyncPeriods`.
async fn listener_resync_periods(startup_delay: Duration) {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    // The informer resyncs every second by default.
    let informer = new_informer("resync", source.clone(), Duration::from_secs(1));

    let listener1 = TestListener::new("listener1", Duration::ZERO, &["pod1", "pod2"]);
    let listener2 = TestListener::new("listener2", Duration::from_secs(2), &["pod1", "pod2"]);
    let listener3 = TestListener::new("listener3", Duration::from_secs(3), &["pod1", "pod2"]);
    let listeners = [&listener1, &listener2, &listener3];
    for listener in listeners {
        informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period);
    }
    let (cancel, task) = run(&informer);
    tokio::time::sleep(startup_delay).await;

    // Every listener got the initial list.
    for listener in listeners {
        until("initial list", || listener.satisfied_expectations()).await;
    }
    real_sleep(Duration::from_millis(50)).await;
    for listener in listeners {
        assert!(listener.satisfied_expectations(), "{}", listener.describe());
        listener.reset();
    }

    // Advance so listener2 gets a resync.
    tokio::time::sleep(Duration::from_secs(2) - startup_delay).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while !listener2.satisfied_expectations() && std::time::Instant::now() < deadline {
        real_sleep(Duration::from_millis(2)).await;
    }
    real_sleep(Duration::from_millis(50)).await;
    assert!(
        listener2.satisfied_expectations(),
        "{}",
        listener2.describe()
    );
    assert_eq!(
        listener1.received(),
        Vec::<String>::new(),
        "listener1 should not have resynced"
    );
    assert_eq!(
        listener3.received(),
        Vec::<String>::new(),
        "listener3 should not have resynced"
    );
    for listener in listeners {
        listener.reset();
    }

    // Advance so listener3 gets a resync.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while !listener3.satisfied_expectations() && std::time::Instant::now() < deadline {
        real_sleep(Duration::from_millis(2)).await;
    }
    real_sleep(Duration::from_millis(50)).await;
    assert!(
        listener3.satisfied_expectations(),
        "{}",
        listener3.describe()
    );
    assert_eq!(
        listener1.received(),
        Vec::<String>::new(),
        "listener1 should not have resynced"
    );
    assert_eq!(
        listener2.received(),
        Vec::<String>::new(),
        "listener2 should not have resynced"
    );
    stop(cancel, task).await;
}

// client-go: TestListenerResyncPeriods (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn listener_resync_periods_no_delay() {
    listener_resync_periods(Duration::ZERO).await;
}

// client-go: TestListenerResyncPeriodsDelayed (shared_informer_test.go)
//
// In part: the processor hook has no counterpart (module docs); the test's clock
// offset is Go's.
#[tokio::test(start_paused = true)]
async fn listener_resync_periods_delayed() {
    listener_resync_periods(Duration::from_secs(1)).await;
}

// client-go: TestResyncCheckPeriod (shared_informer_test.go)
//
// client-go reads the informer's resyncCheckPeriod (12 h, then 1 min, 55 s, 5 s as
// handlers with shorter periods join) and each listener's period. Here: the handlers'
// resyncs arrive at their own periods, so the check runs at the shortest one.
#[tokio::test(start_paused = true)]
async fn resync_check_period() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("check", source.clone(), Duration::from_secs(12 * 3600));
    let listener1 = TestListener::new("listener1", Duration::ZERO, &[]);
    let listener2 = TestListener::new("listener2", Duration::from_secs(60), &[]);
    let listener3 = TestListener::new("listener3", Duration::from_secs(55), &[]);
    let listener4 = TestListener::new("listener4", Duration::from_secs(5), &[]);
    let listeners = [&listener1, &listener2, &listener3, &listener4];
    for listener in listeners {
        informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period);
    }
    let start = tokio::time::Instant::now();
    let (cancel, task) = run(&informer);
    for listener in listeners {
        until("initial list", || listener.received() == ["pod1"]).await;
        listener.reset();
    }
    let counts = || listeners.map(|l| l.received().len());
    // Advances virtual time to `at` after the start and lets the handlers catch up.
    let advance_to = |at: Duration| async move {
        tokio::time::sleep_until(start + at).await;
        real_sleep(Duration::from_millis(50)).await;
    };

    advance_to(Duration::from_millis(5_500)).await;
    assert_eq!(counts(), [0, 0, 0, 1], "5 s: listener4 only");
    advance_to(Duration::from_millis(50_500)).await;
    assert_eq!(counts(), [0, 0, 0, 10], "50 s: listener4 every 5 s");
    advance_to(Duration::from_millis(55_500)).await;
    assert_eq!(counts(), [0, 0, 1, 11], "55 s: listener3's first");
    advance_to(Duration::from_millis(60_500)).await;
    assert_eq!(counts(), [0, 1, 1, 12], "60 s: listener2's first");
    stop(cancel, task).await;
}

// client-go: TestSharedInformerInitializationRace (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn shared_informer_initialization_race() {
    let source = FakeControllerSource::new();
    let informer = new_informer("race", source.clone(), Duration::from_secs(1));
    let listener = TestListener::new("raceListener", Duration::ZERO, &[]);
    let adder = std::thread::spawn({
        let (informer, listener) = (informer.clone(), listener.clone());
        let runtime = tokio::runtime::Handle::current();
        move || {
            let _runtime = runtime.enter();
            informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period)
        }
    });
    let (cancel, task) = run(&informer);
    let registration = tokio::task::spawn_blocking(move || adder.join().unwrap())
        .await
        .unwrap();
    until("synced", || registration.has_synced()).await;
    stop(cancel, task).await;
}

// client-go: TestSharedInformerWatchDisruption (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn shared_informer_watch_disruption() {
    let source = FakeControllerSource::new();
    let with_uid = |name: &str| {
        let mut obj = pod(name);
        obj.metadata.uid = Some(name.to_string());
        obj
    };
    source.add(with_uid("pod1"));
    source.add(with_uid("pod2"));
    let informer = new_informer("disruption", source.clone(), Duration::from_secs(1));

    let no_resync = TestListener::new("listenerNoResync", Duration::ZERO, &["pod1", "pod2"]);
    let resync = TestListener::new("listenerResync", Duration::from_secs(1), &["pod1", "pod2"]);
    let listeners = [&no_resync, &resync];
    for listener in listeners {
        informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period);
    }
    let (cancel, task) = run(&informer);
    for listener in listeners {
        assert!(listener.ok().await, "{}", listener.describe());
    }

    // Add pod3, bump pod2, but don't broadcast it: only a relist sees the changes.
    source.add_drop_watch(with_uid("pod3"));
    source.modify_drop_watch(with_uid("pod2"));
    // Nobody saw any change.
    for listener in listeners {
        assert!(listener.ok().await, "{}", listener.describe());
    }

    for listener in listeners {
        listener.reset();
    }
    no_resync.expect(&["pod2", "pod3"]);
    resync.expect(&["pod1", "pod2", "pod3"]);

    // A resync round: listenerResync syncs, listenerNoResync does not.
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A connection loss (or a too old watch): the reflector relists.
    source.reset_watch();
    // Past the reflector's backoff.
    tokio::time::sleep(Duration::from_millis(1601)).await;
    for listener in listeners {
        assert!(listener.ok().await, "{}", listener.describe());
    }
    stop(cancel, task).await;
}

// client-go: TestSharedInformerStartRace (shared_informer_test.go)
//
// In part: SetTransform only (module docs).
#[tokio::test(start_paused = true)]
async fn shared_informer_start_race() {
    let source = FakeControllerSource::new();
    let informer = new_informer("start-race", source.clone(), Duration::from_secs(1));
    let done = Arc::new(AtomicBool::new(false));
    let setter = std::thread::spawn({
        let (informer, done) = (informer.clone(), done.clone());
        move || -> Result<(), String> {
            let mut started = false;
            while !done.load(Ordering::SeqCst) {
                match informer.set_transform(Arc::new(|obj: ConfigMap| obj)) {
                    Ok(()) if started => return Err("set_transform after start".into()),
                    Ok(()) => {}
                    Err(Error::AlreadyStarted(_)) => started = true,
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(())
        }
    });
    let (cancel, task) = run(&informer);
    until("synced", || informer.has_synced()).await;
    stop(cancel, task).await;
    done.store(true, Ordering::SeqCst);
    let result = tokio::task::spawn_blocking(move || setter.join().unwrap())
        .await
        .unwrap();
    assert_eq!(result, Ok(()));
}

// client-go: TestSharedInformerTransformer (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn shared_informer_transformer() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    source.add(pod("pod2"));
    let informer = new_informer("transformer", source.clone(), Duration::from_secs(1));
    informer
        .set_transform(Arc::new(|mut obj: ConfigMap| {
            if let Some(name) = obj.metadata.name.as_mut() {
                *name = name.to_uppercase();
            }
            obj
        }))
        .unwrap();
    let listener = TestListener::new("listenerTransformer", Duration::ZERO, &["POD1", "POD2"]);
    informer.add_event_handler(listener.clone());
    let (cancel, task) = run(&informer);
    assert!(listener.ok().await, "{}", listener.describe());
    stop(cancel, task).await;
}

// client-go: TestSharedInformerRemoveHandler (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn shared_informer_remove_handler() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("remove", source.clone(), Duration::from_secs(1));
    let handle1 = informer.add_event_handler(EventHandlerFuncs::new());
    let handle2 = informer.add_event_handler(EventHandlerFuncs::new());
    let all = [&handle1, &handle2];
    assert_eq!(event_handler_count(&all).await, 2);

    informer.remove_event_handler(&handle2);
    assert_eq!(event_handler_count(&all).await, 1);
    assert!(handle2.is_shut_down());

    informer.remove_event_handler(&handle1);
    assert_eq!(event_handler_count(&all).await, 0);
}

// client-go: TestSharedInformerRemoveForeignHandler (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn shared_informer_remove_foreign_handler() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("informer", source.clone(), Duration::from_secs(1));
    let source2 = FakeControllerSource::new();
    source2.add(pod("pod1"));
    let informer2 = new_informer("informer2", source2.clone(), Duration::from_secs(1));

    let handle1 = informer.add_event_handler(EventHandlerFuncs::new());
    let handle2 = informer.add_event_handler(EventHandlerFuncs::new());
    assert_eq!(event_handler_count(&[&handle1, &handle2]).await, 2);

    // Removing at the foreign informer changes nothing.
    informer2.remove_event_handler(&handle1);
    assert_eq!(event_handler_count(&[&handle1, &handle2]).await, 2);
    assert!(
        !handle1.is_shut_down(),
        "handle1 not registered anymore for informer"
    );
    assert!(
        !handle2.is_shut_down(),
        "handle2 not registered anymore for informer"
    );

    // Beyond client-go's test: also when the foreign informer has handlers of its own
    // (listener ids must not be counted per informer).
    let foreign = informer2.add_event_handler(EventHandlerFuncs::new());
    informer2.remove_event_handler(&handle1);
    informer.remove_event_handler(&foreign);
    assert_eq!(
        event_handler_count(&[&handle1, &handle2, &foreign]).await,
        3
    );

    informer.remove_event_handler(&handle2);
    assert_eq!(event_handler_count(&[&handle1, &handle2]).await, 1);
    informer.remove_event_handler(&handle1);
    assert_eq!(event_handler_count(&[&handle1, &handle2]).await, 0);
}

// client-go: TestSharedInformerMultipleRegistration (shared_informer_test.go)
//
// One handler registered twice: here two clones of one handler (they share its state),
// as `add_event_handler` takes the handler by value.
#[tokio::test(start_paused = true)]
async fn shared_informer_multiple_registration() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("multiple", source.clone(), Duration::from_secs(1));
    let handler1 = TestListener::new("handler1", Duration::ZERO, &[]);

    let reg1 = informer.add_event_handler(handler1.clone());
    assert_eq!(
        event_handler_count(&[&reg1]).await,
        1,
        "handle1 is not active after successful registration"
    );
    let reg2 = informer.add_event_handler(handler1.clone());
    assert_eq!(
        event_handler_count(&[&reg2]).await,
        1,
        "handle2 is not active after successful registration"
    );
    assert_eq!(event_handler_count(&[&reg1, &reg2]).await, 2);

    informer.remove_event_handler(&reg1);
    assert_eq!(
        event_handler_count(&[&reg1]).await,
        0,
        "handle1 is still active after successful remove"
    );
    assert_eq!(
        event_handler_count(&[&reg2]).await,
        1,
        "handle2 is not active after removing handle1"
    );

    informer.remove_event_handler(&reg2);
    assert_eq!(event_handler_count(&[&reg1, &reg2]).await, 0);

    // The handler itself was not removed with its first registration: both copies were
    // live until then. Run to show that nothing reaches it now.
    let (cancel, task) = run(&informer);
    assert!(informer.wait_for_cache_sync(&cancel).await);
    real_sleep(Duration::from_millis(50)).await;
    assert_eq!(handler1.received(), Vec::<String>::new());
    stop(cancel, task).await;
}

// client-go: TestRemovingRemovedSharedInformer (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn removing_removed_shared_informer() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("removed", source.clone(), Duration::from_secs(1));
    let reg = informer.add_event_handler(EventHandlerFuncs::new());
    informer.remove_event_handler(&reg);
    assert_eq!(
        event_handler_count(&[&reg]).await,
        0,
        "handle is still active after successful remove"
    );
    informer.remove_event_handler(&reg);
    assert_eq!(
        event_handler_count(&[&reg]).await,
        0,
        "handle is still active after second remove"
    );
}

// client-go: TestSharedInformerHandlerAbuse (shared_informer_test.go)
//
// With at most one live registration per worker (module docs).
#[tokio::test(start_paused = true)]
async fn shared_informer_handler_abuse() {
    let source = FakeControllerSource::new();
    let informer = new_informer("abuse", source.clone(), Duration::from_secs(1));
    let (cancel, task) = run(&informer);
    let over = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Handle::current();

    // Workers keep adding and removing handlers. Each handler has an OS thread here
    // (processor_listener module docs), not a goroutine: a worker keeps at most
    // MAX_LIVE registrations, or the random walk of Go's workers leaves tens of
    // thousands of threads running.
    const MAX_LIVE: usize = 1;
    let workers: Vec<_> =
        (0..100)
            .map(|_| {
                let (informer, over, runtime) = (informer.clone(), over.clone(), runtime.clone());
                std::thread::spawn(move || {
                    let _runtime = runtime.enter();
                    let mut rng = rand::rng();
                    let mut handles = Vec::new();
                    while !over.load(Ordering::SeqCst) {
                        // At most MAX_LIVE registrations each (see above).
                        if handles.len() < MAX_LIVE && rng.random_range(0..2) == 0 {
                            let funcs = EventHandlerFuncs::new()
                                .on_add(|_: &Arc<ConfigMap>, _| {})
                                .on_update(|_, _: &Arc<ConfigMap>| {})
                                .on_delete(|_: &DeletedObject<ConfigMap>| {});
                            handles.push(informer.add_event_handler_with_resync_period(
                                funcs,
                                Duration::from_secs(1),
                            ));
                        } else if !handles.is_empty() {
                            let index = rng.random_range(0..handles.len());
                            informer.remove_event_handler(&handles.swap_remove(index));
                        }
                        // A pause between calls: each registration spawns a thread, and
                        // 100 workers spawning flat out starve the informer (module docs).
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    handles
                })
            })
            .collect();

    // Meanwhile, random events.
    let mut objs: Vec<ConfigMap> = Vec::new();
    let mut rng = rand::rng();
    for i in 0..10_000 {
        if objs.is_empty() {
            // There is always an object.
            let obj = pod(&format!("pod{i}"));
            objs.push(obj.clone());
            source.add(obj);
        }
        match rng.random_range(0..3) {
            0 => {
                let obj = pod(&format!("pod{i}"));
                objs.push(obj.clone());
                source.add(obj);
            }
            1 => {
                let index = rng.random_range(0..objs.len());
                source.modify(objs[index].clone());
            }
            _ => {
                let index = rng.random_range(0..objs.len());
                source.delete(objs.swap_remove(index));
            }
        }
        if i % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }

    // Stop the informer first, to exercise contention for it while it is closing.
    stop(cancel, task).await;
    over.store(true, Ordering::SeqCst);
    for worker in workers {
        let handles = tokio::task::spawn_blocking(move || worker.join().unwrap())
            .await
            .unwrap();
        for handle in &handles {
            informer.remove_event_handler(handle);
        }
    }
}

// client-go: TestStateSharedInformer (shared_informer_test.go)
//
// `IsStopped` is "`run` has returned".
#[tokio::test(start_paused = true)]
async fn state_shared_informer() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("state", source.clone(), Duration::from_secs(1));
    let listener = TestListener::new("listener", Duration::ZERO, &["pod1"]);
    informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period);
    assert!(
        !informer.is_started(),
        "informer already started after creation"
    );

    let (cancel, task) = run(&informer);
    assert!(
        listener.ok().await,
        "informer did not report initial objects"
    );
    assert!(
        informer.is_started(),
        "informer does not report to be started although handling events"
    );
    assert!(
        !task.is_finished(),
        "informer reports to be stopped although stop channel not closed"
    );

    cancel.cancel();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        task.is_finished(),
        "informer reports not to be stopped although stop channel closed"
    );
    task.await.unwrap();
    assert!(
        informer.is_started(),
        "informer reports not to be started after it has been started and stopped"
    );
}

// client-go: TestAddOnStoppedSharedInformer (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn add_on_stopped_shared_informer() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("stopped", source.clone(), Duration::from_secs(1));
    let listener = TestListener::new("listener", Duration::ZERO, &["pod1"]);
    let (cancel, task) = run(&informer);
    assert!(informer.wait_for_cache_sync(&cancel).await);
    stop(cancel, task).await;

    // client-go returns an error and never calls the handler.
    let registration =
        informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period);
    real_sleep(Duration::from_millis(100)).await;
    assert_eq!(
        listener.received(),
        Vec::<String>::new(),
        "stopped informer did not reject add handler"
    );
    assert!(
        registration.is_shut_down(),
        "stopped informer did not reject add handler"
    );
    assert!(!registration.has_synced(), "a refused handler never syncs");
}

// client-go: TestRemoveOnStoppedSharedInformer (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn remove_on_stopped_shared_informer() {
    let source = FakeControllerSource::new();
    source.add(pod("pod1"));
    let informer = new_informer("stopped", source.clone(), Duration::from_secs(1));
    let listener = TestListener::new("listener", Duration::ZERO, &["pod1"]);
    let handle =
        informer.add_event_handler_with_resync_period(listener.clone(), listener.resync_period);
    let (cancel, task) = run(&informer);
    cancel.cancel();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        task.is_finished(),
        "informer reports not to be stopped although stop channel closed"
    );
    task.await.unwrap();
    informer.remove_event_handler(&handle);
    assert_eq!(event_handler_count(&[&handle]).await, 0);
}

// client-go: TestRemoveWhileActive (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn remove_while_active() {
    let source = FakeControllerSource::new();
    let informer = new_informer("remove-active", source.clone(), Duration::ZERO);
    let listener = TestListener::new("listener", Duration::ZERO, &["pod1"]);
    let handle = informer.add_event_handler(listener.clone());
    let (cancel, task) = run(&informer);
    assert!(informer.wait_for_cache_sync(&cancel).await);

    source.add(pod("pod1"));
    assert!(listener.ok().await, "event did not occur");

    informer.remove_event_handler(&handle);
    assert_eq!(
        event_handler_count(&[&handle]).await,
        0,
        "handle is still active after successful remove"
    );

    source.add(pod("pod2"));
    assert!(
        listener.ok().await,
        "unexpected event occurred: {}",
        listener.describe()
    );
    stop(cancel, task).await;
}

// client-go: TestAddWhileActive (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn add_while_active() {
    let source = FakeControllerSource::new();
    let informer = new_informer("add-active", source.clone(), Duration::ZERO);
    let listener1 = TestListener::new("originalListener", Duration::ZERO, &["pod1"]);
    let listener2 = TestListener::new("listener2", Duration::ZERO, &["pod1", "pod2"]);
    let handle1 = informer.add_event_handler(listener1.clone());
    assert!(!handle1.has_synced(), "Synced before Run??");

    let (cancel, task) = run(&informer);
    source.add(pod("pod1"));
    assert!(listener1.ok().await, "events on listener1 did not occur");
    // Ten seconds of real time: the handler's thread knows nothing of paused time.
    let synced = tokio::select! {
        synced = handle1.wait_for_cache_sync(&cancel) => synced,
        () = real_sleep(Duration::from_secs(10)) => false,
    };
    assert!(synced, "Not synced 10 seconds after Run??");
    assert!(
        handle1.has_synced(),
        "Not synced after channel said we are synced??"
    );

    let handle2 = {
        // Hold listener2 back, to observe its registration before it has synced.
        let _blocked = listener2.received.lock();
        let handle2 = informer.add_event_handler(listener2.clone());
        assert!(!handle2.has_synced(), "Synced before processing anything?");
        handle2
    };

    source.add(pod("pod2"));
    assert!(
        listener2.ok().await,
        "event on listener2 did not occur: {}",
        listener2.describe()
    );
    assert!(handle2.has_synced(), "Not synced even after processing?");
    assert_eq!(
        event_handler_count(&[&handle1]).await,
        1,
        "handle1 is not active"
    );
    assert_eq!(
        event_handler_count(&[&handle2]).await,
        1,
        "handle2 is not active"
    );

    listener1.expect(&["pod1", "pod2"]);
    assert!(listener1.ok().await, "events on listener1 did not occur");
    stop(cancel, task).await;
}

// client-go: TestShutdown (shared_informer_test.go)
//
// client-go checks for leaked goroutines; here, that every handler's thread ends.
#[tokio::test(start_paused = true)]
async fn shutdown() {
    // no-context
    {
        let source = FakeControllerSource::new();
        let informer = new_informer("no-context", source.clone(), Duration::from_secs(1));
        let handler =
            informer.add_event_handler(EventHandlerFuncs::new().on_add(|_: &Arc<ConfigMap>, _| {}));
        let (cancel, task) = run(&informer);
        until("informer has synced", || informer.has_synced()).await;
        stop(cancel, task).await;
        informer.remove_event_handler(&handler);
        shut_down(&handler)
            .await
            .expect("no-context: the handler's thread ended");
    }

    // no-context-later
    {
        let source = FakeControllerSource::new();
        let informer = new_informer("no-context-later", source.clone(), Duration::from_secs(1));
        let (cancel, task) = run(&informer);
        until("informer has synced", || informer.has_synced()).await;
        let handler =
            informer.add_event_handler(EventHandlerFuncs::new().on_add(|_: &Arc<ConfigMap>, _| {}));
        informer.remove_event_handler(&handler);
        shut_down(&handler)
            .await
            .expect("no-context-later: the handler's thread ended");
        stop(cancel, task).await;
    }

    // no-run. On purpose (module docs): the handler's thread runs from registration
    // on, and ends with the informer.
    {
        let source = FakeControllerSource::new();
        let informer = new_informer("no-run", source.clone(), Duration::from_secs(1));
        let handler =
            informer.add_event_handler(EventHandlerFuncs::new().on_add(|_: &Arc<ConfigMap>, _| {}));
        drop(informer);
        shut_down(&handler)
            .await
            .expect("no-run: the handler's thread ended with the informer");
    }
}

// client-go: TestEventPanics (shared_informer_test.go)
//
// On purpose (module docs): no pause after a panic, and a panicking handler still
// syncs. The "Observed a panic" log line is not captured here.
#[tokio::test(start_paused = true)]
async fn event_panics() {
    let panicking = |calls: Arc<AtomicUsize>| {
        EventHandlerFuncs::new().on_add(move |_: &Arc<ConfigMap>, _| {
            calls.fetch_add(1, Ordering::SeqCst);
            panic!("fake panic");
        })
    };

    // simple
    {
        let source = FakeControllerSource::new();
        source.add(pod("pod1"));
        let informer = new_informer("simple", source.clone(), Duration::from_secs(1));
        let calls = Arc::new(AtomicUsize::new(0));
        let handle = informer.add_event_handler(panicking(calls.clone()));
        let (cancel, task) = run(&informer);
        until("informer has synced", || informer.has_synced()).await;
        until("handler has panicked", || calls.load(Ordering::SeqCst) == 1).await;
        // client-go's handler never syncs after a panic (kubernetes#129024); this one does.
        until("handler has synced", || handle.has_synced()).await;
        informer.remove_event_handler(&handle);
        stop(cancel, task).await;
    }

    // many
    {
        const NUM_PODS: usize = 5;
        let source = FakeControllerSource::new();
        for i in 0..NUM_PODS {
            source.add(pod(&format!("pod{}", i + 1)));
        }
        let informer = new_informer("many", source.clone(), Duration::from_secs(1));
        let calls1 = Arc::new(AtomicUsize::new(0));
        let calls2 = Arc::new(AtomicUsize::new(0));
        let handle1 = informer.add_event_handler(panicking(calls1.clone()));
        let handle2 = informer.add_event_handler(panicking(calls2.clone()));
        let start = std::time::Instant::now();
        let (cancel, task) = run(&informer);
        until("informer has synced", || informer.has_synced()).await;
        until("every add panicked in both handlers", || {
            calls1.load(Ordering::SeqCst) == NUM_PODS && calls2.load(Ordering::SeqCst) == NUM_PODS
        })
        .await;
        // client-go pauses a second after each panic: at least (NUM_PODS - 1) s.
        let pause = Duration::from_secs(u64::try_from(NUM_PODS).unwrap() - 1);
        assert!(
            start.elapsed() < pause,
            "no pause after a panic: {:?}",
            start.elapsed()
        );
        until("handlers have synced", || {
            handle1.has_synced() && handle2.has_synced()
        })
        .await;
        informer.remove_event_handler(&handle1);
        informer.remove_event_handler(&handle2);
        stop(cancel, task).await;
    }
}

/// The handler of the `RemoveEventHandler_*` tests: on its first add it says it
/// started, waits to be unblocked, then sends the object on a channel of capacity one
/// and records whether that failed (client-go's handler panics: send on closed channel).
struct Blocking {
    started: std::sync::mpsc::Sender<()>,
    unblock: Mutex<std::sync::mpsc::Receiver<()>>,
    scheduled: std::sync::mpsc::SyncSender<ConfigMap>,
    failed: Arc<AtomicBool>,
    finished: std::sync::mpsc::Sender<()>,
}

impl EventHandler<ConfigMap> for Blocking {
    fn on_add(&self, obj: &Arc<ConfigMap>, _: bool) {
        let _ = self.started.send(());
        let _ = self.unblock.lock().recv();
        if self.scheduled.try_send((**obj).clone()).is_err() {
            self.failed.store(true, Ordering::SeqCst);
        }
        let _ = self.finished.send(());
    }
}

struct BlockingTest {
    started: std::sync::mpsc::Receiver<()>,
    unblock: std::sync::mpsc::Sender<()>,
    scheduled: std::sync::mpsc::Receiver<ConfigMap>,
    failed: Arc<AtomicBool>,
    finished: std::sync::mpsc::Receiver<()>,
}

fn blocking() -> (Blocking, BlockingTest) {
    let (started_tx, started) = std::sync::mpsc::channel();
    let (unblock, unblock_rx) = std::sync::mpsc::channel();
    let (scheduled_tx, scheduled) = std::sync::mpsc::sync_channel(1);
    let (finished_tx, finished) = std::sync::mpsc::channel();
    let failed = Arc::new(AtomicBool::new(false));
    (
        Blocking {
            started: started_tx,
            unblock: Mutex::new(unblock_rx),
            scheduled: scheduled_tx,
            failed: failed.clone(),
            finished: finished_tx,
        },
        BlockingTest {
            started,
            unblock,
            scheduled,
            failed,
            finished,
        },
    )
}

/// Waits in real time for a message on `rx` (a handler's thread sends it).
async fn recv(rx: std::sync::mpsc::Receiver<()>) -> std::sync::mpsc::Receiver<()> {
    tokio::task::spawn_blocking(move || {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the handler's signal");
        rx
    })
    .await
    .unwrap()
}

// client-go: TestRemoveEventHandler_AsynchronousPanic (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn remove_event_handler_asynchronous_panic() {
    let source = FakeControllerSource::new();
    let informer = new_informer("async", source.clone(), Duration::ZERO);
    let (cancel, task) = run(&informer);
    let (handler, test) = blocking();
    let handle = informer.add_event_handler(handler);

    source.add(pod("pod1"));
    // The handler started and blocks.
    let _started = recv(test.started).await;
    // Removing it returns at once, while the handler is still running.
    informer.remove_event_handler(&handle);
    assert!(!handle.is_shut_down());
    // Close the channel the handler writes to, then unblock it.
    drop(test.scheduled);
    test.unblock.send(()).unwrap();
    let _finished = recv(test.finished).await;
    assert!(
        test.failed.load(Ordering::SeqCst),
        "Expected handler to fail (send on closed channel), but it did not"
    );
    stop(cancel, task).await;
}

// client-go: TestRemoveEventHandler_SynchronousShutdown (shared_informer_test.go)
//
// client-go's `ShutDownEventHandler` is `remove_event_handler` + `wait_shut_down`.
#[tokio::test(start_paused = true)]
async fn remove_event_handler_synchronous_shutdown() {
    let source = FakeControllerSource::new();
    let informer = new_informer("sync", source.clone(), Duration::ZERO);
    let (cancel, task) = run(&informer);
    let (handler, test) = blocking();
    let handle = informer.add_event_handler(handler);

    source.add(pod("pod1"));
    let _started = recv(test.started).await;
    // Unblock the handler so it can run and exit.
    test.unblock.send(()).unwrap();
    // Remove it and wait for it to stop.
    informer.remove_event_handler(&handle);
    shut_down(&handle).await.expect("the handler shut down");
    // Only now is it safe to close the channel.
    drop(test.scheduled);
    let _finished = recv(test.finished).await;
    assert!(
        !test.failed.load(Ordering::SeqCst),
        "Handler failed unexpectedly"
    );
    stop(cancel, task).await;
}

// client-go: TestShutDownEventHandler_Lifecycles (shared_informer_test.go)
#[tokio::test(start_paused = true)]
async fn shut_down_event_handler_lifecycles() {
    let handler = || EventHandlerFuncs::new().on_add(|_: &Arc<ConfigMap>, _| {});

    // InformerNeverStarted
    {
        let source = FakeControllerSource::new();
        let informer = new_informer("never-started", source.clone(), Duration::ZERO);
        let handle = informer.add_event_handler(handler());
        shut_down_event_handler(&informer, &handle)
            .await
            .expect("Failed to shutdown event handler");
    }

    // StartedThenAddedThenShutDown
    {
        let source = FakeControllerSource::new();
        let informer = new_informer("started-added", source.clone(), Duration::ZERO);
        let (cancel, task) = run(&informer);
        let synced = tokio::time::timeout(
            Duration::from_secs(2),
            informer.wait_for_cache_sync(&cancel),
        );
        assert_eq!(synced.await, Ok(true), "Informer did not sync");
        let handle = informer.add_event_handler(handler());
        shut_down_event_handler(&informer, &handle)
            .await
            .expect("Failed to shutdown event handler");
        stop(cancel, task).await;
    }

    // AddedThenStartedThenShutDown
    {
        let source = FakeControllerSource::new();
        let informer = new_informer("added-started", source.clone(), Duration::ZERO);
        let handle = informer.add_event_handler(handler());
        let (cancel, task) = run(&informer);
        let synced = tokio::time::timeout(
            Duration::from_secs(2),
            informer.wait_for_cache_sync(&cancel),
        );
        assert_eq!(synced.await, Ok(true), "Informer did not sync");
        shut_down_event_handler(&informer, &handle)
            .await
            .expect("Failed to shutdown event handler");
        stop(cancel, task).await;
    }
}
