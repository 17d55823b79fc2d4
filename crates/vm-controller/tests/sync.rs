//! Unit tests of the VirtualMachine syncHandler, in the style of sample-controller's
//! controller_test.go: fill the lister directly, run one sync against the recording
//! FakeApi, the FakeRecorder and the FakeDriver, then compare API actions, Events and
//! servers. [`World::settle`] plays the API server: it applies the writes that
//! succeeded to the cached object, so a test can run the next sync the way the
//! informer would deliver it (that is how crashes and retries are replayed).

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

#[tokio::test]
async fn a_new_vm_gets_the_finalizer_then_creating_then_a_server_then_active() {
    let w = World::new(new_vm());

    let action = w.sync().await.unwrap();

    assert_eq!(action, Action::RequeueAfter(PERIOD));
    assert_eq!(
        w.api.action_names(),
        [
            "patch virtualmachines",
            "update virtualmachines/status",
            "update virtualmachines/status"
        ]
    );
    let actions = w.api.actions();
    // The finalizer (and the size it will be created with) as a metadata patch with
    // the resourceVersion read as a precondition: never on a status write.
    let patch = &actions[0].body.as_ref().unwrap()["metadata"];
    assert_eq!(patch["finalizers"], serde_json::json!([FINALIZER]));
    assert_eq!(patch["resourceVersion"], "7");
    let recorded: VirtualMachineResource =
        serde_json::from_str(patch["annotations"][ANNOTATION_RESOURCES].as_str().unwrap()).unwrap();
    assert_eq!(recorded, new_vm().spec.resource);
    assert!(actions[0].body.as_ref().unwrap().get("status").is_none());
    assert_eq!(
        actions[0].query_param("fieldManager"),
        Some("vm-controller")
    );

    let creating = status_body(&actions[1]);
    assert_eq!(creating.phase, VirtualMachinePhase::Creating);
    assert!(creating.server.is_none());
    let active = status_body(&actions[2]);
    assert_eq!(active.phase, VirtualMachinePhase::Active);
    assert_eq!(active.reason, None);
    assert_eq!(active.last_update_time, Some(Time(now())));
    let server = active.server.unwrap();
    assert_eq!(
        (server.id.as_str(), server.state.as_str()),
        ("fake-1", "Running")
    );

    // Exactly the requested server, under the UID-derived name.
    let created = w.driver.server(&name()).expect("server exists");
    assert_eq!(created.spec, ServerSpec::new(name(), 1, 64 << 20, 1 << 30));
    assert_eq!(w.driver.servers_created(), 1);
    let events = w.events.events();
    assert_eq!(events.len(), 1);
    assert!(
        events[0].starts_with("Normal Created Server "),
        "{events:?}"
    );
}

#[tokio::test]
async fn no_server_is_created_before_the_finalizer_is_stored() {
    for (verb, resource) in [
        ("patch", "virtualmachines"),
        ("update", "virtualmachines/status"),
    ] {
        let w = World::new(new_vm());
        w.api.fail_next(verb, resource, 409, "Conflict");
        let err = w.sync().await.unwrap_err();
        assert!(err.is_conflict(), "{err}");
        assert_eq!(w.driver.calls(Operation::Create), 0, "{verb} {resource}");
        assert_eq!(w.driver.server_count(), 0);
    }
}

