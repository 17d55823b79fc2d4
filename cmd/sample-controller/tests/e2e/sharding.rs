//! Scaling out (crates/runtime/sharding): three replicas of the real binary in one
//! shard group and 1,500 Foos, on a private control plane with the API server's
//! `ShardedListAndWatch` gate on (server-side filtering) and on one with it off (the
//! informers filter on the client). Each run checks, from the outside:
//!
//! - every Foo converges, and each replica caches 20-47 % of them (its metrics);
//! - SIGKILL of a replica: its Foos are reconciled by the others within the lease
//!   duration plus a few seconds;
//! - a fourth replica joins: the ranges rebalance and the newcomer reconciles its share;
//! - SIGSTOP of a replica past its lease, then SIGCONT: it reconciles nothing it lost;
//! - throughout, no Deployment is created twice (UIDs stable) and no key is synced by
//!   two replicas at overlapping times (their sync intervals, from their logs, as the
//!   chaos soak checks leader election).

use std::collections::BTreeMap;
use std::time::Instant;

use ::sharding::member::record_of;
use apis::samplecontroller::v1alpha1::Foo;
use cache::shard::{RangeSet, fnv1a64};
use chaos::processes::Frozen;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams, Patch, PatchParams};
use testenv::{Check, ControlPlane, TestEnv, wait_for};

use super::*;

const FOOS: usize = 1500;
const LEASE: Duration = Duration::from_secs(6);
const RENEW: Duration = Duration::from_secs(4);
const RETRY: Duration = Duration::from_secs(1);
/// Foos changed to see who reconciles a range.
const PROBES: usize = 40;

fn shard_flags(namespace: &str) -> Vec<String> {
    vec![
        "--shard-group=sample-controller".into(),
        format!("--shard-lease-namespace={namespace}"),
        format!("--shard-lease-duration={}s", LEASE.as_secs()),
        format!("--shard-renew-deadline={}s", RENEW.as_secs()),
        format!("--shard-retry-period={}s", RETRY.as_secs()),
        "--log-format=json".into(),
        "--workers=4".into(),
    ]
}

/// Without kube-controller-manager's Deployment controller: a Deployment stays as the
/// Foo controller wrote it (no ReplicaSets, no Pods for 1,500 Foos on a 2-core CI
/// machine), which is all these checks read; the sample-controller e2e suites run
/// the whole chain.
const NO_DEPLOYMENT_CONTROLLER: &str = "--controllers=-deployment-controller";

#[tokio::test]
async fn sharded_replicas_with_server_side_filtering() -> anyhow::Result<()> {
    let plane = tokio::task::spawn_blocking(|| {
        ControlPlane::start_with_args(
            &["--feature-gates=ShardedListAndWatch=true"],
            &[NO_DEPLOYMENT_CONTROLLER],
        )
    })
    .await??;
    let plane: &'static ControlPlane = Box::leak(Box::new(plane));
    scenario(&TestEnv::on(plane, "shard-on").await?, true).await
}

#[tokio::test]
async fn sharded_replicas_with_client_side_filtering() -> anyhow::Result<()> {
    let plane = tokio::task::spawn_blocking(|| {
        ControlPlane::start_with_args(&[], &[NO_DEPLOYMENT_CONTROLLER])
    })
    .await??;
    let plane: &'static ControlPlane = Box::leak(Box::new(plane));
    scenario(&TestEnv::on(plane, "shard-off").await?, false).await
}

fn start(name: &str, env: &TestEnv) -> anyhow::Result<Replica> {
    let flags = shard_flags(env.namespace());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    // Every completed sync logged with its duration: the overlap check reads them.
    Replica::start_logged(
        name,
        env,
        env.kubeconfig(),
        &flags,
        "info,controller::controller=debug",
    )
}

