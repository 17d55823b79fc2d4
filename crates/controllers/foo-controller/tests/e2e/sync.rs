//! The controller's behaviour against the real API server, kube-controller-manager's
//! Deployment controller and garbage collector, and kwok's fake kubelets.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use testenv::{Check, TestEnv, wait_for};

use super::*;

fn owned_by_foo(d: &Deployment, foo: &Foo) -> bool {
    controller::is_controlled_by(d, foo)
}

#[tokio::test]
async fn foo_gets_an_owned_deployment_that_follows_replicas_and_reports_availability()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;
    let _controller = RunningController::start(env.client().clone(), env.namespace());

    let foo = create_foo(&env, "web", "web-deploy", 1).await?;
    let d = wait_for_deployment(
        &env,
        "web-deploy",
        "Deployment web-deploy owned by Foo web",
        |d| owned_by_foo(d, &foo),
    )
    .await?;
    let owner = &d.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("Foo", Some(true), Some(true))
    );
    assert_eq!(d.spec.replicas, Some(1));
    let labels = d
        .spec
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert_eq!(
        (labels["app"].as_str(), labels["controller"].as_str()),
        ("nginx", "web")
    );
    // kwok's nodes run the Pods and report them ready: the Deployment becomes
    // available and the controller copies that into the Foo's status.
    wait_for_available(&env, "web", 1).await?;

    // Scale the Foo: the Deployment follows, and so does the status.
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    foos.patch(
        "web",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"replicas": 3}})),
    )
    .await?;
    wait_for_deployment(
        &env,
        "web-deploy",
        "Deployment web-deploy scaled to 3",
        |d| d.spec.replicas == Some(3),
    )
    .await?;
    wait_for_available(&env, "web", 3).await?;
    let synced = wait_for_event(&env, "web", "Synced").await?;
    assert_eq!(synced.type_.as_deref(), Some("Normal"));
    assert_eq!(synced.message.as_deref(), Some("Foo synced successfully"));

    // The controller caches Deployments without their pod template and scales with a
    // merge patch of replicas: the template on the server is untouched.
    let deployments: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    let scaled = deployments.get("web-deploy").await?;
    let pod = scaled.spec.template.spec.as_ref().unwrap();
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some(foo_controller::NGINX_IMAGE)
    );
    // The patch's resourceVersion is a precondition: a stale one is a 409 Conflict
    // (what the sync relies on instead of overwriting a change it has not seen).
    let stale = Patch::Merge(serde_json::json!({
        "metadata": { "resourceVersion": d.metadata.resource_version },
        "spec": { "replicas": 2 },
    }));
    match deployments
        .patch("web-deploy", &PatchParams::default(), &stale)
        .await
    {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 409, "{status:?}"),
        other => panic!("a stale resourceVersion must be refused: {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn a_deleted_deployment_is_recreated() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;
    let _controller = RunningController::start(env.client().clone(), env.namespace());

    let foo = create_foo(&env, "phoenix", "phoenix", 2).await?;
    let first = wait_for_deployment(&env, "phoenix", "Deployment phoenix", |d| {
        owned_by_foo(d, &foo)
    })
    .await?;
    let deployments: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    deployments
        .delete("phoenix", &DeleteParams::default())
        .await?;
    let second = wait_for_deployment(&env, "phoenix", "Deployment phoenix recreated", |d| {
        d.metadata.uid != first.metadata.uid && owned_by_foo(d, &foo)
    })
    .await?;
    assert_eq!(second.spec.replicas, Some(2));
    Ok(())
}

