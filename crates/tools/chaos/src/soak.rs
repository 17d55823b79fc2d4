//! One soak run, start to end: set up (namespace, proxy, replicas, watches), create the
//! load and wait for it to converge, run the writers and the nemesis together, wait for
//! convergence after the last fault, check every invariant, stop every replica with
//! SIGTERM, and summarise.

use std::collections::{BTreeMap, BTreeSet};

use apis::operator::v1::MyWeb;
use apis::samplecontroller::v1alpha1::Foo;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use cliflag::parse_duration;
use k8s_openapi::api::core::v1::{Event, Namespace};
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use vm_driver::{FileDriver, FileFaults};

use crate::cluster::ControlPlane;
use crate::error::ChaosError;
use crate::load::{self, LoadCounters, LoadOptions};
use crate::nemesis::{self, FaultKind, Targets};
use crate::observe::{self, Monitor};
use crate::processes::{self, Binary, Fleet, FleetOptions};
use crate::proxy::Proxy;
use crate::recovery;
use crate::report::{self, MonitorSummary, Summary};

/// The soak's options; every one has an environment variable.
#[derive(Debug, Clone, Args, serde::Serialize)]
pub struct SoakArgs {
    /// The state dir of a running control plane (`hack/control-plane.sh up --dir`); the
    /// soak restarts its kube-apiserver and etcd.
    #[arg(long, env = "CHAOS_CONTROL_PLANE", value_name = "DIR")]
    pub control_plane: PathBuf,
    /// `hack/control-plane.sh`.
    #[arg(
        long,
        env = "CHAOS_CONTROL_PLANE_SCRIPT",
        default_value = "hack/control-plane.sh",
        value_name = "PATH"
    )]
    pub script: PathBuf,
    /// Where sample-controller, vm-controller and myweb-operator are.
    #[arg(
        long,
        env = "CHAOS_BIN_DIR",
        default_value = "target/debug",
        value_name = "DIR"
    )]
    pub bin_dir: PathBuf,
    /// Where the logs, the driver's state and the summary go.
    #[arg(long, env = "CHAOS_OUT", value_name = "DIR")]
    pub out: PathBuf,
    /// How long faults and writes go on. Go duration syntax: 90s, 30m.
    #[arg(long, env = "DURATION", default_value = "90s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(with = "secs")]
    pub duration: Duration,
    /// The seed of the schedule and the writers (random when unset; printed).
    #[arg(long, env = "SEED")]
    pub seed: Option<u64>,
    /// Foos.
    #[arg(long, env = "FOOS", default_value_t = 1000)]
    pub foos: usize,
    /// VirtualMachines (file driver).
    #[arg(long, env = "VMS", default_value_t = 200)]
    pub vms: usize,
    /// MyWebs.
    #[arg(long, env = "MYWEBS", default_value_t = 20, value_parser = clap::value_parser!(u16).range(0..=2700))]
    pub mywebs: u16,
    /// Replicas of each binary.
    #[arg(long, env = "REPLICAS", default_value_t = 3)]
    pub replicas: usize,
    /// Concurrent writers.
    #[arg(long, env = "WRITERS", default_value_t = 4)]
    pub writers: usize,
    /// Writes per second, all writers together.
    #[arg(long, env = "WRITES_PER_SECOND", default_value_t = 10.0)]
    pub writes_per_second: f64,
    /// Mean time between the starts of two faults.
    #[arg(long, env = "FAULT_GAP", default_value = "6s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(with = "secs")]
    pub fault_gap: Duration,
    /// The kinds of fault (comma-separated); all by default.
    #[arg(long, env = "FAULTS", value_enum, value_delimiter = ',')]
    pub faults: Vec<FaultKind>,
    /// How long everything may take to converge after the last fault.
    #[arg(long, env = "CONVERGENCE_BOUND", default_value = "240s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(with = "secs")]
    pub convergence_bound: Duration,
    /// How long the objects created up front may take to converge before the first
    /// fault. That is the environment warming up (kube-controller-manager and kwok
    /// making 200 Deployments' Pods Ready), not an invariant of the controllers: 54 s
    /// on an idle machine, 206 s in a CI run with four control planes on 2 cores.
    #[arg(long, env = "INITIAL_CONVERGENCE_BOUND", default_value = "600s", value_parser = parse_duration, value_name = "DURATION")]
    #[serde(with = "secs")]
    pub initial_convergence_bound: Duration,
    /// The namespace of the load (created if missing).
    #[arg(long, env = "CHAOS_NAMESPACE", default_value = "chaos")]
    pub namespace: String,
    /// Run every binary's replicas as one shard group (`--shard-group`: all active,
    /// each with its slice) instead of with leader election; the nemesis also adds a
    /// member now and then, and a sync still running from a frozen replica counts as a
    /// violation (the shard gate revokes it).
    #[arg(long, env = "SHARDED", value_parser = clap::builder::FalseyValueParser::new())]
    pub sharded: bool,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