async fn scenario(env: &TestEnv, server_side: bool) -> anyhow::Result<()> {
    install_crds(env).await?;
    let foo_informer = format!("Foo in {} sharded by object.metadata.uid", env.namespace());
    let mut replicas = vec![start("a", env)?, start("b", env)?, start("c", env)?];
    wait_members(&replicas.iter().collect::<Vec<_>>(), 3).await?;

    // 1,500 Foos; every one converges.
    let started = Instant::now();
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    futures::stream::iter(0..FOOS)
        .map(|i| async move { create_foo(env, &format!("foo-{i:04}"), 1).await })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;
    let uids = wait_converged(env, Duration::from_secs(300)).await?;
    println!(
        "{FOOS} Foos converged in {:?} (server-side filtering: {server_side})",
        started.elapsed()
    );

    // Each replica caches its share, and says how the server filtered.
    for r in &replicas {
        let cached = r
            .sample("sharding_cached_objects", &[("informer", &foo_informer)])
            .await
            .unwrap_or(-1.0);
        let share = cached / FOOS as f64;
        anyhow::ensure!(
            (0.20..=0.47).contains(&share),
            "replica {} caches {cached} Foos ({:.1} %)",
            r.name,
            share * 100.0
        );
        let filtering = r
            .sample(
                "sharding_server_side_filtering",
                &[("informer", &foo_informer)],
            )
            .await;
        anyhow::ensure!(
            filtering == Some(if server_side { 1.0 } else { 0.0 }),
            "replica {}: sharding_server_side_filtering = {filtering:?}",
            r.name
        );
    }
    let all_foos = foos.list(&ListParams::default()).await?.items;

    // SIGKILL b: its Foos are reconciled by the others once its lease ran out.
    let b_ranges = held_ranges(env, "b").await?;
    replicas[1].signal(Signal::KILL);
    let killed = Instant::now();
    let probes = in_ranges(&all_foos, &b_ranges);
    scale(&foos, &probes, 2).await?;
    wait_scaled(env, &probes, 2, LEASE + Duration::from_secs(20)).await?;
    let takeover = killed.elapsed();
    println!("the killed replica's Foos reconciled after {takeover:?}");
    anyhow::ensure!(
        takeover <= LEASE + Duration::from_secs(20),
        "took {takeover:?}"
    );

    // A fourth replica joins: three live members again, and it reconciles its share.
    replicas.push(start("d", env)?);
    let live: Vec<&Replica> = [0, 2, 3].iter().map(|&i| &replicas[i]).collect();
    wait_members(&live, 3).await?;
    wait_for("the newcomer holds a third", TIMEOUT, || async {
        let held = replicas[3]
            .sample("sharding_held_fraction", &[("group", "sample-controller")])
            .await;
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            held.is_some_and(|f| (f - 1.0 / 3.0).abs() < 0.01),
            (),
            format!("{held:?}"),
        ))
    })
    .await?;
    let d_probes = in_ranges(&all_foos, &held_ranges(env, "d").await?);
    scale(&foos, &d_probes, 3).await?;
    wait_scaled(env, &d_probes, 3, TIMEOUT).await?;

    // SIGSTOP a past its lease: the others take its range; after SIGCONT it syncs
    // nothing it lost (the overlap check below would see it).
    let a_ranges = held_ranges(env, "a").await?;
    replicas[0].signal(Signal::STOP);
    let stopped_us = wall_clock_us();
    let a_probes = in_ranges(&all_foos, &a_ranges);
    tokio::time::sleep(LEASE + RETRY * 2).await;
    scale(&foos, &a_probes, 2).await?;
    wait_scaled(env, &a_probes, 2, LEASE + Duration::from_secs(20)).await?;
    replicas[0].signal(Signal::CONT);
    let frozen = vec![Frozen {
        log: replicas[0].log.clone(),
        pid: replicas[0].child.id().unwrap_or(0),
        from_us: stopped_us,
        until_us: Some(wall_clock_us()),
    }];
    let live: Vec<&Replica> = [0, 2, 3].iter().map(|&i| &replicas[i]).collect();
    wait_members(&live, 3).await?;
    tokio::time::sleep(RETRY * 5).await;

    // No Deployment created twice, every Foo still converged.
    let after = wait_converged(env, TIMEOUT).await?;
    anyhow::ensure!(
        after == uids,
        "Deployments were recreated: {} of {} UIDs differ",
        after
            .iter()
            .filter(|(k, v)| uids.get(*k) != Some(v))
            .count(),
        uids.len()
    );

    // No key synced by two replicas at once.
    let logs: Vec<_> = replicas.iter().map(|r| r.log.clone()).collect();
    let findings = chaos::logs::analyse(&logs, &frozen);
    anyhow::ensure!(
        findings.syncs >= FOOS as u64,
        "only {} syncs logged",
        findings.syncs
    );
    anyhow::ensure!(
        findings.overlapping_syncs.is_empty() && findings.frozen_overlaps == 0,
        "overlapping syncs: {:?} (frozen: {}: {:?})",
        findings.overlapping_syncs,
        findings.frozen_overlaps,
        findings.frozen_overlap_examples
    );
    anyhow::ensure!(findings.panics.is_empty(), "panics: {:?}", findings.panics);
    Ok(())
}

