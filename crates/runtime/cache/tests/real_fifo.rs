//! RealFIFO rules (client-go the_real_fifo_test.go territory): every event in arrival
//! order, tombstones on replace, resync, batches, and the initial-list boundary.

use std::sync::Arc;

use cache::testing::config_map as cm;
use cache::{Delta, DeltaType, Indexer, KeyListerGetter, RealFifo};
use k8s_openapi::api::core::v1::ConfigMap;

fn fifo_with(known: &Indexer<ConfigMap>) -> RealFifo<ConfigMap> {
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(known.clone());
    RealFifo::new(known, None)
}

/// One popped event: key, type, resourceVersion (if it carries an object), initial.
type Event = (String, DeltaType, Option<String>, bool);

fn describe(key: &str, delta: &Delta<ConfigMap>, initial: bool) -> Event {
    (
        key.to_string(),
        delta.delta_type(),
        match delta {
            Delta::Bookmark(rv) => Some(rv.to_string()),
            _ => delta
                .object()
                .and_then(|o| o.metadata.resource_version.clone()),
        },
        initial,
    )
}

async fn pop(fifo: &RealFifo<ConfigMap>) -> Event {
    fifo.pop(|key, deltas, initial| {
        assert_eq!(deltas.len(), 1, "one event per pop");
        describe(key, &deltas[0], initial)
    })
    .await
    .expect("an event")
}

async fn pop_batch(fifo: &RealFifo<ConfigMap>, max: usize) -> Vec<Event> {
    fifo.pop_batch(max, |batch, initial| {
        batch
            .iter()
            .map(|(key, delta)| describe(key, delta, initial))
            .collect()
    })
    .await
    .expect("a batch")
}

fn ev(key: &str, t: DeltaType, rv: Option<&str>, initial: bool) -> Event {
    (format!("default/{key}"), t, rv.map(str::to_string), initial)
}

#[tokio::test]
async fn events_come_out_in_arrival_order_across_keys() {
    let fifo = fifo_with(&Indexer::new());
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "2")).unwrap();
    fifo.update(cm("a", "3")).unwrap();
    fifo.delete(cm("a", "4")).unwrap();
    assert_eq!(fifo.len(), 4, "one entry per event, not per key");
    assert_eq!(
        fifo.list_keys(),
        ["default/a", "default/b", "default/a", "default/a"]
    );
    // A DeltaFIFO would hand out all of a's deltas before b's add.
    assert_eq!(
        pop(&fifo).await,
        ev("a", DeltaType::Added, Some("1"), false)
    );
    assert_eq!(
        pop(&fifo).await,
        ev("b", DeltaType::Added, Some("2"), false)
    );
    assert_eq!(
        pop(&fifo).await,
        ev("a", DeltaType::Updated, Some("3"), false)
    );
    assert_eq!(
        pop(&fifo).await,
        ev("a", DeltaType::Deleted, Some("4"), false)
    );
    assert!(fifo.is_empty());
}

#[tokio::test]
async fn a_delete_of_an_unseen_object_is_still_delivered() {
    let fifo = fifo_with(&Indexer::new());
    fifo.delete(cm("ghost", "9")).unwrap();
    assert_eq!(
        pop(&fifo).await,
        ev("ghost", DeltaType::Deleted, Some("9"), false)
    );
}

#[tokio::test]
async fn replace_emits_the_deletions_it_implies_once() {
    let known = Indexer::new();
    known.add("default/x", Arc::new(cm("x", "1")));
    known.add("default/y", Arc::new(cm("y", "1")));
    let fifo = fifo_with(&known);
    fifo.add(cm("z", "2")).unwrap(); // queued, not yet in the indexer
    fifo.add(cm("gone", "3")).unwrap();
    fifo.delete(cm("gone", "4")).unwrap(); // already deleted: no second deletion
    while !fifo.is_empty() && fifo.list_keys()[0] != "default/z" {
        pop(&fifo).await;
    }

    fifo.replace(vec![cm("y", "5")]).unwrap();

    let mut events = Vec::new();
    while !fifo.is_empty() {
        events.push(pop(&fifo).await);
    }
    let (z, x): (Vec<_>, Vec<_>) = events
        .iter()
        .filter(|e| e.1 == DeltaType::Deleted)
        .partition(|e| e.0 == "default/z");
    assert_eq!(
        z.len(),
        1,
        "the queued-only key gets a tombstone: {events:?}"
    );
    assert_eq!(
        z[0].2.as_deref(),
        Some("2"),
        "carrying its last queued state"
    );
    assert_eq!(
        x.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["default/gone", "default/x"],
        "the known key gets one; the already-deleted one only its real deletion"
    );
    assert!(events.contains(&ev("y", DeltaType::Replaced, Some("5"), false)));
    assert!(
        !events
            .iter()
            .any(|e| e.0 == "default/y" && e.1 == DeltaType::Deleted)
    );
}

