//! What the operator cannot have: an object of the MyWeb's name that someone else
//! owns (never touched: `ErrResourceExists`), and a node port another Service holds
//! (the API server refuses: `ApplyFailed`, retried with backoff, not in a hot loop).
//! Both recover once the obstacle is gone.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Service, ServicePort, ServiceSpec};
use kube::api::{DeleteParams, ListParams};
use testenv::TestEnv;

use super::*;

/// How long the node port conflict is watched for a hot loop.
const HOT_LOOP_WINDOW: Duration = Duration::from_secs(5);
/// More requeues than this in [`HOT_LOOP_WINDOW`] is a hot loop. With the default
/// rate limiter (5 ms doubling per failure) plus the odd watch event, a backed-off
/// retry loop manages a handful; a loop without backoff, hundreds.
const HOT_LOOP_REQUEUES: u32 = 20;

/// The count of the (single, deduplicated) Event with `reason` about MyWeb `name`.
async fn event_count(env: &TestEnv, name: &str, reason: &str) -> anyhow::Result<i32> {
    let events: Api<Event> = api(env);
    let selector = format!("involvedObject.kind=MyWeb,involvedObject.name={name},reason={reason}");
    let list = events
        .list(&ListParams::default().fields(&selector))
        .await?;
    Ok(list.items.iter().map(|e| e.count.unwrap_or(1)).sum())
}

#[tokio::test]
async fn a_foreign_config_map_is_left_alone_and_reported() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;

    // Someone else's ConfigMap, with the name the MyWeb will need, created first.
    let name = "taken";
    let foreign = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(BTreeMap::from([("owner".into(), "someone-else".into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "index.html".into(),
            "<h1>not yours</h1>".into(),
        )])),
        ..Default::default()
    };
    let config_maps: Api<ConfigMap> = api(&env);
    let foreign = config_maps.create(&PostParams::default(), &foreign).await?;

    let _operator = RunningOperator::start(env.client().clone(), env.namespace());
    let web = create_web(&env, name, "nginx", ports::FOREIGN, "<h1>mine</h1>").await?;

    let warning = wait_for_event(&env, name, "ErrResourceExists").await?;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.clone().unwrap_or_default();
    assert!(
        message.contains("ConfigMap") && message.contains(name),
        "{message}"
    );
    let refused = wait_for_web(&env, name, "Ready=False ErrResourceExists", |w| {
        ready_is(w, "False", "ErrResourceExists")
    })
    .await?;
    assert!(!refused.status.clone().unwrap_or_default().completed);

    // Let the operator retry a few times (backoff: 5, 10, 20 ms...), then compare:
    // it must never have written the ConfigMap.
    wait_for(
        "the ErrResourceExists Event counted at least 3 times",
        TIMEOUT,
        || async {
            let count = event_count(&env, name, "ErrResourceExists").await?;
            Ok::<_, anyhow::Error>(Check::ready_if(count >= 3, (), format!("count {count}")))
        },
    )
    .await?;
    let now = config_maps.get(name).await?;
    assert_eq!(now.metadata.uid, foreign.metadata.uid);
    assert_eq!(now.data, foreign.data, "the data is untouched");
    assert_eq!(now.metadata.labels, foreign.metadata.labels);
    assert_eq!(now.metadata.annotations, foreign.metadata.annotations);
    assert!(now.metadata.owner_references.is_none(), "no owner added");
    let managers = managers(&now.metadata);
    assert!(
        !managers.iter().any(|m| m == myweb_operator::FIELD_MANAGER),
        "written by the operator: {managers:?}"
    );

    // Its owner lets go of the name: the operator takes over (on a retry or a
    // resync) and serves the page.
    config_maps.delete(name, &DeleteParams::default()).await?;
    let (cm, _, _) = wait_for_objects(&env, &web).await?;
    assert_eq!(page_of(&cm).as_deref(), Some("<h1>mine</h1>"));
    wait_for_ready(&env, name).await?;
    Ok(())
}

