//! [`Manager`](super::Manager)'s unit tests: its flags, the Events API it picks, how
//! [`run`](super::Manager::run) starts and stops what was added, and what it hands its
//! controllers ([`controller_managed_by`](super::Manager::controller_managed_by)).

use super::*;
use clap::{CommandFactory, Parser};
use controller::testing::FakeApi;
use k8s_openapi::api::core::v1::ConfigMap;
use record::EventType;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    manager: ManagerArgs,
}

#[test]
fn events_api_flag_defaults_to_events_k8s_io() {
    let cli = Cli::try_parse_from(["x"]).unwrap();
    assert_eq!(cli.manager.events_api, EventsApi::EventsV1);
    for (value, api) in [
        ("core/v1", EventsApi::CoreV1),
        ("events.k8s.io/v1", EventsApi::EventsV1),
    ] {
        let cli = Cli::try_parse_from(["x", "--events-api", value]).unwrap();
        assert_eq!(cli.manager.events_api, api);
        assert_eq!(api.to_string(), value);
    }
    let err = Cli::try_parse_from(["x", "--events-api", "v1"])
        .err()
        .expect("rejected")
        .to_string();
    assert!(
        err.contains("events.k8s.io/v1") && err.contains("core/v1"),
        "{err}"
    );
    // The environment fallback, as every other flag has.
    let command = Cli::command();
    let arg = command
        .get_arguments()
        .find(|a| a.get_id() == "events_api")
        .unwrap();
    assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some("EVENTS_API"));
}

#[test]
fn the_pipeline_is_recorded_only_when_its_view_is_served() {
    for (args, served) in [(&["x"][..], false), (&["x", "--debug-pipeline"][..], true)] {
        let cli = Cli::try_parse_from(args).unwrap();
        let trace = pipeline::Trace::new(8);
        record_pipeline_if_served(&cli.manager.serving, &trace);
        assert_eq!(trace.is_enabled(), served, "{args:?}");
        // PIPELINE_TRACE=off (a trace turned off before) stays off.
        trace.set_enabled(false);
        record_pipeline_if_served(&cli.manager.serving, &trace);
        assert!(!trace.is_enabled());
    }
}

/// Records one Event through the pipeline `api` selects and returns the
/// request the API saw.
async fn first_event_write(api: EventsApi) -> controller::testing::ApiAction {
    let fake = FakeApi::new();
    let (events, recorder) = Events::start(api, &fake.client(), "demo-controller").unwrap();
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("cm".into());
    cm.metadata.namespace = Some("ns".into());
    recorder.event(&cm, EventType::Normal, "Synced", "synced");
    assert!(events.shutdown(Duration::from_secs(5)).await);
    let actions = fake.actions();
    assert_eq!(actions.len(), 1, "{actions:?}");
    actions[0].clone()
}

#[tokio::test]
async fn the_flag_picks_the_events_api_behind_the_one_recorder() {
    let write = first_event_write(EventsApi::EventsV1).await;
    assert_eq!(
        (
            write.verb.as_str(),
            write.group.as_str(),
            write.version.as_str()
        ),
        ("create", "events.k8s.io", "v1")
    );
    let body = write.body.unwrap();
    assert_eq!(body["reportingController"], "demo-controller");
    assert_eq!(body["action"], "Synced");
    assert_eq!(body["note"], "synced");

    let write = first_event_write(EventsApi::CoreV1).await;
    assert_eq!(
        (
            write.verb.as_str(),
            write.group.as_str(),
            write.version.as_str()
        ),
        ("create", "", "v1")
    );
    let body = write.body.unwrap();
    assert_eq!(body["source"]["component"], "demo-controller");
    assert_eq!(body["message"], "synced");
}

// --- What `add` and `run` do with runnables -------------------------------------------

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use leaderelection::LeaderElectionRecord;
use leaderelection::testing::MemoryLease;
use tokio::time::Instant;

/// What the probes did, in order, and when (paused time: exact).
#[derive(Clone, Default)]
struct Journal(Arc<Mutex<Vec<(String, Instant)>>>);