#[tokio::test]
async fn a_foreign_deployment_gets_a_warning_and_is_left_alone() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;

    // Someone else's Deployment, with the name the Foo will ask for.
    let deployments: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    let foreign: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "taken", "labels": {"owner": "someone-else"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "other"}},
            "template": {
                "metadata": {"labels": {"app": "other"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}
            }
        }
    }))?;
    let foreign = deployments.create(&PostParams::default(), &foreign).await?;

    let _controller = RunningController::start(env.client().clone(), env.namespace());
    create_foo(&env, "intruder", "taken", 5).await?;
    let warning = wait_for_event(&env, "intruder", "ErrResourceExists").await?;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        warning.message.as_deref(),
        Some("Resource \"taken\" already exists and is not managed by Foo")
    );
    // The controller retries with backoff; it must never have written the Deployment.
    // Let a few retries happen (5, 10, 20, 40 ms, ...), then compare.
    wait_for(
        "the ErrResourceExists Event counted at least 3 times",
        TIMEOUT,
        || async {
            let e = wait_for_event(&env, "intruder", "ErrResourceExists").await?;
            let count = e.count.unwrap_or(1);
            Ok::<_, anyhow::Error>(Check::ready_if(count >= 3, (), format!("count {count}")))
        },
    )
    .await?;
    // The correlator folds the repeats into one Event with a growing count.
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(env.client().clone(), env.namespace());
    let repeats = events
        .list(
            &kube::api::ListParams::default()
                .fields("involvedObject.name=intruder,reason=ErrResourceExists"),
        )
        .await?
        .items;
    assert_eq!(repeats.len(), 1, "one Event, counted, not one per retry");
    // (kube-controller-manager updates its status, so compare who wrote what.)
    let now = deployments.get("taken").await?;
    assert_eq!(now.metadata.uid, foreign.metadata.uid);
    let managers: Vec<_> = now
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.clone())
        .collect();
    assert!(
        !managers.iter().any(|m| m == foo_controller::FIELD_MANAGER),
        "modified by us: {managers:?}"
    );
    assert!(now.metadata.owner_references.is_none());
    assert_eq!(now.spec.replicas, Some(1));
    Ok(())
}

#[tokio::test]
async fn deleting_the_foo_garbage_collects_its_deployment() -> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;
    let _controller = RunningController::start(env.client().clone(), env.namespace());

    let foo = create_foo(&env, "doomed", "doomed", 1).await?;
    wait_for_deployment(&env, "doomed", "Deployment doomed", |d| {
        owned_by_foo(d, &foo)
    })
    .await?;
    let foos: Api<Foo> = Api::namespaced(env.client().clone(), env.namespace());
    foos.delete("doomed", &DeleteParams::default()).await?;
    // kube-controller-manager's garbage collector follows the owner reference.
    let deployments: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    wait_for("Deployment doomed garbage-collected", TIMEOUT, || async {
        let d = deployments.get_opt("doomed").await?;
        Ok::<_, kube::Error>(Check::ready_if(
            d.is_none(),
            (),
            if d.is_some() { "present" } else { "gone" },
        ))
    })
    .await?;
    Ok(())
}

/// Tried as a new user would, with no admission webhook in front: a Foo whose
/// `deploymentName` is not a valid object name. The API server refuses the Deployment
/// (422); the user sees why on the Foo (`kubectl describe foo`), and the controller
/// does not retry a request that cannot succeed until the Foo changes.
#[tokio::test]
async fn an_invalid_deployment_name_gets_a_warning_naming_the_field_and_no_retry_storm()
-> anyhow::Result<()> {
    let env = TestEnv::new().await?;
    install_crds(env.client()).await?;
    let _controller = RunningController::start(env.client().clone(), env.namespace());
    create_foo(&env, "bad-name", "Bad_Name!", 1).await?;

    let warning = wait_for_event(&env, "bad-name", foo_controller::ERR_INVALID_DEPLOYMENT).await?;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.clone().unwrap_or_default();
    assert!(
        message.contains("spec.deploymentName \"Bad_Name!\"") && message.contains("Invalid value"),
        "{message}"
    );
    // No retry storm: give the rate-limited queue time for many retries (5 ms, 10 ms,
    // ... would be 9 attempts within 3 s), then check the Event was recorded once.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let now = wait_for_event(&env, "bad-name", foo_controller::ERR_INVALID_DEPLOYMENT).await?;
    assert_eq!(
        now.count.unwrap_or(1),
        1,
        "one attempt, not a retry loop: {now:?}"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.client().clone(), env.namespace());
    assert!(
        deployments
            .list(&Default::default())
            .await?
            .items
            .is_empty()
    );
    Ok(())
}
