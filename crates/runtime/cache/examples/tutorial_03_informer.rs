//! Tutorial chapter 3, a shared informer, listers and indexes
//! (docs/tutorial/03-informer-listers-indexes.md).
//!
//! What a controller really uses of chapter 2's machinery: a [`SharedInformerFactory`]
//! hands out one shared informer per kind (here: ConfigMaps in a namespace of the
//! example's own), an event handler hears every add, update and delete, a lister
//! answers `get` and `list` with label selectors from the cache, and a custom index
//! (ConfigMaps by their `app` label) answers `by_index` without scanning. Then two
//! changes made through the API show up in the handler, the lister and the index.
//!
//! Mirrors client-go's informers/factory.go (`NewSharedInformerFactory`,
//! `InformerFor`, `Start`, `WaitForCacheSync`) and tools/cache: shared_informer.go
//! (`SharedIndexInformer`, `AddEventHandler`, `AddIndexers`), listers.go
//! (`GenericLister`, `List`, `Get`), index.go (`Indexers`, `IndexFunc`, `ByIndex`)
//! and thread_safe_store.go (`ThreadSafeStore`).
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p kcr-cache --example tutorial_03_informer
//! ```

use std::collections::{BTreeMap, HashMap};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cache::{
    EventHandlerFuncs, IndexFunc, Indexers, InformerOptions, NAMESPACE_INDEX, Selector,
    SharedInformerFactory, split_meta_namespace_key,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use testenv::tutorial::{Example, Log};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The name of the example's custom index: ConfigMaps by their `app` label.
const BY_APP: &str = "by-app";

/// How long any one wait may take before the example gives up.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The index function: the values a ConfigMap is indexed under (client-go's
/// `IndexFunc`). Pure, cheap, and the same answer for the same object, because the
/// indexer calls it again to remove the old entries on an update.
fn by_app(cm: &ConfigMap) -> Vec<String> {
    cm.labels().get("app").cloned().into_iter().collect()
}

/// `app=web tier=frontend`: the labels the example uses, for printing.
fn describe_labels(cm: &ConfigMap) -> String {
    let labels: Vec<String> = ["app", "tier"]
        .iter()
        .filter_map(|k| cm.labels().get(*k).map(|v| format!("{k}={v}")))
        .collect();
    if labels.is_empty() {
        "no app/tier labels".into()
    } else {
        labels.join(" ")
    }
}

/// Sorted names: a lister returns the cache's objects in no particular order.
fn names(objects: &[Arc<ConfigMap>]) -> String {
    let mut names: Vec<String> = objects.iter().map(|cm| cm.name_any()).collect();
    names.sort();
    format!("[{}]", names.join(", "))
}

fn config_map(name: &str, app: &str, tier: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([
                ("app".to_string(), app.to_string()),
                ("tier".to_string(), tier.to_string()),
            ])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("owner".to_string(), app.to_string())])),
        ..Default::default()
    }
}

/// Waits for the next `n` lines from the event handler and prints them.
async fn handler_says(
    events: &mut mpsc::UnboundedReceiver<String>,
    n: usize,
    log: &mut Log,
) -> Result<()> {
    for _ in 0..n {
        match tokio::time::timeout(TIMEOUT, events.recv()).await {
            Ok(Some(line)) => log.say(line),
            Ok(None) => bail!("the event handler is gone"),
            Err(_) => bail!("the event handler said nothing within {TIMEOUT:?}"),
        }
    }
    Ok(())
}

