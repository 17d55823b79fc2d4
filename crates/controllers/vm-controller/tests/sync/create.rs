//! Creation: the finalizer first, Creating, the server, Active; failures and re-entry at
//! every step.

use super::*;

#[tokio::test]
async fn a_new_vm_gets_the_finalizer_then_creating_then_a_server_then_active() {
    let w = World::new(new_vm());

    let action = w.sync().await.unwrap();

    assert_eq!(action, refresh());
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
        assert_eq!(w.sync().await.unwrap(), refresh(), "{what}");
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
    assert_eq!(w.sync().await.unwrap(), refresh());
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

    assert_eq!(w.sync().await.unwrap(), refresh());
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

/// Without the webhook, the controller refuses an oversized VM itself, and the status
/// reason and the Warning Event name its limit (64 CPUs), not the integer type's
/// (issue 33: "the maximum is 4294967295").
#[tokio::test]
async fn an_oversized_cpu_count_names_the_real_limit_where_users_read_it() {
    for (cpu, refused) in [("99999999999", true), ("65", true), ("64", false)] {
        let mut vm = new_vm();
        vm.spec.resource.cpu = k8s_openapi::apimachinery::pkg::api::resource::Quantity(cpu.into());
        let w = World::new(vm);

        let action = w.sync().await.unwrap();

        if !refused {
            assert_eq!(action, refresh(), "{cpu} CPUs");
            assert_eq!(w.driver.calls(Operation::Create), 1, "{cpu} CPUs");
            continue;
        }
        assert_eq!(action, Action::Done, "{cpu} CPUs: not retried");
        assert_eq!(w.driver.calls(Operation::Create), 0);
        let want = format!(
            "invalid spec.resource: spec.resource.cpu: Invalid value: {cpu:?}: must be at most 64"
        );
        let status = status_body(&w.api.actions()[0]);
        assert_eq!(status.reason.unwrap(), format!("InvalidSpec: {want}"));
        assert_eq!(w.events.events(), [format!("Warning InvalidSpec {want}")]);
    }
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
