//! The Go tests of the RealFIFO with atomic events (`f.emitAtomicEvents = true`).

use super::{atomic_fifo, mk, nothing_more, pop_all, pop1};

/// TestRealFIFO_ReplaceAtomic, every subcase: a replace is one `ReplacedAll` with its
/// version, behind what was queued before it; a bookmark is its own entry.
#[tokio::test]
async fn replace_atomic() {
    type Ops = fn(&cache::RealFifo<k8s_openapi::api::core::v1::ConfigMap>);
    let cases: [(&str, Ops, &[&str]); 4] = [
        (
            "Base replace",
            |f| f.replace_at(vec![], Some("123")).unwrap(),
            &["ReplacedAll 123 []"],
        ),
        (
            "Added object exists in deltas on Atomic Replace",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.replace_at(vec![], Some("123")).unwrap();
            },
            &["Added foo 2", "ReplacedAll 123 []"],
        ),
        (
            "Multiple replaces run in order",
            |f| {
                f.add(mk("foo", 2)).unwrap();
                f.replace_at(vec![mk("foo", 2)], Some("10")).unwrap();
                f.replace_at(vec![mk("foo", 2)], Some("20")).unwrap();
                f.replace_at(vec![], Some("56")).unwrap();
            },
            &[
                "Added foo 2",
                "ReplacedAll 10 [foo 2]",
                "ReplacedAll 20 [foo 2]",
                "ReplacedAll 56 []",
            ],
        ),
        (
            "Bookmark object should not be included in Replace",
            |f| {
                f.bookmark("123");
                f.replace_at(vec![], Some("1234")).unwrap();
            },
            &["Bookmark 123", "ReplacedAll 1234 []"],
        ),
    ];
    for (name, ops, expected) in cases {
        let f = atomic_fifo();
        ops(&f);
        assert_eq!(pop_all(&f).await, expected, "{name}");
    }
}

/// TestRealFIFO_ReplaceAtomicPop: the add, then the whole list, then nothing.
#[tokio::test]
async fn replace_atomic_pop() {
    let f = atomic_fifo();
    f.add(mk("foo", 10)).unwrap();
    f.replace_at(vec![mk("foo", 15)], Some("20")).unwrap();
    assert_eq!(pop1(&f).await, "Added foo 10");
    assert_eq!(pop1(&f).await, "ReplacedAll 20 [foo 15]");
    nothing_more(&f).await;
    assert!(f.is_empty(), "item did not get removed");
}

/// TestRealFIFO_ResyncAtomic, both subcases: a resync is one `SyncAll`, appended in order.
#[tokio::test]
async fn resync_atomic() {
    let f = atomic_fifo();
    f.resync();
    assert_eq!(pop_all(&f).await, ["SyncAll"], "Base resync");

    let f = atomic_fifo();
    f.add(mk("foo", 2)).unwrap();
    f.resync();
    assert_eq!(
        pop_all(&f).await,
        ["Added foo 2", "SyncAll"],
        "Added object exists in deltas on Atomic Resync"
    );
}
