//! What `complete` builds: the workspace's sync loop running the reconciler, so errors
//! are retried with the queue's rate limiter, successes forget the backoff, requeue
//! requests come back later, and a panicking reconcile is contained.
//!
//! The informers are never started here (the factory's client is a fake): the tests
//! feed the queue as a watch handler would and turn the loop by hand.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::time::Duration;

use builder::{Action, Builder, BuiltController, Reconciler, Request};
use cache::SharedInformerFactory;
use controller::testing::FakeApi;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;

/// Answers each request with the next scripted outcome and records what it was asked.
#[derive(Default)]
struct Scripted {
    seen: Mutex<Vec<Request>>,
}

impl Reconciler for Scripted {
    type Error = String;

    async fn reconcile(&self, request: &Request) -> Result<Action, String> {
        self.seen.lock().unwrap().push(request.clone());
        match request.name.as_str() {
            "fails" => Err("transient".to_string()),
            "panics" => panic!("a bug in the reconciler"),
            "later" => Ok(Action::requeue_after(Duration::from_secs(30))),
            _ => Ok(Action::Done),
        }
    }
}

fn build() -> BuiltController<Scripted> {
    let client = FakeApi::new().client();
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    Builder::new("complete-test", client, &factory)
        .namespace(Some("ns"))
        .for_::<Deployment>()
        .owns::<ConfigMap>()
        .workers(3)
        .complete(Scripted::default())
}

#[tokio::test]
async fn the_reconciler_gets_parsed_requests_and_its_answers_drive_the_queue() {
    let built = build();
    assert_eq!((built.name(), built.workers()), ("complete-test", 3));
    assert!(!built.has_synced(), "two watches, neither listed");
    let queue = built.queue().clone();
    let turn = || built.controller().process_next_work_item();

    queue.add("ns/ok".to_string());
    assert!(turn().await);
    assert_eq!(
        *built.reconciler().seen.lock().unwrap(),
        [Request::new(Some("ns"), "ok")]
    );
    assert_eq!(queue.num_requeues(&"ns/ok".to_string()), 0);

    // An error: back with the rate limiter's backoff, counted.
    queue.add("ns/fails".to_string());
    assert!(turn().await);
    assert_eq!(queue.num_requeues(&"ns/fails".to_string()), 1);

    // A panic: contained and handled like an error; the loop keeps turning.
    queue.add("ns/panics".to_string());
    assert!(turn().await);
    assert_eq!(queue.num_requeues(&"ns/panics".to_string()), 1);

    // Requeue after: no failure counted, the key is not in line yet.
    queue.add("ns/later".to_string());
    assert!(turn().await);
    assert_eq!(queue.num_requeues(&"ns/later".to_string()), 0);
    queue.shut_down();
}

#[tokio::test]
async fn a_controller_whose_caches_never_sync_starts_no_worker() {
    let built = build();
    built.queue().add("ns/ok".to_string());
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    let err = built.run(cancel).await.unwrap_err();
    assert!(
        matches!(err, controller::Error::CachesNotSynced { .. }),
        "{err}"
    );
    assert!(built.reconciler().seen.lock().unwrap().is_empty());
}
