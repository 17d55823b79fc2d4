//! Tutorial chapter 2, a reflector and a DeltaFIFO by hand
//! (docs/tutorial/02-reflector-and-fifo.md).
//!
//! Two pipelines side by side against a real API server: a [`Reflector`] feeding a
//! [`DeltaFifo`], and one feeding a plain [`RealFifo`] (client-go's default from 1.33 to
//! 1.35; 1.36's default, the atomic one, is chapter 3's). The
//! example plays the informer's part itself: it pops each FIFO, applies what it pops
//! to a store (an [`Indexer`]), and prints every pop. Three steps, on ConfigMaps in a
//! namespace of its own:
//!
//! 1. the initial list (`Replaced` deltas);
//! 2. watch events that pile up while nobody pops: the DeltaFIFO groups them per key,
//!    the RealFIFO keeps the order they happened in;
//! 3. a watch gap: the watch ends, an object is deleted while nobody watches, the
//!    next watch is answered `410 Gone` and the reflector relists. The list no longer
//!    has the object, the store still does: the FIFO queues a tombstone
//!    ([`DeletedFinalStateUnknown`]).
//!
//! The gap is made by [`GapListerWatcher`], a wrapper around the real lister/watcher:
//! a real `410` cannot be provoked in seconds (the API server's watch cache serves old
//! versions long after etcd compacted them), but everything else (the deletion, the
//! relist, the tombstone) is real.
//!
//! Mirrors client-go's tools/cache: reflector.go (`ListAndWatch`, `watchHandler`),
//! delta_fifo.go (`DeltaFIFO`, `Replace`, `DeletedFinalStateUnknown`) and
//! the_real_fifo.go (`RealFIFO`).
//!
//! ```sh
//! eval "$(bash hack/control-plane.sh up | grep '^export')"
//! cargo run -p kcr-cache --example tutorial_02_reflector
//! ```

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use cache::{
    ApiListerWatcher, DeletedFinalStateUnknown, DeletedObject, Delta, DeltaFifo, Indexer,
    InformerQueue, ListOptions, ListPage, ListerWatcher, RealFifo, Reflector, WatchOptions,
    WatchStream, resource_version, split_meta_namespace_key,
};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Client, Resource};
use testenv::tutorial::{Example, Log};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Only the example's ConfigMaps are listed and watched (server-side filtering), so
/// nothing else in the namespace (such as `kube-root-ca.crt`) shows up.
const LABEL: (&str, &str) = ("tutorial", "chapter-2");

/// Whether the first watch after a gap is answered `410 Gone`, which makes the
/// reflector relist. Set it to `false` to see what a gap costs without one (the
/// chapter's "what to try").
const GONE_AFTER_A_GAP: bool = true;

/// How long any one wait for the API server may take before the example gives up.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Whether a watch gap is open, and how many there have been.
#[derive(Debug, Clone, Copy, Default)]
struct Gap {
    open: bool,
    number: u64,
}

/// A lister/watcher over the real API that can open a *gap* in the watch.
///
/// When a gap opens, the running watch ends (as when a connection breaks) and new
/// watches wait until it closes. The first watch after a gap is answered `410 Gone`,
/// what the API server says when the version a client asks for is too old; the
/// reflector then relists. Lists always go to the server.
pub struct GapListerWatcher {
    inner: ApiListerWatcher<ConfigMap>,
    gap: watch::Receiver<Gap>,
    /// The last gap this lister/watcher has answered `410 Gone` for.
    answered: AtomicU64,
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
        let mut gap = self.gap.clone();
        async move {
            // A watch started during a gap waits for its end (the connection is down).
            let now = match gap.wait_for(|g| !g.open).await {
                Ok(now) => *now,
                // The example is ending (the gap's sender is gone).
                Err(_) => return Err(api_error(503, "ServiceUnavailable", "the example ended")),
            };
            if GONE_AFTER_A_GAP
                && self.answered.fetch_max(now.number, Ordering::SeqCst) < now.number
            {
                // What the API server says when the version asked for is too old.
                return Err(api_error(410, "Expired", "too old resource version"));
            }
            let events = self.inner.watch(&options).await?;
            // The watch ends the moment the next gap opens.
            let mut next_gap = gap.clone();
            let gap_opens = async move {
                let _ = next_gap.wait_for(|g| g.open).await;
            };
            Ok(events.take_until(gap_opens).boxed())
        }
        .boxed()
    }
}

/// An error as the API server sends it: a `Status` with a code and a reason.
fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(message, reason)
            .with_code(code)
            .boxed(),
    )
}

/// One reflector -> FIFO -> store chain.
struct Pipeline {
    name: &'static str,
    /// Printed as `<namespace>`, so the output reads the same on every run.
    namespace: String,
    reflector: Arc<Reflector<ConfigMap>>,
    fifo: Arc<InformerQueue<ConfigMap>>,
    store: Indexer<ConfigMap>,
    lister_watcher: Arc<GapListerWatcher>,
}

