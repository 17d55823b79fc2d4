//! `sieve-broken-foo`: a Foo controller that is **wrong on purpose**. A TEST FIXTURE for
//! `sieve` (issue 46), never a controller to run for real.
//!
//! Like `sample-controller`, it keeps one Deployment of nginx per Foo
//! (samplecontroller.k8s.io/v1alpha1, `spec.deploymentName`, `spec.replicas`) with an
//! owner reference to it, and copies the Deployment's `status.availableReplicas` into the
//! Foo's status, in one namespace. It lists and watches Foos and Deployments with the kube
//! client (`Api::list`, `Api::watch`; no informer, no workqueue): one loop, one event at a
//! time, its own small cache, every write answered before the next event. Each `--mode`
//! plants ONE classic controller bug that one of Sieve's perturbations must expose, and is
//! otherwise correct (level-triggered, idempotent, fresh):
//!
//! | `--mode` | the bug (marked `BUG` below) | exposed by | what `sieve test` reports |
//! |---|---|---|---|
//! | `intermediate` | **non-idempotent create**: it decides whether to create a Foo's Deployment from a record it keeps (in memory and in an annotation on the Foo, written right after the create), never from the Deployments it sees; the create uses `generateName`, so each one is a new object | a crash between the create and the record (intermediate state): the successor creates a second Deployment | `extra: Deployment <name>-*` |
//! | `unobserved` | **edge-triggered**: it creates a Foo's Deployment only on the Foo's `ADDED` watch event (or when a list shows it), and scales it only on a `MODIFIED` event whose replicas differ from the previous event's | the Foo's `ADDED` withheld, its next `MODIFIED` delivered (unobserved state): no Deployment, ever | `missing: Deployment <name>` |
//! | `stale` | **blind write from a stale cache**: the first time a process syncs a Foo it "adopts" it, writing the cached spec back with an annotation as a merge patch without a resourceVersion precondition | a restart whose lists are served at an older resourceVersion (stale state): the user's newer spec is reverted | `changed: Foo ... .spec.replicas` |
//!
//! ```text
//! sieve-broken-foo --kubeconfig PATH --namespace NS --mode intermediate|unobserved|stale
//! ```
//!
//! `sieve`'s presets `broken-foo-intermediate`, `broken-foo-unobserved` and
//! `broken-foo-stale` run it (src/target.rs) on `workloads/ci/broken-foo.yaml`,
//! `hack/sieve.sh` requires each to be caught by its perturbation, and
//! docs/reliability.md ("Sieve") has the plans that catch them and what they report.

#![forbid(unsafe_code)]

#[path = "sieve-broken-foo/objects.rs"]
mod objects;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use objects::{Foo, controlled_by, keyed, name, new_deployment, uid};

/// A Foo controller with one planted bug per `--mode` (a sieve test fixture).
#[derive(Debug, Parser)]
#[command(name = "sieve-broken-foo", about)]
struct Cli {
    /// The kubeconfig to talk to the API server with.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// The one namespace it watches and writes.
    #[arg(long)]
    namespace: String,
    /// Which bug it has.
    #[arg(long, value_enum)]
    mode: Mode,
}

/// The planted bug (see the crate docs' table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// A non-idempotent create: caught by a crash after the create.
    Intermediate,
    /// Edge-triggered: caught by a withheld `ADDED` event.
    Unobserved,
    /// A blind write from a stale cache: caught by a stale restart.
    Stale,
}

/// The `intermediate` mode's record that a Foo's Deployment was created.
const CREATED: &str = "broken-foo.sieve.test/created";
/// The `stale` mode's mark on a Foo it adopted.
const ADOPTED: &str = "broken-foo.sieve.test/adopted";

/// One item of the merged watch streams.
enum Event {
    /// A Foo event, or the watch's error (boxed, as objects are large).
    Foo(Box<kube::Result<WatchEvent<Foo>>>),
    /// A Deployment event, or the watch's error.
    Deployment(Box<kube::Result<WatchEvent<Deployment>>>),
    /// A watch ended: list again.
    End,
}

