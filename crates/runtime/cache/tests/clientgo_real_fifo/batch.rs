//! The Go tests of `PopBatch`.

use super::{Literal, lines, mk};
use cache::RealFifo;
use k8s_openapi::api::core::v1::ConfigMap;

/// One case of TestRealFIFO_PopMultipleDeltaInBatch: the initial list (also the known
/// objects), the events after it, the batch size, the batches expected.
struct Case {
    name: &'static str,
    initial: Vec<ConfigMap>,
    updates: Vec<ConfigMap>,
    batch_size: usize,
    expected: &'static [&'static [&'static str]],
}

/// TestRealFIFO_PopMultipleDeltaInBatch, every subcase: a batch holds distinct keys,
/// at most the batch size, and never crosses the end of the initial list.
#[tokio::test]
async fn pop_multiple_delta_in_batch() {
    const UNLIMITED: usize = 999_999;
    let (o1, o2, o3, o4) = (mk("foo1", 5), mk("foo2", 5), mk("foo3", 5), mk("foo4", 5));
    let cases = [
        Case {
            name: "non-split: pop unique items should work",
            initial: vec![o1.clone(), o2.clone(), o3.clone()],
            updates: vec![],
            batch_size: UNLIMITED,
            expected: &[&["Replaced foo1 5", "Replaced foo2 5", "Replaced foo3 5"]],
        },
        Case {
            name: "split due to initial list: initial 2 items with 2 updates should have 2 batches",
            initial: vec![o1.clone(), o2.clone()],
            updates: vec![o3.clone(), o4.clone()],
            batch_size: 2,
            expected: &[
                &["Replaced foo1 5", "Replaced foo2 5"],
                &["Updated foo3 5", "Updated foo4 5"],
            ],
        },
        Case {
            name: "split due to non-unique#1: update single item for multiple items should have separate batch",
            initial: vec![o1.clone()],
            updates: vec![o1.clone(), o1.clone()],
            batch_size: UNLIMITED,
            expected: &[
                &["Replaced foo1 5"],
                &["Updated foo1 5"],
                &["Updated foo1 5"],
            ],
        },
        Case {
            name: "split due to non-unique#2: update 3 item for with non-unique item at the end should have separate batch",
            initial: vec![o1.clone(), o2.clone()],
            updates: vec![o2.clone(), o3.clone()],
            batch_size: UNLIMITED,
            expected: &[
                &["Replaced foo1 5", "Replaced foo2 5"],
                &["Updated foo2 5", "Updated foo3 5"],
            ],
        },
        Case {
            name: "split due to non-unique#3: update 3 item for with non-unique item in the mid should have separate batch",
            initial: vec![o1.clone(), o2.clone(), o3.clone()],
            updates: vec![o2.clone()],
            batch_size: UNLIMITED,
            expected: &[
                &["Replaced foo1 5", "Replaced foo2 5", "Replaced foo3 5"],
                &["Updated foo2 5"],
            ],
        },
        Case {
            name: "split due to batch size#1: batching initial list should work",
            initial: vec![o1.clone(), o2.clone(), o3.clone()],
            updates: vec![],
            batch_size: 2,
            expected: &[
                &["Replaced foo1 5", "Replaced foo2 5"],
                &["Replaced foo3 5"],
            ],
        },
        Case {
            name: "split due to batch size#2: batching incoming non-initial deltas should work",
            initial: vec![],
            updates: vec![o1.clone(), o2.clone(), o3.clone()],
            batch_size: 2,
            expected: &[&["Updated foo1 5", "Updated foo2 5"], &["Updated foo3 5"]],
        },
        Case {
            name: "split due to batch size#3: pop 4 mixed initial & non-initial items with 2 batch size should have 3 batch",
            initial: vec![o1.clone(), o2.clone(), o3.clone()],
            updates: vec![o4.clone()],
            batch_size: 2,
            expected: &[
                &["Replaced foo1 5", "Replaced foo2 5"],
                &["Replaced foo3 5"],
                &["Updated foo4 5"],
            ],
        },
    ];
    for case in cases {
        let f = RealFifo::new(std::sync::Arc::new(Literal(case.initial.clone())), None);
        f.replace_at(case.initial.clone(), Some("123")).unwrap();
        for u in case.updates {
            f.update(u).unwrap();
        }
        let mut batches = Vec::new();
        let mut initial_items = Vec::new();
        while !f.is_empty() {
            let (batch, initial) = f
                .pop_batch(case.batch_size, |p, i| (lines(p), i))
                .await
                .unwrap();
            if initial {
                initial_items.extend(batch.iter().cloned());
            }
            batches.push(batch);
        }
        assert_eq!(batches, case.expected, "{}", case.name);
        let listed: Vec<String> = case
            .initial
            .iter()
            .map(|o| format!("Replaced {}", super::obj(o)))
            .collect();
        assert_eq!(initial_items, listed, "{}: the initial items", case.name);
    }
}

/// TestRealFIFO_PopBrokenItemsInBatch (see the header): an object that cannot be keyed
/// is refused when queued, so batches only ever hold keyable events.
#[tokio::test]
async fn pop_broken_items_in_batch() {
    let f = RealFifo::new(std::sync::Arc::new(Literal(vec![])), None);
    let broken = ConfigMap::default(); // no name: no key
    f.add(mk("foo1", 5)).unwrap();
    assert!(f.add(broken.clone()).is_err(), "a broken item is refused");
    f.add(mk("foo2", 5)).unwrap();
    assert!(f.add(broken).is_err());
    let batch = f.pop_batch(999_999, |p, _| lines(p)).await.unwrap();
    assert_eq!(batch, ["Added foo1 5", "Added foo2 5"]);
    assert!(f.is_empty());
}
