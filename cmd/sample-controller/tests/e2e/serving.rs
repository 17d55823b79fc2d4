//! /readyz flips to ready once the informers have synced, and /metrics shows the
//! workqueue, reflector and reconcile series after work.

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use kube::api::{Api, PostParams};
use testenv::{Check, TestEnv, wait_for};

use super::*;

#[tokio::test]
async fn readyz_flips_after_sync_and_metrics_show_the_work() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(&env).await?;
    let ns = env.namespace().to_string();

    // A ServiceAccount with no permissions yet: the informers' lists are forbidden, so
    // the caches cannot sync and the replica must not report ready.
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client().clone(), &ns);
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some("probe".into());
    accounts.create(&PostParams::default(), &sa).await?;
    let token = testenv::service_account_token(env.client(), &ns, "probe").await?;
    let kubeconfig = token_kubeconfig(&env, &token, "probe")?;
    let replica = Replica::start("probe", &env, &kubeconfig, &[])?;

    wait_for("/healthz up while /readyz says 503", TIMEOUT, || async {
        let live = http_get(replica.health, "/healthz")
            .await
            .ok()
            .map(|r| r.status);
        let ready = replica.readyz().await;
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            live == Some(200) && ready == Some(503),
            (),
            format!("healthz {live:?} readyz {ready:?}"),
        ))
    })
    .await?;
    // Stays unready (several polls, across reflector retries) while forbidden.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            replica.readyz().await,
            Some(503),
            "ready without caches:\n{}",
            replica.log_text()
        );
    }

    // Grant the shipped ClusterRole in this namespace: the reflectors' retries succeed,
    // the caches sync, /readyz turns 200.
    apply_deploy_files(&env, &["namespace.yaml", "rbac.yaml"])?;
    let bindings: Api<RoleBinding> = Api::namespaced(env.client().clone(), &ns);
    bindings
        .create(
            &PostParams::default(),
            &RoleBinding {
                metadata: kube::api::ObjectMeta {
                    name: Some("probe".into()),
                    ..Default::default()
                },
                role_ref: RoleRef {
                    api_group: Some("rbac.authorization.k8s.io".into()),
                    kind: "ClusterRole".into(),
                    name: "sample-controller".into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: "probe".into(),
                    namespace: Some(ns.clone()),
                    ..Default::default()
                }]),
            },
        )
        .await?;
    wait_for(
        "/readyz turns 200 after the caches sync",
        TIMEOUT,
        || async {
            let ready = replica.readyz().await;
            Ok::<_, std::convert::Infallible>(Check::ready_if(
                ready == Some(200),
                (),
                format!("{ready:?}"),
            ))
        },
    )
    .await?;

    // Work, then the series that show it.
    create_foo(&env, "metered", 1).await?;
    let queue = [("name", "sample-controller")];
    let ok = [("controller", "sample-controller"), ("result", "success")];
    wait_for(
        "/metrics shows the workqueue and reconcile counters",
        TIMEOUT,
        || async {
            let text = replica.metrics_text().await.unwrap_or_default();
            let adds = sample_value(&text, "workqueue_adds_total", &queue);
            let depth = sample_value(&text, "workqueue_depth", &queue);
            let success = sample_value(&text, "controller_runtime_reconcile_total", &ok);
            let lists = sample_value(
                &text,
                "reflector_lists_total",
                &[("name", &format!("Foo({ns})"))],
            )
            .or_else(|| sample_value(&text, "reflector_lists_total", &[]));
            let done =
                adds >= Some(1.0) && depth.is_some() && success >= Some(1.0) && lists >= Some(1.0);
            Ok::<_, std::convert::Infallible>(Check::ready_if(
                done,
                (),
                format!("adds {adds:?} depth {depth:?} success {success:?} lists {lists:?}"),
            ))
        },
    )
    .await?;
    Ok(())
}
