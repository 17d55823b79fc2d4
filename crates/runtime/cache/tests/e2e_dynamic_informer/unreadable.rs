//! e2e: an object the informer's type cannot decode, on a real kube-apiserver
//! (`cache::unreadable`). The CRD's schema lets `spec.size` be left out; the Rust type
//! requires it. client-go (and this crate before) failed every list on such an object
//! and never synced. Here the informer must sync without it, report it (key, error,
//! hook, gauge, pipeline banner), follow every other object by list and by watch, drop
//! an object from its cache when a watch event makes it undecodable, and take an
//! object back when it decodes again: with a streaming list and with paged lists.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cache::lister_watcher::ApiListerWatcher;
use cache::metrics::{
    CounterMetric, HistogramMetric, ReflectorMetricsProvider, SettableGaugeMetric,
};
use cache::{DeletedObject, EventHandlerFuncs, SharedIndexInformer, Unreadable};
use kube::CustomResource;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::*;

/// The type: `size` is required. (The group is this test's own; its CRD is deleted
/// at the end.)
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug)]
#[kube(
    group = "unreadable.cache.kcr.test",
    version = "v1",
    kind = "Gadget",
    namespaced,
    schema = "disabled"
)]
struct GadgetSpec {
    size: i64,
}

/// The CRD: `size` may be left out, so the server stores what the type cannot hold.
fn gadget_crd() -> CustomResourceDefinition {
    sized_crd("unreadable.cache.kcr.test", "Gadget")
}

/// The unreadable-objects gauge of each reflector, by name; the rest are not looked at.
#[derive(Default)]
struct Gauges(Mutex<Vec<(String, Arc<AtomicU64>)>>);

struct Gauge(Arc<AtomicU64>);
struct Ignored;

impl SettableGaugeMetric for Gauge {
    fn set(&self, value: f64) {
        self.0.store(value as u64, Ordering::SeqCst);
    }
}
impl SettableGaugeMetric for Ignored {
    fn set(&self, _: f64) {}
}
impl CounterMetric for Ignored {
    fn inc(&self) {}
}
impl HistogramMetric for Ignored {
    fn observe(&self, _: f64) {}
}

impl ReflectorMetricsProvider for Gauges {
    fn new_lists_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Ignored)
    }
    fn new_list_errors_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Ignored)
    }
    fn new_list_duration_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Ignored)
    }
    fn new_items_in_list_metric(&self, _: &str) -> Arc<dyn HistogramMetric> {
        Arc::new(Ignored)
    }
    fn new_watches_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Ignored)
    }
    fn new_short_watches_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Ignored)
    }
    fn new_watch_errors_metric(&self, _: &str) -> Arc<dyn CounterMetric> {
        Arc::new(Ignored)
    }
    fn new_last_resource_version_metric(&self, _: &str) -> Arc<dyn SettableGaugeMetric> {
        Arc::new(Ignored)
    }
    fn new_unreadable_objects_metric(&self, name: &str) -> Arc<dyn SettableGaugeMetric> {
        let value = Arc::new(AtomicU64::new(0));
        self.0.lock().push((name.to_owned(), value.clone()));
        Arc::new(Gauge(value))
    }
}

impl Gauges {
    fn of(&self, name: &str) -> Option<u64> {
        let gauges = self.0.lock();
        let (_, value) = gauges.iter().rev().find(|(n, _)| n == name)?;
        Some(value.load(Ordering::SeqCst))
    }
}

/// Everything one informer showed: the cache's names, the set aside keys, the hook's
/// calls, the handlers' deletions.
struct Watched {
    informer: SharedIndexInformer<Gadget>,
    hooked: Arc<Mutex<Vec<String>>>,
    deleted: Arc<Mutex<Vec<String>>>,
}

impl Watched {
    fn cached(&self) -> BTreeSet<String> {
        self.informer
            .indexer()
            .list()
            .iter()
            .map(|g| g.metadata.name.clone().unwrap())
            .collect()
    }

    fn set_aside(&self) -> BTreeSet<String> {
        let keys = self
            .informer
            .unreadable()
            .into_iter()
            .map(|u: Unreadable| u.key);
        keys.collect()
    }
}

