//! DeltaFIFO rules (client-go delta_fifo_test.go territory).

use std::sync::Arc;

use cache::testing::config_map as cm;
use cache::{Delta, DeltaFifo, DeltaType, Indexer, KeyListerGetter};
use k8s_openapi::api::core::v1::ConfigMap;

fn fifo_with(known: &Indexer<ConfigMap>) -> DeltaFifo<ConfigMap> {
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(known.clone());
    DeltaFifo::new(Some(known), None)
}

/// Pops one key; returns its delta types and whether it was in the initial list.
async fn pop(fifo: &DeltaFifo<ConfigMap>) -> (Vec<DeltaType>, Vec<Delta<ConfigMap>>, bool) {
    fifo.pop(|_key, deltas, initial| {
        (
            deltas.iter().map(|d| d.delta_type()).collect(),
            deltas,
            initial,
        )
    })
    .await
    .expect("an item")
}

#[tokio::test]
async fn deltas_accumulate_per_key_in_order_and_keys_stay_fifo() {
    let known = Indexer::new();
    let fifo = fifo_with(&known);
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "2")).unwrap();
    fifo.update(cm("a", "3")).unwrap();
    fifo.delete(cm("a", "4")).unwrap();
    assert_eq!(fifo.list_keys(), ["default/a", "default/b"]);

    let (types, deltas, _) = pop(&fifo).await;
    assert_eq!(
        types,
        [DeltaType::Added, DeltaType::Updated, DeltaType::Deleted]
    );
    assert_eq!(
        deltas[1]
            .object()
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("3")
    );
    let (types, _, _) = pop(&fifo).await;
    assert_eq!(types, [DeltaType::Added]);
    assert!(fifo.is_empty());
}

