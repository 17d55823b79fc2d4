//! Convergence: does every live object look as its spec says, and is every server
//! accounted for? Each finding is either the controllers' (a wrong or missing owned
//! object, a stale status, a leaked or duplicated server) or the environment's (a
//! correct Deployment whose Pods kube-controller-manager, the scheduler and kwok did not
//! make available).

use std::collections::{BTreeMap, BTreeSet};

use apis::cloudnative::v1alpha1::{VirtualMachine, VirtualMachinePhase};
use apis::operator::v1::MyWeb;
use apis::samplecontroller::v1alpha1::Foo;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::ListParams;
use kube::{Api, Client, Resource, ResourceExt};
use serde::Serialize;
use vm_driver::FileDriver;

use crate::error::ChaosError;

/// The words that end a finding about a dependent of a deleted owner: the garbage
/// collector's to remove, not the controllers' ([`crate::recovery`] watches for them).
pub const UNCOLLECTED: &str = "not yet garbage collected";

/// What a convergence check found.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Findings {
    /// The controllers are wrong (or not done yet).
    pub controller: Vec<String>,
    /// The environment did not deliver (Pods not made available).
    pub environment: Vec<String>,
    /// Live objects checked: Foos, VirtualMachines, MyWebs.
    pub live: (usize, usize, usize),
    /// Servers in the file driver.
    pub servers: usize,
}

impl Findings {
    /// Nothing found.
    pub fn converged(&self) -> bool {
        self.controller.is_empty() && self.environment.is_empty()
    }
}

