//! e2e: the binaries' API client (`ClientArgs::throttled_client`) against a real
//! kube-apiserver: HTTP/2 by default, with kube's authentication (the admin client
//! certificate), lists and watches working over it; HTTP/1.1 with
//! `--disable-http2`. And the manager's factory on that client: an object its
//! informer's type cannot decode gets a Warning Event (`FailedDecode`).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use manager::ClientArgs;
use testenv::TestEnv;

/// The HTTP version a GET of /version was answered with.
async fn version_of(client: &kube::Client) -> anyhow::Result<http::Version> {
    let request = http::Request::get("/version").body(Vec::new())?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    anyhow::ensure!(response.status().is_success(), "{}", response.status());
    Ok(response.version())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_speaks_http2_unless_told_not_to() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("client-http2").await?;
    for (disable_http2, expected) in [
        (false, http::Version::HTTP_2),
        (true, http::Version::HTTP_11),
    ] {
        let args = ClientArgs {
            kube_api_qps: 0.0,
            disable_http2,
            ..ClientArgs::default()
        };
        let (client, _) = args.throttled_client(env.config().clone())?;
        assert_eq!(
            version_of(&client).await?,
            expected,
            "disable_http2={disable_http2}"
        );

        // A watch and writes share the client (on HTTP/2, one connection).
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), env.namespace());
        let name = format!("h2-{disable_http2}");
        let mut events = api
            .watch(
                &WatchParams::default().fields(&format!("metadata.name={name}")),
                "0",
            )
            .await?
            .boxed();
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await?;
        let added = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match events.next().await {
                    Some(Ok(WatchEvent::Added(cm))) => return Ok(cm),
                    Some(Ok(WatchEvent::Bookmark(_))) => continue,
                    other => return Err(anyhow::anyhow!("unexpected: {other:?}")),
                }
            }
        })
        .await??;
        assert_eq!(added.metadata.name.as_deref(), Some(name.as_str()));
        let listed = api.list(&ListParams::default()).await?;
        assert!(
            listed
                .items
                .iter()
                .any(|cm| cm.metadata.name.as_deref() == Some(name.as_str()))
        );
    }
    Ok(())
}

/// A type whose `size` is required, over a CRD that lets it be left out.
#[derive(kube::CustomResource, serde::Deserialize, serde::Serialize, Clone, Debug)]
#[kube(
    group = "decode.manager.kcr.test",
    version = "v1",
    kind = "Part",
    namespaced,
    schema = "disabled"
)]
struct PartSpec {
    size: i64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_the_informer_cannot_decode_gets_a_warning_event() -> anyhow::Result<()> {
    use clap::Parser;
    use k8s_openapi::api::events::v1::Event;
    use kube::core::{ApiResource, DynamicObject, GroupVersionKind};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        manager: manager::ManagerArgs,
    }

    let env = TestEnv::with_prefix("manager-decode").await?;
    let ns = env.namespace().to_string();
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "parts.decode.manager.kcr.test"},
        "spec": {
            "group": "decode.manager.kcr.test",
            "names": {"kind": "Part", "plural": "parts", "singular": "part", "listKind": "PartList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}
            }}}]
        }
    });
    testenv::crd::install_crds(env.client(), &[serde_json::from_value(crd)?]).await?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("decode.manager.kcr.test", "v1", "Part"),
        "parts",
    );
    let raw: Api<DynamicObject> = Api::namespaced_with(env.client().clone(), &ns, &resource);
    let mut bad = DynamicObject::new("no-size", &resource);
    bad.data = serde_json::json!({"spec": {}});
    let bad = raw.create(&PostParams::default(), &bad).await?;

    let kubeconfig = env.kubeconfig().display().to_string();
    let cli = Cli::try_parse_from([
        "x",
        "--kubeconfig",
        &kubeconfig,
        "--metrics-bind-address=0",
        "--health-probe-bind-address=0",
    ])?;
    let mgr = manager::Manager::new("decode-test", cli.manager).await?;
    let parts = mgr.factory().informer_for_api(
        Api::<Part>::namespaced(mgr.client().clone(), &ns),
        cache::InformerOptions::default(),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    mgr.factory().start(&stop);
    assert!(parts.wait_for_cache_sync(&stop).await, "synced without it");
    assert!(parts.indexer().list().is_empty());

    // The Event is on the object, where `kubectl describe` shows it.
    let events: Api<Event> = Api::namespaced(env.client().clone(), &ns);
    let uid = bad.metadata.uid.clone();
    let found = testenv::wait_for("a FailedDecode Event", Duration::from_secs(60), || async {
        let list = events.list(&ListParams::default()).await?;
        let event = list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("FailedDecode")
                && e.regarding.as_ref().and_then(|r| r.uid.clone()) == uid
        });
        let seen = event.is_some();
        Ok::<_, kube::Error>(testenv::Check::ready_if(seen, event, "none yet"))
    })
    .await?
    .unwrap();
    assert_eq!(found.type_.as_deref(), Some("Warning"));
    let note = found.note.unwrap_or_default();
    assert!(note.contains("size"), "{note}");
    let regarding = found.regarding.unwrap();
    assert_eq!(regarding.kind.as_deref(), Some("Part"));
    assert_eq!(regarding.name.as_deref(), Some("no-size"));

    stop.cancel();
    Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(env.client().clone())
        .delete("parts.decode.manager.kcr.test", &Default::default())
        .await?;
    Ok(())
}