/// The controller: its clients, its cache, and what each mode remembers.
struct Controller {
    mode: Mode,
    foos: Api<Foo>,
    deployments: Api<Deployment>,
    foo_cache: BTreeMap<String, Foo>,
    deployment_cache: BTreeMap<String, Deployment>,
    /// `intermediate`: the uids of the Foos this process created a Deployment for.
    created: HashSet<String>,
    /// `unobserved`: each Foo's replicas in the last event (or list) seen of it.
    last_replicas: HashMap<String, i32>,
    /// `stale`: the uids of the Foos this process has adopted (written back).
    adopted: HashSet<String>,
    /// The `availableReplicas` this process last wrote into each Foo's status (by
    /// uid): its cache may not show its own write yet, and writing it again is noise
    /// (more crash points, whose ordinals then shift from run to run).
    status_written: HashMap<String, i32>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let kubeconfig = kube::config::Kubeconfig::read_from(&cli.kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    let client = kube::Client::try_from(config)?;
    let mut controller = Controller {
        mode: cli.mode,
        foos: Api::namespaced(client.clone(), &cli.namespace),
        deployments: Api::namespaced(client, &cli.namespace),
        foo_cache: BTreeMap::new(),
        deployment_cache: BTreeMap::new(),
        created: HashSet::new(),
        last_replicas: HashMap::new(),
        adopted: HashSet::new(),
        status_written: HashMap::new(),
    };
    eprintln!("sieve-broken-foo: mode {:?} in {}", cli.mode, cli.namespace);
    loop {
        if let Err(e) = controller.list_and_watch().await {
            eprintln!("sieve-broken-foo: {e}; listing again");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

impl Controller {
    /// Lists Foos and Deployments, syncs every listed Foo, then follows both watches
    /// from the lists' resourceVersions until one ends or fails.
    async fn list_and_watch(&mut self) -> anyhow::Result<()> {
        // As client-go's reflector lists first: at resourceVersion 0, "any version",
        // which an API server answers from its watch cache, however far behind that is.
        // (A list for the most recent state would be a consistent read, which a lagging
        // server never answers stale: the stale mode's bug would be out of reach.)
        let any = ListParams::default().match_any();
        let foos = self.foos.list(&any).await?;
        let deployments = self.deployments.list(&any).await?;
        self.deployment_cache = deployments.items.into_iter().map(keyed).collect();
        self.foo_cache = foos.items.iter().cloned().map(keyed).collect();
        for foo in &foos.items {
            if self.mode == Mode::Unobserved {
                // The list is a level read, so a listed Foo is handled as if it had
                // just been ADDED: without this a restarted process would never create
                // anything. Watch events are what this mode gets wrong.
                self.last_replicas.insert(uid(foo), foo.spec.replicas);
                self.create(foo, false).await;
            }
            self.sync(&name(foo)).await;
        }
        let params = WatchParams::default();
        let foo_rv = foos.metadata.resource_version.unwrap_or_default();
        let deployment_rv = deployments.metadata.resource_version.unwrap_or_default();
        let foo_events: BoxStream<'static, Event> = (self.foos.watch(&params, &foo_rv).await?)
            .map(|event| Event::Foo(Box::new(event)))
            .chain(end())
            .boxed();
        let deployment_events: BoxStream<'static, Event> =
            (self.deployments.watch(&params, &deployment_rv).await?)
                .map(|event| Event::Deployment(Box::new(event)))
                .chain(end())
                .boxed();
        let mut events = stream::select(foo_events, deployment_events);
        while let Some(event) = events.next().await {
            match event {
                Event::Foo(event) => self.on_foo((*event)?).await,
                Event::Deployment(event) => self.on_deployment((*event)?).await,
                Event::End => return Ok(()),
            }?;
        }
        Ok(())
    }

    /// A Foo's watch event.
    async fn on_foo(&mut self, event: WatchEvent<Foo>) -> anyhow::Result<()> {
        let (foo, added) = match event {
            WatchEvent::Added(foo) => (foo, true),
            WatchEvent::Modified(foo) => (foo, false),
            WatchEvent::Deleted(foo) => {
                // The garbage collector deletes its Deployments.
                self.foo_cache.remove(&name(&foo));
                return Ok(());
            }
            WatchEvent::Bookmark(_) => return Ok(()),
            WatchEvent::Error(status) => anyhow::bail!("the Foo watch: {}", status.message),
        };
        self.foo_cache.insert(name(&foo), foo.clone());
        if self.mode == Mode::Unobserved {
            // BUG (unobserved): edge-triggered. The Deployment is created on the Foo's
            // ADDED event only, and scaled only when an event's replicas differ from
            // the previous event's. A Foo whose ADDED is withheld (only its next,
            // MODIFIED, state is delivered) never gets a Deployment; a missed MODIFIED
            // leaves it at the old size. A level-triggered sync would compare the
            // Foo with the Deployments it sees, whatever events led there.
            let before = self.last_replicas.insert(uid(&foo), foo.spec.replicas);
            if added {
                self.create(&foo, false).await;
            } else if before != Some(foo.spec.replicas) {
                self.scale(&foo.spec.deployment_name, foo.spec.replicas)
                    .await;
            }
        }
        self.sync(&name(&foo)).await;
        Ok(())
    }

    /// A Deployment's watch event: its owner Foo is synced.
    async fn on_deployment(&mut self, event: WatchEvent<Deployment>) -> anyhow::Result<()> {
        let deployment = match event {
            WatchEvent::Added(d) | WatchEvent::Modified(d) => {
                self.deployment_cache.insert(name(&d), d.clone());
                d
            }
            WatchEvent::Deleted(d) => {
                self.deployment_cache.remove(&name(&d));
                d
            }
            WatchEvent::Bookmark(_) => return Ok(()),
            WatchEvent::Error(status) => {
                anyhow::bail!("the Deployment watch: {}", status.message)
            }
        };
        let owner = deployment
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true) && o.kind == "Foo");
        if let Some(owner) = owner.map(|o| o.name.clone()) {
            self.sync(&owner).await;
        }
        Ok(())
    }

    /// The level-triggered sync of the Foo named `key` from the cache: its Deployment
    /// created and scaled (except in `unobserved` mode, which does that on events), its
    /// status copied from it. Failed writes are logged and left to the next event (a
    /// conflict or a stale read means one is on its way).
    async fn sync(&mut self, key: &str) {
        let Some(foo) = self.foo_cache.get(key).cloned() else {
            return;
        };
        if self.mode == Mode::Stale && self.adopted.insert(uid(&foo)) {
            // BUG (stale): the first sync of each Foo in this process writes the Foo
            // back from the cache: a merge patch of the whole cached spec and an
            // annotation, with no resourceVersion precondition. Harmless while the
            // cache is fresh (the spec written is the spec stored); after a restart
            // whose lists are served at an older resourceVersion it reverts whatever
            // the user changed since. A correct write sends only what it changes
            // (the annotation), or sends the resourceVersion it read and gets a 409.
            let patch = json!({
                "metadata": { "annotations": { ADOPTED: "true" } },
                "spec": foo.spec,
            });
            self.patch_foo(key, "adopt (write back) Foo", &patch, false)
                .await;
        }
        let owned: Vec<Deployment> = self
            .deployment_cache
            .values()
            .filter(|d| controlled_by(d, &foo))
            .cloned()
            .collect();
        match self.mode {
            Mode::Intermediate => {
                let recorded = foo
                    .metadata
                    .annotations
                    .iter()
                    .flatten()
                    .any(|(k, _)| k == CREATED);
                if !self.created.contains(&uid(&foo)) && !recorded {
                    // BUG (intermediate): whether to create is read from the record
                    // alone, not from the Deployments the cache holds (`owned`), and
                    // the create makes a new object each time (generateName). The
                    // record is written after the create: a crash between the two
                    // leaves a Deployment and no record, and the successor creates a
                    // second one. An idempotent create looks for what it owns first,
                    // or creates under a fixed name (409 AlreadyExists says it exists).
                    if self.create(&foo, true).await {
                        self.created.insert(uid(&foo));
                        let patch = json!({ "metadata": { "annotations": { CREATED: "true" } } });
                        self.patch_foo(key, "record the create on Foo", &patch, false)
                            .await;
                    }
                    return;
                }
            }
            Mode::Stale if owned.is_empty() => {
                self.create(&foo, false).await;
                return;
            }
            Mode::Stale | Mode::Unobserved => {}
        }
        if self.mode != Mode::Unobserved {
            for deployment in &owned {
                if deployment.spec.replicas != Some(foo.spec.replicas) {
                    self.scale(&name(deployment), foo.spec.replicas).await;
                }
            }
        }
        if owned.is_empty() {
            return;
        }
        let available: i32 = owned
            .iter()
            .filter_map(|d| d.status.as_ref()?.available_replicas)
            .sum();
        let cached = foo.status.as_ref().map(|s| s.available_replicas);
        if cached != Some(available) && self.status_written.get(&uid(&foo)) != Some(&available) {
            let patch = json!({ "status": { "availableReplicas": available } });
            if self
                .patch_foo(key, "write the status of Foo", &patch, true)
                .await
            {
                self.status_written.insert(uid(&foo), available);
            }
        }
    }

    /// Merge-patches the Foo `key` (its `status` subresource when `status`), logging
    /// `what`; whether the server took it.
    async fn patch_foo(
        &self,
        key: &str,
        what: &str,
        patch: &serde_json::Value,
        status: bool,
    ) -> bool {
        let (params, patch) = (PatchParams::default(), Patch::Merge(patch));
        let done = if status {
            self.foos.patch_status(key, &params, &patch).await
        } else {
            self.foos.patch(key, &params, &patch).await
        };
        let ok = done.is_ok();
        log(what, key, done.map(|_| ()));
        ok
    }

    /// Creates `foo`'s Deployment (named `spec.deploymentName`, or generated from it
    /// when `generate`) and caches it; whether the server created it (an existing one
    /// of that name is no error).
    async fn create(&mut self, foo: &Foo, generate: bool) -> bool {
        let deployment = match new_deployment(foo, generate) {
            Ok(deployment) => deployment,
            Err(e) => {
                eprintln!(
                    "sieve-broken-foo: the Deployment of Foo {}: {e:#}",
                    name(foo)
                );
                return false;
            }
        };
        match self
            .deployments
            .create(&PostParams::default(), &deployment)
            .await
        {
            Ok(created) => {
                log("create Deployment", &name(&created), Ok(()));
                self.deployment_cache.insert(name(&created), created);
                true
            }
            Err(kube::Error::Api(status)) if status.is_already_exists() => false,
            Err(e) => {
                log("create the Deployment of Foo", &name(foo), Err(e));
                false
            }
        }
    }

    /// Sets the Deployment `name`'s replicas (a merge patch of `spec.replicas`).
    async fn scale(&mut self, name: &str, replicas: i32) {
        let patch = json!({ "spec": { "replicas": replicas } });
        let params = PatchParams::default();
        match self
            .deployments
            .patch(name, &params, &Patch::Merge(&patch))
            .await
        {
            Ok(scaled) => {
                log("scale Deployment", name, Ok(()));
                self.deployment_cache.insert(name.to_owned(), scaled);
            }
            Err(e) => log("scale Deployment", name, Err(e)),
        }
    }
}

/// The item that ends a watch stream.
fn end() -> stream::Once<std::future::Ready<Event>> {
    stream::once(std::future::ready(Event::End))
}

/// One line per write: what, of which object, and how it went.
fn log(what: &str, name: &str, result: Result<(), kube::Error>) {
    match result {
        Ok(()) => eprintln!("sieve-broken-foo: {what} {name}"),
        Err(e) => eprintln!("sieve-broken-foo: {what} {name} failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_takes_each_mode() {
        for (text, mode) in [
            ("intermediate", Mode::Intermediate),
            ("unobserved", Mode::Unobserved),
            ("stale", Mode::Stale),
        ] {
            let cli = Cli::try_parse_from([
                "sieve-broken-foo",
                "--kubeconfig",
                "/k",
                "--namespace",
                "ns",
                "--mode",
                text,
            ])
            .expect("parses");
            assert_eq!((cli.mode, cli.namespace.as_str()), (mode, "ns"));
        }
        assert!(
            Cli::try_parse_from([
                "sieve-broken-foo",
                "--kubeconfig",
                "/k",
                "--namespace",
                "ns"
            ])
            .is_err()
        );
    }
}