impl Pipeline {
    fn new(
        name: &'static str,
        namespace: &str,
        api: &Api<ConfigMap>,
        gap: &watch::Sender<Gap>,
        delta: bool,
    ) -> Self {
        let store = Indexer::new();
        // The FIFO asks the store which keys it knows: that is how a relist finds the
        // objects that are gone (client-go's `knownObjects`).
        let known = Arc::new(store.clone());
        let fifo: Arc<InformerQueue<ConfigMap>> = Arc::new(if delta {
            DeltaFifo::new(Some(known), None).into()
        } else {
            RealFifo::new(known, None).into()
        });
        let selector = format!("{}={}", LABEL.0, LABEL.1);
        let lister_watcher = Arc::new(GapListerWatcher {
            inner: ApiListerWatcher::new(api.clone()).labels(selector),
            gap: gap.subscribe(),
            answered: AtomicU64::new(0),
        });
        let reflector = Arc::new(Reflector::new(name, lister_watcher.clone(), fifo.clone()));
        Self {
            name,
            namespace: namespace.to_string(),
            reflector,
            fifo,
            store,
            lister_watcher,
        }
    }

    /// Waits until the reflector has seen `rv`: every change up to it is in the FIFO.
    async fn wait_until_seen(&self, rv: &str) -> Result<()> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let seen = self.reflector.last_sync_resource_version();
            if resource_version::is_at_least(&seen, rv) == Some(true) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the {} reflector has not seen resourceVersion {rv} within {TIMEOUT:?} \
                     (it is at {seen:?})",
                    self.name
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Pops everything queued, applies it to the store as an informer does, and
    /// prints each pop and then the store.
    async fn pop_all(&self, log: &mut Log) -> Result<()> {
        while !self.fifo.is_empty() {
            let popped = self
                .fifo
                .pop(|key, deltas, is_in_initial_list| {
                    for delta in &deltas {
                        apply(&self.store, key, delta);
                    }
                    describe_pop(key, &deltas, is_in_initial_list)
                })
                .await;
            match popped {
                Some(line) => {
                    log.say(format!("  pop {line}").replace(&self.namespace, "<namespace>"))
                }
                None => bail!("the {} FIFO was closed", self.name),
            }
        }
        log.say(format!("  store: {}", describe_store(&self.store)));
        Ok(())
    }
}

/// What the informer does with each popped delta (client-go's `HandleDeltas`): keep
/// the store equal to what the deltas say. (It also calls the event handlers; see
/// chapter 3.)
fn apply(store: &Indexer<ConfigMap>, key: &Arc<str>, delta: &Delta<ConfigMap>) {
    match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
            store.update(key.clone(), obj.clone());
        }
        Delta::Deleted(_) => {
            store.delete(key);
        }
        Delta::Bookmark(rv) => store.bookmark(rv.clone()),
    }
}

/// `name v=<value>`: a ConfigMap as the example prints it.
fn describe_object(cm: &ConfigMap) -> String {
    let name = cm.metadata.name.as_deref().unwrap_or("?");
    let value = cm.data.as_ref().and_then(|d| d.get("v"));
    format!("{name} v={}", value.map_or("?", String::as_str))
}

fn describe_delta(delta: &Delta<ConfigMap>) -> String {
    let object = describe_object;
    match delta {
        Delta::Added(o) => format!("Added {}", object(o)),
        Delta::Updated(o) => format!("Updated {}", object(o)),
        Delta::Replaced(o) => format!("Replaced {}", object(o)),
        Delta::Sync(o) => format!("Sync {}", object(o)),
        Delta::Deleted(DeletedObject::Object(o)) => format!("Deleted {}", object(o)),
        Delta::Deleted(DeletedObject::Tombstone(DeletedFinalStateUnknown { key, obj })) => {
            let last = obj.as_deref().map_or("nothing".into(), object);
            format!("Deleted DeletedFinalStateUnknown{{key {key}, last known {last}}}")
        }
        Delta::Bookmark(rv) => format!("Bookmark {rv}"),
    }
}

fn describe_pop(key: &str, deltas: &[Delta<ConfigMap>], is_in_initial_list: bool) -> String {
    // Keys are "namespace/name"; the namespace is the same for all, so print the name.
    let name = match split_meta_namespace_key(key) {
        Ok((_, name)) => name,
        Err(_) => "-", // a bookmark's key is empty
    };
    let deltas: Vec<String> = deltas.iter().map(describe_delta).collect();
    let initial = if is_in_initial_list {
        "   (initial list)"
    } else {
        ""
    };
    format!("{name}: [{}]{initial}", deltas.join(", "))
}

fn describe_store(store: &Indexer<ConfigMap>) -> String {
    let mut objects: Vec<String> = store.list().iter().map(|cm| describe_object(cm)).collect();
    objects.sort();
    if objects.is_empty() {
        "empty".into()
    } else {
        objects.join(", ")
    }
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([(LABEL.0.to_string(), LABEL.1.to_string())].into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("v".to_string(), value.to_string())])),
        ..Default::default()
    }
}

