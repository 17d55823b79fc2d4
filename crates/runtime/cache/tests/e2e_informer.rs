//! e2e: the informer against a real kube-apiserver (crates/dev/testenv). The store must end
//! up *exactly* equal to the server's list (names and resourceVersions), through
//! concurrent churn and through a real `410 Gone` relist.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context;
use cache::{
    ApiListerWatcher, DeletedObject, EventHandlerFuncs, ListOptions, ListPage, ListerWatcher,
    SharedIndexInformer, WatchOptions, WatchStream,
};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use parking_lot::Mutex;
use testenv::{Check, TestEnv, wait_for};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("v".to_string(), value.to_string())].into()),
        ..Default::default()
    }
}

/// name -> resourceVersion, as the server has it.
async fn server_state(api: &Api<ConfigMap>) -> anyhow::Result<BTreeMap<String, String>> {
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .map(|cm| {
            (
                cm.metadata.name.unwrap(),
                cm.metadata.resource_version.unwrap(),
            )
        })
        .collect())
}

/// name -> resourceVersion, as the informer's cache has it (only `namespace`).
fn cache_state(
    informer: &SharedIndexInformer<ConfigMap>,
    namespace: &str,
) -> BTreeMap<String, String> {
    informer
        .indexer()
        .list()
        .into_iter()
        .filter(|cm| cm.metadata.namespace.as_deref() == Some(namespace))
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap(),
                cm.metadata.resource_version.clone().unwrap(),
            )
        })
        .collect()
}

/// Waits until the cache equals the server's list exactly.
async fn converges(
    api: &Api<ConfigMap>,
    informer: &SharedIndexInformer<ConfigMap>,
    namespace: &str,
) -> anyhow::Result<BTreeMap<String, String>> {
    let state = wait_for("cache == server list", Duration::from_secs(120), || async {
        let server = server_state(api).await?;
        let cached = cache_state(informer, namespace);
        let diff = server.len().abs_diff(cached.len());
        let equal = server == cached;
        Ok::<_, anyhow::Error>(Check::ready_if(
            equal,
            server,
            format!("{} cached vs server: size differs by {diff}", cached.len()),
        ))
    })
    .await?;
    Ok(state)
}

/// Deletes every 4th of `cm-000`..`cm-099`, updates the next of each four, and creates
/// `created`: 51 changes an informer must catch up with after a disruption.
async fn change_the_world(api: &Api<ConfigMap>, created: &str) -> anyhow::Result<()> {
    for i in (0..100).step_by(4) {
        api.delete(&format!("cm-{i:03}"), &DeleteParams::default())
            .await?;
    }
    for i in (1..100).step_by(4) {
        let name = format!("cm-{i:03}");
        let mut cm = api.get(&name).await?;
        cm.data = Some([("v".to_string(), "changed".to_string())].into());
        api.replace(&name, &PostParams::default(), &cm).await?;
    }
    api.create(&PostParams::default(), &config_map(created, "0"))
        .await?;
    Ok(())
}

