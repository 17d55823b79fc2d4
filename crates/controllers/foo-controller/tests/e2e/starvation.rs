//! Issue 15, "Starvation": after a restart, a Foo created while the controller is
//! catching up on every Foo that already exists must not wait for the whole catch-up.
//!
//! [`OLD_FOOS`] Foos exist without Deployments when the controller starts (as after an
//! outage). Its client is throttled to the binaries' default rate ([`QPS`]), so syncing
//! them all takes about 20 s. Right after its caches have synced, a new Foo is created:
//! it reaches the controller as a watch event (checked: its add is not part of the
//! initial list), while the initial list's keys are still waiting in the queue. We list
//! the Deployments every few milliseconds, and in the first list that has the new
//! Foo's Deployment, count the old Foos that already have theirs:
//!
//! * priority queue (the default): the initial list's adds wait at low priority, the
//!   new Foo's add at the default priority passes them, so fewer than half of the old
//!   Foos are done (in practice a handful: those the workers took before it arrived);
//! * FIFO (`priority_queue: false`, client-go's queue): the new Foo waits behind every
//!   old one, so all of them are done first but the few the workers still hold.
//!
//! Both then finish the catch-up: low-priority keys are delayed, not dropped.
//!
//! The bounds hold whatever the machine's speed: they depend on the order the queue
//! hands keys out, not on timings (the throttle only makes the catch-up long enough for
//! the new Foo to arrive in the middle of it).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use cache::{EventHandlerFuncs, InformerOptions};
use kube::api::ListParams;
use manager::ClientArgs;
use tokio::task::JoinSet;

use super::*;

/// Foos that exist before the controller starts.
const OLD_FOOS: usize = 150;
/// The controller's client-side rate limit (the binaries' `--kube-api-qps` default):
/// with three requests per Foo (create the Deployment, write the status, an Event),
/// the catch-up takes about `3 * OLD_FOOS / QPS` = 22 s.
const QPS: f32 = manager::throttle::DEFAULT_QPS;
/// Its burst (the binaries' `--kube-api-burst` default).
const BURST: u32 = manager::throttle::DEFAULT_BURST;
/// Workers syncing Foos (the binaries' default).
const WORKERS: usize = 2;
/// The Foo created after the controller has synced, and its Deployment.
const NEW_FOO: &str = "new";

fn old_name(i: usize) -> String {
    format!("old-{i:03}")
}

/// What one run saw.
#[derive(Debug)]
struct Outcome {
    /// Old Foos with a Deployment in the first list that had the new Foo's.
    old_done_when_new_appeared: usize,
    /// Keys waiting in the queue when the new Foo was created.
    queued_when_created: usize,
    /// From creating the new Foo to seeing its Deployment.
    new_foo_latency: Duration,
    /// From the caches' sync to every Foo having a Deployment.
    catch_up: Duration,
    /// Requests the throttle made wait.
    throttled_requests: u64,
}

/// Creates the old Foos, each asking for a Deployment of its own name, 10 at a time.
async fn create_old_foos(env: &TestEnv) -> anyhow::Result<()> {
    const LANES: usize = 10;
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    let mut lanes = JoinSet::new();
    for lane in 0..LANES {
        let foos = foos.clone();
        lanes.spawn(async move {
            for i in (lane..OLD_FOOS).step_by(LANES) {
                let name = old_name(i);
                let foo = Foo::new(&name, FooSpec::new(&name, 1));
                foos.create(&PostParams::default(), &foo).await?;
            }
            Ok::<_, kube::Error>(())
        });
    }
    while let Some(lane) = lanes.join_next().await {
        lane??;
    }
    Ok(())
}

/// The names of the Deployments in the namespace (metadata only: the poll is cheap).
async fn deployment_names(env: &TestEnv) -> anyhow::Result<Vec<String>> {
    let api: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    Ok(api
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|d| d.metadata.name)
        .collect())
}