/// The resourceVersion the server gave an object we wrote.
fn rv_of(cm: &ConfigMap) -> Result<String> {
    cm.meta()
        .resource_version
        .clone()
        .context("the API server returned an object without a resourceVersion")
}

async fn create(api: &Api<ConfigMap>, name: &str, value: &str) -> Result<String> {
    let created = api
        .create(&PostParams::default(), &config_map(name, value))
        .await
        .with_context(|| format!("creating ConfigMap {name}"))?;
    rv_of(&created)
}

async fn update(api: &Api<ConfigMap>, name: &str, value: &str) -> Result<String> {
    let mut cm = api
        .get(name)
        .await
        .with_context(|| format!("reading ConfigMap {name}"))?;
    cm.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    let updated = api
        .replace(name, &PostParams::default(), &cm)
        .await
        .with_context(|| format!("updating ConfigMap {name}"))?;
    rv_of(&updated)
}

/// Deletes `name` (last written at `last_rv`) and returns the resourceVersion of the
/// deletion. The API server answers a ConfigMap's DELETE with a `Status`, not the
/// object, so the version is read from a watch on that one object, started before the
/// delete: the `DELETED` event a reflector gets.
async fn delete(api: &Api<ConfigMap>, name: &str, last_rv: &str) -> Result<String> {
    let only_this = WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = api
        .watch(&only_this, last_rv)
        .await
        .with_context(|| format!("watching ConfigMap {name}"))?
        .boxed();
    api.delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting ConfigMap {name}"))?;
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let event = tokio::time::timeout_at(deadline, events.next())
            .await
            .with_context(|| format!("no DELETED event for ConfigMap {name} within {TIMEOUT:?}"))?;
        match event {
            Some(Ok(WatchEvent::Deleted(cm))) => return rv_of(&cm),
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e).context(format!("watching ConfigMap {name}")),
            None => bail!("the watch on ConfigMap {name} ended before its deletion was seen"),
        }
    }
}

/// The example, in `namespace`; returns what it printed.
pub async fn run(client: Client, namespace: &str) -> Result<String> {
    let mut log = Log::default();
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let gap = watch::Sender::new(Gap::default());
    let pipelines = [
        Pipeline::new("DeltaFIFO", namespace, &api, &gap, true),
        Pipeline::new("RealFIFO", namespace, &api, &gap, false),
    ];
    let headers = [
        "DeltaFIFO (one entry per key, holding its deltas):",
        "RealFIFO (one entry per event, in arrival order):",
    ];

    log.say("1. the initial list");
    create(&api, "a", "1").await?;
    let b_rv = create(&api, "b", "1").await?;
    log.say("  created a, b; starting both reflectors");
    let stop = CancellationToken::new();
    // Stops the reflectors however `run` ends.
    let _stop_on_return = stop.clone().drop_guard();
    for p in &pipelines {
        let (reflector, stop) = (p.reflector.clone(), stop.clone());
        tokio::spawn(async move { reflector.run(stop).await });
    }
    for (p, header) in pipelines.iter().zip(headers) {
        p.wait_until_seen(&b_rv).await?;
        log.say(header);
        p.pop_all(&mut log).await?;
    }

    log.say("");
    log.say("2. watch events, queued while nobody pops: update a, create c, delete a");
    let a_rv = update(&api, "a", "2").await?;
    create(&api, "c", "1").await?;
    let last = delete(&api, "a", &a_rv).await?;
    for (p, header) in pipelines.iter().zip(headers) {
        p.wait_until_seen(&last).await?;
        log.say(header);
        p.pop_all(&mut log).await?;
    }

    log.say("");
    log.say("3. a watch gap: the watches end; b is deleted and d created while nobody watches");
    gap.send_modify(|g| {
        g.open = true;
        g.number += 1;
    });
    delete(&api, "b", &b_rv).await?;
    let last = create(&api, "d", "1").await?;
    gap.send_modify(|g| g.open = false);
    if GONE_AFTER_A_GAP {
        log.say("  the gap closes: the next watch is answered 410 Gone, so each reflector relists");
    } else {
        log.say("  the gap closes: each reflector watches again from its last resourceVersion");
    }
    for (p, header) in pipelines.iter().zip(headers) {
        p.wait_until_seen(&last).await?;
        let gone = p.lister_watcher.answered.load(Ordering::SeqCst);
        if GONE_AFTER_A_GAP && gone != 1 {
            bail!(
                "the {} reflector relisted without being told 410 Gone",
                p.name
            );
        }
        log.say(header);
        p.pop_all(&mut log).await?;
    }
    Ok(log.text())
}

/// Runs the example in a namespace of its own, deleted at the end whatever
/// happened (`testenv::tutorial::main`).
#[tokio::main]
async fn main() -> ExitCode {
    testenv::tutorial::main("tutorial-02", &[], |example: Example| async move {
        run(example.client, &example.namespace).await
    })
    .await
}