fn spawn_informer(
    informer: &SharedIndexInformer<ConfigMap>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    (stop, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_config_maps_under_concurrent_churn_end_exactly_as_the_server_has_them()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-churn").await?;
    let ns = env.namespace().to_string();
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), &ns);
    let informer = common::new_informer(
        "configmaps",
        Arc::new(ApiListerWatcher::new(api.clone())),
        Duration::ZERO,
    );
    let deletes_seen = Arc::new(Mutex::new(BTreeSet::new()));
    informer.add_event_handler(EventHandlerFuncs::new().on_delete({
        let deletes_seen = deletes_seen.clone();
        move |d: &DeletedObject<ConfigMap>| {
            if let Some(name) = d.object().and_then(|o| o.metadata.name.clone()) {
                deletes_seen.lock().insert(name);
            }
        }
    }));
    let (stop, task) = spawn_informer(&informer);
    assert!(informer.wait_for_cache_sync(&stop).await);

    // 2,000 creates from 8 concurrent writers; each writer also updates and deletes
    // some of its own objects while the others are still creating.
    const N: usize = 2_000;
    const WRITERS: usize = 8;
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let api = api.clone();
            tokio::spawn(async move {
                let mut deleted = Vec::new();
                for i in (w..N).step_by(WRITERS) {
                    let name = format!("cm-{i:04}");
                    api.create(&PostParams::default(), &config_map(&name, "0"))
                        .await?;
                    if i % 5 == 0 {
                        let mut cm = api.get(&name).await?;
                        cm.data = Some([("v".to_string(), "1".to_string())].into());
                        api.replace(&name, &PostParams::default(), &cm).await?;
                    }
                    if i % 7 == 0 {
                        api.delete(&name, &DeleteParams::default()).await?;
                        deleted.push(name);
                    }
                }
                anyhow::Ok(deleted)
            })
        })
        .collect();
    let mut deleted = BTreeSet::new();
    for w in writers {
        deleted.extend(w.await??);
    }

    let state = converges(&api, &informer, &ns).await?;
    // (The namespace also holds kube-root-ca.crt, created by kube-controller-manager.)
    let ours = state.keys().filter(|name| name.starts_with("cm-")).count();
    assert_eq!(ours, N - deleted.len());
    wait_for(
        "every delete delivered",
        Duration::from_secs(60),
        || async {
            let seen = deletes_seen.lock().clone();
            Ok::<_, anyhow::Error>(Check::ready_if(
                seen == deleted,
                (),
                format!("{} of {} deletes", seen.len(), deleted.len()),
            ))
        },
    )
    .await?;
    stop.cancel();
    task.await?;
    Ok(())
}

/// A lister/watcher over the real API that can open a *gap*: it cuts the running
/// watch and holds the next watch call until released; that call then answers
/// `410 Gone` as the server does for a compacted resourceVersion.
///
/// Why injected rather than provoked: the API server's watch cache keeps serving old
/// resourceVersions from memory long after etcd compacted them (checked by hand
/// against this control plane: a watch from resourceVersion 1 after an etcd
/// compaction still streams events), so a real 410 cannot be forced quickly. What
/// matters is real: the deletions during the gap, and the relist the reflector does
/// against the real server, which must turn them into tombstones.
struct GapListerWatcher {
    inner: ApiListerWatcher<ConfigMap>,
    cut: Arc<Notify>,
    hold: AtomicBool,
    release: Notify,
    stale_next: AtomicBool,
    gone_seen: AtomicBool,
}

impl ListerWatcher<ConfigMap> for GapListerWatcher {
    fn list(
        &self,
        options: &ListOptions,
    ) -> BoxFuture<'_, Result<ListPage<ConfigMap>, kube::Error>> {
        self.inner.list(options)
    }

    fn watch(
        &self,
        options: &WatchOptions,
    ) -> BoxFuture<'_, Result<WatchStream<ConfigMap>, kube::Error>> {
        let options = options.clone();
        async move {
            // Register for the release before looking at `hold`, so it cannot be missed.
            let mut release = std::pin::pin!(self.release.notified());
            release.as_mut().enable();
            if self.hold.load(Ordering::SeqCst) {
                release.await;
            }
            if self.stale_next.swap(false, Ordering::SeqCst) {
                self.gone_seen.store(true, Ordering::SeqCst);
                return Err(cache::testing::gone());
            }
            let cut = self.cut.clone();
            let events = self.inner.watch(&options).await?;
            Ok(events
                .take_until(async move { cut.notified().await })
                .boxed())
        }
        .boxed()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_after_a_watch_gap_relists_and_delivers_tombstones_for_deletions_in_the_gap()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-gone").await?;
    let ns = env.namespace().to_string();
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), &ns);
    for i in 0..50 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i:02}"), "0"),
        )
        .await?;
    }
    let lw = Arc::new(GapListerWatcher {
        inner: ApiListerWatcher::new(api.clone()),
        cut: Arc::new(Notify::new()),
        hold: AtomicBool::new(false),
        release: Notify::new(),
        stale_next: AtomicBool::new(false),
        gone_seen: AtomicBool::new(false),
    });
    let informer = common::new_informer("configmaps", lw.clone(), Duration::ZERO);
    let tombstones = Arc::new(Mutex::new(BTreeSet::new()));
    informer.add_event_handler(EventHandlerFuncs::new().on_delete({
        let tombstones = tombstones.clone();
        move |d: &DeletedObject<ConfigMap>| {
            if let DeletedObject::Tombstone(t) = d {
                tombstones.lock().insert(t.key.clone());
            }
        }
    }));
    let (stop, task) = spawn_informer(&informer);
    assert!(informer.wait_for_cache_sync(&stop).await);
    converges(&api, &informer, &ns).await?;

    // Open the gap: no watch is running while objects change.
    lw.hold.store(true, Ordering::SeqCst);
    lw.cut.notify_waiters();
    let mut expected_tombstones = BTreeSet::new();
    for i in (0..50).step_by(3) {
        let name = format!("cm-{i:02}");
        api.delete(&name, &DeleteParams::default()).await?;
        expected_tombstones.insert(format!("{ns}/{name}"));
    }
    api.create(&PostParams::default(), &config_map("born-in-gap", "0"))
        .await?;
    // Close it: the next watch is told its resourceVersion is gone.
    lw.stale_next.store(true, Ordering::SeqCst);
    lw.hold.store(false, Ordering::SeqCst);
    lw.release.notify_waiters();

    let state = converges(&api, &informer, &ns)
        .await
        .context("after the 410 relist")?;
    assert!(
        lw.gone_seen.load(Ordering::SeqCst),
        "the watch was answered 410"
    );
    assert!(state.contains_key("born-in-gap"));
    assert_eq!(
        *tombstones.lock(),
        expected_tombstones,
        "one tombstone per deletion in the gap"
    );
    stop.cancel();
    task.await?;
    Ok(())
}

