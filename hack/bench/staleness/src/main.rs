//! Staleness benchmark (issue 15): the Foo controller acting on a lagging cache, with
//! and without the staleness guard, on a real control plane.
//!
//! ```text
//! staleness-bench --kubeconfig KUBECONFIG --namespace stale-1 --foos 200 \
//!     --latency-ms 1000 --freshness-timeout-ms 2000     # guard on (0: off)
//! ```
//!
//! One run per process (the metrics registry is process-wide); it prints one JSON line.
//! What a run does:
//!
//! 1. Creates the namespace (it must not exist).
//! 2. Starts the Foo controller in this process as `sample-controller` wires it
//!    (`foo_controller::new_controller` on a `SharedInformerFactory` stripping
//!    managedFields, the binaries' HTTP/2 client, events.k8s.io/v1 Events, `--workers`
//!    workers, metrics installed), watching only that namespace. Its client delays the
//!    body of every Deployment watch by `--latency-ms` (testenv's `WatchLatency`: its
//!    Deployment informer lags, its writes do not) and logs every response
//!    (`ResponseLog`). Client-side throttling: `--qps` (0, the default, is off).
//! 3. Once the controller's informers have synced, creates `--foos` Foos
//!    (`foo-00000`..., `spec.deploymentName` = the Foo's name, 1 replica),
//!    `--create-concurrency` at a time or one every `--create-interval-ms`, with a
//!    separate client (no latency).
//! 4. Converged: every Foo has a Deployment of its name controlled by it and a status,
//!    as seen by informers of the separate client (checked every 10 ms); `converge_ms`
//!    counts from the first create.
//! 5. Waits until the controller's client has been quiet for `--quiet-ms` (the last
//!    retries and Event writes), stops the controller (its workers finish what they
//!    hold), then counts.
//!
//! Reported: `duplicate_creates` (409 on `POST .../deployments`, AlreadyExists),
//! `status_conflicts` (409 on `PUT .../foos/<name>/status`), `creates` and
//! `status_writes` that succeeded, `writes` (every POST/PUT/PATCH/DELETE, Events
//! included) and `writes_by` (per method, resource and status), `requests` (every
//! response), `freshness` (`controller_freshness_checks_total` per result) with the
//! total and mean wait, `reconciles` (`controller_runtime_reconcile_total` per
//! result), and `last_response_ms` (when the controller's client got its last
//! response, from the first create).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use cache::{InformerOptions, Selector, SharedInformerFactory};
use clap::Parser;
use controller::LoopOptions;
use foo_controller::{CONTROLLER_NAME, FooControllerOptions};
use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use manager::ThrottleLayer;
use record::{BroadcasterOptions, EventBroadcaster};
use serde_json::json;
use testenv::inject::{LoggedResponse, ResponseLog, WatchLatency};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(
    about = "The Foo controller on a lagging Deployment cache: duplicate creates and conflicts, staleness guard on or off"
)]
struct Cli {
    /// The control plane's admin kubeconfig.
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: PathBuf,
    /// A namespace to create for this run.
    #[arg(long)]
    namespace: String,
    /// Foos to create.
    #[arg(long, default_value_t = 200)]
    foos: usize,
    /// How far the controller's Deployment watches lag (ms).
    #[arg(long, default_value_t = 1000)]
    latency_ms: u64,
    /// The staleness guard's bound (ms, `--freshness-timeout`); 0 turns it off.
    #[arg(long, default_value_t = 2000)]
    freshness_timeout_ms: u64,
    /// Workers (`--workers`).
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Client-side throttle (`--kube-api-qps`); 0 is off.
    #[arg(long, default_value_t = 0.0)]
    qps: f32,
    /// `--kube-api-burst`.
    #[arg(long, default_value_t = 30)]
    burst: u32,
    /// Foo creates in flight.
    #[arg(long, default_value_t = 16)]
    create_concurrency: usize,
    /// Paces the creates: one Foo every this many ms (then `--create-concurrency` is
    /// ignored); 0 creates them as fast as `--create-concurrency` allows.
    #[arg(long, default_value_t = 0)]
    create_interval_ms: u64,
    /// How long the controller's client must be quiet after convergence before the
    /// controller is stopped (ms).
    #[arg(long, default_value_t = 3000)]
    quiet_ms: u64,
    /// Give up after this long (s).
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
}

