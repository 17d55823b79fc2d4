//! The plain queue's rules, one test each (client-go queue_test.go territory).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use workqueue::{ItemState, Queue};

#[test]
fn add_get_done_in_fifo_order() {
    let q = Queue::new();
    for k in ["a", "b", "c"] {
        q.add(k);
    }
    assert_eq!(q.len(), 3);
    let got: Vec<_> = (0..3).map(|_| q.try_get().unwrap().into_inner()).collect();
    assert_eq!(got, ["a", "b", "c"]);
    assert!(q.try_get().is_none());
}

#[test]
fn add_of_waiting_item_is_deduplicated() {
    let q = Queue::new();
    q.add("a");
    q.add("b");
    q.add("a");
    assert_eq!(q.len(), 2);
    assert_eq!(*q.try_get().unwrap(), "a");
    assert_eq!(*q.try_get().unwrap(), "b");
    assert!(q.try_get().is_none());
}

#[test]
fn add_while_processing_requeues_only_on_done() {
    let q = Queue::new();
    q.add("a");
    let item = q.try_get().unwrap();
    assert_eq!(q.state_of(&"a"), Some(ItemState::Processing));

    q.add("a");
    q.add("a"); // still one pending re-run, not two
    assert_eq!(q.state_of(&"a"), Some(ItemState::ProcessingDirty));
    assert_eq!(q.len(), 0, "a held item is never handed to a second worker");
    assert!(q.try_get().is_none());

    item.done();
    assert_eq!(q.state_of(&"a"), Some(ItemState::Queued));
    assert_eq!(q.len(), 1);
    let again = q.try_get().unwrap();
    assert_eq!(*again, "a");
    again.done();
    assert_eq!(
        q.state_of(&"a"),
        None,
        "done without a re-add forgets the item"
    );
    assert!(q.is_empty());
}

#[test]
fn done_without_re_add_does_not_requeue() {
    let q = Queue::new();
    q.add(1);
    q.try_get().unwrap().done();
    assert!(q.is_empty());
    assert!(q.try_get().is_none());
}

#[test]
fn explicit_done_after_into_inner() {
    let q = Queue::new();
    q.add("a");
    let raw = q.try_get().unwrap().into_inner();
    assert_eq!(
        q.state_of(&"a"),
        Some(ItemState::Processing),
        "into_inner disarms the guard: the item stays in processing"
    );
    q.add("a");
    assert_eq!(q.len(), 0);
    q.done(&raw);
    assert_eq!(q.len(), 1);
}

#[test]
fn done_for_an_item_not_processing_is_a_no_op() {
    let q = Queue::new();
    q.done(&"never-seen");
    q.add("a");
    q.done(&"a"); // queued, not processing: client-go would queue it twice
    assert_eq!(q.len(), 1);
    assert_eq!(q.state_of(&"a"), Some(ItemState::Queued));
}

#[test]
fn dropping_the_guard_on_panic_marks_done() {
    let q = Queue::new();
    q.add("a");
    let q2 = q.clone();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _item = q2.try_get().unwrap();
        panic!("reconcile blew up");
    }));
    assert!(result.is_err());
    assert_eq!(q.state_of(&"a"), None);
    q.add("a");
    assert_eq!(q.len(), 1, "the item can be queued again after the panic");
}

#[test]
fn add_after_shutdown_is_ignored() {
    let q = Queue::new();
    q.add("a");
    q.shut_down();
    assert!(q.shutting_down());
    q.add("b");
    assert_eq!(q.len(), 1);
}

#[test]
fn re_add_while_processing_after_shutdown_is_ignored() {
    let q = Queue::new();
    q.add("a");
    let item = q.try_get().unwrap();
    q.shut_down();
    q.add("a");
    item.done();
    assert!(
        q.is_empty(),
        "adds after shutdown do not mark the item dirty"
    );
}