/// A TCP proxy in front of the API server that can simulate an outage: it cuts every
/// open connection and resets new ones until it is brought back.
struct FlakyProxy {
    addr: std::net::SocketAddr,
    down: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl FlakyProxy {
    async fn start(upstream: String) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let down = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accept = tokio::spawn({
            let (down, connections) = (down.clone(), connections.clone());
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if down.load(Ordering::SeqCst) {
                        drop(inbound); // reset: the server is "down"
                        continue;
                    }
                    let upstream = upstream.clone();
                    let task = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    connections.lock().push(task.abort_handle());
                }
            }
        });
        Ok(Self {
            addr,
            down,
            connections,
            accept,
        })
    }

    fn go_down(&self) {
        self.down.store(true, Ordering::SeqCst);
        for c in self.connections.lock().drain(..) {
            c.abort();
        }
    }

    fn come_back(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

impl Drop for FlakyProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.go_down();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_outage_mid_run_is_survived_and_the_cache_converges() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-outage").await?;
    let ns = env.namespace().to_string();
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), &ns);
    for i in 0..100 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i:03}"), "0"),
        )
        .await?;
    }

    // The informer reaches the API server only through the proxy.
    let mut config = env.control_plane().config().await?;
    let upstream = format!(
        "{}:{}",
        config.cluster_url.host().context("apiserver host")?,
        config.cluster_url.port_u16().context("apiserver port")?
    );
    let proxy = FlakyProxy::start(upstream).await?;
    config.cluster_url = format!("https://{}", proxy.addr).parse()?;
    let proxied: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config)?, &ns);
    let informer = common::new_informer(
        "configmaps",
        Arc::new(ApiListerWatcher::new(proxied)),
        Duration::ZERO,
    );
    let (stop, task) = spawn_informer(&informer);
    assert!(informer.wait_for_cache_sync(&stop).await);
    converges(&api, &informer, &ns).await?;

    // Outage: open watches break, reconnects fail. Meanwhile the world changes.
    proxy.go_down();
    change_the_world(&api, "during-outage").await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_ne!(
        cache_state(&informer, &ns),
        server_state(&api).await?,
        "the informer cannot have seen the changes yet"
    );

    proxy.come_back();
    let state = converges(&api, &informer, &ns)
        .await
        .context("after the outage")?;
    assert!(state.contains_key("during-outage"));
    assert_eq!(state.keys().filter(|n| n.starts_with("cm-")).count(), 75);
    stop.cancel();
    task.await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_api_server_restart_mid_run_is_survived_and_the_cache_converges()
