//! The Go tests of `HasSynced` and of closing.

use std::time::Duration;

use super::{mk, plain_fifo, pop_initial};

/// TestRealFIFO_HasSyncedCorrectOnDeletion: the initial list's tombstones count, and
/// `has_synced` turns true only after the last initial entry was popped.
#[tokio::test]
async fn has_synced_correct_on_deletion() {
    let f = plain_fifo(vec![mk("foo", 5), mk("bar", 6), mk("baz", 7)]);
    f.replace_at(vec![mk("foo", 5)], Some("0")).unwrap();
    for expected in ["Tombstone bar 6", "Tombstone baz 7", "Replaced foo 5"] {
        assert!(!f.has_synced(), "expected HasSynced to be false");
        let (popped, initial) = pop_initial(&f).await;
        assert_eq!(popped, expected);
        assert!(initial, "expected initial list item");
    }
    assert!(f.has_synced(), "expected HasSynced to be true");
}

/// TestRealFIFO_HasSynced, every case.
#[tokio::test]
async fn has_synced() {
    // (replace with these names, pops, expected synced); `None`: no replace.
    let cases: [(Option<&[&str]>, bool, usize, bool); 7] = [
        (None, false, 0, false),
        (None, true, 0, true), // an Add first
        (Some(&[]), false, 0, true),
        (Some(&["a", "b"]), false, 0, false),
        (Some(&["a", "b"]), false, 1, false),
        (Some(&["a", "b"]), false, 2, true),
        // A duplicate key (a broken server): every event is delivered, so "a" is
        // listed twice and must be popped twice.
        (Some(&["a", "a"]), false, 2, true),
    ];
    for (i, (replace, add, pops, expected)) in cases.into_iter().enumerate() {
        let f = plain_fifo(vec![]);
        if add {
            f.add(mk("a", 1)).unwrap();
        }
        if let Some(names) = replace {
            let list = names.iter().zip(1..).map(|(n, v)| mk(n, v)).collect();
            f.replace_at(list, Some("0")).unwrap();
        }
        for _ in 0..pops {
            pop_initial(&f).await;
        }
        assert_eq!(f.has_synced(), expected, "test case {i}");
    }
}

/// TestRealFIFO_PopShouldUnblockWhenClosed: every pop blocked on an empty queue returns
/// once it is closed.
#[tokio::test]
async fn pop_should_unblock_when_closed() {
    let f = std::sync::Arc::new(plain_fifo(vec![mk("foo", 5)]));
    let jobs: Vec<_> = (0..10)
        .map(|_| {
            let f = f.clone();
            tokio::spawn(async move { f.pop(|_, _| ()).await })
        })
        .collect();
    tokio::task::yield_now().await;
    f.close();
    for job in jobs {
        let popped = tokio::time::timeout(Duration::from_millis(500), job)
            .await
            .expect("timed out waiting for Pop to return after Close")
            .unwrap();
        assert!(popped.is_none());
    }
}