/// Runs the soak; the summary is also written to `args.out`.
pub async fn run(args: SoakArgs) -> Result<Summary, ChaosError> {
    let seed = args.seed.unwrap_or_else(rand::random);
    tracing::info!(seed, "chaos soak starting");
    let kinds = if args.faults.is_empty() && args.sharded {
        FaultKind::sharded()
    } else if args.faults.is_empty() {
        FaultKind::ALL.to_vec()
    } else {
        args.faults.clone()
    };
    processes::binaries_present(&args.bin_dir)?;
    std::fs::create_dir_all(&args.out).map_err(|e| ChaosError::io("creating the output dir", e))?;
    std::fs::write(args.out.join("seed"), format!("{seed}\n"))
        .map_err(|e| ChaosError::io("writing the seed", e))?;
    let control_plane = ControlPlane::open(&args.control_plane, &args.script)?;
    let config = control_plane.config().await?;
    let client = Client::try_from(config.clone())?;
    let mut ns = Namespace::default();
    ns.metadata.name = Some(args.namespace.clone());
    match Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }
    let driver =
        FileDriver::new(args.out.join("vm-state")).map_err(|e| ChaosError::Setup(e.to_string()))?;
    let (cert, key) = control_plane.serving_cert()?;
    let proxy = Arc::new(Proxy::start(&cert, &key, &config).await?);
    let kubeconfig = args.out.join("proxy.kubeconfig");
    control_plane.write_kubeconfig_for(proxy.addr(), &kubeconfig)?;
    let fleet = Fleet::start(FleetOptions {
        bin_dir: args.bin_dir.clone(),
        kubeconfig,
        namespace: args.namespace.clone(),
        vm_state_dir: driver.dir().to_path_buf(),
        log_dir: args.out.join("logs"),
        replicas: args.replicas,
        sharded: args.sharded,
    })
    .await?;
    let watch_stop = CancellationToken::new();
    let ownership = observe::watch_ownership(&client, &args.namespace, &watch_stop);
    let monitor_stop = CancellationToken::new();
    let monitor = tokio::spawn(observe::monitor(
        client.clone(),
        control_plane.clone(),
        Arc::clone(&fleet),
        Duration::from_secs(2),
        monitor_stop.clone(),
    ));

    // The load, then convergence before any fault: a baseline, and proof that the
    // environment works at all.
    let load_options = LoadOptions {
        namespace: args.namespace.clone(),
        foos: args.foos,
        vms: args.vms,
        mywebs: args.mywebs.into(),
        writers: args.writers,
        writes_per_second: args.writes_per_second,
    };
    let counters = Arc::new(LoadCounters::default());
    let started = Instant::now();
    let failed = load::create_initial(&client, &load_options, &counters, seed).await;
    tracing::info!(failed, "initial objects created; waiting for convergence");
    let (initial, initial_findings) = recovery::converge(
        &client,
        &args.namespace,
        &driver,
        args.initial_convergence_bound,
        async |_| {},
    )
    .await;
    let initial_convergence_s = initial.map(|_| started.elapsed().as_secs_f64());
    tracing::info!(?initial_convergence_s, "fault phase starts");

    // Faults and writes together.
    let fault_phase_start = fleet.elapsed_s();
    let phase = Instant::now();
    let plan = nemesis::plan(seed, args.duration, args.fault_gap, &kinds);
    std::fs::write(
        args.out.join("plan.json"),
        serde_json::to_string_pretty(&plan).unwrap_or_default(),
    )
    .map_err(|e| ChaosError::io("writing the plan", e))?;
    let writers_stop = CancellationToken::new();
    let writers = tokio::spawn(load::run_writers(
        client.clone(),
        load_options,
        Arc::clone(&counters),
        seed,
        writers_stop.clone(),
    ));
    let targets = Targets {
        proxy: Arc::clone(&proxy),
        control_plane: control_plane.clone(),
        fleet: Arc::clone(&fleet),
        driver: driver.clone(),
    };
    let faults = nemesis::run(plan, targets).await;
    tokio::time::sleep_until(phase + args.duration).await;
    writers_stop.cancel();
    let _ = writers.await;
    proxy.clear();
    let _ = driver.set_faults(FileFaults::default());
    let fault_phase_s = phase.elapsed().as_secs_f64();
    let fault_phase_end = fleet.elapsed_s();
    tracing::info!("last fault ended; waiting for convergence");
    // Convergence after the last fault; a stuck garbage collector in
    // kube-controller-manager is repaired once (recovery's module docs say why).
    let (after, findings, repairs) = recovery::converge_after_faults(
        &client,
        &args.namespace,
        &driver,
        &control_plane,
        args.convergence_bound,
    )
    .await;
    if after.is_none() {
        dump_state(&client, &args.namespace, &args.out.join("state.json")).await;
    }

    // The invariants.
    let mut violations = Vec::new();
    let mut environment = Vec::new();
    if initial.is_none() {
        environment.push(format!(
            "no convergence before the faults: {:?}",
            initial_findings
                .controller
                .iter()
                .chain(&initial_findings.environment)
                .take(5)
                .collect::<Vec<_>>()
        ));
    }
    report::classify(&findings, &mut violations, &mut environment);
    let live_owners = live_owner_uids(&client, &args.namespace).await;
    let (duplicates, stale_creates) = ownership.duplicates(&live_owners);
    violations.extend(
        duplicates
            .into_iter()
            .map(|d| format!("owned object created twice: {d}")),
    );
    let events = Api::<Event>::namespaced(client.clone(), &args.namespace)
        .list(&ListParams::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or(0);
    let load_stats = counters.stats();
    let event_bound = 100
        + 5 * usize::try_from(load_stats.creates + load_stats.updates + load_stats.deletes)
            .unwrap_or(usize::MAX);
    if events > event_bound {
        violations.push(format!("event storm: {events} Events, bound {event_bound}"));
    }
    monitor_stop.cancel();
    let monitor: Monitor = monitor.await.unwrap_or_default();
    watch_stop.cancel();
    environment.extend(
        monitor
            .node_not_ready
            .iter()
            .take(10)
            .map(|n| format!("Node {n}")),
    );
    environment.extend(
        monitor
            .dead_components
            .iter()
            .map(|c| format!("control-plane component {c} died")),
    );
    environment.extend(
        faults
            .iter()
            .filter(|f| f.detail.starts_with("error"))
            .map(|f| format!("nemesis {:?}: {}", f.planned.kind, f.detail)),
    );
    let exits_during_run = fleet.exits();
    let final_exits = fleet.terminate(Duration::from_secs(30)).await;
    for exit in &final_exits {
        if exit.code != Some(0) {
            violations.push(format!(
                "{} replica {} did not exit 0 on SIGTERM: code {:?}, signal {:?}",
                exit.binary.name(),
                exit.replica,
                exit.code,
                exit.signal
            ));
        }
    }
    let logs = crate::logs::analyse(&fleet.log_files(), &fleet.frozen());
    violations.extend(logs.panics.iter().map(|p| format!("panic: {p}")));
    violations.extend(
        logs.overlapping_syncs
            .iter()
            .map(|o| format!("key synced by two replicas at once: {o}")),
    );
    if args.sharded && logs.frozen_overlaps > 0 {
        // Fenced: a frozen member's sync is revoked before its next poll.
        violations.push(format!(
            "{} syncs of a frozen member overlapped another member's: {:?}",
            logs.frozen_overlaps, logs.frozen_overlap_examples
        ));
    }
    let _ = std::fs::write(
        args.out.join("rss.json"),
        serde_json::to_string(&monitor.rss).unwrap_or_default(),
    );
    let peak_rss_mib = peak_rss(&monitor, fault_phase_start, fault_phase_end);
    for (binary, (first, second)) in &peak_rss_mib {
        if *second > 2.0 * first + 100.0 {
            violations.push(format!(
                "{} memory grew from {first:.0} MiB to {second:.0} MiB",
                binary.name()
            ));
        }
    }
    let summary = Summary {
        seed,
        options: serde_json::to_value(&args).unwrap_or_default(),
        fault_phase_s,
        faults_by_kind: nemesis::count_by_kind(&faults),
        faults,
        load: load_stats,
        live_objects: findings.live,
        initial_convergence_s,
        convergence_after_last_fault_s: after.map(|d| d.as_secs_f64()),
        convergence_bound_s: args.convergence_bound.as_secs_f64(),
        initial_convergence_bound_s: args.initial_convergence_bound.as_secs_f64(),
        proxy: proxy.stats(),
        logs,
        monitor: MonitorSummary::from(&monitor),
        owners_seen: ownership.owners(),
        creates_for_deleted_owners: stale_creates,
        events: (events, event_bound),
        exits_during_run,
        final_exits,
        peak_rss_mib,
        violations,
        environment_failures: environment,
        environment_repairs: repairs,
    };
    summary
        .write(&args.out)
        .map_err(|e| ChaosError::io("writing the summary", e))?;
    Ok(summary)
}

