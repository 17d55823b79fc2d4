//! Leader election between real replicas: exactly one leads; SIGKILL of the leader ->
//! takeover within leaseDuration + renewDeadline and nothing created twice; SIGTERM of
//! the leader -> it drains, releases the Lease, exits 0, and the next leader takes over
//! within about the retry period.

use std::collections::BTreeMap;
use std::time::Instant;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, ListParams};
use testenv::{Check, TestEnv, wait_for};

use super::*;

const LEASE: Duration = Duration::from_secs(6);
const RENEW: Duration = Duration::from_secs(4);
const RETRY: Duration = Duration::from_secs(1);

fn election_flags(namespace: &str) -> Vec<String> {
    vec![
        "--leader-elect".into(),
        format!("--leader-elect-lease-duration={}s", LEASE.as_secs()),
        format!("--leader-elect-renew-deadline={}s", RENEW.as_secs()),
        format!("--leader-elect-retry-period={}s", RETRY.as_secs()),
        format!("--leader-elect-resource-namespace={namespace}"),
        "--leader-elect-resource-name=sample-controller-e2e".into(),
    ]
}

/// Waits until exactly one of `replicas` reports leading, and returns its index.
async fn sole_leader(replicas: &[&Replica], within: Duration) -> anyhow::Result<usize> {
    Ok(wait_for("exactly one replica leading", within, || async {
        let mut leading = Vec::new();
        for (i, r) in replicas.iter().enumerate() {
            if r.is_leading().await {
                leading.push(i);
            }
        }
        let seen = format!(
            "leading: {:?}",
            leading
                .iter()
                .map(|&i| &replicas[i].name)
                .collect::<Vec<_>>()
        );
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            leading.len() == 1,
            leading.first().copied(),
            seen,
        ))
    })
    .await?
    .expect("checked"))
}

/// Deployment name -> uid, for the Deployments owned by a Foo.
pub(crate) async fn owned_deployments(env: &TestEnv) -> anyhow::Result<BTreeMap<String, String>> {
    let api: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|d| controller::get_controller_of(d).is_some_and(|r| r.kind == "Foo"))
        .map(|d| {
            (
                d.metadata.name.unwrap_or_default(),
                d.metadata.uid.unwrap_or_default(),
            )
        })
        .collect())
}

async fn wait_for_owned(env: &TestEnv, count: usize) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(wait_for(
        &format!("{count} Deployments owned by Foos"),
        TIMEOUT,
        || async {
            let owned = owned_deployments(env).await?;
            let n = owned.len();
            Ok::<_, anyhow::Error>(Check::ready_if(n == count, owned, format!("{n}")))
        },
    )
    .await?)
}

