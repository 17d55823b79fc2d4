//! e2e: informers over custom resources against a real kube-apiserver
//! (crates/dev/testenv): dynamic informers over a CRD that does not exist when the
//! factory starts (here), and a typed informer meeting objects its type cannot decode
//! ([`unreadable`]).
//!
//! The factory runs a typed informer first; then one dynamic informer is asked for
//! while its resource is still unknown to the server (its reflector fails and backs
//! off), the CRD is installed, and a second one (one namespace) is asked for after.
//! Both must sync, be shared per resource URL, and follow creates, updates and deletes
//! of `DynamicObject`s, with listers and the namespace index as for typed objects.

#![allow(clippy::unwrap_used)]

use std::convert::Infallible;
use std::time::Duration;

use cache::{DynamicInformer, InformerOptions, NAMESPACE_INDEX, Selector, SharedInformerFactory};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use testenv::{Check, TestEnv, wait_for};
use tokio_util::sync::CancellationToken;

#[path = "e2e_dynamic_informer/unreadable.rs"]
mod unreadable;

const TIMEOUT: Duration = Duration::from_secs(120);

/// A namespaced `Widget` CRD in a group of this test's own (CRDs are cluster-wide,
/// and test binaries share one API server).
fn widget_crd(group: &str) -> CustomResourceDefinition {
    sized_crd(group, "Widget")
}

/// A namespaced CRD of `kind` in `group` whose one field, an optional integer
/// `spec.size`, may be left out.
fn sized_crd(group: &str, kind: &str) -> CustomResourceDefinition {
    let singular = kind.to_lowercase();
    let plural = format!("{singular}s");
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": singular, "listKind": format!("{kind}List")},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "properties": {"size": {"type": "integer"}}
                    }}
                }}
            }]
        }
    }))
    .unwrap()
}

fn widget(resource: &ApiResource, name: &str, size: i64) -> DynamicObject {
    let mut obj = DynamicObject::new(name, resource);
    obj.metadata.labels = Some([("size".to_string(), size.to_string())].into());
    obj.data = serde_json::json!({"spec": {"size": size}});
    obj
}

/// `name`'s `spec.size` in `informer`'s cache, if it is there.
fn cached_size(informer: &DynamicInformer, ns: &str, name: &str) -> Option<i64> {
    let obj = informer.lister().get(ns, name).ok()?;
    obj.data.pointer("/spec/size").and_then(|v| v.as_i64())
}