impl Journal {
    fn record(&self, entry: String) {
        self.0.lock().unwrap().push((entry, Instant::now()));
    }
    fn entries(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(e, _)| e.clone())
            .collect()
    }
    fn when(&self, entry: &str) -> Option<Instant> {
        let entries = self.0.lock().unwrap();
        entries.iter().find(|(e, _)| e == entry).map(|(_, at)| *at)
    }
    async fn wait_for(&self, entry: &str) {
        while self.when(entry).is_none() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A runnable that journals "<name> started", then "<name> stopped" when told to stop
/// (its drain), and "<name> dropped" when its future goes (drained or not).
struct Probe {
    name: &'static str,
    leader: bool,
    fail: bool,
    ready: Arc<AtomicBool>,
    journal: Journal,
    /// Journals the Lease's holder when it starts and when it stops.
    lease: Option<MemoryLease>,
}

impl Probe {
    fn new(name: &'static str, leader: bool, journal: &Journal) -> Self {
        Self {
            name,
            leader,
            fail: false,
            ready: Arc::default(),
            journal: journal.clone(),
            lease: None,
        }
    }

    fn holder(&self) -> String {
        let holder = self.lease.as_ref().and_then(MemoryLease::get);
        holder.map(|l| l.record.holder_identity).unwrap_or_default()
    }
}

struct OnDrop(Journal, String);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.record(self.1.clone());
    }
}

impl Runnable for Probe {
    type Error = std::io::Error;

    fn name(&self) -> &str {
        self.name
    }

    async fn start(&self, stop: CancellationToken) -> Result<(), std::io::Error> {
        let _dropped = OnDrop(self.journal.clone(), format!("{} dropped", self.name));
        self.journal.record(format!("{} started", self.name));
        if self.lease.is_some() {
            self.journal
                .record(format!("{} started under {}", self.name, self.holder()));
        }
        if self.fail {
            return Err(std::io::Error::other("boom"));
        }
        stop.cancelled().await;
        // A drain that takes a while, as a controller's workers finishing their keys.
        tokio::time::sleep(Duration::from_millis(100)).await;
        if self.lease.is_some() {
            self.journal
                .record(format!("{} drained under {}", self.name, self.holder()));
        }
        self.journal.record(format!("{} stopped", self.name));
        Ok(())
    }

    fn need_leader_election(&self) -> bool {
        self.leader
    }

    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
    }
}

/// A manager on a fake API, serving nothing; `flags` are added to the command line.
fn test_manager(flags: &[&str]) -> Manager {
    let mut args = vec![
        "x",
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
    ];
    args.extend_from_slice(flags);
    let cli = Cli::try_parse_from(args).unwrap();
    Manager::with_client(
        "demo-controller".into(),
        cli.manager,
        FakeApi::new().client(),
        Arc::default(),
    )
    .unwrap()
}

/// Short leader election timings (paused time makes them exact anyway).
const LEADER_ELECTION: [&str; 3] = [
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=2s",
    "--leader-elect-retry-period=500ms",
];