async fn until(
    what: &str,
    check: impl Fn() -> Result<(), String> + Send + Sync,
) -> anyhow::Result<()> {
    wait_for(what, TIMEOUT, || async {
        let outcome = check();
        let detail = outcome.clone().err().unwrap_or_default();
        Ok::<_, Infallible>(Check::ready_if(outcome.is_ok(), (), detail))
    })
    .await?;
    Ok(())
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_the_type_cannot_decode_is_set_aside_and_the_rest_is_followed()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-unreadable").await?;
    let ns = env.namespace().to_string();
    let client = env.client().clone();
    let gauges = Arc::new(Gauges::default());
    assert!(cache::set_global_reflector_metrics_provider(gauges.clone()));
    testenv::crd::install_crds(&client, &[gadget_crd()]).await?;
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("unreadable.cache.kcr.test", "v1", "Gadget"),
        "gadgets",
    );
    let raw: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    let write = |name: &str, spec: serde_json::Value| {
        let mut obj = DynamicObject::new(name, &resource);
        obj.data = serde_json::json!({ "spec": spec });
        obj
    };
    let set_spec = |spec: serde_json::Value| Patch::Merge(serde_json::json!({ "spec": spec }));
    let pp = PatchParams::default();

    for (mode, streaming) in [("stream", true), ("paged", false)] {
        let [a, broken, c] = ["a", "broken", "c"].map(|n| format!("{mode}-{n}"));
        raw.create(
            &PostParams::default(),
            &write(&a, serde_json::json!({"size": 1})),
        )
        .await?;
        raw.create(
            &PostParams::default(),
            &write(&broken, serde_json::json!({})),
        )
        .await?;

        let name = format!("gadgets-{mode}");
        let lw = ApiListerWatcher::new(Api::<Gadget>::namespaced(client.clone(), &ns));
        let informer = SharedIndexInformer::new(name.clone(), Arc::new(lw), Duration::ZERO);
        informer.set_watch_list(streaming);
        let hooked = Arc::new(Mutex::new(Vec::new()));
        informer.on_unreadable({
            let hooked = hooked.clone();
            move |u| hooked.lock().push(u.key.clone())
        });
        let deleted = Arc::new(Mutex::new(Vec::new()));
        let _registration = informer.add_event_handler(EventHandlerFuncs::new().on_delete({
            let deleted = deleted.clone();
            move |gone: &DeletedObject<Gadget>| {
                if let Some(name) = gone.object().and_then(|g| g.metadata.name.clone()) {
                    deleted.lock().push(name);
                }
            }
        }));
        let w = Watched {
            informer,
            hooked,
            deleted,
        };
        let stop = CancellationToken::new();
        let _stop = stop.clone().drop_guard();
        let running = w.informer.clone();
        tokio::spawn({
            let stop = stop.clone();
            async move { running.run(stop).await }
        });

        // It syncs without the object it cannot hold, and says which one and why.
        let synced = tokio::time::timeout(TIMEOUT, w.informer.wait_for_cache_sync(&stop));
        assert!(synced.await?, "{mode}: the informer synced");
        assert_eq!(w.cached(), names(&[&a]), "{mode}");
        let reports = w.informer.unreadable();
        assert_eq!(reports.len(), 1, "{mode}: {reports:?}");
        assert_eq!(reports[0].key, format!("{ns}/{broken}"));
        assert!(reports[0].error.contains("size"), "{}", reports[0].error);
        assert_eq!(reports[0].kind.as_deref(), Some("Gadget"));
        assert!(reports[0].metadata.uid.is_some());
        assert_eq!(*w.hooked.lock(), [format!("{ns}/{broken}")], "{mode}");
        assert_eq!(gauges.of(&name), Some(1), "{mode}: the gauge");
        let banner = pipeline::troubles()
            .read()
            .into_iter()
            .find(|t| t.what == "decode" && t.component == "Gadget");
        let banner = banner.expect("a decode banner on the pipeline page");
        assert!(banner.last_error.contains(&broken), "{}", banner.last_error);

        // The watch goes on: a new object arrives.
        raw.create(
            &PostParams::default(),
            &write(&c, serde_json::json!({"size": 3})),
        )
        .await?;
        until(&format!("{mode}: {c} cached"), || {
            let cached = w.cached();
            cached
                .contains(&c)
                .then_some(())
                .ok_or(format!("{cached:?}"))
        })
        .await?;

        // A watch event makes `a` undecodable: it leaves the cache (a deletion for the
        // handlers) and joins the report; `c` stays.
        raw.patch(&a, &pp, &set_spec(serde_json::json!({"size": null})))
            .await?;
        until(&format!("{mode}: {a} set aside"), || {
            let (cached, aside) = (w.cached(), w.set_aside());
            let want = names(&[&format!("{ns}/{a}"), &format!("{ns}/{broken}")]);
            (cached == names(&[&c]) && aside == want)
                .then_some(())
                .ok_or(format!("cached {cached:?}, set aside {aside:?}"))
        })
        .await?;
        assert!(
            w.deleted.lock().contains(&a),
            "{mode}: {:?}",
            w.deleted.lock()
        );
        assert_eq!(gauges.of(&name), Some(2), "{mode}: the gauge");

        // Fixed, `broken` comes back; deleted, `a` leaves the report.
        raw.patch(&broken, &pp, &set_spec(serde_json::json!({"size": 2})))
            .await?;
        raw.delete(&a, &DeleteParams::default()).await?;
        until(&format!("{mode}: {broken} back, {a} gone"), || {
            let (cached, aside) = (w.cached(), w.set_aside());
            (cached == names(&[&broken, &c]) && aside.is_empty())
                .then_some(())
                .ok_or(format!("cached {cached:?}, set aside {aside:?}"))
        })
        .await?;
        let size = w
            .informer
            .indexer()
            .list()
            .iter()
            .find_map(|g| (g.metadata.name.as_deref() == Some(&broken)).then_some(g.spec.size));
        assert_eq!(size, Some(2), "{mode}");
        assert_eq!(gauges.of(&name), Some(0), "{mode}: the gauge");
        let banners = pipeline::troubles().read();
        assert!(
            !banners
                .iter()
                .any(|t| t.what == "decode" && t.component == "Gadget"),
            "{mode}: {banners:?}"
        );

        stop.cancel();
        for name in [&broken, &c] {
            raw.delete(name, &DeleteParams::default()).await?;
        }
    }

    Api::<CustomResourceDefinition>::all(client)
        .delete(
            "gadgets.unreadable.cache.kcr.test",
            &DeleteParams::default(),
        )
        .await?;
    Ok(())
}