#[tokio::test]
async fn get_hands_out_queued_items_after_shutdown_then_reports_shutdown() {
    let q = Queue::new();
    q.add("a");
    q.add("b");
    q.shut_down();
    assert_eq!(*q.get().await.unwrap(), "a");
    assert_eq!(*q.get().await.unwrap(), "b");
    assert!(q.get().await.is_none());
    assert!(q.get().await.is_none(), "stays shut down");
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let q = Queue::<&str>::new();
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await.map(|i| i.into_inner()) }
    });
    tokio::task::yield_now().await;
    assert!(!getter.is_finished());
    q.add("a");
    assert_eq!(getter.await.unwrap(), Some("a"));
}

#[tokio::test]
async fn shutdown_wakes_every_waiting_getter() {
    let q = Queue::<u32>::new();
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await.is_none() })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shut_down();
    for g in getters {
        assert!(
            tokio::time::timeout(Duration::from_secs(5), g)
                .await
                .expect("getter woke")
                .unwrap()
        );
    }
}

#[tokio::test]
async fn one_add_wakes_one_getter_and_each_item_goes_to_one_worker() {
    let q = Queue::<u32>::new();
    let got = Arc::new(AtomicUsize::new(0));
    let getters: Vec<_> = (0..3)
        .map(|_| {
            let (q, got) = (q.clone(), got.clone());
            tokio::spawn(async move {
                while let Some(item) = q.get().await {
                    got.fetch_add(1, Ordering::SeqCst);
                    item.done();
                }
            })
        })
        .collect();
    for i in 0..100 {
        q.add(i);
        tokio::task::yield_now().await;
    }
    q.shut_down_with_drain().await;
    for g in getters {
        g.await.unwrap();
    }
    assert_eq!(got.load(Ordering::SeqCst), 100);
}

#[tokio::test]
async fn cancelled_get_loses_nothing() {
    let q = Queue::<&str>::new();
    // A get that is abandoned before any item arrives...
    let abandoned = tokio::time::timeout(Duration::from_millis(10), q.get()).await;
    assert!(abandoned.is_err());
    // ...does not swallow the next add's wake-up.
    let getter = tokio::spawn({
        let q = q.clone();
        async move { q.get().await.map(|i| i.into_inner()) }
    });
    tokio::task::yield_now().await;
    q.add("a");
    let got = tokio::time::timeout(Duration::from_secs(5), getter).await;
    assert_eq!(got.unwrap().unwrap(), Some("a"));
}

#[tokio::test]
async fn shut_down_with_drain_waits_for_in_flight_items() {
    let q = Queue::new();
    q.add("a");
    q.add("b");
    let a = q.get().await.unwrap();
    let drained = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    tokio::task::yield_now().await;
    assert!(q.shutting_down());
    assert!(
        !drained.is_finished(),
        "drain waits while 'a' is processing"
    );

    // Queued items are still handed out during drain, and waited for too.
    let b = q.get().await.unwrap();
    a.done();
    tokio::task::yield_now().await;
    assert!(!drained.is_finished(), "'b' is still processing");
    b.done();
    tokio::time::timeout(Duration::from_secs(5), drained)
        .await
        .expect("drain returns once nothing is processing")
        .unwrap();
    assert!(q.get().await.is_none());
}

#[tokio::test]
async fn shut_down_with_drain_returns_at_once_when_idle() {
    let q = Queue::<u8>::new();
    tokio::time::timeout(Duration::from_secs(5), q.shut_down_with_drain())
        .await
        .expect("nothing to drain");
}

#[tokio::test]
async fn shut_down_cancels_a_pending_drain() {
    let q = Queue::new();
    q.add("a");
    let held = q.get().await.unwrap();
    let drained = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    tokio::task::yield_now().await;
    assert!(!drained.is_finished());
    q.shut_down();
    tokio::time::timeout(Duration::from_secs(5), drained)
        .await
        .expect("shut_down ends the drain wait")
        .unwrap();
    drop(held);
}

#[test]
fn len_counts_waiting_items_only() {
    let q = Queue::new();
    q.add(1);
    q.add(2);
    let one = q.try_get().unwrap();
    assert_eq!(q.len(), 1);
    drop(one);
    assert_eq!(q.len(), 1);
}