/// Fail each step of the creation once, replay the world as the API server would
/// have it, and sync until Active: always exactly one server, always the same one.
#[tokio::test]
async fn every_step_of_creation_is_safe_to_re_enter() {
    enum Fault {
        Api(&'static str, &'static str),
        Driver(Operation, bool),
    }
    let faults = [
        ("finalizer patch", Fault::Api("patch", "virtualmachines")),
        (
            "Creating status",
            Fault::Api("update", "virtualmachines/status"),
        ),
        ("create refused", Fault::Driver(Operation::Create, false)),
        (
            "create response lost",
            Fault::Driver(Operation::Create, true),
        ),
        ("first status read", Fault::Driver(Operation::Status, false)),
    ];
    for (what, fault) in faults {
        let w = World::new(new_vm());
        let failed_action = match fault {
            Fault::Api(verb, resource) => {
                w.api.fail_next(verb, resource, 500, "InternalError");
                Some(format!("{verb} {resource}"))
            }
            Fault::Driver(op, lost) => {
                if lost {
                    w.driver.lose_next_response(op, 1);
                } else {
                    w.driver.fail_next(op, 1);
                }
                None
            }
        };
        assert!(w.sync().await.is_err(), "{what}: the first sync fails");
        w.settle(failed_action.as_deref());
        assert_eq!(
            w.sync().await.unwrap(),
            Action::RequeueAfter(PERIOD),
            "{what}"
        );
        w.settle(None);
        assert_eq!(w.phase(), Some(VirtualMachinePhase::Active), "{what}");
        assert_eq!(w.driver.servers_created(), 1, "{what}");
        assert_eq!(w.driver.server_count(), 1, "{what}");
        let status = w.cached().status.unwrap();
        assert_eq!(status.server.unwrap().id, "fake-1", "{what}");
        assert_eq!(status.reason, None, "{what}: the failure reason is cleared");
    }
}

/// The crash the issue names: the driver created the server, the controller died
/// before the Active status was written. The next controller finds the same server.
#[tokio::test]
async fn a_crash_between_create_and_status_write_does_not_create_a_second_server() {
    // The finalizer and Creating are stored (the first half of a sync went through).
    let mut vm = new_vm();
    vm.metadata.finalizers = Some(vec![FINALIZER.into()]);
    vm.metadata.annotations = Some(
        [(
            ANNOTATION_RESOURCES.to_string(),
            serde_json::to_string(&vm.spec.resource).unwrap(),
        )]
        .into(),
    );
    vm.status = Some(VirtualMachineStatus {
        phase: VirtualMachinePhase::Creating,
        reason: None,
        server: None,
        last_update_time: None,
    });
    let w = World::new(vm);
    // The server is created, then the Active write is lost (the "crash").
    w.api
        .fail_next("update", "virtualmachines/status", 500, "InternalError");
    assert!(w.sync().await.is_err());
    assert_eq!(
        w.api.action_names(),
        ["update virtualmachines/status"],
        "nothing else to write"
    );
    w.settle(Some("update virtualmachines/status"));
    assert_eq!(w.driver.servers_created(), 1);
    assert_eq!(w.phase(), Some(VirtualMachinePhase::Creating));

    // A new controller instance (new syncer, same driver) converges on that server.
    assert_eq!(w.sync().await.unwrap(), Action::RequeueAfter(PERIOD));
    w.settle(None);
    assert_eq!(w.phase(), Some(VirtualMachinePhase::Active));
    assert_eq!(w.cached().status.unwrap().server.unwrap().id, "fake-1");
    assert_eq!(w.driver.servers_created(), 1);
    assert_eq!(w.driver.server_count(), 1);
    assert_eq!(w.driver.calls(Operation::Create), 2);
}

#[tokio::test]
async fn a_driver_failure_is_failed_with_a_reason_then_recovers() {
    let w = World::new(new_vm());
    w.driver.fail_next(Operation::Create, 2);

    for _ in 0..2 {
        let err = w.sync().await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::Driver {
                    operation: "create_server",
                    ..
                }
            ),
            "{err}"
        );
        w.settle(None);
        let status = w.cached().status.unwrap();
        assert_eq!(status.phase, VirtualMachinePhase::Failed);
        assert!(
            status
                .reason
                .as_deref()
                .unwrap()
                .starts_with("CreateFailed: create_server "),
            "{status:?}"
        );
    }
    // A Warning Event per failure (the recorder folds repeats into one Event).
    assert_eq!(
        w.events.take_events(),
        [
            format!(
                "Warning CreateFailed create_server {}: injected fault in create_server",
                name()
            ),
            format!(
                "Warning CreateFailed create_server {}: injected fault in create_server",
                name()
            ),
        ]
    );

    assert_eq!(w.sync().await.unwrap(), Action::RequeueAfter(PERIOD));
    w.settle(None);
    let status = w.cached().status.unwrap();
    assert_eq!(
        (status.phase, status.reason),
        (VirtualMachinePhase::Active, None)
    );
}

