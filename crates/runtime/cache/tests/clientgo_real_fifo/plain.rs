//! The Go tests of the plain RealFIFO's queueing: events, replaces and resyncs.

use std::sync::Arc;

use cache::TransformFunc;

use super::{mk, nothing_more, plain_fifo, plain_fifo_with, pop_all, pop1};

/// TestRealFIFO_basic: two producers at once; each one's events come out in its order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn basic() {
    let f = Arc::new(plain_fifo(vec![]));
    const AMOUNT: u64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let f = f.clone();
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    f.add(mk(&format!("{prefix}{i}"), i + 1)).unwrap();
                }
            })
        })
        .collect();
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..AMOUNT * 2 {
        let popped = pop1(&f).await;
        let mut words = popped.split(' ').skip(1);
        let name = words.next().unwrap();
        let val: u64 = words.next().unwrap().parse().unwrap();
        let last = if name.starts_with('a') {
            &mut last_a
        } else {
            &mut last_b
        };
        assert!(
            val > *last,
            "got {val} ({name}) out of order, last was {last}"
        );
        *last = val;
    }
    for p in producers {
        p.join().unwrap();
    }
}

/// TestRealFIFO_replaceWithDeleteDeltaIn: a listed object whose last queued event is a
/// deletion still gets its `Replaced` (kubernetes#83810: else its add is missed).
#[tokio::test]
async fn replace_with_delete_delta_in() {
    let f = plain_fifo(vec![mk("foo", 1)]);
    f.delete(mk("foo", 1)).unwrap();
    f.replace(vec![mk("foo", 2)]).unwrap();
    assert_eq!(pop_all(&f).await, ["Deleted foo 1", "Replaced foo 2"]);
}

/// TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue, every subcase.
#[tokio::test]
async fn replace_makes_deletions_for_objects_only_in_queue() {
    type Ops = fn(&cache::RealFifo<k8s_openapi::api::core::v1::ConfigMap>);
    let cases: [(&str, Ops, &[&str]); 6] = [
        (
            "Added object should be deleted on Replace",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.replace_at(vec![], Some("0")).unwrap();
            },
            &["Added foo 2", "Tombstone foo 2"],
        ),
        (
            "Deleted object should have only a single Delete",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.delete(mk("foo", 2)).unwrap();
                f.replace_at(vec![], Some("0")).unwrap();
            },
            &["Added foo 2", "Deleted foo 2"],
        ),
        (
            "Synced objects should have a single delete",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.replace_at(vec![mk("foo", 2)], Some("0")).unwrap();
                f.replace_at(vec![mk("foo", 2)], Some("0")).unwrap();
                f.replace_at(vec![], Some("0")).unwrap();
            },
            &[
                "Added foo 2",
                "Replaced foo 2",
                "Replaced foo 2",
                "Tombstone foo 2",
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.replace_at(vec![], Some("0")).unwrap();
                f.replace_at(vec![], Some("1")).unwrap();
            },
            &["Added foo 2", "Tombstone foo 2"],
        ),
        (
            "Added and deleted and added object should be deleted",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.delete(mk("foo", 2)).unwrap();
                f.add(mk("foo", 3)).unwrap();
                f.replace_at(vec![], Some("0")).unwrap();
            },
            &[
                "Added foo 2",
                "Deleted foo 2",
                "Added foo 3",
                "Tombstone foo 3",
            ],
        ),
        (
            "Bookmark object should not be added without atomic",
            |f| {
                f.bookmark("123");
                f.replace_at(vec![], Some("0")).unwrap();
                f.replace_at(vec![], Some("1")).unwrap();
            },
            &[],
        ),
    ];
    for (name, ops, expected) in cases {
        let f = plain_fifo(vec![]);
        ops(&f);
        assert_eq!(pop_all(&f).await, expected, "{name}");
    }
}