/// The scenario of the module docs, with the controller's queue chosen by `options`.
async fn run_scenario(prefix: &str, options: &LoopOptions) -> anyhow::Result<Outcome> {
    let env = TestEnv::with_prefix(prefix).await?;
    install_crds(env.client()).await?;
    create_old_foos(&env).await?;
    anyhow::ensure!(deployment_names(&env).await?.is_empty());

    // The controller, as the binary builds it: one throttled client for everything
    // (informers, writes, Events).
    let args = ClientArgs {
        kube_api_qps: QPS,
        kube_api_burst: BURST,
        ..ClientArgs::default()
    };
    let (client, throttle) = args.throttled_client(env.config().clone())?;
    let ns = env.namespace();
    let cancel = CancellationToken::new();
    let factory = SharedInformerFactory::new(client.clone(), Duration::from_secs(30));
    let events = EventBroadcaster::new(BroadcasterOptions::default());
    events.start_recording_to_sink(client.clone())?;
    let recorder = events.new_recorder(CONTROLLER_NAME, "e2e");
    let controller = Arc::new(foo_controller::new_controller(
        client.clone(),
        &factory,
        recorder,
        FooControllerOptions {
            namespace: Some(ns.to_string()),
            loop_options: *options,
            trim_deployment_cache: true,
            shard: None,
        },
    ));
    // A second handler on the controller's Foo informer (the factory hands out the same
    // one): counts the initial list's adds and tells how the new Foo arrived.
    const NOT_SEEN: usize = 0;
    const IN_INITIAL_LIST: usize = 1;
    const WATCHED: usize = 2;
    let initial_adds = Arc::new(AtomicUsize::new(0));
    let new_foo_arrival = Arc::new(AtomicUsize::new(NOT_SEEN));
    let foo_informer = factory.informer_for_api::<Foo>(
        Api::namespaced(client.clone(), ns),
        InformerOptions::default(),
    );
    foo_informer.add_event_handler(EventHandlerFuncs::new().on_add({
        let (initial_adds, new_foo_arrival) = (initial_adds.clone(), new_foo_arrival.clone());
        move |foo: &Arc<Foo>, is_in_initial_list| {
            if is_in_initial_list {
                initial_adds.fetch_add(1, Ordering::SeqCst);
            }
            if foo.metadata.name.as_deref() == Some(NEW_FOO) {
                let how = if is_in_initial_list {
                    IN_INITIAL_LIST
                } else {
                    WATCHED
                };
                new_foo_arrival.store(how, Ordering::SeqCst);
            }
        }
    }));
    factory.start(&cancel);
    let run = tokio::spawn({
        let (controller, cancel) = (controller.clone(), cancel.clone());
        async move { controller.run(WORKERS, cancel).await }
    });

    // Synced: both handlers have processed their informer's initial list, so a Foo
    // created from now on can only arrive through the watch.
    let start = Instant::now();
    while !controller.has_synced() {
        anyhow::ensure!(start.elapsed() < TIMEOUT, "the controller did not sync");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let synced = Instant::now();
    let queued_when_created = controller.queue().len();
    let created = Instant::now();
    create_foo(&env, NEW_FOO, NEW_FOO, 1).await?;

    // The first list holding the new Foo's Deployment: how many old ones are there too.
    let (old_done_when_new_appeared, new_foo_latency) = loop {
        let names = deployment_names(&env).await?;
        if names.iter().any(|n| n == NEW_FOO) {
            let old = names.iter().filter(|n| n.starts_with("old-")).count();
            break (old, created.elapsed());
        }
        anyhow::ensure!(
            created.elapsed() < TIMEOUT,
            "no Deployment {NEW_FOO} after {TIMEOUT:?} ({} old ones)",
            names.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    // Every Foo gets its Deployment in the end, whatever its priority.
    wait_for("every Foo has a Deployment", TIMEOUT, || async {
        let n = deployment_names(&env).await?.len();
        Ok::<_, anyhow::Error>(Check::ready_if(
            n == OLD_FOOS + 1,
            (),
            format!("{n} of {} Deployments", OLD_FOOS + 1),
        ))
    })
    .await?;
    let catch_up = synced.elapsed();

    cancel.cancel();
    run.await??;
    events.shutdown(Duration::from_secs(5)).await;

    assert_eq!(
        initial_adds.load(Ordering::SeqCst),
        OLD_FOOS,
        "the initial list holds exactly the old Foos"
    );
    assert_eq!(
        new_foo_arrival.load(Ordering::SeqCst),
        WATCHED,
        "the new Foo must arrive as a watch event, not in the initial list"
    );
    let outcome = Outcome {
        old_done_when_new_appeared,
        queued_when_created,
        new_foo_latency,
        catch_up,
        throttled_requests: throttle.throttled(),
    };
    eprintln!(
        "starvation, {} ({OLD_FOOS} old Foos, {QPS} QPS, burst {BURST}): {} keys queued when \
         the new Foo was created; its Deployment after {:?}, with {} old Foos done; \
         catch-up {:?} after the sync; {} requests throttled",
        if options.priority_queue {
            "priority queue"
        } else {
            "FIFO"
        },
        outcome.queued_when_created,
        outcome.new_foo_latency,
        outcome.old_done_when_new_appeared,
        outcome.catch_up,
        outcome.throttled_requests,
    );
    Ok(outcome)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_queue_syncs_a_new_foo_before_the_restart_catch_up() -> anyhow::Result<()> {
    let outcome = run_scenario("starve-prio", &LoopOptions::default()).await?;
    assert!(
        outcome.old_done_when_new_appeared < OLD_FOOS / 2,
        "the new Foo waited for {} of {OLD_FOOS} old Foos: {outcome:?}",
        outcome.old_done_when_new_appeared
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_queue_makes_a_new_foo_wait_for_the_whole_catch_up() -> anyhow::Result<()> {
    let options = LoopOptions {
        priority_queue: false,
        ..LoopOptions::default()
    };
    let outcome = run_scenario("starve-fifo", &options).await?;
    // Every old key was ahead of it; only those the other workers still held when a
    // worker took the new Foo may lack their Deployment (and a small margin).
    assert!(
        outcome.old_done_when_new_appeared >= OLD_FOOS - WORKERS - 3,
        "only {} of {OLD_FOOS} old Foos were synced before the new one: {outcome:?}",
        outcome.old_done_when_new_appeared
    );
    Ok(())
}
