//! Two controllers, one process, one cache: the MyWeb operator (builder-made) and the
//! Foo controller (hand-wired) on ONE `SharedInformerFactory` both watch Deployments,
//! and the API server sees exactly one Deployment watch, while both controllers do
//! their work.
//!
//! The proof is on the wire, not in the factory: the client is built with a tower
//! layer that records every watch request (`?watch=true`, which a streaming list is
//! too) before kube's HTTP stack sends it.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use apis::samplecontroller::v1alpha1::{Foo, FooSpec};
use foo_controller::FooControllerOptions;
use k8s_openapi::api::apps::v1::Deployment;
use myweb_operator::MyWebControllerOptions;
use testenv::TestEnv;

use super::*;

/// The watch requests a client sent, as `resource -> [path?query]` (the resource is
/// the path's last segment, e.g. `deployments`).
#[derive(Clone, Default)]
struct WatchLog {
    watches: Arc<Mutex<Vec<(String, String)>>>,
}

impl WatchLog {
    /// The watch requests for `resource`, as `path?query`.
    fn of(&self, resource: &str) -> Vec<String> {
        self.watches
            .lock()
            .expect("watch log lock")
            .iter()
            .filter(|(r, _)| r == resource)
            .map(|(_, uri)| uri.clone())
            .collect()
    }

    /// Records `uri` if it is a watch request.
    fn record(&self, uri: &http::Uri) {
        let watch = uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        if watch {
            let resource = uri.path().rsplit('/').next().unwrap_or_default();
            self.watches
                .lock()
                .expect("watch log lock")
                .push((resource.to_string(), uri.to_string()));
        }
    }
}

impl<S> tower::Layer<S> for WatchLog {
    type Service = WatchLogService<S>;

    fn layer(&self, inner: S) -> WatchLogService<S> {
        WatchLogService {
            inner,
            log: self.clone(),
        }
    }
}

/// The service [`WatchLog`] wraps around kube's HTTP stack.
struct WatchLogService<S> {
    inner: S,
    log: WatchLog,
}

impl<S, B> tower::Service<http::Request<B>> for WatchLogService<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        self.log.record(request.uri());
        self.inner.call(request)
    }
}

#[tokio::test]
async fn the_operator_and_the_foo_controller_share_one_deployment_watch() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("myweb").await?;
    install_crds(env.client()).await?;
    let ns = env.namespace();

    // One process: one logged client, one factory, one Event broadcaster.
    let log = WatchLog::default();
    let client = kube::client::ClientBuilder::try_from(env.control_plane().config().await?)?
        .with_layer(&log)
        .build();
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let factory = SharedInformerFactory::new(client.clone(), RESYNC);
    let events = EventBroadcaster::new(BroadcasterOptions::default());
    events.start_recording_to_sink(client.clone())?;
    let web_controller = Arc::new(myweb_operator::new_controller(
        client.clone(),
        &factory,
        events.new_recorder(CONTROLLER_NAME, "e2e"),
        MyWebControllerOptions {
            namespace: Some(ns.to_string()),
            workers: 2,
            ..MyWebControllerOptions::default()
        },
    ));
    let foo_controller = Arc::new(foo_controller::new_controller(
        client.clone(),
        &factory,
        events.new_recorder(foo_controller::CONTROLLER_NAME, "e2e"),
        FooControllerOptions {
            namespace: Some(ns.to_string()),
            ..FooControllerOptions::default()
        },
    ));
    factory.start(&cancel);
    let web_task = tokio::spawn({
        let (c, cancel) = (Arc::clone(&web_controller), cancel.clone());
        async move { c.run(cancel).await }
    });
    let foo_task = tokio::spawn({
        let (c, cancel) = (Arc::clone(&foo_controller), cancel.clone());
        async move { c.run(2, cancel).await }
    });

    wait_for("both controllers synced", TIMEOUT, || async {
        let (web, foo) = (web_controller.has_synced(), foo_controller.has_synced());
        Ok::<_, std::convert::Infallible>(Check::ready_if(
            web && foo,
            (),
            format!("myweb synced={web} foo synced={foo}"),
        ))
    })
    .await?;

    // Both do their work: a Foo gets its Deployment and reports it available, a MyWeb
    // gets its objects and becomes Ready.
    let foos: Api<Foo> = api(&env);
    let foo = foos
        .create(
            &PostParams::default(),
            &Foo::new("foo", FooSpec::new("foo-deploy", 1)),
        )
        .await?;
    let web = create_web(&env, "web", "nginx", ports::SHARED, "<p>shared</p>").await?;
    let foo_deployment =
        wait_for_object::<Deployment>(&env, "foo-deploy", "the Foo's Deployment", |d| {
            controller::is_controlled_by(d, &foo)
        })
        .await?;
    assert!(!controller::is_controlled_by(&foo_deployment, &web));
    wait_for_objects(&env, &web).await?;
    wait_for_ready(&env, "web").await?;
    wait_for_object::<Foo>(&env, "foo", "Foo status.availableReplicas = 1", |f| {
        f.status.as_ref().map(|s| s.available_replicas) == Some(1)
    })
    .await?;

    // On the wire: one Deployment watch for the two controllers, in the namespace;
    // and the other kinds were watched too.
    let deployment_watches = log.of("deployments");
    assert_eq!(
        deployment_watches.len(),
        1,
        "one Deployment watch: {deployment_watches:#?}"
    );
    assert!(
        deployment_watches[0].starts_with(&format!("/apis/apps/v1/namespaces/{ns}/deployments?")),
        "{deployment_watches:?}"
    );
    for resource in ["mywebs", "foos", "configmaps", "services"] {
        assert!(!log.of(resource).is_empty(), "no {resource} watch");
    }

    cancel.cancel();
    web_task.await??;
    foo_task.await??;
    events.shutdown(Duration::from_secs(5)).await;
    Ok(())
}