/// TestRealFIFO_addUpdate: every event is kept and popped, in order.
#[tokio::test]
async fn add_update() {
    let f = plain_fifo(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    assert_eq!(
        f.list_keys(),
        ["foo", "foo", "foo"],
        "all items on the list"
    );
    assert_eq!(pop1(&f).await, "Added foo 10");
    assert_eq!(pop1(&f).await, "Updated foo 12");
    assert_eq!(pop1(&f).await, "Deleted foo 15");
    nothing_more(&f).await;
    assert!(f.is_empty());
    f.close();
    assert!(f.pop(|_, _| ()).await.is_none());
}

/// TestRealFIFO_transformer: every object is transformed once on its way in, and a
/// tombstone carries the transformed object without transforming it again.
#[tokio::test]
async fn transformer() {
    let xfrm: TransformFunc<_> = Arc::new(|mut o: k8s_openapi::api::core::v1::ConfigMap| {
        let n = o.metadata.generation.unwrap_or(0);
        o.metadata.generation = Some(n + 1);
        o
    });
    let f = plain_fifo_with(vec![], xfrm);
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 11)).unwrap();
    f.update(mk("foo", 12)).unwrap();
    f.delete(mk("foo", 15)).unwrap();
    f.replace(vec![]).unwrap();
    f.add(mk("bar", 16)).unwrap();
    f.replace(vec![]).unwrap();
    let mut popped = Vec::new();
    let mut transforms = Vec::new();
    while !f.is_empty() {
        f.pop(|p, _| {
            if let cache::Popped::Events(batch) = &p {
                for (_, d) in batch {
                    transforms.push(d.object().and_then(|o| o.metadata.generation));
                }
            }
            popped.extend(super::lines(p));
        })
        .await;
    }
    assert_eq!(
        popped,
        [
            "Added foo 10",
            "Added bar 11",
            "Updated foo 12",
            "Deleted foo 15",
            "Tombstone bar 11",
            "Added bar 16",
            "Tombstone bar 16",
        ]
    );
    assert!(
        transforms.iter().all(|t| *t == Some(1)),
        "each transformed once: {transforms:?}"
    );
}