#[tokio::test]
async fn resync_skips_keys_with_queued_events() {
    let known = Indexer::new();
    known.add("default/a", Arc::new(cm("a", "1")));
    known.add("default/b", Arc::new(cm("b", "1")));
    let fifo = fifo_with(&known);
    fifo.update(cm("a", "2")).unwrap();
    fifo.resync();
    assert_eq!(
        pop(&fifo).await,
        ev("a", DeltaType::Updated, Some("2"), false)
    );
    assert_eq!(pop(&fifo).await, ev("b", DeltaType::Sync, Some("1"), false));
    assert!(fifo.is_empty());
}

#[tokio::test]
async fn batches_hold_distinct_keys_and_stop_at_a_repeat() {
    let fifo = fifo_with(&Indexer::new());
    for (name, rv) in [("a", "1"), ("b", "2"), ("a", "3"), ("c", "4")] {
        fifo.update(cm(name, rv)).unwrap();
    }
    let first = pop_batch(&fifo, 10).await;
    assert_eq!(
        first.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["default/a", "default/b"]
    );
    let second = pop_batch(&fifo, 10).await;
    assert_eq!(
        second.iter().map(|e| e.0.as_str()).collect::<Vec<_>>(),
        ["default/a", "default/c"]
    );

    for name in ["d", "e", "f"] {
        fifo.add(cm(name, "5")).unwrap();
    }
    assert_eq!(pop_batch(&fifo, 2).await.len(), 2, "at most max");
    assert_eq!(pop_batch(&fifo, 0).await.len(), 1, "0 is taken as 1");
}

#[tokio::test]
async fn the_initial_list_is_its_own_batch_and_sync_follows_it() {
    let fifo = fifo_with(&Indexer::new());
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "1"), cm("b", "1")]);
    assert_eq!(fifo.len(), 2, "a page is queued as it arrives");
    fifo.replace_page(&mut replacement, vec![cm("c", "1")]);
    // Popping the pages so far does not make the informer synced: the list goes on.
    let early = pop_batch(&fifo, 10).await;
    assert!(early.iter().all(|e| e.3), "in the initial list");
    assert!(!fifo.has_synced());
    fifo.finish_replace(replacement).unwrap();
    assert!(fifo.has_synced(), "every initial event was popped");
    fifo.add(cm("late", "2")).unwrap(); // the watch, after the list
    let late = pop_batch(&fifo, 10).await;
    assert_eq!(late, [ev("late", DeltaType::Added, Some("2"), false)]);
}

#[tokio::test]
async fn a_batch_never_crosses_the_end_of_the_initial_list() {
    let fifo = fifo_with(&Indexer::new());
    fifo.replace(vec![cm("a", "1"), cm("b", "1")]).unwrap();
    fifo.add(cm("c", "2")).unwrap();
    let initial = pop_batch(&fifo, 10).await;
    assert_eq!(initial.len(), 2);
    assert!(initial.iter().all(|e| e.3));
    assert!(fifo.has_synced());
    assert_eq!(
        pop_batch(&fifo, 10).await,
        [ev("c", DeltaType::Added, Some("2"), false)]
    );
}

#[tokio::test]
async fn close_ends_pop_once_drained() {
    let fifo = fifo_with(&Indexer::new());
    fifo.add(cm("a", "1")).unwrap();
    fifo.close();
    assert!(fifo.pop(|_, _, _| ()).await.is_some());
    assert!(fifo.pop(|_, _, _| ()).await.is_none());
}

#[tokio::test]
async fn bookmarks_travel_in_order_and_are_never_mistaken_for_objects() {
    let known = Indexer::new();
    known.add("default/old", Arc::new(cm("old", "1")));
    let fifo = fifo_with(&known);
    fifo.replace(vec![cm("a", "2")]).unwrap();
    fifo.bookmark("10"); // the reflector queues the list's version behind it
    fifo.add(cm("b", "11")).unwrap();
    fifo.bookmark("12");
    fifo.bookmark(""); // no version: nothing to say
    assert_eq!(
        fifo.list_keys(),
        ["default/a", "default/old", "default/b"],
        "bookmarks are not keyed events"
    );
    // A relist while bookmarks are queued: no tombstone for the bookmarks' empty key.
    fifo.replace(vec![cm("a", "2"), cm("b", "11")]).unwrap();
    let mut popped = Vec::new();
    while !fifo.is_empty() {
        popped.extend(pop_batch(&fifo, 100).await);
    }
    let types: Vec<_> = popped
        .iter()
        .map(|e| (e.0.as_str(), e.1, e.2.as_deref()))
        .collect();
    assert_eq!(
        types,
        [
            ("default/a", DeltaType::Replaced, Some("2")),
            ("default/old", DeltaType::Deleted, Some("1")),
            ("", DeltaType::Bookmark, Some("10")),
            ("default/b", DeltaType::Added, Some("11")),
            ("", DeltaType::Bookmark, Some("12")),
            ("default/a", DeltaType::Replaced, Some("2")),
            ("default/b", DeltaType::Replaced, Some("11")),
        ]
    );
}
