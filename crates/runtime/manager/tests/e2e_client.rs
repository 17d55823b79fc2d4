//! e2e: the binaries' API client (`ClientArgs::throttled_client`) against a real
//! kube-apiserver: HTTP/2 by default, with kube's authentication (the admin client
//! certificate), lists and watches working over it; HTTP/1.1 with
//! `--disable-http2`.

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