#[tokio::test(start_paused = true)]
async fn add_serves_each_runnables_readiness_under_its_name() {
    let journal = Journal::default();
    let mut manager = test_manager(&[]);
    let probe = Probe::new("probe", true, &journal);
    let ready = Arc::clone(&probe.ready);
    manager.add(probe).unwrap();

    assert_eq!(manager.health().readyz(Some("probe"), false).status, 503);
    assert_eq!(manager.health().readyz(None, false).status, 503);
    ready.store(true, Ordering::SeqCst);
    assert_eq!(manager.health().readyz(Some("probe"), false).status, 200);
    assert_eq!(manager.health().readyz(None, false).status, 200);

    // The name is the check's: two runnables cannot share one.
    let err = manager
        .add(Probe::new("probe", false, &journal))
        .expect_err("duplicate name");
    assert!(matches!(err, ManagerError::Serving(_)), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn without_leader_election_every_runnable_starts_at_once_and_drains_on_shutdown() {
    let journal = Journal::default();
    let mut manager = test_manager(&[]);
    manager
        .add(Probe::new("controller", true, &journal))
        .unwrap();
    manager
        .add(Probe::new("heartbeat", false, &journal))
        .unwrap();
    // Nothing runs before `run`.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(journal.entries().is_empty());

    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    journal.wait_for("controller started").await;
    journal.wait_for("heartbeat started").await;
    assert_eq!(
        journal.when("controller started"),
        journal.when("heartbeat started")
    );

    shutdown.cancel();
    run.await.unwrap().unwrap();
    let entries = journal.entries();
    for name in ["controller", "heartbeat"] {
        assert!(entries.contains(&format!("{name} stopped")), "{entries:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_first_runnable_to_fail_stops_the_others_and_is_the_error() {
    let journal = Journal::default();
    let mut manager = test_manager(&[]);
    manager.add(Probe::new("steady", true, &journal)).unwrap();
    manager
        .add(Probe {
            fail: true,
            ..Probe::new("broken", true, &journal)
        })
        .unwrap();

    // Never told to shut down: the failure ends the run.
    let err = manager
        .run(CancellationToken::new())
        .await
        .expect_err("broken fails");
    match &err {
        ManagerError::Runnable { name, source } => {
            assert_eq!(name, "broken");
            assert_eq!(source.to_string(), "boom");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.to_string(), "broken failed");
    assert!(journal.entries().contains(&"steady stopped".to_string()));
}

/// A Lease another replica holds for one more second, as this replica sees it.
fn lease_held_by_another() -> MemoryLease {
    let lease = MemoryLease::new("demo-controller");
    lease.set(LeaderElectionRecord {
        holder_identity: "other".into(),
        lease_duration_seconds: 1,
        leader_transitions: 0,
        ..LeaderElectionRecord::default()
    });
    lease
}

#[tokio::test(start_paused = true)]
async fn under_leader_election_controllers_start_when_leading_and_drain_before_the_release() {
    let journal = Journal::default();
    let lease = lease_held_by_another();
    let mut manager = test_manager(&LEADER_ELECTION);
    manager
        .add(Probe {
            lease: Some(lease.clone()),
            ..Probe::new("controller", true, &journal)
        })
        .unwrap();
    manager
        .add(Probe::new("heartbeat", false, &journal))
        .unwrap();

    let shutdown = CancellationToken::new();
    let lock: Arc<dyn ResourceLock> = Arc::new(lease.lock("me"));
    let run = tokio::spawn(manager.run_with_lock(shutdown.clone(), Some(lock)));
    journal.wait_for("controller started").await;
    // The standby ran what needs no leadership at once, and the controller only once
    // the other replica's Lease had expired (a second after it was first seen) and
    // this replica held it.
    let waited =
        journal.when("controller started").unwrap() - journal.when("heartbeat started").unwrap();
    assert!(waited >= Duration::from_secs(1), "{waited:?}");
    assert!(
        journal
            .entries()
            .contains(&"controller started under me".to_string())
    );

    shutdown.cancel();
    run.await.unwrap().unwrap();
    // Drained while still holding the Lease, released after, then the rest stopped.
    let entries = journal.entries();
    let at = |entry: &str| {
        entries
            .iter()
            .position(|e| e == entry)
            .unwrap_or_else(|| panic!("no {entry:?} in {entries:?}"))
    };
    at("controller drained under me");
    assert!(
        at("controller stopped") < at("heartbeat stopped"),
        "{entries:?}"
    );
    assert_eq!(lease.get().unwrap().record.holder_identity, "");
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_drops_the_controllers_mid_work_and_ends_the_run() {
    let journal = Journal::default();
    let lease = MemoryLease::new("demo-controller");
    let mut manager = test_manager(&LEADER_ELECTION);
    manager
        .add(Probe::new("controller", true, &journal))
        .unwrap();
    manager
        .add(Probe::new("heartbeat", false, &journal))
        .unwrap();

    let lock = lease.lock("me");
    let shared: Arc<dyn ResourceLock> = Arc::new(lock.clone());
    let run = tokio::spawn(manager.run_with_lock(CancellationToken::new(), Some(shared)));
    journal.wait_for("controller started").await;
    // The API server becomes unreachable: renewals fail past the renew deadline.
    lock.set_failing(true);

    let err = run.await.unwrap().expect_err("lost the lease");
    assert!(matches!(err, ManagerError::LostLeadership), "{err:?}");
    let entries = journal.entries();
    assert!(
        entries.contains(&"controller dropped".to_string()),
        "{entries:?}"
    );
    assert!(
        !entries.contains(&"controller stopped".to_string()),
        "{entries:?}"
    );
    // What runs on every replica still drains.
    assert!(
        entries.contains(&"heartbeat stopped".to_string()),
        "{entries:?}"
    );
}

// --- What the manager hands its controllers -------------------------------------------

/// Reconciles nothing: the tests below look at the wiring only.
struct Noop;

impl builder::Reconciler for Noop {
    type Error = std::convert::Infallible;
    async fn reconcile(&self, _: &builder::Request) -> Result<controller::Action, Self::Error> {
        Ok(controller::Action::Done)
    }
}

#[tokio::test]
async fn controller_managed_by_carries_namespace_workers_loop_options_and_shard() {
    let manager = test_manager(&[
        "--namespace=web",
        "--workers=4",
        "--freshness-timeout=3s",
        "--fifo-queue",
        "--client-go-backoff",
        "--shard-group=webs",
    ]);
    let loop_options = controller::LoopOptions {
        freshness_timeout: Duration::from_secs(3),
        ..controller::LoopOptions::client_go()
    };
    // As one value, for hand-wired controllers.
    let options = manager.controller_options();
    assert_eq!(options.namespace.as_deref(), Some("web"));
    assert_eq!(options.workers, 4);
    assert_eq!(options.loop_options, loop_options);
    let group = options.shard.map(|shard| shard.config().group.clone());
    assert_eq!(group.as_deref(), Some("webs"));

    // Set on the builder, and the staleness guard made from them, for the reconciler.
    let builder = manager.controller_managed_by("webs");
    let described = format!("{builder:?}");
    assert!(
        described.contains(&format!("{loop_options:?}")),
        "{described}"
    );
    let guard = builder.freshness_guard().map(|guard| guard.timeout());
    assert_eq!(guard, Some(Duration::from_secs(3)));
    let built = builder.for_::<ConfigMap>().complete(Noop);
    assert_eq!(built.workers(), 4);
    // Sharded, in the namespace: the For informer caches this replica's slice of "web".
    let informers: Vec<String> = manager
        .factory()
        .sharded_informers()
        .into_iter()
        .map(|informer| informer.name)
        .collect();
    assert!(
        matches!(&informers[..], [name] if name.starts_with("ConfigMap") && name.contains("web")),
        "{informers:?}"
    );
    let controller = format!("{:?}", built.controller());
    assert!(controller.contains("gated: true"), "{controller}");
    // client-go's backoff: a key rate-limited twice at once counts two failures.
    let key = "web/a".to_string();
    built.queue().add_rate_limited(key.clone());
    built.queue().add_rate_limited(key.clone());
    assert_eq!(built.queue().num_requeues(&key), 2);
}

#[tokio::test]
async fn controller_managed_by_without_flags_gets_the_defaults() {
    let manager = test_manager(&[]);
    let options = manager.controller_options();
    assert_eq!(options.namespace, None);
    assert_eq!(options.workers, 2); // --workers' default
    assert_eq!(options.loop_options, controller::LoopOptions::default());
    assert!(options.shard.is_none());
    let builder = manager.controller_managed_by("webs");
    let guard = builder.freshness_guard().map(|guard| guard.timeout());
    assert_eq!(guard, Some(controller::DEFAULT_FRESHNESS_TIMEOUT));
    let built = builder.for_::<ConfigMap>().complete(Noop);
    assert_eq!(built.workers(), 2);
    assert!(manager.factory().sharded_informers().is_empty());
    let controller = format!("{:?}", built.controller());
    assert!(controller.contains("gated: false"), "{controller}");
}
