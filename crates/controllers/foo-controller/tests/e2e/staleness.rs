//! The staleness guard on the real control plane (issue 15): a Foo controller whose
//! Deployment informer lags by a second acts on a stale cache without the guard, and
//! does not with it.
//!
//! The lag: the controller's client delays the body of every Deployment watch by
//! [`LATENCY`] ([`testenv::inject::WatchLatency`], a client-side layer: its writes are
//! not delayed). Each Foo is created while the controller runs, so its first sync
//! creates the Deployment and writes the Foo's status. The status write comes back
//! at once through the (undelayed) Foo watch and queues the Foo again; that second
//! sync runs milliseconds later, long before the Deployment reaches the lagging cache:
//!
//! * guard off (client-go's behaviour): the second sync finds no Deployment and POSTs
//!   it again: `409 AlreadyExists`, an error, a retry with backoff, and again, until
//!   the cache catches up (several 409s per Foo);
//! * guard on (the default): the second sync waits until the Deployment informer has
//!   seen the create, then finds the Deployment: no 409 on Deployment creates, no
//!   Conflict on Foo status.
//!
//! Every response the controller gets is recorded ([`testenv::inject::ResponseLog`]);
//! the counts are taken after the controller has stopped, so no request is missed.
//! Both runs must converge: every Foo has exactly one Deployment, controlled by it,
//! and a status.

use std::collections::BTreeMap;

use kube::api::ListParams;
use testenv::inject::{LoggedResponse, ResponseLog, WatchLatency};

use super::*;

/// How far the controller's Deployment informer lags behind the API server. Far above
/// the milliseconds between a sync and the next one of the same Foo, so the scenario
/// happens for every Foo; below the guard's default bound (2 s), so with the guard
/// the second sync waits instead of requeueing.
const LATENCY: Duration = Duration::from_secs(1);

/// Foos per run.
const FOOS: usize = 12;

/// What the controller's client saw in one run.
#[derive(Debug)]
struct Counts {
    /// `409` answers to `POST .../deployments` (AlreadyExists: a duplicate create).
    duplicate_creates: usize,
    /// `409` answers to `PUT .../foos/<name>/status` (Conflict: a stale Foo).
    status_conflicts: usize,
    /// Successful Deployment creates.
    creates: usize,
    /// Every write (POST, PUT, PATCH, DELETE), Events included.
    writes: usize,
}

fn is_conflict(r: &LoggedResponse) -> bool {
    r.status.as_u16() == 409
}

/// Runs the Foo controller, its Deployment watch [`LATENCY`] behind, on [`FOOS`] Foos
/// created after it started; waits until every Foo converged, stops the controller,
/// checks the end state and returns what the controller's client saw.
async fn run_scenario(prefix: &str, options: &LoopOptions) -> anyhow::Result<Counts> {
    let started = std::time::Instant::now();
    let env = TestEnv::with_prefix(prefix).await?;
    install_crds(env.client()).await?;

    let log = ResponseLog::new();
    let lagging = kube::client::ClientBuilder::try_from(env.config().clone())?
        .with_layer(&WatchLatency::new("deployments", LATENCY))
        .with_layer(&log)
        .build();
    let controller = RunningController::start_with(lagging, env.namespace(), options);

    let mut foos = BTreeMap::new();
    for i in 0..FOOS {
        let name = format!("stale-{i:02}");
        let foo = create_foo(&env, &name, &name, 1).await?;
        foos.insert(name, foo);
    }

    // Converged: every Foo has its Deployment, controlled by it, and a status. Read
    // with the test's own client, which does not lag.
    let foo_api: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    let deployment_api: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    wait_for(
        &format!("{FOOS} Foos with an owned Deployment and a status"),
        TIMEOUT,
        || async {
            let deployments = deployment_api.list(&ListParams::default()).await?;
            let with_status = foo_api
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|f| f.status.is_some())
                .count();
            let owned = foos
                .iter()
                .filter(|(name, foo)| {
                    deployments.items.iter().any(|d| {
                        d.metadata.name.as_deref() == Some(name.as_str())
                            && controller::is_controlled_by(d, *foo)
                    })
                })
                .count();
            Ok::<_, kube::Error>(Check::ready_if(
                owned == FOOS && with_status == FOOS,
                (),
                format!("{owned} owned Deployments, {with_status} statuses"),
            ))
        },
    )
    .await?;
    // Stop (the workers finish what they hold) before counting: nothing is in flight.
    controller.stop().await;

    // Exactly one Deployment per Foo, and nothing else.
    let deployments = deployment_api.list(&ListParams::default()).await?.items;
    let mut names: Vec<_> = deployments
        .iter()
        .filter_map(|d| d.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, foos.keys().cloned().collect::<Vec<_>>());
    for d in &deployments {
        let foo = &foos[d.metadata.name.as_deref().unwrap_or_default()];
        assert!(controller::is_controlled_by(d, foo), "{:?}", d.metadata);
    }

    let is_deployment_create =
        |r: &LoggedResponse| r.method.as_str() == "POST" && r.resource() == Some("deployments");
    let counts = Counts {
        duplicate_creates: log.count(|r| is_deployment_create(r) && is_conflict(r)),
        status_conflicts: log.count(|r| {
            r.method.as_str() == "PUT"
                && r.resource() == Some("foos")
                && r.subresource() == Some("status")
                && is_conflict(r)
        }),
        creates: log.count(|r| is_deployment_create(r) && r.status.is_success()),
        writes: log.count(LoggedResponse::is_write),
    };
    println!("{prefix}: {counts:?} in {:?}", started.elapsed());
    // The Deployments were written on the process's wire (gentype): protobuf bodies by
    // default, JSON in the rerun with KUBE_API_CONTENT_TYPE=application/json.
    let wire = gentype::Wire::process_default().content_type();
    for create in log.entries().iter().filter(|r| is_deployment_create(r)) {
        let sent = create.request_content_type.as_deref().unwrap_or_default();
        assert_eq!(
            sent.split(';').next(),
            Some(wire),
            "{create}: body sent as {sent}"
        );
    }
    // Each Foo: its Deployment created, its status written (the log sees every write).
    assert!(counts.writes >= counts.creates + FOOS, "{counts:?}");
    Ok(counts)
}

#[tokio::test]
async fn without_the_guard_a_lagging_deployment_cache_makes_duplicate_creates() -> anyhow::Result<()>
{
    let off = LoopOptions {
        freshness_timeout: Duration::ZERO,
        ..LoopOptions::default()
    };
    let counts = run_scenario("stale-guard-off", &off).await?;
    // The scenario provokes acting on a stale cache: a second sync re-creates a
    // Deployment the API server already has.
    assert!(counts.duplicate_creates >= 1, "{counts:?}");
    assert_eq!(counts.creates, FOOS, "{counts:?}");
    Ok(())
}

#[tokio::test]
async fn with_the_guard_a_lagging_deployment_cache_makes_no_duplicate_creates_or_conflicts()
-> anyhow::Result<()> {
    let counts = run_scenario("stale-guard-on", &LoopOptions::default()).await?;
    assert_eq!(counts.duplicate_creates, 0, "{counts:?}");
    assert_eq!(counts.status_conflicts, 0, "{counts:?}");
    assert_eq!(counts.creates, FOOS, "{counts:?}");
    Ok(())
}