fn main() -> anyhow::Result<()> {
    // As the controller binaries start (before the runtime: see manager::heap).
    manager::heap::grow_heap_in_large_steps();
    tokio::runtime::Runtime::new()?.block_on(run(Cli::parse()))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let kubeconfig = Kubeconfig::read_from(&cli.kubeconfig)
        .with_context(|| format!("reading {}", cli.kubeconfig.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let admin = kube::Client::try_from(config.clone())?;
    let ns = cli.namespace.as_str();
    Api::<Namespace>::all(admin.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(ns.to_string()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .with_context(|| format!("creating namespace {ns}"))?;

    // Before the queue and informers: they pick the provider up when created.
    let metrics = metrics::Metrics::new();
    if !metrics.install_global() {
        bail!("a metrics provider was already installed");
    }

    // The controller's client: the binaries' (HTTP/2, throttle outermost), with the
    // Deployment watches delayed and every response logged.
    let latency = Duration::from_millis(cli.latency_ms);
    let log = ResponseLog::new();
    let client = manager::client::http2_client_builder(&config)?
        .with_layer(&WatchLatency::new("deployments", latency))
        .with_layer(&log)
        .with_layer(&ThrottleLayer::new(cli.qps, cli.burst))
        .build();
    let options = LoopOptions {
        freshness_timeout: Duration::from_millis(cli.freshness_timeout_ms),
        ..LoopOptions::default()
    };
    let cancel = CancellationToken::new();
    let factory = SharedInformerFactory::new(client.clone(), Duration::from_secs(30))
        .with_strip_managed_fields(true);
    let events = EventBroadcaster::new(BroadcasterOptions::default());
    events.start_recording_to_sink(client.clone())?;
    let recorder = events.new_recorder(CONTROLLER_NAME, "staleness-bench");
    let foo_controller = foo_controller::new_controller(
        client,
        &factory,
        recorder,
        FooControllerOptions {
            namespace: Some(ns.to_string()),
            loop_options: options,
            // As the sample-controller binary runs it.
            trim_deployment_cache: true,
            // One replica: no shard group.
            shard: None,
        },
    );
    factory.start(&cancel);
    let running = tokio::spawn({
        let foo_controller = foo_controller.clone();
        let cancel = cancel.clone();
        async move { foo_controller.run(cli.workers, cancel).await }
    });

    // The observer: informers on the admin client (no latency).
    let observer_cancel = CancellationToken::new();
    let observer = SharedInformerFactory::new(admin.clone(), Duration::ZERO);
    let foos_seen = observer
        .informer_for_api::<Foo>(
            Api::namespaced(admin.clone(), ns),
            InformerOptions::default(),
        )
        .lister();
    let deployments_seen = observer
        .informer_for_api::<Deployment>(
            Api::namespaced(admin.clone(), ns),
            InformerOptions::default(),
        )
        .lister();
    observer.start(&observer_cancel);

    let deadline = Instant::now() + Duration::from_secs(cli.timeout_s);
    observer.wait_for_cache_sync(&observer_cancel).await;
    while !foo_controller.has_synced() {
        if Instant::now() > deadline {
            bail!("the controller's informers did not sync");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // Create the Foos.
    let start = Instant::now();
    let foo_api: Api<Foo> = Api::namespaced(admin.clone(), ns);
    let names: Vec<String> = (0..cli.foos).map(|i| format!("foo-{i:05}")).collect();
    let interval = Duration::from_millis(cli.create_interval_ms);
    let in_flight = if interval.is_zero() {
        cli.create_concurrency.max(1)
    } else {
        1
    };
    let created: Vec<anyhow::Result<()>> = stream::iter(names.iter().enumerate())
        .map(|(i, name)| {
            let foo_api = foo_api.clone();
            async move {
                tokio::time::sleep_until(start + interval * i as u32).await;
                foo_api
                    .create(
                        &PostParams::default(),
                        &Foo::new(name, FooSpec::new(name, 1)),
                    )
                    .await
                    .with_context(|| format!("creating Foo {name}"))?;
                Ok(())
            }
        })
        .buffer_unordered(in_flight)
        .collect()
        .await;
    created.into_iter().collect::<anyhow::Result<()>>()?;
    let created_ms = start.elapsed().as_millis();

    // Converged: every Foo has its Deployment, controlled by it, and a status.
    let converged = || {
        let foos = foos_seen.list(&Selector::everything());
        foos.len() == cli.foos
            && foos.iter().all(|foo| {
                foo.status.is_some()
                    && deployments_seen
                        .get(ns, &foo.spec.deployment_name)
                        .is_ok_and(|d| controller::is_controlled_by(&*d, &**foo))
            })
    };
    let converge_ms = loop {
        if converged() {
            break Some(start.elapsed().as_millis());
        }
        if Instant::now() > deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };

    // Quiet: no response for --quiet-ms (the last retries and Events are written).
    let quiet = Duration::from_millis(cli.quiet_ms);
    let mut seen = log.count(|_| true);
    let mut last_response = start.elapsed();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let now = log.count(|_| true);
        if now != seen {
            seen = now;
            last_response = start.elapsed();
        } else if start.elapsed() - last_response >= quiet {
            break;
        }
    }
    cancel.cancel();
    running.await??;
    events.shutdown(Duration::from_secs(5)).await;
    observer_cancel.cancel();

    // Count.
    let deployment_create = |r: &LoggedResponse| {
        r.method.as_str() == "POST"
            && r.resource() == Some("deployments")
            && r.subresource().is_none()
    };
    let status_write = |r: &LoggedResponse| {
        r.method.as_str() == "PUT"
            && r.resource() == Some("foos")
            && r.subresource() == Some("status")
    };
    let conflict = |r: &LoggedResponse| r.status.as_u16() == 409;
    let mut writes_by = BTreeMap::<String, usize>::new();
    for r in log.entries().iter().filter(|r| r.is_write()) {
        let what = match (r.resource(), r.subresource()) {
            (Some(res), Some(sub)) => format!("{res}/{sub}"),
            (Some(res), None) => res.to_string(),
            (None, _) => r.path.clone(),
        };
        *writes_by
            .entry(format!("{} {what} {}", r.method, r.status.as_u16()))
            .or_default() += 1;
    }

    let text = metrics.registry.encode()?;
    let by_result = |name: &str| -> BTreeMap<String, f64> {
        metrics::testing::parse_samples(&text)
            .into_iter()
            .filter(|s| {
                s.name == name
                    && s.labels.get("controller").map(String::as_str) == Some(CONTROLLER_NAME)
            })
            .filter_map(|s| Some((s.labels.get("result")?.clone(), s.value)))
            .collect()
    };
    let sample = |name: &str| {
        metrics::testing::sample_value(&text, name, &[("controller", CONTROLLER_NAME)])
            .unwrap_or(0.0)
    };
    let wait_sum = sample("controller_freshness_wait_seconds_sum");
    let wait_count = sample("controller_freshness_wait_seconds_count");

    let result = json!({
        "guard": if options.freshness_timeout.is_zero() { "off" } else { "on" },
        "freshness_timeout_ms": cli.freshness_timeout_ms,
        "latency_ms": cli.latency_ms,
        "foos": cli.foos,
        "workers": cli.workers,
        "qps": cli.qps,
        "create_concurrency": in_flight,
        "create_interval_ms": cli.create_interval_ms,
        "namespace": ns,
        "converged": converge_ms.is_some(),
        "created_ms": created_ms,
        "converge_ms": converge_ms,
        "last_response_ms": last_response.as_millis(),
        "duplicate_creates": log.count(|r| deployment_create(r) && conflict(r)),
        "status_conflicts": log.count(|r| status_write(r) && conflict(r)),
        "creates": log.count(|r| deployment_create(r) && r.status.is_success()),
        "status_writes": log.count(|r| status_write(r) && r.status.is_success()),
        "writes": log.count(LoggedResponse::is_write),
        "requests": log.count(|_| true),
        "writes_by": writes_by,
        "freshness": by_result("controller_freshness_checks_total"),
        "freshness_wait_s": wait_sum,
        "freshness_mean_wait_ms": if wait_count > 0.0 { 1000.0 * wait_sum / wait_count } else { 0.0 },
        "reconciles": by_result("controller_runtime_reconcile_total"),
    });
    println!("{result}");
    if converge_ms.is_none() {
        bail!("not converged within {} s", cli.timeout_s);
    }
    Ok(())
}
