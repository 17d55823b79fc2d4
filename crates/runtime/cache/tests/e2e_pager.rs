//! e2e: listing against a real kube-apiserver. `ApiListerWatcher::list` with its one
//! page of read-ahead (`cache::lister_watcher::pager`): every object exactly once
//! across pages, a repeated request answered correctly (the read-ahead is discarded,
//! not served), and server errors reported as `kube::Error::Api` with the server's
//! status code, as `kube::Api` reports them. And an informer syncs to exactly the
//! server's state both by streaming list (the default) and by paged list, with
//! `managedFields` kept or cut out before decoding, in lists and watch events alike.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cache::{
    ApiListerWatcher, ListOptions, ListPage, ListerWatcher, SharedIndexInformer, WatchOptions,
    WatchStream, Wire,
};
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use testenv::TestEnv;
use tokio_util::sync::CancellationToken;

fn names(page: &ListPage<ConfigMap>) -> Vec<String> {
    page.items
        .iter()
        .map(|cm| cm.metadata.name.clone().unwrap())
        .collect()
}

async fn list(
    lw: &ApiListerWatcher<ConfigMap>,
    continue_token: Option<&str>,
) -> anyhow::Result<ListPage<ConfigMap>> {
    let options = ListOptions {
        resource_version: String::new(),
        limit: 10,
        continue_token: continue_token.map(str::to_string),
    };
    Ok(lw.list(&options).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_with_read_ahead_are_exact_and_errors_keep_their_status() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-pager").await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), env.namespace());
    let created: BTreeSet<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    for name in &created {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([("pager".to_string(), "test".to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm).await?;
    }
    // The label leaves out what the cluster puts in every namespace (kube-root-ca.crt).
    let lw = ApiListerWatcher::new(api.clone()).labels("pager=test");

    // Page 1; its answer starts the request for page 2 in the background.
    let first = list(&lw, None).await?;
    let token1 = first.continue_token.clone().expect("a second page");
    // Asking for page 1 again must not be answered with the read-ahead of page 2.
    let again = list(&lw, None).await?;
    assert_eq!(names(&again), names(&first));

    // Walk the rest (the read-ahead serves pages 2 and 3).
    let mut seen: Vec<String> = names(&first);
    let mut token = Some(token1);
    let mut pages = 1;
    while let Some(t) = token {
        let page = list(&lw, Some(&t)).await?;
        assert_eq!(
            page.resource_version, first.resource_version,
            "one snapshot"
        );
        seen.extend(names(&page));
        token = page.continue_token;
        pages += 1;
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 25, "no object twice: {seen:?}");
    assert_eq!(seen.into_iter().collect::<BTreeSet<_>>(), created);
    // The server answered in the wire this process asks for (KUBE_API_CONTENT_TYPE,
    // protobuf by default): ConfigMaps have both.
    assert_eq!(lw.answered_wire(), Some(Wire::from_env()));

    // Each wire asked for explicitly is the one answered, with the same objects.
    let mut lists = Vec::new();
    for wire in [Wire::Protobuf, Wire::Json] {
        let lw = ApiListerWatcher::new(api.clone())
            .labels("pager=test")
            .wire(wire);
        assert_eq!(lw.answered_wire(), None, "no answer yet");
        let all = lw.list(&ListOptions::default()).await?;
        assert_eq!(lw.answered_wire(), Some(wire));
        lists.push(all.items);
    }
    assert_eq!(lists[0].len(), 25);
    assert_eq!(
        lists[0], lists[1],
        "protobuf and JSON decode to the same objects"
    );

    // A bad selector: the server's 400 Status comes back as kube::Error::Api.
    let bad = ApiListerWatcher::new(api).labels("a in (");
    match bad.list(&ListOptions::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 400, "{status:?}"),
        other => panic!("expected a 400 Api error, got {other:?}"),
    }
    Ok(())
}

/// Counts the list requests (pages) going through to the real source.
struct CountingLists {
    inner: ApiListerWatcher<ConfigMap>,
    lists: AtomicUsize,
}

impl ListerWatcher<ConfigMap> for CountingLists {
    fn list(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<ConfigMap>, kube::Error>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(options)
    }
    fn watch(
        &self,
        options: &WatchOptions,
    ) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        self.inner.watch(options)
    }
}

/// name -> resourceVersion of the labelled ConfigMaps in an informer's cache.
fn cached(informer: &SharedIndexInformer<ConfigMap>) -> BTreeMap<String, String> {
    informer
        .indexer()
        .list()
        .into_iter()
        .map(|cm| {
            let name = cm.metadata.name.clone().unwrap();
            (name, cm.metadata.resource_version.clone().unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_and_paged_informers_sync_to_exactly_the_servers_state() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-sync-modes").await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), env.namespace());
    // More than two pages and more than two streaming batches of 500.
    futures::stream::iter(0..1234)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("cm-{i:04}")),
                        labels: Some([("mode".to_string(), "test".to_string())].into()),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                api.create(&PostParams::default(), &cm).await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let mut server: BTreeMap<String, String> = api
        .list(&ListParams::default().labels("mode=test"))
        .await?
        .items
        .into_iter()
        .map(|cm| {
            (
                cm.metadata.name.unwrap(),
                cm.metadata.resource_version.unwrap(),
            )
        })
        .collect();
    assert_eq!(server.len(), 1234);

    // Both list modes, keeping managedFields and cutting them out before decoding.
    for (streaming, strip) in [(true, false), (false, false), (true, true), (false, true)] {
        let lw = Arc::new(CountingLists {
            inner: ApiListerWatcher::new(api.clone())
                .labels("mode=test")
                .strip_managed_fields(strip),
            lists: AtomicUsize::new(0),
        });
        let informer = common::new_informer("configmaps", lw.clone(), Duration::ZERO);
        informer.set_watch_list(streaming);
        let stop = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, stop) = (informer.clone(), stop.clone());
            async move { informer.run(stop).await }
        });
        let synced =
            tokio::time::timeout(Duration::from_secs(60), informer.wait_for_cache_sync(&stop))
                .await;
        assert!(
            matches!(synced, Ok(true)),
            "streaming={streaming}: not synced"
        );
        assert_eq!(cached(&informer), server, "streaming={streaming}");
        let with_managed_fields = informer
            .indexer()
            .list()
            .iter()
            .filter(|cm| cm.metadata.managed_fields.is_some())
            .count();
        assert_eq!(
            with_managed_fields,
            if strip { 0 } else { 1234 },
            "streaming={streaming} strip={strip}"
        );
        // A change arrives by watch, also decoded as asked.
        let mut changed = api.get("cm-0007").await?;
        changed.data = Some([("round".to_string(), format!("{streaming}-{strip}"))].into());
        let changed = api
            .replace("cm-0007", &PostParams::default(), &changed)
            .await?;
        server.insert(
            "cm-0007".into(),
            changed.metadata.resource_version.clone().unwrap(),
        );
        let watched = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Some(cm) = informer
                    .indexer()
                    .get_by_key(&format!("{}/cm-0007", env.namespace()))
                    && cm.metadata.resource_version == changed.metadata.resource_version
                {
                    return cm;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await?;
        assert_eq!(watched.data, changed.data);
        assert_eq!(
            watched.metadata.managed_fields.is_some(),
            !strip,
            "strip={strip}"
        );
        // The 1.34 server streams; without streaming, 1234 objects are 3 pages.
        let pages = lw.lists.load(Ordering::SeqCst);
        assert_eq!(
            pages,
            if streaming { 0 } else { 3 },
            "streaming={streaming}"
        );
        stop.cancel();
        task.await?;
    }
    Ok(())
}