/// Every namespace gets a `kube-root-ca.crt` ConfigMap from kube-controller-manager,
/// shortly after it is created. Waiting for it keeps the example's output the same
/// on every run; without a controller-manager, it goes on after a while.
async fn wait_for_root_ca(api: &Api<ConfigMap>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = api.get_opt("kube-root-ca.crt").await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The example, in `namespace`; returns what it printed.
pub async fn run(client: Client, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    wait_for_root_ca(&api).await;
    for (name, app, tier) in [
        ("web-config", "web", "frontend"),
        ("web-assets", "web", "frontend"),
        ("db-config", "db", "backend"),
        ("cache-config", "cache", "backend"),
    ] {
        api.create(&PostParams::default(), &config_map(name, app, tier))
            .await
            .with_context(|| format!("creating ConfigMap {name}"))?;
    }
    log.say("1. a factory, an informer, an index and a handler");
    log.say("  created web-config, web-assets (app=web tier=frontend), db-config (app=db tier=backend), cache-config (app=cache tier=backend)");

    // One factory per process; every controller asks it for informers.
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let informer = factory.informer_for_api(
        Api::<ConfigMap>::namespaced(client.clone(), namespace),
        InformerOptions::default(),
    );
    // A second controller asking for the same thing gets the same informer.
    let _same = factory.informer_for_api(
        Api::<ConfigMap>::namespaced(client, namespace),
        InformerOptions::default(),
    );

    let mut indexers: Indexers<ConfigMap> = HashMap::new();
    let index_func: IndexFunc<ConfigMap> = Arc::new(by_app);
    indexers.insert(BY_APP.to_string(), index_func);
    informer
        .add_indexers(indexers)
        .context("adding the by-app index")?;

    // Handlers run on a thread of their own; this one sends what it hears to `run`.
    let (tx, mut events) = mpsc::unbounded_channel();
    let (on_add, on_update, on_delete) = (tx.clone(), tx.clone(), tx);
    let _registration = informer.add_event_handler(
        EventHandlerFuncs::new()
            .on_add(move |cm: &Arc<ConfigMap>, initial| {
                let from = if initial { " (initial list)" } else { "" };
                let _ = on_add.send(format!("  handler: add {}{from}", cm.name_any()));
            })
            .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                let _ = on_update.send(format!(
                    "  handler: update {} ({} -> {})",
                    new.name_any(),
                    describe_labels(old),
                    describe_labels(new)
                ));
            })
            .on_delete(move |deleted| {
                let name = deleted.object().map_or("?".into(), |cm| cm.name_any());
                let kind = if deleted.is_tombstone() {
                    "a tombstone"
                } else {
                    "its final state"
                };
                let _ = on_delete.send(format!("  handler: delete {name} ({kind})"));
            }),
    );

    let stop = CancellationToken::new();
    let _stop_on_return = stop.clone().drop_guard();
    factory.start(&stop);
    let synced = factory.wait_for_cache_sync(&stop).await;
    let described: Vec<String> = synced
        .iter()
        .map(|(name, ok)| {
            let name = name.replace(namespace, "<namespace>");
            format!("{name}: {}", if *ok { "synced" } else { "NOT synced" })
        })
        .collect();
    log.say(format!(
        "  asked for ConfigMaps twice; the factory started {} informer: {}",
        synced.len(),
        described.join(", ")
    ));
    if synced.iter().any(|(_, ok)| !ok) {
        bail!("an informer did not sync");
    }
    let listed = informer.indexer().len();
    handler_says(&mut events, listed, &mut log).await?;

    log.say("");
    log.say("2. a lister: reads from the cache, never from the API server");
    let lister = informer.lister();
    let here = lister.namespaced(namespace);
    let web = here.get("web-config").context("get web-config")?;
    log.say(format!(
        "  get web-config -> {} (resourceVersion {})",
        describe_labels(&web),
        web.resource_version().unwrap_or_default()
    ));
    match here.get("missing") {
        Ok(_) => bail!("the lister found a ConfigMap that does not exist"),
        Err(e) => log.say(format!(
            "  get missing -> error `{e}`, is_not_found() = {}",
            e.is_not_found()
        )),
    }
    for selector in ["tier=backend", "app in (web, cache)", "tier!=frontend"] {
        let parsed: Selector = selector
            .parse()
            .with_context(|| format!("parsing selector {selector:?}"))?;
        log.say(format!(
            "  list {selector:?} -> {}",
            names(&here.list(&parsed))
        ));
    }

    log.say("");
    log.say(format!(
        "3. indexes: {BY_APP} (custom) and {NAMESPACE_INDEX} (built in)"
    ));
    let indexer = informer.indexer();
    let print_index = |log: &mut Log| -> Result<()> {
        for app in ["web", "db"] {
            let found = indexer.by_index(BY_APP, app)?;
            log.say(format!("  by_index({BY_APP}, {app}) -> {}", names(&found)));
        }
        let mut values = indexer.list_index_func_values(BY_APP);
        values.sort();
        log.say(format!(
            "  list_index_func_values({BY_APP}) -> [{}]",
            values.join(", ")
        ));
        Ok(())
    };
    print_index(&mut log)?;
    let keys = indexer.index_keys(BY_APP, "db")?;
    let key_names: Vec<&str> = keys
        .iter()
        .filter_map(|k| split_meta_namespace_key(k).ok().map(|(_, name)| name))
        .collect();
    log.say(format!(
        "  index_keys({BY_APP}, db) -> <namespace>/{}",
        key_names.join(", <namespace>/")
    ));
    log.say(format!(
        "  by_index({NAMESPACE_INDEX}, <namespace>) -> {} objects (what the namespaced lister reads)",
        indexer.by_index(NAMESPACE_INDEX, namespace)?.len()
    ));

    log.say("");
    log.say("4. changes through the API reach the handler, the lister and the index");
    let mut db = api.get("db-config").await.context("reading db-config")?;
    db.labels_mut().insert("app".into(), "web".into());
    api.replace("db-config", &PostParams::default(), &db)
        .await
        .context("relabelling db-config")?;
    log.say("  relabelled db-config app=db -> app=web");
    // The store is updated before handlers are called: once the handler has heard
    // it, the index has it too.
    handler_says(&mut events, 1, &mut log).await?;
    print_index(&mut log)?;
    api.delete("cache-config", &DeleteParams::default())
        .await
        .context("deleting cache-config")?;
    log.say("  deleted cache-config");
    handler_says(&mut events, 1, &mut log).await?;
    let gone = here.get("cache-config");
    log.say(format!(
        "  get cache-config -> is_not_found() = {}",
        gone.as_ref().err().is_some_and(|e| e.is_not_found())
    ));
    stop.cancel();
    Ok(log.text())
}

/// Runs the example in a namespace of its own, deleted at the end whatever
/// happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main("tutorial-03", &[], |example: Example| async move {
        run(example.client, &example.namespace).await
    })
    .await
}
