//! FakeDriver: every operation, idempotency, fault injection, latency in paused time.

use std::sync::Arc;
use std::time::Duration;

use vm_driver::{Driver, DriverError, FakeDriver, Operation, ServerSpec, ServerState};

fn spec(name: &str) -> ServerSpec {
    ServerSpec::new(name, 2, 128 << 20, 1 << 30)
}

#[tokio::test]
async fn create_exists_status_delete() {
    let driver = FakeDriver::new();
    assert!(!driver.server_exists("vm-1").await.unwrap());

    let id = driver.create_server(&spec("vm-1")).await.unwrap();
    assert_eq!(id.as_str(), "fake-1");
    assert!(driver.server_exists("vm-1").await.unwrap());
    let server = driver.server("vm-1").unwrap();
    assert_eq!((server.id.clone(), server.spec), (id, spec("vm-1")));

    let status = driver.server_status("vm-1").await.unwrap();
    assert_eq!(status.state, ServerState::Running);
    assert_eq!((status.cpu_percent, status.memory_percent), (0.0, 0.0));
    assert!(driver.set_usage("vm-1", 12.5, 40.0));
    assert!(driver.set_state("vm-1", ServerState::Paused));
    let status = driver.server_status("vm-1").await.unwrap();
    assert_eq!(
        (status.state, status.cpu_percent, status.memory_percent),
        (ServerState::Paused, 12.5, 40.0)
    );

    driver.delete_server("vm-1").await.unwrap();
    assert!(!driver.server_exists("vm-1").await.unwrap());
    assert_eq!(driver.server_count(), 0);
    assert_eq!(driver.servers_deleted(), 1);
}

#[tokio::test]
async fn every_call_is_idempotent() {
    let driver = FakeDriver::new();
    let a = driver.create_server(&spec("a")).await.unwrap();
    let b = driver.create_server(&spec("b")).await.unwrap();
    assert_ne!(a, b);
    for _ in 0..3 {
        assert_eq!(driver.create_server(&spec("a")).await.unwrap(), a);
    }
    // A different spec for an existing name still returns the existing server.
    let bigger = ServerSpec {
        cpus: 8,
        ..spec("a")
    };
    assert_eq!(driver.create_server(&bigger).await.unwrap(), a);
    assert_eq!(driver.server("a").unwrap().spec, spec("a"));
    assert_eq!((driver.servers_created(), driver.server_count()), (2, 2));
    assert_eq!(driver.calls(Operation::Create), 6);

    // A server that stopped is started again by create, same id.
    driver.set_state("b", ServerState::Shutdown);
    assert_eq!(driver.create_server(&spec("b")).await.unwrap(), b);
    assert_eq!(driver.server("b").unwrap().state, ServerState::Running);

    driver.delete_server("a").await.unwrap();
    driver.delete_server("a").await.unwrap();
    driver.delete_server("never-existed").await.unwrap();
    assert_eq!(driver.servers_deleted(), 1);
    let names: Vec<String> = driver.servers().into_iter().map(|s| s.spec.name).collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn missing_servers_and_bad_input_are_typed_errors() {
    let driver = FakeDriver::new();
    let err = driver.server_status("nope").await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert!(err.to_string().contains("nope"), "{err}");

    let err = driver.create_server(&spec("../escape")).await.unwrap_err();
    assert!(
        matches!(err, DriverError::InvalidName { .. }) && err.is_invalid(),
        "{err:?}"
    );
    let err = driver
        .create_server(&ServerSpec {
            cpus: 0,
            ..spec("ok")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, DriverError::InvalidSpec { .. }), "{err:?}");
    for result in [
        driver.delete_server("A").await.map(|_| ()),
        driver.server_exists("a/b").await.map(|_| ()),
        driver.server_status("").await.map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(DriverError::InvalidName { .. })),
            "{result:?}"
        );
    }
    assert_eq!(driver.server_count(), 0);
    assert!(!driver.set_state("nope", ServerState::Running));
    assert!(!driver.set_usage("nope", 1.0, 1.0));
}