/// Writes the metadata and the interesting fields of every Foo, Deployment,
/// VirtualMachine and MyWeb to `path` (when a run did not converge: what was left).
async fn dump_state(client: &Client, namespace: &str, path: &std::path::Path) {
    async fn items<K>(client: &Client, namespace: &str) -> Vec<serde_json::Value>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope>
            + Clone
            + serde::de::DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let list = Api::<K>::namespaced(client.clone(), namespace)
            .list(&ListParams::default())
            .await;
        list.map(|l| {
            l.items
                .iter()
                .map(|o| {
                    let mut v = serde_json::to_value(o).unwrap_or_default();
                    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                        meta.remove("managedFields");
                    }
                    if let Some(spec) = v.get_mut("spec").and_then(|s| s.as_object_mut()) {
                        spec.remove("template");
                    }
                    v
                })
                .collect()
        })
        .unwrap_or_default()
    }
    let state = serde_json::json!({
        "foos": items::<Foo>(client, namespace).await,
        "deployments": items::<k8s_openapi::api::apps::v1::Deployment>(client, namespace).await,
        "virtualmachines": items::<apis::cloudnative::v1alpha1::VirtualMachine>(client, namespace).await,
        "mywebs": items::<MyWeb>(client, namespace).await,
    });
    let _ = std::fs::write(
        path,
        serde_json::to_string_pretty(&state).unwrap_or_default(),
    );
}

