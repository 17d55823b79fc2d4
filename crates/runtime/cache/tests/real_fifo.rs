//! RealFIFO rules (client-go the_real_fifo_test.go territory): every event in arrival
//! order, tombstones on replace, resync, batches, and the initial-list boundary.

use std::sync::Arc;

use cache::testing::config_map as cm;
use cache::{Delta, DeltaType, Indexer, KeyListerGetter, Popped, RealFifo};
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
    fifo.pop(|popped, initial| {
        let Popped::Events(batch) = popped else {
            panic!("a plain FIFO only queues events");
        };
        assert_eq!(batch.len(), 1, "one event per pop");
        describe(&batch[0].0, &batch[0].1, initial)
    })
    .await
    .expect("an event")
}

async fn pop_batch(fifo: &RealFifo<ConfigMap>, max: usize) -> Vec<Event> {
    fifo.pop_batch(max, |popped, initial| match popped {
        Popped::Events(batch) => batch
            .iter()
            .map(|(key, delta)| describe(key, delta, initial))
            .collect(),
        Popped::ReplacedAll(all) => vec![(
            format!("ReplacedAll {}", all.objects.len()),
            DeltaType::Replaced,
            all.resource_version.as_deref().map(str::to_string),
            initial,
        )],
        Popped::SyncAll => vec![("SyncAll".into(), DeltaType::Sync, None, initial)],
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
async fn a_paged_list_waits_for_its_last_page_then_is_its_own_batch() {
    let fifo = fifo_with(&Indexer::new());
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "1"), cm("b", "1")]);
    fifo.replace_page(&mut replacement, vec![cm("c", "1")]);
    // client-go's order puts the tombstones (known only at the end) before the listed
    // objects, so the pages wait in the FIFO.
    assert!(fifo.is_empty(), "nothing is queued before the last page");
    fifo.finish_replace(replacement).unwrap();
    assert_eq!(fifo.len(), 3);
    assert!(!fifo.has_synced());
    fifo.add(cm("late", "2")).unwrap(); // the watch, after the list
    let initial = pop_batch(&fifo, 10).await;
    assert_eq!(
        initial.len(),
        3,
        "the whole list, not the watch event behind it"
    );
    assert!(initial.iter().all(|e| e.3), "in the initial list");
    assert!(fifo.has_synced(), "every initial event was popped");
    let late = pop_batch(&fifo, 10).await;
    assert_eq!(late, [ev("late", DeltaType::Added, Some("2"), false)]);
}

#[tokio::test]
async fn an_abandoned_paged_list_is_dropped_by_the_next_one() {
    let known = Indexer::new();
    known.add("default/kept", Arc::new(cm("kept", "1")));
    let fifo = fifo_with(&known);
    let mut failed = fifo.begin_replace();
    fifo.replace_page(&mut failed, vec![cm("half", "1")]);
    drop(failed); // the list failed half-way: no tombstone, nothing delivered
    let mut retry = fifo.begin_replace();
    fifo.replace_page(&mut retry, vec![cm("kept", "2")]);
    fifo.finish_replace(retry).unwrap();
    assert_eq!(fifo.list_keys(), ["default/kept"]);
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
    assert!(fifo.pop(|_, _| ()).await.is_some());
    assert!(fifo.pop(|_, _| ()).await.is_none());
}

#[tokio::test]
async fn a_plain_fifo_drops_bookmarks() {
    let fifo = fifo_with(&Indexer::new());
    fifo.bookmark("10");
    assert!(
        fifo.is_empty(),
        "client-go queues bookmarks only with atomic events"
    );
}

#[tokio::test]
async fn an_atomic_fifo_queues_a_relist_and_a_resync_as_one_entry_each() {
    let fifo: RealFifo<ConfigMap> = RealFifo::new_atomic(None);
    fifo.add(cm("a", "1")).unwrap();
    fifo.replace_at(vec![cm("a", "2"), cm("b", "2")], Some("10"))
        .unwrap();
    fifo.resync();
    assert_eq!(fifo.len(), 3);
    assert_eq!(
        fifo.list_keys(),
        ["default/a"],
        "whole-queue entries have no key"
    );
    assert_eq!(
        pop_batch(&fifo, 10).await,
        [ev("a", DeltaType::Added, Some("1"), false)],
        "a batch stops before a whole-queue entry"
    );
    let replaced = fifo
        .pop(|popped, _| match popped {
            Popped::ReplacedAll(all) => all,
            other => panic!("expected the relist, got {other:?}"),
        })
        .await
        .unwrap();
    assert_eq!(replaced.resource_version.as_deref(), Some("10"));
    let keys: Vec<_> = replaced.objects.iter().map(|(k, _)| &**k).collect();
    assert_eq!(
        keys,
        ["default/a", "default/b"],
        "in list order, keyed once"
    );
    assert_eq!(pop_batch(&fifo, 10).await[0].0, "SyncAll");
}

#[tokio::test]
async fn bookmarks_travel_in_order_and_are_never_batched() {
    let fifo: RealFifo<ConfigMap> = RealFifo::new_atomic(None);
    fifo.replace_at(vec![cm("a", "2")], Some("10")).unwrap();
    fifo.add(cm("b", "11")).unwrap();
    fifo.bookmark("12");
    fifo.bookmark(""); // no version: nothing to say
    fifo.add(cm("c", "13")).unwrap();
    assert_eq!(
        fifo.list_keys(),
        ["default/b", "default/c"],
        "bookmarks are not keyed events"
    );
    let mut popped = Vec::new();
    while !fifo.is_empty() {
        popped.push(pop_batch(&fifo, 100).await);
    }
    let shape: Vec<Vec<_>> = popped
        .iter()
        .map(|b| {
            b.iter()
                .map(|e| (e.0.as_str(), e.1, e.2.as_deref()))
                .collect()
        })
        .collect();
    assert_eq!(
        shape,
        [
            vec![("ReplacedAll 1", DeltaType::Replaced, Some("10"))],
            vec![("default/b", DeltaType::Added, Some("11"))],
            vec![("", DeltaType::Bookmark, Some("12"))],
            vec![("default/c", DeltaType::Added, Some("13"))],
        ]
    );
}

#[tokio::test]
async fn an_atomic_initial_list_is_one_entry_and_synced_only_once_applied() {
    let fifo = Arc::new(RealFifo::<ConfigMap>::new_atomic(None).with_unlock_while_processing(true));
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "1")]);
    fifo.replace_page(&mut replacement, vec![cm("b", "1")]);
    assert!(fifo.is_empty(), "pages wait for the end of the list");
    fifo.finish_replace(replacement).unwrap();
    assert_eq!(fifo.len(), 1, "the whole list is one entry");
    assert!(!fifo.has_synced());
    let during = fifo
        .pop({
            let fifo = fifo.clone();
            move |popped, initial| {
                assert!(matches!(popped, Popped::ReplacedAll(ref all) if all.objects.len() == 2));
                assert!(initial);
                // Unlocked while processing: the producer can queue (a locked FIFO
                // would deadlock here), and the list is not yet counted as applied.
                fifo.add(cm("c", "2")).unwrap();
                fifo.has_synced()
            }
        })
        .await
        .unwrap();
    assert!(
        !during,
        "not synced while the initial list is being applied"
    );
    assert!(fifo.has_synced(), "synced once it was applied");
    assert_eq!(fifo.list_keys(), ["default/c"]);
}