#[tokio::test]
async fn fail_next_fails_only_that_operation_and_does_nothing() {
    let driver = FakeDriver::new();
    driver.fail_next(Operation::Create, 2);
    for _ in 0..2 {
        let err = driver.create_server(&spec("vm")).await.unwrap_err();
        assert!(
            matches!(
                err,
                DriverError::Injected {
                    operation: Operation::Create
                }
            ),
            "{err:?}"
        );
    }
    // Other operations are unaffected meanwhile, and nothing was created.
    assert!(!driver.server_exists("vm").await.unwrap());
    assert_eq!(driver.server_count(), 0);
    driver.create_server(&spec("vm")).await.unwrap();
    assert_eq!(
        (driver.calls(Operation::Create), driver.servers_created()),
        (3, 1)
    );

    driver.fail_next(Operation::Delete, 1);
    assert!(driver.delete_server("vm").await.is_err());
    assert!(
        driver.server_exists("vm").await.unwrap(),
        "a failed delete must not delete"
    );
    driver.delete_server("vm").await.unwrap();
    assert!(!driver.server_exists("vm").await.unwrap());
}

#[tokio::test]
async fn fail_next_any_fails_every_operation_in_turn() {
    let driver = FakeDriver::new();
    driver.create_server(&spec("vm")).await.unwrap();
    driver.fail_next_any(4);
    assert!(driver.create_server(&spec("other")).await.is_err());
    assert!(driver.delete_server("vm").await.is_err());
    assert!(driver.server_exists("vm").await.is_err());
    assert!(driver.server_status("vm").await.is_err());
    // Used up: everything works again, and nothing changed.
    assert!(driver.server_exists("vm").await.unwrap());
    assert!(!driver.server_exists("other").await.unwrap());
    for op in Operation::ALL {
        assert!(driver.calls(op) >= 1, "{op}");
    }
}

#[tokio::test]
async fn clear_faults_cancels_every_pending_fault() {
    let driver = FakeDriver::new();
    driver.create_server(&spec("vm-1")).await.unwrap();
    driver.fail_next(Operation::Delete, u32::MAX);
    driver.fail_next_any(3);
    driver.lose_next_response(Operation::Create, 2);
    for _ in 0..5 {
        assert!(matches!(
            driver.delete_server("vm-1").await,
            Err(DriverError::Injected { .. })
        ));
    }
    assert_eq!(driver.server_count(), 1, "a failed delete deletes nothing");

    driver.clear_faults();
    driver.delete_server("vm-1").await.unwrap();
    driver.create_server(&spec("vm-2")).await.unwrap();
    driver.server_status("vm-2").await.unwrap();
    assert_eq!((driver.servers_deleted(), driver.servers_created()), (1, 2));
    assert_eq!(driver.calls(Operation::Delete), 6);
}

#[tokio::test]
async fn a_lost_create_response_still_yields_exactly_one_server() {
    let driver = FakeDriver::new();
    driver.lose_next_response(Operation::Create, 1);
    let err = driver.create_server(&spec("vm")).await.unwrap_err();
    assert!(matches!(err, DriverError::Injected { .. }));
    // The work was done...
    assert!(driver.server_exists("vm").await.unwrap());
    // ...and the retry returns that server instead of making another.
    let id = driver.create_server(&spec("vm")).await.unwrap();
    assert_eq!(id, driver.server("vm").unwrap().id);
    assert_eq!((driver.servers_created(), driver.server_count()), (1, 1));

    driver.lose_next_response(Operation::Delete, 1);
    assert!(driver.delete_server("vm").await.is_err());
    assert!(!driver.server_exists("vm").await.unwrap());
    driver.delete_server("vm").await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn latency_delays_every_call_in_virtual_time() {
    let driver = Arc::new(FakeDriver::new());
    driver.set_latency(Duration::from_secs(3));
    let start = tokio::time::Instant::now();
    driver.create_server(&spec("vm")).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(3));

    // While a call sleeps, it has been counted but has not acted yet.
    let task = tokio::spawn({
        let driver = driver.clone();
        async move { driver.delete_server("vm").await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(driver.calls(Operation::Delete), 1);
    assert_eq!(driver.server_count(), 1);
    task.await.unwrap().unwrap();
    assert_eq!(driver.server_count(), 0);
    assert_eq!(start.elapsed(), Duration::from_secs(6));

    driver.set_latency(Duration::ZERO);
    let before = tokio::time::Instant::now();
    driver.server_exists("vm").await.unwrap();
    assert_eq!(before.elapsed(), Duration::ZERO);
}

#[tokio::test]
async fn usable_as_a_shared_trait_object() {
    let fake = Arc::new(FakeDriver::new());
    let driver: Arc<dyn Driver> = fake.clone();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let driver = driver.clone();
            tokio::spawn(async move { driver.create_server(&spec("shared")).await.unwrap() })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        ids.push(task.await.unwrap());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "concurrent creates must agree on one server");
    assert_eq!(fake.servers_created(), 1);
}
