//! Unit tests of the VirtualMachine syncHandler, in the style of sample-controller's
//! controller_test.go: fill the lister directly, run one sync against the recording
//! FakeApi, the FakeRecorder and the FakeDriver, then compare API actions, Events and
//! servers. [`World::settle`] plays the API server: it applies the writes that
//! succeeded to the cached object, so a test can run the next sync the way the
//! informer would deliver it (that is how crashes and retries are replayed).
//!
//! `create`: new objects, failures and re-entry; `observe`: Active objects (usage,
//! Unknown, vanished servers, resize); `delete`: the finalizer path.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

mod create;
mod delete;
mod observe;

use std::sync::Arc;
use std::time::Duration;

use apis::cloudnative::v1alpha1::{
    ResourceUsage, ServerStatus, VirtualMachine, VirtualMachinePhase, VirtualMachineResource,
    VirtualMachineSpec, VirtualMachineStatus,
};
use cache::{Indexer, Lister};
use controller::Action;
use controller::testing::FakeApi;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use record::FakeRecorder;
use serde_json::Value;
use vm_controller::{ANNOTATION_RESOURCES, Error, FINALIZER, VirtualMachineSyncer, server_name};
use vm_driver::{Driver, FakeDriver, Operation, ServerSpec};

const KEY: &str = "default/test-vm";
const UID: &str = "5c3d2f0e-8f1b-4c6a-9a53-0d2b1e7f4a10";
const PERIOD: Duration = Duration::from_secs(20);

/// What an `Active` sync returns: the usage refresh after `PERIOD`, behind users'
/// changes (at `LOW`).
fn refresh() -> Action {
    Action::requeue_after(PERIOD).with_priority(workqueue::priority::LOW)
}
/// The fixed "now" of every test: 2025-01-01T00:00:00Z.
const NOW: i64 = 1_735_689_600;

fn now() -> Timestamp {
    Timestamp::from_second(NOW).unwrap()
}

/// One test's world: the cache, the fake API, Events, the driver.
struct World {
    vms: Indexer<VirtualMachine>,
    api: FakeApi,
    events: FakeRecorder,
    driver: Arc<FakeDriver>,
}

impl World {
    fn new(vm: VirtualMachine) -> Self {
        let world = Self {
            vms: Indexer::new(),
            api: FakeApi::new(),
            events: FakeRecorder::new(),
            driver: Arc::new(FakeDriver::new()),
        };
        world.put(vm);
        world
    }

    fn put(&self, vm: VirtualMachine) {
        self.vms.add(KEY, Arc::new(vm));
    }

    fn cached(&self) -> VirtualMachine {
        (*self.vms.get_by_key(KEY).expect("cached")).clone()
    }

    fn syncer(&self) -> VirtualMachineSyncer {
        VirtualMachineSyncer::new(
            self.api.client(),
            Lister::new(self.vms.clone()),
            self.driver.clone(),
            self.events.recorder(),
        )
        .with_usage_period(PERIOD)
        .with_clock(Arc::new(now))
    }

    async fn sync(&self) -> Result<Action, Error> {
        self.syncer().sync_vm(KEY).await
    }

    /// Applies the recorded writes to the cached object as the API server would have
    /// (skipping the first action named `failed`, which was answered with an error),
    /// bumps the resourceVersion per write, and forgets the actions.
    fn settle(&self, failed: Option<&str>) {
        let mut vm = self.cached();
        let mut skipped = false;
        for action in self.api.actions() {
            if !skipped && Some(action.describe().as_str()) == failed {
                skipped = true;
                continue;
            }
            let body = action.body.clone().unwrap_or(Value::Null);
            match action.describe().as_str() {
                "update virtualmachines/status" => {
                    vm.status = serde_json::from_value(body["status"].clone()).unwrap();
                }
                "patch virtualmachines" => {
                    let meta = &body["metadata"];
                    vm.metadata.finalizers =
                        serde_json::from_value(meta["finalizers"].clone()).unwrap();
                    if let Some(annotations) = meta["annotations"].as_object() {
                        let map = vm.metadata.annotations.get_or_insert_with(Default::default);
                        for (k, v) in annotations {
                            map.insert(k.clone(), v.as_str().unwrap().to_string());
                        }
                    }
                }
                other => panic!("unexpected write {other}"),
            }
            let rv: u64 = vm
                .metadata
                .resource_version
                .as_deref()
                .unwrap()
                .parse()
                .unwrap();
            vm.metadata.resource_version = Some((rv + 1).to_string());
        }
        self.api.clear();
        self.put(vm);
    }

    fn phase(&self) -> Option<VirtualMachinePhase> {
        self.cached().status.map(|s| s.phase)
    }
}

fn new_vm() -> VirtualMachine {
    let mut vm = VirtualMachine::new(
        "test-vm",
        VirtualMachineSpec {
            resource: VirtualMachineResource::new("1", "64Mi", "1Gi"),
        },
    );
    vm.metadata.namespace = Some("default".into());
    vm.metadata.uid = Some(UID.into());
    vm.metadata.resource_version = Some("7".into());
    vm
}

fn name() -> String {
    server_name(&new_vm()).unwrap()
}

/// `new_vm` as the controller leaves it once Active with server `fake-1`, status
/// written `age` ago; the driver holds that server.
async fn active_world(age: Duration) -> World {
    let w = World::new(new_vm());
    w.sync().await.unwrap();
    w.settle(None);
    let mut vm = w.cached();
    let status = vm.status.as_mut().unwrap();
    status.last_update_time = Some(Time(now() - age));
    w.put(vm);
    w.events.take_events();
    w
}

fn status_body(action: &controller::testing::ApiAction) -> VirtualMachineStatus {
    serde_json::from_value(action.body.as_ref().unwrap()["status"].clone()).unwrap()
}