#[tokio::test]
async fn a_repeated_failure_writes_the_status_once() {
    let w = World::new(new_vm());
    w.driver.fail_next(Operation::Create, 2);
    let _ = w.sync().await;
    w.settle(None);
    let _ = w.sync().await;
    assert!(w.api.actions().is_empty(), "{:?}", w.api.action_names());
}

#[tokio::test]
async fn an_active_vm_with_fresh_status_costs_one_driver_read_and_no_write() {
    let w = active_world(Duration::from_secs(1)).await;
    let reads = w.driver.calls(Operation::Status);

    assert_eq!(w.sync().await.unwrap(), Action::RequeueAfter(PERIOD));

    assert!(w.api.actions().is_empty(), "{:?}", w.api.action_names());
    assert_eq!(w.driver.calls(Operation::Status), reads + 1);
    assert_eq!(
        w.driver.calls(Operation::Create),
        1,
        "no create for an Active VM"
    );
    assert!(w.events.events().is_empty());
}

#[tokio::test]
async fn usage_changes_and_the_period_refresh_are_written() {
    // New numbers: written at once.
    let w = active_world(Duration::from_secs(1)).await;
    w.driver.set_usage(&name(), 12.5, 40.0);
    w.sync().await.unwrap();
    let actions = w.api.actions();
    assert_eq!(w.api.action_names(), ["update virtualmachines/status"]);
    let status = status_body(&actions[0]);
    assert_eq!(
        status.server.unwrap().usage,
        ResourceUsage {
            cpu: 12.5,
            memory: 40.0
        }
    );

    // Same numbers, but the status is older than half the period: refreshed, so
    // lastUpdateTime says how fresh the usage is.
    let w = active_world(PERIOD / 2).await;
    w.sync().await.unwrap();
    let actions = w.api.actions();
    assert_eq!(actions.len(), 1);
    assert_eq!(status_body(&actions[0]).last_update_time, Some(Time(now())));
}

#[tokio::test]
async fn an_unobservable_server_is_unknown_then_active_again() {
    let w = active_world(Duration::from_secs(1)).await;
    w.driver.fail_next(Operation::Status, 1);

    let err = w.sync().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Driver {
                operation: "server_status",
                ..
            }
        ),
        "{err}"
    );
    w.settle(None);
    let status = w.cached().status.unwrap();
    assert_eq!(status.phase, VirtualMachinePhase::Unknown);
    assert!(status.reason.unwrap().starts_with("StatusFailed: "));
    assert_eq!(status.server.unwrap().id, "fake-1", "the server is kept");
    assert_eq!(w.events.take_events().len(), 1);

    assert_eq!(w.sync().await.unwrap(), Action::RequeueAfter(PERIOD));
    w.settle(None);
    assert_eq!(w.phase(), Some(VirtualMachinePhase::Active));
    assert_eq!(w.driver.servers_created(), 1);
}

#[tokio::test]
async fn a_vanished_server_is_created_again() {
    let w = active_world(Duration::from_secs(1)).await;
    w.driver.delete_server(&name()).await.unwrap();

    assert_eq!(w.sync().await.unwrap(), Action::Done);
    w.settle(None);
    let status = w.cached().status.unwrap();
    assert_eq!(status.phase, VirtualMachinePhase::Creating);
    assert!(status.reason.unwrap().starts_with("ServerVanished: "));
    assert!(status.server.is_none());

    w.sync().await.unwrap();
    w.settle(None);
    let status = w.cached().status.unwrap();
    assert_eq!(status.phase, VirtualMachinePhase::Active);
    assert_eq!(status.server.unwrap().id, "fake-2");
    assert_eq!(w.driver.server_count(), 1);
}