#[tokio::test]
async fn consecutive_deletes_collapse_keeping_the_real_final_state() {
    let known = Indexer::new();
    known.add("default/a", Arc::new(cm("a", "1")));
    let fifo = fifo_with(&known);
    fifo.delete(cm("a", "2")).unwrap();
    // A relist without "a" would add a tombstone: collapsed into the real delete.
    fifo.replace(vec![]).unwrap();
    let (types, deltas, _) = pop(&fifo).await;
    assert_eq!(types, [DeltaType::Deleted]);
    match &deltas[0] {
        Delta::Deleted(d) => assert!(!d.is_tombstone(), "the real deletion is kept"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn delete_of_an_unknown_object_is_ignored() {
    let known = Indexer::new();
    let fifo = fifo_with(&known);
    fifo.delete(cm("ghost", "1")).unwrap();
    assert!(fifo.is_empty());
}

#[tokio::test]
async fn replace_emits_tombstones_for_known_keys_missing_from_the_list() {
    let known = Indexer::new();
    known.add("default/kept", Arc::new(cm("kept", "1")));
    known.add("default/gone", Arc::new(cm("gone", "1")));
    let fifo = fifo_with(&known);
    fifo.replace(vec![cm("kept", "2"), cm("new", "3")]).unwrap();

    let mut seen = Vec::new();
    while !fifo.is_empty() {
        let (_, deltas, _) = pop(&fifo).await;
        seen.extend(deltas);
    }
    let tombstones: Vec<_> = seen
        .iter()
        .filter_map(|d| match d {
            Delta::Deleted(cache::DeletedObject::Tombstone(t)) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(tombstones.len(), 1);
    assert_eq!(tombstones[0].key, "default/gone");
    assert_eq!(
        tombstones[0]
            .obj
            .as_ref()
            .unwrap()
            .metadata
            .resource_version
            .as_deref(),
        Some("1"),
        "the tombstone carries the last known state"
    );
    let replaced = seen
        .iter()
        .filter(|d| d.delta_type() == DeltaType::Replaced)
        .count();
    assert_eq!(replaced, 2);
}

#[tokio::test]
async fn replace_also_tombstones_keys_that_are_only_queued() {
    let known = Indexer::new();
    let fifo = fifo_with(&known);
    fifo.add(cm("queued", "1")).unwrap();
    fifo.replace(vec![]).unwrap();
    let (types, deltas, _) = pop(&fifo).await;
    assert_eq!(types, [DeltaType::Added, DeltaType::Deleted]);
    assert!(matches!(&deltas[1], Delta::Deleted(d) if d.is_tombstone()));
}

#[tokio::test]
async fn has_synced_after_the_initial_list_is_popped() {
    let known = Indexer::new();
    let fifo = fifo_with(&known);
    assert!(!fifo.has_synced(), "nothing listed yet");
    fifo.replace(vec![cm("a", "1"), cm("b", "1")]).unwrap();
    assert!(!fifo.has_synced());
    let (_, _, initial) = pop(&fifo).await;
    assert!(initial);
    assert!(!fifo.has_synced());
    fifo.add(cm("c", "2")).unwrap();
    let (_, _, initial) = pop(&fifo).await;
    assert!(initial, "b is still part of the initial list");
    assert!(fifo.has_synced());
    let (_, _, initial) = pop(&fifo).await;
    assert!(!initial, "c came from a watch");
}

#[tokio::test]
async fn empty_initial_list_is_synced_at_once() {
    let fifo = fifo_with(&Indexer::new());
    fifo.replace(vec![]).unwrap();
    assert!(fifo.has_synced());
}

#[tokio::test]
async fn resync_queues_sync_for_known_objects_without_queued_deltas() {
    let known = Indexer::new();
    known.add("default/idle", Arc::new(cm("idle", "1")));
    known.add("default/busy", Arc::new(cm("busy", "1")));
    let fifo = fifo_with(&known);
    fifo.update(cm("busy", "2")).unwrap();
    fifo.resync();
    let (types, _, _) = pop(&fifo).await;
    assert_eq!(
        types,
        [DeltaType::Updated],
        "busy: no stale Sync after the update"
    );
    let (types, deltas, _) = pop(&fifo).await;
    assert_eq!(types, [DeltaType::Sync]);
    assert_eq!(
        deltas[0].object().unwrap().metadata.name.as_deref(),
        Some("idle")
    );
    assert!(fifo.is_empty());
}

#[tokio::test]
async fn transform_is_applied_before_queueing() {
    let known = Indexer::new();
    let known_dyn: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(known.clone());
    let fifo = DeltaFifo::new(
        Some(known_dyn),
        Some(Arc::new(|mut cm: ConfigMap| {
            cm.data = None;
            cm.metadata.managed_fields = None;
            cm
        })),
    );
    let mut big = cm("a", "1");
    big.data = Some([("k".to_string(), "v".repeat(1000))].into());
    fifo.add(big).unwrap();
    let (_, deltas, _) = pop(&fifo).await;
    assert!(deltas[0].object().unwrap().data.is_none());
}

#[tokio::test]
async fn nameless_objects_are_an_error_not_a_panic() {
    let fifo = fifo_with(&Indexer::new());
    let mut nameless = cm("x", "1");
    nameless.metadata.name = None;
    assert!(fifo.add(nameless.clone()).is_err());
    assert!(fifo.replace(vec![nameless, cm("ok", "1")]).is_err());
    assert_eq!(
        fifo.list_keys(),
        ["default/ok"],
        "the rest of the list still applies"
    );
}

#[tokio::test]
async fn close_ends_pop_after_the_queue_drains() {
    let fifo = fifo_with(&Indexer::new());
    fifo.add(cm("a", "1")).unwrap();
    fifo.close();
    assert!(fifo.pop(|_, _, _| ()).await.is_some());
    assert!(fifo.pop(|_, _, _| ()).await.is_none());
}

#[tokio::test]
async fn paged_replace_transforms_once_and_queues_each_page_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = Arc::new(AtomicUsize::new(0));
    let known_indexer = Indexer::<ConfigMap>::new();
    known_indexer.add("default/gone", Arc::new(cm("gone", "1")));
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(known_indexer.clone());
    let fifo = DeltaFifo::new(
        Some(known),
        Some(Arc::new({
            let calls = calls.clone();
            move |cm: ConfigMap| {
                calls.fetch_add(1, Ordering::SeqCst);
                cm
            }
        })),
    );
    // What the reflector does: one replace, fed a page at a time.
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "1"), cm("b", "1")]);
    // The first page is poppable before the list is complete...
    assert_eq!(fifo.list_keys(), ["default/a", "default/b"]);
    let (types, _, initial) = pop(&fifo).await;
    assert_eq!((types, initial), (vec![DeltaType::Replaced], true));
    // ...but no tombstone yet (the missing key may be on a later page).
    fifo.replace_page(&mut replacement, vec![cm("c", "1")]);
    assert_eq!(fifo.list_keys(), ["default/b", "default/c"]);
    assert_eq!(replacement.len(), 3);
    fifo.finish_replace(replacement).unwrap();
    assert_eq!(fifo.list_keys(), ["default/b", "default/c", "default/gone"]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "each object transformed once"
    );
    // The plain replace transforms by itself.
    fifo.replace(vec![cm("d", "1")]).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn paged_initial_replace_is_synced_only_after_finish() {
    let fifo = fifo_with(&Indexer::new());
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "1"), cm("b", "1")]);
    // Everything listed so far is popped, yet the list is not finished.
    assert!(pop(&fifo).await.2, "in the initial list");
    assert!(pop(&fifo).await.2, "in the initial list");
    assert!(!fifo.has_synced(), "synced before the last page");
    fifo.replace_page(&mut replacement, vec![cm("c", "1")]);
    fifo.finish_replace(replacement).unwrap();
    assert!(!fifo.has_synced(), "the last page is still queued");
    assert!(pop(&fifo).await.2, "in the initial list");
    assert!(fifo.has_synced());
    // Later events are not part of the initial list.
    fifo.add(cm("d", "2")).unwrap();
    assert!(!pop(&fifo).await.2);
}

#[tokio::test]
async fn abandoned_paged_replace_emits_no_tombstone() {
    let known = Indexer::new();
    known.add("default/x", Arc::new(cm("x", "1")));
    let fifo = fifo_with(&known);
    // A list that fails after its first page: the page stays, nothing is deleted.
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "2")]);
    drop(replacement);
    assert_eq!(fifo.list_keys(), ["default/a"]);
    assert!(!fifo.has_synced());
    // The retry completes; now the missing key gets its tombstone, after "a".
    let mut replacement = fifo.begin_replace();
    fifo.replace_page(&mut replacement, vec![cm("a", "3")]);
    fifo.finish_replace(replacement).unwrap();
    assert_eq!(fifo.list_keys(), ["default/a", "default/x"]);
    let (types, _, _) = pop(&fifo).await;
    assert_eq!(types, [DeltaType::Replaced, DeltaType::Replaced]);
    let (types, deltas, _) = pop(&fifo).await;
    assert_eq!(types, [DeltaType::Deleted]);
    assert!(matches!(&deltas[0], Delta::Deleted(d) if d.is_tombstone()));
    assert!(fifo.has_synced());
}