#[tokio::test]
async fn owned_work_item_moves_into_a_spawned_task() {
    let q = Queue::new();
    q.add("a".to_string());
    let item = q.get_owned().await.unwrap();
    let task = tokio::spawn(async move {
        assert_eq!(*item, "a");
        item.done();
    });
    task.await.unwrap();
    assert_eq!(q.state_of(&"a".to_string()), None, "done in the task");

    q.add("b".to_string());
    let borrowed = q.try_get().unwrap();
    q.add("b".to_string()); // dirty while held
    let owned = borrowed.into_owned();
    assert_eq!(
        q.state_of(&"b".to_string()),
        Some(ItemState::ProcessingDirty)
    );
    drop(owned);
    assert_eq!(q.len(), 1, "the owned guard's drop did the done");
}

#[test]
fn add_by_reference_clones_only_when_storing() {
    let q: Queue<Arc<str>> = Queue::new();
    let key: Arc<str> = Arc::from("ns/a");
    q.add(&key);
    assert_eq!(Arc::strong_count(&key), 2, "stored: one clone");
    for _ in 0..10 {
        q.add(&key);
    }
    assert_eq!(Arc::strong_count(&key), 2, "already queued: no clone");
    let item = q.try_get().unwrap();
    assert_eq!(
        Arc::strong_count(&key),
        2,
        "the guard lends the stored item"
    );
    q.add(&key);
    assert_eq!(Arc::strong_count(&key), 2, "dirty while held: no clone");
    item.done();
    assert_eq!(
        Arc::strong_count(&key),
        2,
        "back in line, still stored once"
    );
    q.try_get().unwrap().done();
    assert_eq!(Arc::strong_count(&key), 1, "done: the queue let go of it");

    // By value: moved in when stored, dropped when the item is already known.
    q.add(Arc::clone(&key));
    assert_eq!(
        Arc::strong_count(&key),
        2,
        "stored: the caller's copy moved in"
    );
    q.add(Arc::clone(&key));
    assert_eq!(
        Arc::strong_count(&key),
        2,
        "already queued: the copy dropped"
    );
    // A worker's guard, by reference: no clone, the item is stored already.
    let item = q.try_get().unwrap();
    q.add(&item);
    assert_eq!(Arc::strong_count(&key), 2, "dirty while held: no clone");
    let owned = item.into_owned();
    q.add(&owned);
    assert_eq!(Arc::strong_count(&key), 2, "an owned guard lends it too");
    drop(owned);
    assert_eq!(q.len(), 1, "added while held: back in line once");
}

#[test]
fn a_guard_finishes_only_its_own_handout() {
    let q = Queue::new();
    q.add("a");
    let first = q.try_get().unwrap();
    q.add("a"); // dirty while held
    // The worker ends the processing by hand, the guard lives on.
    q.done(&"a");
    assert_eq!(q.state_of(&"a"), Some(ItemState::Queued));
    let second = q.try_get().unwrap();
    assert_eq!(q.state_of(&"a"), Some(ItemState::Processing));
    drop(first);
    assert_eq!(
        q.state_of(&"a"),
        Some(ItemState::Processing),
        "the first guard's processing was already done: dropping it leaves the second alone"
    );
    assert_eq!(*second.item(), "a");
    drop(second);
    assert_eq!(q.state_of(&"a"), None);
}

#[test]
fn stored_items_are_dropped_with_the_queue() {
    let key: Arc<str> = Arc::from("ns/a");
    let other: Arc<str> = Arc::from("ns/b");
    {
        let q: Queue<Arc<str>> = Queue::new();
        q.add(key.clone());
        q.add(other.clone());
        let held = q.try_get().unwrap().into_inner();
        assert_eq!(
            Arc::strong_count(&key),
            3,
            "stored + into_inner's clone + ours"
        );
        drop(held);
    }
    assert_eq!(
        Arc::strong_count(&key),
        1,
        "processing item freed with the queue"
    );
    assert_eq!(
        Arc::strong_count(&other),
        1,
        "queued item freed with the queue"
    );
}