#[tokio::test]
async fn a_resize_is_reported_not_applied() {
    let w = active_world(Duration::from_secs(1)).await;
    let mut vm = w.cached();
    vm.spec.resource.cpu = k8s_openapi::apimachinery::pkg::api::resource::Quantity("2".into());
    w.put(vm);

    assert_eq!(w.sync().await.unwrap(), Action::RequeueAfter(PERIOD));
    let actions = w.api.actions();
    assert_eq!(
        w.api.action_names(),
        ["update virtualmachines/status"],
        "no annotation rewrite"
    );
    let status = status_body(&actions[0]);
    assert_eq!(status.phase, VirtualMachinePhase::Active);
    assert!(
        status
            .reason
            .as_deref()
            .unwrap()
            .starts_with("ResizeUnsupported: the server was created with cpu 1,"),
        "{status:?}"
    );
    assert_eq!(w.driver.calls(Operation::Create), 1);
    assert_eq!(
        w.driver.server(&name()).unwrap().spec.cpus,
        1,
        "server untouched"
    );
    let events = w.events.take_events();
    assert_eq!(events.len(), 1);
    assert!(
        events[0].starts_with("Warning ResizeUnsupported "),
        "{events:?}"
    );

    // Reported once, not every period.
    w.settle(None);
    w.sync().await.unwrap();
    assert!(w.events.events().is_empty());
    assert!(w.api.actions().is_empty());

    // Reverting the spec clears the reason.
    let mut vm = w.cached();
    vm.spec.resource.cpu = k8s_openapi::apimachinery::pkg::api::resource::Quantity("1000m".into());
    w.put(vm);
    w.sync().await.unwrap();
    assert_eq!(status_body(&w.api.actions()[0]).reason, None);
}

#[tokio::test]
async fn a_finalizer_removed_by_hand_is_put_back() {
    let w = active_world(Duration::from_secs(1)).await;
    let mut vm = w.cached();
    vm.metadata.finalizers = Some(vec!["example.com/other".into()]);
    w.put(vm);

    w.sync().await.unwrap();

    assert_eq!(w.api.action_names(), ["patch virtualmachines"]);
    let patch = &w.api.actions()[0].body.clone().unwrap()["metadata"];
    assert_eq!(
        patch["finalizers"],
        serde_json::json!(["example.com/other", FINALIZER])
    );
    assert!(
        patch.get("annotations").is_none(),
        "the size record is frozen once Active"
    );
}

fn deleting(mut vm: VirtualMachine) -> VirtualMachine {
    vm.metadata.deletion_timestamp = Some(Time(now()));
    vm
}