fn wall_clock_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// Waits until each of `replicas` sees `n` live members.
async fn wait_members(replicas: &[&Replica], n: usize) -> anyhow::Result<()> {
    wait_for(
        &format!("{n} shard members seen by every replica"),
        TIMEOUT,
        || async {
            let mut seen = Vec::new();
            for r in replicas {
                seen.push(
                    r.sample("sharding_members", &[("group", "sample-controller")])
                        .await,
                );
            }
            Ok::<_, std::convert::Infallible>(Check::ready_if(
                seen.iter().all(|s| *s == Some(n as f64)),
                (),
                format!("{seen:?}"),
            ))
        },
    )
    .await?;
    Ok(())
}

/// The ranges replica `name` announces in its Lease.
async fn held_ranges(env: &TestEnv, name: &str) -> anyhow::Result<RangeSet> {
    let leases: Api<Lease> = Api::namespaced(env.client().clone(), env.namespace());
    let records: Vec<_> = leases
        .list(
            &ListParams::default()
                .labels("sharding.kube-controllers-rs.io/group=sample-controller"),
        )
        .await?
        .items
        .iter()
        .filter_map(record_of)
        .collect();
    // Identities are "<hostname>_<uuid>"; the replicas' order of start is the order of
    // their Leases' creation, which the test does not know: match by the metrics
    // instead would need the identity, so each replica's log names it.
    let identity = identity_in_log(env, name)?;
    records
        .into_iter()
        .find(|r| r.identity == identity)
        .map(|r| r.held)
        .ok_or_else(|| anyhow::anyhow!("no Lease for replica {name} ({identity})"))
}

/// The shard identity replica `name` logged when it joined.
fn identity_in_log(env: &TestEnv, name: &str) -> anyhow::Result<String> {
    let log = std::env::temp_dir().join(format!("{}-{name}.log", env.namespace()));
    let text = std::fs::read_to_string(&log)?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["message"] == "joining shard group")
        .and_then(|v| v["identity"].as_str().map(str::to_string))
        .ok_or_else(|| anyhow::anyhow!("replica {name} never logged joining"))
}

/// Up to [`PROBES`] Foos whose UID hashes into `ranges`.
fn in_ranges(foos: &[Foo], ranges: &RangeSet) -> Vec<String> {
    foos.iter()
        .filter(|f| {
            f.metadata
                .uid
                .as_deref()
                .is_some_and(|u| ranges.contains(fnv1a64(u.as_bytes())))
        })
        .filter_map(|f| f.metadata.name.clone())
        .take(PROBES)
        .collect()
}

async fn scale(foos: &Api<Foo>, names: &[String], replicas: i32) -> anyhow::Result<()> {
    anyhow::ensure!(!names.is_empty(), "no Foo in the range");
    let patch = serde_json::json!({"spec": {"replicas": replicas}});
    for name in names {
        foos.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

async fn wait_scaled(
    env: &TestEnv,
    names: &[String],
    replicas: i32,
    within: Duration,
) -> anyhow::Result<()> {
    let api: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    wait_for(
        &format!("{} Deployments scaled to {replicas}", names.len()),
        within,
        || async {
            let list = api.list(&ListParams::default()).await?;
            let scaled: BTreeMap<_, _> = list
                .items
                .iter()
                .filter_map(|d| Some((d.metadata.name.clone()?, d.spec.replicas?)))
                .collect();
            let pending = names
                .iter()
                .filter(|n| scaled.get(*n) != Some(&replicas))
                .count();
            Ok::<_, kube::Error>(Check::ready_if(
                pending == 0,
                (),
                format!("{pending} pending"),
            ))
        },
    )
    .await?;
    Ok(())
}

/// Waits until every Foo has its Deployment and a status; returns Deployment name -> UID.
async fn wait_converged(
    env: &TestEnv,
    within: Duration,
) -> anyhow::Result<BTreeMap<String, String>> {
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    Ok(
        wait_for(&format!("{FOOS} Foos converged"), within, || async {
            let owned = super::leader::owned_deployments(env).await?;
            let with_status = foos
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .filter(|f| f.status.is_some())
                .count();
            Ok::<_, anyhow::Error>(Check::ready_if(
                owned.len() == FOOS && with_status == FOOS,
                owned.clone(),
                format!("{} Deployments, {with_status} statuses", owned.len()),
            ))
        })
        .await?,
    )
}