-> anyhow::Result<()> {
    // A private control plane: restarting the shared one would disturb other tests.
    let plane = Arc::new(tokio::task::spawn_blocking(testenv::ControlPlane::start).await??);
    let client = plane.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..100 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i:03}"), "0"),
        )
        .await?;
    }
    let informer = common::new_informer(
        "configmaps",
        Arc::new(ApiListerWatcher::new(api.clone())),
        Duration::ZERO,
    );
    let (stop, task) = spawn_informer(&informer);
    assert!(informer.wait_for_cache_sync(&stop).await);
    converges(&api, &informer, "default").await?;
    let rv_before = informer.last_sync_resource_version();

    // Stop and start kube-apiserver (etcd keeps the data). The informer's watch
    // breaks, reconnects are refused, and the new server starts with an empty watch
    // cache. Change the world the moment it is back, while the informer is likely
    // still backing off.
    tokio::task::spawn_blocking({
        let plane = plane.clone();
        move || plane.restart_apiserver()
    })
    .await??;
    change_the_world(&api, "after-restart").await?;

    let state = converges(&api, &informer, "default")
        .await
        .context("after the restart")?;
    assert!(state.contains_key("after-restart"));
    assert_eq!(state.keys().filter(|n| n.starts_with("cm-")).count(), 75);
    assert_ne!(informer.last_sync_resource_version(), rv_before);
    stop.cancel();
    task.await?;
    Ok(())
}

/// Read-your-writes on a real server: once the store's version reaches the version of
/// our own write, the cache holds that write (KEP-5647's premise). The comparison
/// parses versions as integers, which etcd-backed servers hand out; KEP-5504 (1.35)
/// makes that comparison official.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_version_catches_up_with_our_own_write() -> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-fresh").await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client().clone(), env.namespace());
    let informer = common::new_informer(
        "configmaps",
        Arc::new(ApiListerWatcher::new(api.clone())),
        Duration::ZERO,
    );
    let bookmarks = Arc::new(Mutex::new(Vec::<u64>::new()));
    informer.add_event_handler(EventHandlerFuncs::new().on_bookmark({
        let bookmarks = bookmarks.clone();
        move |rv: &str| {
            bookmarks
                .lock()
                .push(rv.parse().expect("an integer version"))
        }
    }));
    let (stop, task) = spawn_informer(&informer);
    assert!(informer.wait_for_cache_sync(&stop).await);
    let in_order = common::queue_kind().tracks_store_version();
    let store_rv = || {
        informer
            .last_store_sync_resource_version()
            .map(|rv| rv.parse::<u64>().expect("an integer version"))
    };

    let written = api
        .create(&PostParams::default(), &config_map("mine", "1"))
        .await?;
    let written_rv: u64 = written.metadata.resource_version.unwrap().parse()?;
    if in_order {
        wait_for("store at our write", Duration::from_secs(30), || async {
            let rv = store_rv().unwrap_or(0);
            Ok::<_, anyhow::Error>(Check::ready_if(
                rv >= written_rv,
                (),
                format!("store at {rv}"),
            ))
        })
        .await?;
        // The point of the version: reaching it means the write is readable.
        let cached = informer
            .indexer()
            .get_by_key(&format!("{}/mine", env.namespace()));
        assert_eq!(
            cached.and_then(|c| c.metadata.resource_version.clone()),
            Some(written_rv.to_string())
        );
        // The initial list ended with a bookmark at the list's version.
        let seen = bookmarks.lock().clone();
        assert!(
            !seen.is_empty() && seen[0] < written_rv,
            "{seen:?} vs {written_rv}"
        );
    } else {
        wait_for("mine cached", Duration::from_secs(30), || async {
            let cached = informer
                .indexer()
                .contains_key(&format!("{}/mine", env.namespace()));
            Ok::<_, anyhow::Error>(Check::ready_if(cached, (), "not yet"))
        })
        .await?;
        assert_eq!(store_rv(), None, "no store version on the DeltaFIFO");
        assert!(bookmarks.lock().is_empty(), "no bookmarks on the DeltaFIFO");
    }
    stop.cancel();
    task.await?;
    Ok(())
}