fn controlled_by<K: Resource>(object: &K, uid: &str) -> bool {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// The uid of the earlier owner of `kind` named `name` that still controls `object`,
/// if its controller is such an owner with another uid than `uid`: an object of a
/// deleted owner of the same name (the load deletes and creates objects again under
/// their old names), which is the garbage collector's to remove, not the controller's.
fn earlier_owner<K: Resource>(object: &K, kind: &str, name: &str, uid: &str) -> Option<String> {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .filter(|o| o.kind == kind && o.name == name && o.uid != uid)
        .map(|o| o.uid.clone())
}

fn by_name<K: Resource + Clone>(items: &[K]) -> BTreeMap<String, K> {
    items
        .iter()
        .map(|o| (o.meta().name.clone().unwrap_or_default(), o.clone()))
        .collect()
}

/// Checks every live Foo, VirtualMachine and MyWeb in `namespace`, and the servers of
/// `driver` (a leak: a server no live VirtualMachine owns; a duplicate: a server name
/// created more than once in the journal).
pub async fn check(
    client: &Client,
    namespace: &str,
    driver: &FileDriver,
) -> Result<Findings, ChaosError> {
    let lp = ListParams::default();
    let foos = Api::<Foo>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await?
        .items;
    let vms = Api::<VirtualMachine>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await?
        .items;
    let webs = Api::<MyWeb>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await?
        .items;
    let deployments = by_name(
        &Api::<Deployment>::namespaced(client.clone(), namespace)
            .list(&lp)
            .await?
            .items,
    );
    let config_maps = by_name(
        &Api::<ConfigMap>::namespaced(client.clone(), namespace)
            .list(&lp)
            .await?
            .items,
    );
    let services = by_name(
        &Api::<Service>::namespaced(client.clone(), namespace)
            .list(&lp)
            .await?
            .items,
    );
    let mut f = Findings::default();

    for foo in foos
        .iter()
        .filter(|o| o.metadata.deletion_timestamp.is_none())
    {
        f.live.0 += 1;
        let (name, uid) = (foo.name_any(), foo.uid().unwrap_or_default());
        let Some(dep) = deployments.get(&foo.spec.deployment_name) else {
            f.controller.push(format!(
                "Foo {name}: no Deployment {}",
                foo.spec.deployment_name
            ));
            continue;
        };
        if !controlled_by(dep, &uid) {
            match earlier_owner(dep, "Foo", &name, &uid) {
                // An earlier Foo of the same name, deleted by the load: its Deployment is
                // the garbage collector's to remove (kube-controller-manager's job).
                Some(owner) => f.environment.push(format!(
                    "Deployment {}: still owned by a deleted Foo {name} (uid {owner}); {UNCOLLECTED}",
                    foo.spec.deployment_name
                )),
                None => f.controller.push(format!(
                    "Foo {name}: Deployment not controlled by this Foo (uid {uid})"
                )),
            }
            continue;
        }
        let desired = dep.spec.replicas.unwrap_or(1);
        if desired != foo.spec.replicas {
            f.controller.push(format!(
                "Foo {name}: Deployment replicas {desired}, spec {}",
                foo.spec.replicas
            ));
            continue;
        }
        let available = dep
            .status
            .as_ref()
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        if available != desired {
            f.environment.push(format!(
                "Deployment {name}: {available}/{desired} available"
            ));
            continue;
        }
        let reported = foo.status.as_ref().map_or(-1, |s| s.available_replicas);
        if reported != available {
            f.controller.push(format!(
                "Foo {name}: status says {reported} available, Deployment {available}"
            ));
        }
    }

    let servers = driver
        .servers()
        .map_err(|e| ChaosError::Setup(format!("file driver: {e}")))?;
    f.servers = servers.len();
    let servers: BTreeMap<String, String> = servers
        .into_iter()
        .map(|s| (s.spec.name.clone(), s.id.0))
        .collect();
    let mut owned_servers = BTreeSet::new();
    for vm in &vms {
        let name = vm.name_any();
        if vm.metadata.deletion_timestamp.is_some() {
            f.controller.push(format!(
                "VirtualMachine {name}: still terminating (finalizers {:?})",
                vm.metadata.finalizers
            ));
            continue;
        }
        f.live.1 += 1;
        let server = match vm_controller::server_name(vm) {
            Ok(server) => server,
            Err(e) => {
                f.controller.push(format!("VirtualMachine {name}: {e}"));
                continue;
            }
        };
        owned_servers.insert(server.clone());
        let phase = vm.status.as_ref().map(|s| s.phase);
        let status_id = vm
            .status
            .as_ref()
            .and_then(|s| s.server.as_ref())
            .map(|s| s.id.clone());
        match servers.get(&server) {
            None => f
                .controller
                .push(format!("VirtualMachine {name}: no server {server}")),
            Some(id) if phase != Some(VirtualMachinePhase::Active) => {
                f.controller.push(format!(
                    "VirtualMachine {name}: phase {phase:?} (server {id})"
                ));
            }
            Some(id) if status_id.as_ref() != Some(id) => {
                f.controller.push(format!(
                    "VirtualMachine {name}: status server {status_id:?}, driver {id}"
                ));
            }
            Some(_) => {}
        }
    }
    for (server, id) in &servers {
        if !owned_servers.contains(server) {
            f.controller.push(format!(
                "server {server} ({id}) leaked: no live VirtualMachine owns it"
            ));
        }
    }
    f.controller.extend(duplicate_servers(driver)?);

    for web in webs
        .iter()
        .filter(|o| o.metadata.deletion_timestamp.is_none())
    {
        f.live.2 += 1;
        let (name, uid) = (web.name_any(), web.uid().unwrap_or_default());
        let cm_ok = config_maps
            .get(&name)
            .is_some_and(|o| controlled_by(o, &uid));
        let svc_ok = services.get(&name).is_some_and(|o| {
            controlled_by(o, &uid)
                && o.spec
                    .as_ref()
                    .and_then(|s| s.ports.as_ref())
                    .and_then(|p| p.first())
                    .and_then(|p| p.node_port)
                    == Some(web.spec.node_port_number)
        });
        let dep = deployments.get(&name).filter(|o| controlled_by(*o, &uid));
        // What still belongs to an earlier MyWeb of this name: its name is taken until
        // the garbage collector removes it, so the operator cannot create its own.
        let orphans: Vec<String> = [
            config_maps
                .get(&name)
                .and_then(|o| earlier_owner(o, "MyWeb", &name, &uid))
                .map(|u| ("ConfigMap", u)),
            services
                .get(&name)
                .and_then(|o| earlier_owner(o, "MyWeb", &name, &uid))
                .map(|u| ("Service", u)),
            deployments
                .get(&name)
                .and_then(|o| earlier_owner(o, "MyWeb", &name, &uid))
                .map(|u| ("Deployment", u)),
        ]
        .into_iter()
        .flatten()
        .map(|(kind, owner)| {
            format!(
                "{kind} {name}: still owned by a deleted MyWeb {name} (uid {owner}); {UNCOLLECTED}"
            )
        })
        .collect();
        // The operator creates them in order and stops at the first that fails, so one
        // taken name explains the missing objects after it too.
        if !orphans.is_empty() {
            f.environment.extend(orphans);
            continue;
        }
        if !cm_ok || !svc_ok || dep.is_none() {
            f.controller.push(format!(
                "MyWeb {name}: ConfigMap ok {cm_ok}, Service ok {svc_ok}, Deployment ok {}",
                dep.is_some()
            ));
            continue;
        }
        let status = web.status.clone().unwrap_or_default();
        if status.observed_generation != web.metadata.generation {
            f.controller.push(format!(
                "MyWeb {name}: observedGeneration {:?}, generation {:?}",
                status.observed_generation, web.metadata.generation
            ));
            continue;
        }
        let ready = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let available = dep
            .and_then(|d| d.status.as_ref())
            .and_then(|s| s.available_replicas)
            .unwrap_or(0);
        if !ready && available == 0 {
            f.environment
                .push(format!("MyWeb {name}: Deployment has no available replica"));
        } else if !ready {
            f.controller.push(format!(
                "MyWeb {name}: not Ready although its Deployment is available"
            ));
        }
    }
    Ok(f)
}

/// Server names the journal shows created more than once: each VirtualMachine
/// incarnation has its own server name (`<name>-<uid>`), so that is a second server for
/// one object.
pub fn duplicate_servers(driver: &FileDriver) -> Result<Vec<String>, ChaosError> {
    let journal = driver
        .journal()
        .map_err(|e| ChaosError::Setup(format!("file driver journal: {e}")))?;
    let mut creates: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in journal.iter().filter(|e| e.op == "create") {
        *creates.entry(entry.name.as_str()).or_insert(0) += 1;
    }
    Ok(creates
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, n)| format!("server {name} created {n} times"))
        .collect())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::earlier_owner;

    fn owned(kind: &str, name: &str, uid: &str, controller: bool) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "operator.k8s-summit.org/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(controller),
            block_owner_deletion: None,
        }]);
        cm
    }

    #[test]
    fn only_an_earlier_owner_of_the_same_kind_and_name_is_the_garbage_collectors() {
        let old = owned("MyWeb", "web-1", "old", true);
        assert_eq!(
            earlier_owner(&old, "MyWeb", "web-1", "new").as_deref(),
            Some("old")
        );
        // Its own: the controller's.
        assert_eq!(earlier_owner(&old, "MyWeb", "web-1", "old"), None);
        // Another name, another kind, or not the controller: not a previous incarnation.
        assert_eq!(earlier_owner(&old, "MyWeb", "web-2", "new"), None);
        assert_eq!(
            earlier_owner(&owned("Foo", "web-1", "old", true), "MyWeb", "web-1", "new"),
            None
        );
        assert_eq!(
            earlier_owner(
                &owned("MyWeb", "web-1", "old", false),
                "MyWeb",
                "web-1",
                "new"
            ),
            None
        );
        assert_eq!(
            earlier_owner(&ConfigMap::default(), "MyWeb", "web-1", "new"),
            None
        );
    }
}