#[tokio::test]
async fn deletion_is_terminating_then_server_deleted_then_finalizer_removed() {
    let w = active_world(Duration::from_secs(1)).await;
    let mut vm = deleting(w.cached());
    vm.metadata
        .finalizers
        .as_mut()
        .unwrap()
        .insert(0, "example.com/other".into());
    w.put(vm);

    assert_eq!(w.sync().await.unwrap(), Action::Done);

    assert_eq!(
        w.api.action_names(),
        ["update virtualmachines/status", "patch virtualmachines"]
    );
    let actions = w.api.actions();
    let terminating = status_body(&actions[0]);
    assert_eq!(terminating.phase, VirtualMachinePhase::Terminating);
    let patch = &actions[1].body.as_ref().unwrap()["metadata"];
    assert_eq!(
        patch["finalizers"],
        serde_json::json!(["example.com/other"])
    );
    assert!(
        patch["resourceVersion"].is_string(),
        "precondition: {patch}"
    );
    assert_eq!(w.driver.server_count(), 0);
    assert_eq!(w.driver.servers_deleted(), 1);
    let events = w.events.events();
    assert!(
        events[0].starts_with("Normal Deleted Server "),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_failed_delete_keeps_the_finalizer_and_retries() {
    let w = active_world(Duration::from_secs(1)).await;
    w.put(deleting(w.cached()));
    w.driver.fail_next(Operation::Delete, 1);

    let err = w.sync().await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Driver {
                operation: "delete_server",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        !w.api
            .action_names()
            .contains(&"patch virtualmachines".to_string()),
        "the finalizer stays while the server may exist: {:?}",
        w.api.action_names()
    );
    w.settle(None);
    let status = w.cached().status.unwrap();
    assert_eq!(status.phase, VirtualMachinePhase::Terminating);
    assert!(status.reason.unwrap().starts_with("DeleteFailed: "));
    assert_eq!(w.driver.server_count(), 1);

    assert_eq!(w.sync().await.unwrap(), Action::Done);
    assert_eq!(w.driver.server_count(), 0);
    assert_eq!(
        w.api.action_names(),
        ["update virtualmachines/status", "patch virtualmachines"]
    );
}

#[tokio::test]
async fn deletion_re_entry_is_safe_and_a_vanished_object_is_done() {
    // Crash after delete_server, before the finalizer patch: the next sync deletes
    // (nothing left: still Ok) and removes the finalizer.
    let w = active_world(Duration::from_secs(1)).await;
    w.put(deleting(w.cached()));
    w.api
        .fail_next("patch", "virtualmachines", 500, "InternalError");
    assert!(w.sync().await.is_err());
    w.settle(Some("patch virtualmachines"));
    assert_eq!(w.driver.server_count(), 0);
    assert_eq!(w.sync().await.unwrap(), Action::Done);
    assert_eq!(w.api.action_names(), ["patch virtualmachines"]);

    // The object is already gone when the finalizer patch arrives: done.
    let w = active_world(Duration::from_secs(1)).await;
    w.put(deleting(w.cached()));
    w.api.fail_next("patch", "virtualmachines", 404, "NotFound");
    assert_eq!(w.sync().await.unwrap(), Action::Done);
}

#[tokio::test]
async fn deleting_a_vm_without_our_finalizer_touches_nothing() {
    let w = World::new(deleting(new_vm()));
    assert_eq!(w.sync().await.unwrap(), Action::Done);
    assert!(w.api.actions().is_empty());
    assert_eq!(w.driver.calls(Operation::Delete), 0);
}

#[tokio::test]
async fn an_impossible_spec_is_failed_without_retry_or_finalizer() {
    let mut vm = new_vm();
    vm.spec.resource.memory = k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Ki".into());
    let w = World::new(vm);

    assert_eq!(w.sync().await.unwrap(), Action::Done, "not retried");

    assert_eq!(w.api.action_names(), ["update virtualmachines/status"]);
    let status = status_body(&w.api.actions()[0]);
    assert_eq!(status.phase, VirtualMachinePhase::Failed);
    assert!(status.reason.unwrap().starts_with("InvalidSpec: "));
    assert_eq!(w.driver.calls(Operation::Create), 0);
    assert!(w.events.events()[0].starts_with("Warning InvalidSpec "));

    // Fixing the spec creates the server.
    w.settle(None);
    let mut vm = w.cached();
    vm.spec.resource.memory =
        k8s_openapi::apimachinery::pkg::api::resource::Quantity("64Mi".into());
    w.put(vm);
    w.sync().await.unwrap();
    w.settle(None);
    assert_eq!(w.phase(), Some(VirtualMachinePhase::Active));
}

#[tokio::test]
async fn gone_objects_bad_keys_and_conflicts() {
    let w = World::new(new_vm());
    let syncer = w.syncer();
    assert_eq!(syncer.sync_vm("default/other").await.unwrap(), Action::Done);
    assert!(matches!(syncer.sync_vm("a/b/c").await, Err(Error::Key(_))));
    assert!(w.api.actions().is_empty());

    // A stale cache: one attempt, the 409 returned for a retry through the queue.
    let w = active_world(PERIOD).await;
    w.api
        .fail_next("update", "virtualmachines/status", 409, "Conflict");
    let err = w.sync().await.unwrap_err();
    assert!(err.is_conflict(), "{err}");
    assert_eq!(w.api.action_names(), ["update virtualmachines/status"]);
}

#[tokio::test]
async fn status_writes_keep_the_server_while_terminating() {
    let w = active_world(Duration::from_secs(1)).await;
    let server: ServerStatus = w.cached().status.unwrap().server.unwrap();
    w.put(deleting(w.cached()));
    w.driver.fail_next(Operation::Delete, 1);
    let _ = w.sync().await;
    let terminating = status_body(&w.api.actions()[0]);
    assert_eq!(terminating.server, Some(server));
}