/// TestRealFIFO_enqueueingNoLister: without compression every event is queued, a
/// deletion of a never-seen object too.
#[tokio::test]
async fn enqueueing_no_lister() {
    let f = plain_fifo(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    f.add(mk("qux", 17)).unwrap();
    f.delete(mk("qux", 18)).unwrap();
    f.delete(mk("baz", 20)).unwrap();
    let vals: Vec<_> = pop_all(&f)
        .await
        .iter()
        .map(|l| l.rsplit(' ').next().unwrap().to_string())
        .collect();
    assert_eq!(vals, ["10", "15", "17", "18", "20"]);
}

/// TestRealFIFO_enqueueingWithLister.
#[tokio::test]
async fn enqueueing_with_lister() {
    let f = plain_fifo(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.add(mk("foo", 10)).unwrap();
    f.update(mk("bar", 15)).unwrap();
    f.delete(mk("baz", 20)).unwrap();
    assert_eq!(
        pop_all(&f).await,
        ["Added foo 10", "Updated bar 15", "Deleted baz 20"]
    );
}

/// TestRealFIFO_addReplace: the add and the replace's event both come out.
#[tokio::test]
async fn add_replace() {
    let f = plain_fifo(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.replace_at(vec![mk("foo", 15)], Some("0")).unwrap();
    assert_eq!(pop1(&f).await, "Added foo 10");
    assert_eq!(pop1(&f).await, "Replaced foo 15");
    nothing_more(&f).await;
    assert!(f.is_empty(), "item did not get removed");
}

/// TestRealFIFO_ResyncNonExisting: a key with a queued event gets no sync.
#[tokio::test]
async fn resync_non_existing() {
    let f = plain_fifo(vec![mk("foo", 5)]);
    f.delete(mk("foo", 10)).unwrap();
    f.resync();
    assert_eq!(pop_all(&f).await, ["Deleted foo 10"]);
}

/// TestRealFIFO_Resync.
#[tokio::test]
async fn resync() {
    let f = plain_fifo(vec![mk("foo", 5)]);
    f.resync();
    assert_eq!(pop_all(&f).await, ["Sync foo 5"]);
}

/// TestRealFIFO_DeleteExistingNonPropagated.
#[tokio::test]
async fn delete_existing_non_propagated() {
    let f = plain_fifo(vec![]);
    f.add(mk("foo", 5)).unwrap();
    f.delete(mk("foo", 6)).unwrap();
    assert_eq!(pop_all(&f).await, ["Added foo 5", "Deleted foo 6"]);
}

/// TestRealFIFO_ReplaceMakesDeletions, all five parts: the deletions of known items
/// come BEFORE the listed objects.
#[tokio::test]
async fn replace_makes_deletions() {
    let known = || vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)];

    // With a pre-existing Delete.
    let f = plain_fifo(known());
    f.delete(mk("baz", 10)).unwrap();
    f.replace_at(vec![mk("foo", 5)], Some("0")).unwrap();
    assert_eq!(
        pop_all(&f).await,
        ["Deleted baz 10", "Tombstone bar 6", "Replaced foo 5"]
    );

    // Starting with an Add instead.
    let f = plain_fifo(known());
    f.add(mk("baz", 10)).unwrap();
    f.replace_at(vec![mk("foo", 5)], Some("0")).unwrap();
    assert_eq!(
        pop_all(&f).await,
        [
            "Added baz 10",
            "Tombstone baz 10",
            "Tombstone bar 6",
            "Replaced foo 5"
        ]
    );

    // Deleting and recreating the object in the queue, then deleting it by a Replace.
    let f = plain_fifo(known());
    f.delete(mk("bar", 6)).unwrap();
    f.add(mk("bar", 100)).unwrap();
    f.replace_at(vec![mk("foo", 5)], Some("0")).unwrap();
    assert_eq!(
        pop_all(&f).await,
        [
            "Deleted bar 6",
            "Added bar 100",
            "Tombstone bar 100",
            "Tombstone baz 7",
            "Replaced foo 5"
        ]
    );

    // Syncing it first, so the delete uses the latest version.
    let f = plain_fifo(known());
    f.replace_at(vec![mk("bar", 100), mk("foo", 5)], Some("0"))
        .unwrap();
    f.replace_at(vec![mk("foo", 5)], Some("0")).unwrap();
    assert_eq!(
        pop_all(&f).await,
        [
            "Tombstone baz 7",
            "Replaced bar 100",
            "Replaced foo 5",
            "Tombstone bar 100",
            "Replaced foo 5"
        ]
    );

    // Without an explicit KeyListerGetter (an empty one).
    let f = plain_fifo(vec![]);
    f.add(mk("baz", 10)).unwrap();
    f.replace_at(vec![mk("foo", 5)], Some("0")).unwrap();
    assert_eq!(
        pop_all(&f).await,
        ["Added baz 10", "Tombstone baz 10", "Replaced foo 5"]
    );
}

/// TestRealFIFO_ReplaceMakesDeletionsReplaced: the listed object comes as `Replaced`.
#[tokio::test]
async fn replace_makes_deletions_replaced() {
    let f = plain_fifo(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.delete(mk("baz", 10)).unwrap();
    f.replace_at(vec![mk("foo", 6)], Some("0")).unwrap();
    assert_eq!(
        pop_all(&f).await,
        ["Deleted baz 10", "Tombstone bar 6", "Replaced foo 6"]
    );
}

/// TestRealFIFO_UpdateResyncRace: the resync skips the key with a queued update.
#[tokio::test]
async fn update_resync_race() {
    let f = plain_fifo(vec![mk("foo", 5)]);
    f.update(mk("foo", 6)).unwrap();
    f.resync();
    assert_eq!(pop_all(&f).await, ["Updated foo 6"]);
}

/// TestRealFIFO_detectLineJumpers: a key queued again does not jump the line.
#[tokio::test]
async fn detect_line_jumpers() {
    let f = plain_fifo(vec![]);
    f.add(mk("foo", 10)).unwrap();
    f.add(mk("bar", 1)).unwrap();
    f.add(mk("foo", 11)).unwrap();
    f.add(mk("foo", 13)).unwrap();
    f.add(mk("zab", 30)).unwrap();
    assert_eq!(pop1(&f).await, "Added foo 10");
    f.add(mk("foo", 14)).unwrap(); // ensure foo doesn't jump back in line
    for expected in [
        "Added bar 1",
        "Added foo 11",
        "Added foo 13",
        "Added zab 30",
        "Added foo 14",
    ] {
        assert_eq!(pop1(&f).await, expected);
    }
}

/// TestRealFIFO_KeyOf (see the header): the key of a plain object is its key function's,
/// the key of a `DeletedFinalStateUnknown` its `Key`, with or without an object.
#[tokio::test]
async fn key_of() {
    // "B" is known to the indexer by key only: its tombstone has no object.
    struct KeysOnly;
    impl cache::KeyListerGetter<k8s_openapi::api::core::v1::ConfigMap> for KeysOnly {
        fn list_keys(&self) -> Vec<String> {
            vec!["B".into()]
        }
        fn get_by_key(&self, _: &str) -> Option<Arc<k8s_openapi::api::core::v1::ConfigMap>> {
            None
        }
    }
    let f = cache::RealFifo::new(Arc::new(KeysOnly), None);
    f.add(mk("A", 1)).unwrap();
    f.replace(vec![mk("A", 1)]).unwrap();
    assert_eq!(f.list_keys(), ["A", "B", "A"]);
    assert_eq!(
        pop_all(&f).await,
        ["Added A 1", "Tombstone B -", "Replaced A 1"]
    );
    // And a tombstone with an object: "D" was queued.
    let f = super::plain_fifo(vec![]);
    f.add(mk("D", 1)).unwrap();
    f.replace(vec![]).unwrap();
    assert_eq!(f.list_keys(), ["D", "D"]);
}