/// The uids of every Foo and MyWeb that exists now.
async fn live_owner_uids(client: &Client, namespace: &str) -> BTreeSet<String> {
    let lp = ListParams::default();
    let mut uids = BTreeSet::new();
    if let Ok(list) = Api::<Foo>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await
    {
        uids.extend(list.items.iter().filter_map(|o| o.metadata.uid.clone()));
    }
    if let Ok(list) = Api::<MyWeb>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await
    {
        uids.extend(list.items.iter().filter_map(|o| o.metadata.uid.clone()));
    }
    uids
}

/// Per binary, the 95th percentile of the RSS samples (MiB) in the first and in the
/// second half of the fault phase: a sustained growth shows, a single sample taken
/// while a replica starts or relists does not.
fn peak_rss(monitor: &Monitor, start_s: f64, end_s: f64) -> BTreeMap<Binary, (f64, f64)> {
    let middle = (start_s + end_s) / 2.0;
    let mut halves: BTreeMap<Binary, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for sample in monitor
        .rss
        .iter()
        .filter(|s| s.at_s >= start_s && s.at_s <= end_s)
    {
        let mib = sample.rss_kib as f64 / 1024.0;
        let entry = halves.entry(sample.binary).or_default();
        if sample.at_s < middle {
            entry.0.push(mib);
        } else {
            entry.1.push(mib);
        }
    }
    let p95 = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get((v.len() * 95 / 100).min(v.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    halves
        .into_iter()
        .map(|(b, (first, second))| (b, (p95(first), p95(second))))
        .collect()
}