#[tokio::test]
async fn one_leader_killed_leader_replaced_terminated_leader_hands_over() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(&env).await?;
    let flags = election_flags(env.namespace());
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let kubeconfig = env.kubeconfig().to_path_buf();
    let a = Replica::start("a", &env, &kubeconfig, &flags)?;
    let b = Replica::start("b", &env, &kubeconfig, &flags)?;

    // Exactly one leads; the standby is ready too (its cache is warm).
    let first = sole_leader(&[&a, &b], TIMEOUT).await?;
    let (leader, standby) = if first == 0 { (a, b) } else { (b, a) };
    wait_for("the standby reports ready", TIMEOUT, || async {
        let status = standby.readyz().await;
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            status == Some(200),
            (),
            format!("{status:?}"),
        ))
    })
    .await?;
    for i in 0..5 {
        create_foo(&env, &format!("before-{i}"), 1).await?;
    }
    let before = wait_for_owned(&env, 5).await?;
    anyhow::ensure!(
        !standby.is_leading().await,
        "two leaders: {}",
        standby.log_text()
    );

    // SIGKILL: no release; the standby must wait for the Lease to expire.
    leader.signal(Signal::KILL);
    let killed = Instant::now();
    for i in 0..5 {
        create_foo(&env, &format!("during-{i}"), 1).await?;
    }
    wait_for("the standby takes over", TIMEOUT, || async {
        let leading = standby.is_leading().await;
        Ok::<_, std::convert::Infallible>(Check::ready_if(leading, (), leading))
    })
    .await?;
    let takeover = killed.elapsed();
    // Bound from the issue: leaseDuration + renewDeadline (plus scrape slack).
    assert!(
        takeover <= LEASE + RENEW + Duration::from_secs(3),
        "takeover took {takeover:?}"
    );
    assert!(
        takeover >= LEASE - Duration::from_secs(1),
        "took over before the lease could expire: {takeover:?}"
    );
    let after = wait_for_owned(&env, 10).await?;
    for (name, uid) in &before {
        assert_eq!(
            after.get(name),
            Some(uid),
            "Deployment {name} was recreated across the handover"
        );
    }
    drop(leader);

    // SIGTERM: the leader drains, releases the Lease, exits 0; a new replica takes over
    // within about the retry period instead of a whole lease.
    let mut next = Replica::start("c", &env, &kubeconfig, &flags)?;
    wait_for(
        "the new replica is ready (standing by)",
        TIMEOUT,
        || async {
            let status = next.readyz().await;
            Ok::<_, std::convert::Infallible>(Check::ready_if(
                status == Some(200),
                (),
                format!("{status:?}"),
            ))
        },
    )
    .await?;
    let mut current = standby;
    current.signal(Signal::TERM);
    let terminated = Instant::now();
    let status = tokio::time::timeout(TIMEOUT, current.child.wait()).await??;
    assert!(
        status.success(),
        "SIGTERM must exit 0: {status:?}\n{}",
        current.log_text()
    );
    let leases: Api<Lease> = Api::namespaced(env.client().clone(), env.namespace());
    wait_for(
        "replica c takes over after the release",
        TIMEOUT,
        || async {
            let leading = next.is_leading().await;
            Ok::<_, std::convert::Infallible>(Check::ready_if(leading, (), leading))
        },
    )
    .await?;
    let handover = terminated.elapsed();
    assert!(
        handover < LEASE,
        "a released Lease is taken within ~retry period, took {handover:?}"
    );
    let lease = leases.get("sample-controller-e2e").await?;
    let spec = lease.spec.unwrap_or_default();
    assert!(spec.lease_transitions.unwrap_or(0) >= 2, "{spec:?}");
    create_foo(&env, "after-handover", 1).await?;
    wait_for_owned(&env, 11).await?;
    next.signal(Signal::TERM);
    let _ = tokio::time::timeout(TIMEOUT, next.child.wait()).await;
    Ok(())
}

#[tokio::test]
async fn the_shipped_rbac_is_enough_to_lead() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(&env).await?;
    apply_deploy_files(&env, &["namespace.yaml", "rbac.yaml"])?;
    // The Deployment's ServiceAccount, with its Lease in its own namespace.
    let token =
        testenv::service_account_token(env.client(), "kube-controllers", "sample-controller")
            .await?;
    let kubeconfig = token_kubeconfig(&env, &token, "sa")?;
    let lease_name = format!("e2e-{}", env.namespace());
    let replica = Replica::start(
        "sa",
        &env,
        &kubeconfig,
        &[
            "--leader-elect",
            "--leader-elect-resource-namespace=kube-controllers",
            &format!("--leader-elect-resource-name={lease_name}"),
        ],
    )?;
    wait_for(
        "the ServiceAccount acquires and renews its Lease",
        TIMEOUT,
        || async {
            let leading = replica.is_leading().await;
            Ok::<_, std::convert::Infallible>(Check::ready_if(leading, (), leading))
        },
    )
    .await?;
    let foo = create_foo(&env, "led", 1).await?;
    wait_for_owned(&env, 1).await?;
    // Renewals (conditional patches) keep succeeding past a retry period.
    let leases: Api<Lease> = Api::namespaced(env.client().clone(), "kube-controllers");
    let first = leases
        .get(&lease_name)
        .await?
        .spec
        .unwrap_or_default()
        .renew_time;
    wait_for("the Lease is renewed", TIMEOUT, || async {
        let renewed = leases
            .get(&lease_name)
            .await?
            .spec
            .unwrap_or_default()
            .renew_time;
        Ok::<_, kube::Error>(Check::ready_if(
            renewed != first,
            (),
            format!("{renewed:?}"),
        ))
    })
    .await?;
    assert!(replica.is_leading().await, "{}", replica.log_text());
    drop(foo);
    replica.signal(Signal::TERM);
    leases.delete(&lease_name, &Default::default()).await.ok();
    Ok(())
}
