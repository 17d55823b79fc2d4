//! Streaming lists (`sendInitialEvents`, KEP-3157) against a scripted source, paused
//! time: the informer syncs from one watch and keeps watching on it; a server without
//! the feature gets paged lists for good; a stream that breaks before its end
//! bookmark falls back to a paged list once; a relist by stream delivers tombstones.

use std::sync::Arc;
use std::time::Duration;

use cache::testing::{ScriptedListerWatcher, bookmark, gone, initial_events_end};
use cache::{DeletedObject, EventHandler, SharedIndexInformer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, WatchEvent};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn cm(name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// What the handler saw: "add a 1 initial", "update a 1->2", "delete default/a tombstone".
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

fn rv(obj: &ConfigMap) -> &str {
    obj.metadata.resource_version.as_deref().unwrap_or("?")
}

impl EventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        let name = obj.metadata.name.as_deref().unwrap_or("?");
        let tag = if initial { " initial" } else { "" };
        self.0.lock().push(format!("add {name} {}{tag}", rv(obj)));
    }
    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let name = new.metadata.name.as_deref().unwrap_or("?");
        self.0
            .lock()
            .push(format!("update {name} {}->{}", rv(old), rv(new)));
    }
    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let what = match obj {
            DeletedObject::Object(o) => o.metadata.name.clone().unwrap_or_default(),
            DeletedObject::Tombstone(t) => format!("{} tombstone", t.key),
        };
        self.0.lock().push(format!("delete {what}"));
    }
}

/// Polls in virtual time (10 ms steps, far shorter than any backoff).
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// Waits in real time for handler threads (paused time does not drive them).
async fn delivered(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..5000 {
        if cond() {
            return;
        }
        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(2)))
            .await
            .unwrap();
    }
    panic!("timed out waiting for handlers: {what}");
}

struct Running {
    informer: SharedIndexInformer<ConfigMap>,
    lw: Arc<ScriptedListerWatcher<ConfigMap>>,
    events: Recorder,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

fn start(lw: ScriptedListerWatcher<ConfigMap>) -> Running {
    let lw = Arc::new(lw);
    let informer = SharedIndexInformer::new("configmaps", lw.clone(), Duration::ZERO);
    let events = Recorder::default();
    informer.add_event_handler(events.clone());
    let stop = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, stop) = (informer.clone(), stop.clone());
        async move { informer.run(stop).await }
    });
    Running {
        informer,
        lw,
        events,
        stop,
        task,
    }
}

impl Running {
    fn keys(&self) -> Vec<String> {
        let mut keys = self.informer.indexer().list_keys();
        keys.sort();
        keys
    }
    fn events(&self) -> Vec<String> {
        self.events.0.lock().clone()
    }
    async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_syncs_from_one_watch_and_keeps_watching_on_it() {
    let lw = ScriptedListerWatcher::new();
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("a", "1"))),
            Ok(bookmark("3")), // a plain bookmark does not end the initial events
            Ok(WatchEvent::Added(cm("b", "2"))),
            Ok(initial_events_end("10")),
            Ok(WatchEvent::Modified(cm("a", "11"))),
        ],
        false,
    );
    let r = start(lw);
    assert!(r.informer.wait_for_cache_sync(&r.stop).await);
    assert_eq!(r.keys(), ["default/a", "default/b"]);
    delivered("the update", || r.events().len() == 3).await;
    // Per key in order (the update may come before b's add: the DeltaFIFO queues
    // a's change behind its initial delta if a has not been popped yet).
    let events = r.events();
    let position = |e: &str| events.iter().position(|x| x == e);
    assert!(position("add b 2 initial").is_some(), "{events:?}");
    assert!(
        position("add a 1 initial") < position("update a 1->11"),
        "{events:?}"
    );
    assert!(position("add a 1 initial").is_some(), "{events:?}");
    assert_eq!(r.informer.last_sync_resource_version(), "11");
    let call = &r.lw.watch_list_calls()[0];
    assert_eq!(call.resource_version, "", "not older than now");
    assert!(call.send_initial_events && call.allow_bookmarks);
    assert!(r.lw.list_calls().is_empty(), "no list request");
    assert!(r.lw.watch_calls().is_empty(), "no second watch");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_server_without_streaming_lists_gets_paged_lists_for_good() {
    // The scripted source answers streaming lists with 422, as a server with the
    // WatchList feature off.
    let lw = ScriptedListerWatcher::new();
    lw.push_list_items(vec![cm("a", "1")], "5");
    lw.push_watch(vec![Err(gone())], false);
    lw.push_list_items(vec![cm("b", "6")], "7");
    let r = start(lw);
    eventually("relisted", || r.keys() == ["default/b"]).await;
    assert_eq!(r.lw.list_calls().len(), 2);
    assert_eq!(
        r.lw.watch_list_calls().len(),
        1,
        "asked once, not per relist"
    );
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_broken_stream_falls_back_once_and_a_streamed_relist_delivers_tombstones() {
    let lw = ScriptedListerWatcher::new();
    // 1. The stream closes before its end bookmark: this time, a paged list.
    lw.push_watch_list(vec![Ok(WatchEvent::Added(cm("a", "1")))], true);
    lw.push_list_items(vec![cm("keep", "1"), cm("vanish", "1")], "5");
    // 2. The watch after that list expires (410)...
    lw.push_watch(vec![Err(gone())], false);
    // 3. ...and the relist streams again; "vanish" was deleted in the gap.
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("keep", "1"))),
            Ok(initial_events_end("20")),
        ],
        false,
    );
    let r = start(lw);
    eventually("streamed relist", || r.lw.watch_list_calls().len() == 2).await;
    eventually("vanish gone", || r.keys() == ["default/keep"]).await;
    delivered("the tombstone", || {
        r.events()
            .contains(&"delete default/vanish tombstone".to_string())
    })
    .await;
    assert_eq!(r.lw.list_calls().len(), 1, "only the fallback list");
    assert_eq!(r.informer.last_sync_resource_version(), "20");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn changes_before_the_end_bookmark_mean_the_server_ignores_the_request() {
    let lw = ScriptedListerWatcher::new();
    // A server that ignores sendInitialEvents: synthetic adds, then changes, no end.
    lw.push_watch_list(
        vec![
            Ok(WatchEvent::Added(cm("a", "1"))),
            Ok(WatchEvent::Modified(cm("a", "2"))),
        ],
        false,
    );
    lw.push_list_items(vec![cm("a", "2")], "5");
    lw.push_watch(vec![Err(gone())], false);
    lw.push_list_items(vec![cm("a", "3")], "6");
    let r = start(lw);
    eventually("relisted", || r.lw.list_calls().len() == 2).await;
    assert_eq!(r.lw.watch_list_calls().len(), 1, "not asked again");
    r.stop().await;
}
