//! An Active VirtualMachine: usage refresh, Unknown, a vanished server, resize refused.

use super::*;

#[tokio::test]
async fn an_active_vm_with_fresh_status_costs_one_driver_read_and_no_write() {
    let w = active_world(Duration::from_secs(1)).await;
    let reads = w.driver.calls(Operation::Status);

    assert_eq!(w.sync().await.unwrap(), refresh());

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

    assert_eq!(w.sync().await.unwrap(), refresh());
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

    assert_eq!(w.sync().await.unwrap(), refresh());
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