async fn wait_for_size(
    informer: &DynamicInformer,
    ns: &str,
    name: &str,
    want: Option<i64>,
) -> anyhow::Result<()> {
    let what = format!(
        "{} sees {name} with size {want:?}",
        informer.informer().name()
    );
    wait_for(&what, TIMEOUT, || async {
        let size = cached_size(informer, ns, name);
        Ok::<_, Infallible>(Check::ready_if(size == want, (), format!("{size:?}")))
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_informer_follows_a_crd_installed_after_the_factory_started() -> anyhow::Result<()>
{
    let env = TestEnv::with_prefix("cache-dyn").await?;
    let ns = env.namespace().to_string();
    let client = env.client().clone();
    let group = format!("{ns}.kcr.test");
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&group, "v1", "Widget"),
        "widgets",
    );

    // The process is up: its factory runs a typed informer.
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let config_maps = factory.informer_for_api::<ConfigMap>(
        Api::namespaced(client.clone(), &ns),
        InformerOptions::default(),
    );
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    factory.start(&stop);
    assert!(config_maps.wait_for_cache_sync(&stop).await);

    // A generic controller asks for widgets before anyone defined them: the
    // informer starts, its lists fail (404) and it backs off.
    let early = factory.dynamic_informer_for(&resource);
    assert_eq!(early.informer().name(), "Widget");
    factory.start(&stop);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!early.informer().has_synced());

    // The CRD arrives; a second informer (this namespace only) is asked for now.
    let crd = widget_crd(&group);
    testenv::crd::install_crds(&client, std::slice::from_ref(&crd)).await?;
    let late = factory.dynamic_informer_for_api(
        Api::namespaced_with(client.clone(), &ns, &resource),
        &resource,
        InformerOptions::default(),
    );
    assert_eq!(late.informer().name(), format!("Widget in {ns}"));
    factory.start(&stop);
    for informer in [&early, &late] {
        // The early one syncs at its next retry (its backoff doubles from 0.8 s).
        let synced = tokio::time::timeout(TIMEOUT, informer.informer().wait_for_cache_sync(&stop));
        assert!(synced.await?, "{} synced", informer.informer().name());
    }
    // Shared: asking again gets the same caches.
    assert_eq!(
        factory.dynamic_informer_for(&resource).informer().name(),
        "Widget"
    );

    // Creates, an update, a delete: both informers follow.
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    for (name, size) in [("small", 1), ("medium", 5), ("large", 9)] {
        widgets
            .create(&PostParams::default(), &widget(&resource, name, size))
            .await?;
    }
    for informer in [&early, &late] {
        for (name, size) in [("small", 1), ("medium", 5), ("large", 9)] {
            wait_for_size(informer, &ns, name, Some(size)).await?;
        }
    }
    let patch = serde_json::json!({"spec": {"size": 6}});
    widgets
        .patch("medium", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    widgets.delete("small", &DeleteParams::default()).await?;
    for informer in [&early, &late] {
        wait_for_size(informer, &ns, "medium", Some(6)).await?;
        wait_for_size(informer, &ns, "small", None).await?;
    }

    // Listers and indexers as for typed objects.
    let lister = late.lister();
    assert_eq!(
        lister.namespaced(&ns).list(&Selector::everything()).len(),
        2
    );
    assert_eq!(lister.list(&"size=9".parse::<Selector>()?).len(), 1);
    assert_eq!(
        late.informer()
            .indexer()
            .by_index(NAMESPACE_INDEX, &ns)?
            .len(),
        2
    );
    let gone = lister.get(&ns, "small").unwrap_err();
    assert_eq!(
        gone.to_string(),
        format!(r#"widgets.{group} "small" not found"#)
    );
    let large = lister.get(&ns, "large")?;
    assert_eq!(large.types.as_ref().unwrap().kind, "Widget");
    assert_eq!(
        large.types.as_ref().unwrap().api_version,
        format!("{group}/v1")
    );

    // The CRD is cluster-wide: leave none behind.
    stop.cancel();
    Api::<CustomResourceDefinition>::all(client)
        .delete(&format!("widgets.{group}"), &DeleteParams::default())
        .await?;
    Ok(())
}

/// The names in `informer`'s cache.
fn cached_names(informer: &DynamicInformer) -> Vec<String> {
    let mut names: Vec<_> = informer
        .lister()
        .list(&Selector::everything())
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    names.sort();
    names
}

async fn until_cached(
    informer: &DynamicInformer,
    want: &[&str],
    synced: bool,
) -> anyhow::Result<()> {
    let what = format!("{want:?} cached, has_synced {synced}");
    wait_for(&what, TIMEOUT, || async {
        let (names, now) = (cached_names(informer), informer.informer().has_synced());
        let ready = names == want && now == synced;
        Ok::<_, Infallible>(Check::ready_if(
            ready,
            (),
            format!("{names:?}, has_synced {now}"),
        ))
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dynamic_informer_is_unsynced_while_its_crd_is_gone_and_can_be_removed()
-> anyhow::Result<()> {
    let env = TestEnv::with_prefix("cache-gone").await?;
    let ns = env.namespace().to_string();
    let client = env.client().clone();
    let group = format!("{ns}.gone.kcr.test");
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(&group, "v1", "Widget"),
        "widgets",
    );
    let crd = widget_crd(&group);
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    testenv::crd::install_crds(&client, std::slice::from_ref(&crd)).await?;
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    widgets
        .create(&PostParams::default(), &widget(&resource, "one", 1))
        .await?;

    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let informer = factory.dynamic_informer_for(&resource);
    // Short waits between the retries, so the return is seen within a second or two.
    informer.informer().set_backoff(cache::BackoffConfig {
        initial: Duration::from_millis(200),
        max: Duration::from_secs(1),
        ..cache::BackoffConfig::default()
    });
    let delivered = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let registration =
        informer
            .informer()
            .add_event_handler(cache::EventHandlerFuncs::new().on_add({
                let delivered = delivered.clone();
                move |o: &std::sync::Arc<DynamicObject>, _| {
                    delivered
                        .lock()
                        .push(o.metadata.name.clone().unwrap_or_default());
                }
            }));
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    factory.start(&stop);
    until_cached(&informer, &["one"], true).await?;

    // The CRD goes (its objects first): the cache empties and the informer is not
    // synced while the resource is not served.
    crds.delete(
        &crd.metadata.name.clone().unwrap(),
        &DeleteParams::default(),
    )
    .await?;
    until_cached(&informer, &[], false).await?;
    assert!(!registration.has_synced());

    // It comes back: the informer lists it again and is synced again.
    testenv::crd::install_crds(&client, std::slice::from_ref(&crd)).await?;
    widgets
        .create(&PostParams::default(), &widget(&resource, "two", 2))
        .await?;
    until_cached(&informer, &["two"], true).await?;
    assert!(registration.has_synced());

    // Removed from the running factory: its watch ends, its handler hears nothing more
    // and is told (not synced); the next request makes a new informer.
    assert!(factory.remove_dynamic_informer(&resource));
    assert!(!factory.remove_dynamic_informer(&resource));
    let told = tokio::time::timeout(TIMEOUT, async {
        while registration.has_synced() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    told.await?;
    widgets
        .create(&PostParams::default(), &widget(&resource, "three", 3))
        .await?;
    let again = factory.dynamic_informer_for(&resource);
    assert!(!again.informer().is_started());
    factory.start(&stop);
    until_cached(&again, &["three", "two"], true).await?;
    assert_eq!(
        *delivered.lock(),
        ["one", "two"],
        "nothing after the removal"
    );
    assert_eq!(
        cached_names(&informer),
        ["two"],
        "the removed one keeps its last cache"
    );

    stop.cancel();
    crds.delete(
        &crd.metadata.name.clone().unwrap(),
        &DeleteParams::default(),
    )
    .await?;
    Ok(())
}
