//! What is watched while the soak runs: every owned object ever seen (to catch an
//! owner that got two Deployments), the Nodes and control-plane processes (the
//! environment's own health), the leaders of each binary, and the replicas' memory.
//!
//! The watches here are deliberately independent of the project's `cache` crate (plain
//! list + watch with kube's `Api`, relisting on any error): the checker must not share
//! the code it checks.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Service};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::cluster::ControlPlane;
use crate::processes::{Binary, Fleet, RssSample};

/// (kind, controller owner uid) -> every (name, uid) of that kind it ever owned.
type Owned = BTreeMap<(&'static str, String), BTreeSet<(String, String)>>;

/// Owned objects seen, by kind and controller owner uid: the uids of every object
/// that owner ever had.
#[derive(Debug, Default)]
pub struct Ownership {
    seen: Mutex<Owned>,
}

impl Ownership {
    fn record<K: Resource>(&self, kind: &'static str, object: &K) {
        let meta = object.meta();
        let Some(uid) = meta.uid.clone() else { return };
        let name = meta.name.clone().unwrap_or_default();
        for owner in meta.owner_references.iter().flatten() {
            if owner.controller == Some(true) {
                self.seen
                    .lock()
                    .expect("not poisoned")
                    .entry((kind, owner.uid.clone()))
                    .or_default()
                    .insert((name.clone(), uid.clone()));
            }
        }
    }

    /// Owners with more than one object of a kind, split in two: owners in
    /// `live_owners` (a violation: nobody deletes an owned object of a live owner, and
    /// names are fixed, so a second one means the first was deleted and recreated) and
    /// owners deleted by the load (the first object was garbage collected after its
    /// owner was deleted, and a controller with a stale cache made it again for the
    /// deleted owner; the garbage collector removes that one too).
    pub fn duplicates(&self, live_owners: &BTreeSet<String>) -> (Vec<String>, usize) {
        let seen = self.seen.lock().expect("not poisoned");
        let mut live = Vec::new();
        let mut deleted = 0;
        for ((kind, owner), objects) in seen.iter().filter(|(_, objects)| objects.len() > 1) {
            if live_owners.contains(owner) {
                live.push(format!(
                    "owner {owner} had {} {kind}s: {objects:?}",
                    objects.len()
                ));
            } else {
                deleted += objects.len() - 1;
            }
        }
        (live, deleted)
    }

    /// How many owner/kind pairs were seen.
    pub fn owners(&self) -> usize {
        self.seen.lock().expect("not poisoned").len()
    }
}

/// Watches `K` in `namespace` until `stop`, recording every version seen.
async fn watch_owned<K>(
    api: Api<K>,
    kind: &'static str,
    ownership: Arc<Ownership>,
    stop: CancellationToken,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let run = async {
        loop {
            let list = match api.list(&ListParams::default()).await {
                Ok(list) => list,
                Err(_) => {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            };
            list.items.iter().for_each(|o| ownership.record(kind, o));
            let mut rv = list.metadata.resource_version.unwrap_or_default();
            loop {
                let stream = match api.watch(&WatchParams::default().timeout(60), &rv).await {
                    Ok(stream) => stream,
                    Err(_) => break,
                };
                let mut stream = stream.boxed();
                let mut failed = false;
                while let Ok(Some(event)) = stream.try_next().await {
                    match event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                            ownership.record(kind, &o);
                            rv = o.resource_version().unwrap_or(rv);
                        }
                        WatchEvent::Bookmark(b) => rv = b.metadata.resource_version,
                        WatchEvent::Error(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
                if failed {
                    break; // a 410 or another error: list again
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    tokio::select! {
        _ = stop.cancelled() => {}
        _ = run => {}
    }
}

/// Starts the ownership watches of Deployments, ConfigMaps and Services.
pub fn watch_ownership(
    client: &Client,
    namespace: &str,
    stop: &CancellationToken,
) -> Arc<Ownership> {
    let ownership = Arc::new(Ownership::default());
    tokio::spawn(watch_owned(
        Api::<Deployment>::namespaced(client.clone(), namespace),
        "Deployment",
        Arc::clone(&ownership),
        stop.clone(),
    ));
    tokio::spawn(watch_owned(
        Api::<ConfigMap>::namespaced(client.clone(), namespace),
        "ConfigMap",
        Arc::clone(&ownership),
        stop.clone(),
    ));
    tokio::spawn(watch_owned(
        Api::<Service>::namespaced(client.clone(), namespace),
        "Service",
        Arc::clone(&ownership),
        stop.clone(),
    ));
    ownership
}

/// What the periodic monitor saw.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Monitor {
    /// Samples taken.
    pub samples: u64,
    /// Samples where a Node was not Ready: the environment's own invariant.
    pub node_not_ready: Vec<String>,
    /// Control-plane components found dead.
    pub dead_components: Vec<String>,
    /// The most replicas of one binary that said they led at once (1 is right; a
    /// replica stopped with SIGSTOP is not asked).
    pub max_leaders: BTreeMap<Binary, usize>,
    /// Samples with no leader, per binary.
    pub no_leader_samples: BTreeMap<Binary, u64>,
    /// Memory samples.
    pub rss: Vec<RssSample>,
}

/// Every `period` until `stop`: Nodes, control-plane processes, leaders, memory; and
/// restarts replicas that exited.
pub async fn monitor(
    client: Client,
    control_plane: ControlPlane,
    fleet: Arc<Fleet>,
    period: Duration,
    stop: CancellationToken,
) -> Monitor {
    let mut seen = Monitor::default();
    let nodes: Api<Node> = Api::all(client);
    let mut tick = tokio::time::interval(period);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return seen,
            _ = tick.tick() => {}
        }
        seen.samples += 1;
        if let Err(e) = fleet.reap_and_restart().await {
            tracing::warn!(error = %e, "restarting a replica failed");
        }
        if let Ok(list) = nodes.list(&ListParams::default()).await {
            for node in list.items {
                let ready = node
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
                    .is_some_and(|c| c.status == "True");
                if !ready && seen.node_not_ready.len() < 100 {
                    seen.node_not_ready.push(format!(
                        "{} not Ready at sample {}",
                        node.name_any(),
                        seen.samples
                    ));
                }
            }
        }
        for dead in control_plane.dead_components() {
            if !seen.dead_components.contains(&dead) {
                seen.dead_components.push(dead);
            }
        }
        for binary in Binary::ALL {
            let leaders = fleet.leaders(binary).await.len();
            let max = seen.max_leaders.entry(binary).or_insert(0);
            *max = (*max).max(leaders);
            if leaders == 0 {
                *seen.no_leader_samples.entry(binary).or_insert(0) += 1;
            }
        }
        seen.rss.extend(fleet.rss().await);
    }
}
