//! Deletion: Terminating, delete_server, the finalizer removed last.

use super::*;

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
async fn status_writes_keep_the_server_while_terminating() {
    let w = active_world(Duration::from_secs(1)).await;
    let server: ServerStatus = w.cached().status.unwrap().server.unwrap();
    w.put(deleting(w.cached()));
    w.driver.fail_next(Operation::Delete, 1);
    let _ = w.sync().await;
    let terminating = status_body(&w.api.actions()[0]);
    assert_eq!(terminating.server, Some(server));
}