/// A plain Service (no owner) holding `node_port`.
fn port_holder(name: &str, node_port: i32) -> Service {
    Service {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        spec: Some(ServiceSpec {
            type_: Some("NodePort".into()),
            selector: Some(BTreeMap::from([("app".into(), "holder".into())])),
            ports: Some(vec![ServicePort {
                port: 80,
                node_port: Some(node_port),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_node_port_already_allocated_is_reported_and_retried_with_backoff() -> anyhow::Result<()>
{
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;

    let services: Api<Service> = api(&env);
    let holder = services
        .create(&PostParams::default(), &port_holder("holder", ports::TAKEN))
        .await?;
    assert_eq!(node_port_of(&holder), Some(ports::TAKEN));

    let operator = RunningOperator::start(env.client().clone(), env.namespace());
    let name = "clash";
    let web = create_web(&env, name, "nginx", ports::TAKEN, "<h1>clash</h1>").await?;

    // The server's refusal, word for word, in a Warning Event and in the condition.
    let server_says = "provided port is already allocated";
    let warning = wait_for_event(&env, name, "ApplyFailed").await?;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.clone().unwrap_or_default();
    assert!(message.contains(server_says), "{message}");
    let failed = wait_for_web(&env, name, "Ready=False ApplyFailed", |w| {
        ready_is(w, "False", "ApplyFailed")
    })
    .await?;
    let condition = ready_condition(&failed);
    assert!(condition.message.contains(server_says), "{condition:?}");
    assert!(
        condition.message.contains(&ports::TAKEN.to_string()),
        "{condition:?}"
    );
    assert!(!failed.status.clone().unwrap_or_default().completed);

    // Retried with backoff, not in a hot loop: over a few seconds the key is requeued
    // (and the Warning counted) a handful of times at most. This is the one place a
    // test waits a fixed time: it measures that something does *not* happen often.
    wait_for("the failing reconcile requeued", TIMEOUT, || async {
        let n = operator.num_requeues(name);
        Ok::<_, std::convert::Infallible>(Check::ready_if(n >= 1, (), format!("{n} requeues")))
    })
    .await?;
    let (requeues_before, events_before) = (
        operator.num_requeues(name),
        event_count(&env, name, "ApplyFailed").await?,
    );
    tokio::time::sleep(HOT_LOOP_WINDOW).await;
    let (requeues_after, events_after) = (
        operator.num_requeues(name),
        event_count(&env, name, "ApplyFailed").await?,
    );
    assert!(
        requeues_after.saturating_sub(requeues_before) < HOT_LOOP_REQUEUES,
        "hot loop: {requeues_before} -> {requeues_after} requeues in {HOT_LOOP_WINDOW:?}"
    );
    assert!(
        events_after - events_before < 20,
        "hot loop: the Warning counted {events_before} -> {events_after} in {HOT_LOOP_WINDOW:?}"
    );

    // The objects before the Service exist; the holder is untouched.
    let (cm, deployment) = (
        api::<ConfigMap>(&env).get(name).await?,
        api::<Deployment>(&env).get(name).await?,
    );
    assert!(controller::is_controlled_by(&cm, &web));
    assert!(controller::is_controlled_by(&deployment, &web));
    assert!(services.get_opt(name).await?.is_none());
    let still = services.get("holder").await?;
    assert_eq!(node_port_of(&still), Some(ports::TAKEN));
    assert!(still.metadata.owner_references.is_none());

    // The port is freed: a later retry (or a resync) gets it.
    services.delete("holder", &DeleteParams::default()).await?;
    let service = wait_for_object::<Service>(&env, name, "the MyWeb's Service", |s| {
        controller::is_controlled_by(s, &web)
    })
    .await?;
    assert_eq!(node_port_of(&service), Some(ports::TAKEN));
    wait_for_ready(&env, name).await?;
    Ok(())
}
