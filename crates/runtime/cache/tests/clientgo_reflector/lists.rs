//! Paged lists and the resourceVersion of every list and relist.
//!
//! client-go lists at `"0"` first, then at the last synced version, and at `""` only
//! after an "Expired" or "too large resource version" answer; its relists at a
//! version are unpaged, to be served from the watch cache. Ours always lists at `""`
//! in pages (on purpose: the file header and `reflector.rs` say why), so these tests
//! assert the same stores from a different series of requests.

use std::sync::{Arc, Weak};
use std::time::Duration;

use cache::testing::gone;

use crate::harness::{Call, Harness, Recorded, is_watch, numbered, page};

fn paged() -> impl FnOnce(
    cache::Reflector<k8s_openapi::api::core::v1::ConfigMap>,
) -> cache::Reflector<k8s_openapi::api::core::v1::ConfigMap> {
    |r| r.with_watch_list(false)
}

/// Scripts `numbered(10)` in pages of four: `C1`, `C2`, then the last page.
fn script_ten_in_pages(lw: &Recorded) {
    let pods = numbered(10);
    lw.script
        .push_list(Ok(page(pods[0..4].to_vec(), "10", Some("C1"))));
    lw.script
        .push_list(Ok(page(pods[4..8].to_vec(), "10", Some("C2"))));
    lw.script
        .push_list(Ok(page(pods[8..10].to_vec(), "10", None)));
}

// client-go: TestReflectorWatchListPageSize (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn watch_list_page_size() {
    let lw = Recorded::new();
    script_ten_in_pages(&lw);
    let h = Harness::new(lw, |r| r.with_watch_list(false).with_page_size(4));
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 10);
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=4"#,
            r#"list rv="" limit=4 continue=C1"#,
            r#"list rv="" limit=4 continue=C2"#,
            r#"watch rv="10""#
        ]
    );
}

// client-go: TestReflectorNotPaginatingNotConsistentReads (reflector_test.go)
//
// client-go relists at the last synced version ("10") without a limit, to be served
// from the watch cache. Ours relists consistently (`""`), in pages of 500.
#[tokio::test(start_paused = true)]
async fn not_paginating_not_consistent_reads() {
    let lw = Recorded::new();
    lw.script.push_list_items(numbered(10), "10");
    lw.script.push_list_items(numbered(10), "10");
    let h = Harness::new(lw, paged());
    h.run_until_watch().await;
    assert_eq!(h.reflector.last_sync_resource_version(), "10");
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 10);
    let calls = h.lw.summaries();
    assert_eq!(calls[2], r#"list rv="" limit=500"#, "{calls:?}");
}

// client-go: TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled (reflector_test.go)
#[tokio::test(start_paused = true)]
async fn paginating_non_consistent_reads_if_watch_cache_disabled() {
    let lw = Recorded::new();
    let pods = numbered(10);
    for _ in 0..2 {
        lw.script
            .push_list(Ok(page(pods[0..4].to_vec(), "10", Some("C1"))));
        lw.script
            .push_list(Ok(page(pods[4..8].to_vec(), "10", Some("C2"))));
        lw.script
            .push_list(Ok(page(pods[8..10].to_vec(), "10", None)));
    }
    let h = Harness::new(lw, paged());
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 10);
    // The relist is paged too, with the default page size.
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 10);
    let lists: Vec<Call> =
        h.lw.calls()
            .into_iter()
            .filter(|c| matches!(c, Call::List(_)))
            .collect();
    assert_eq!(lists.len(), 6);
    for call in lists {
        let Call::List(options) = call else {
            unreachable!()
        };
        assert_eq!(options.limit, 500);
    }
}

// client-go: TestReflectorResyncWithResourceVersion (reflector_test.go)
//
// client-go relists at the last synced version so as not to travel back in time
// (list RVs "0", "10"); ours lists consistently (`""`, `""`), which cannot either.
#[tokio::test(start_paused = true)]
async fn resync_with_resource_version() {
    let lw = Recorded::new();
    lw.script.push_list_items(numbered(4), "10");
    lw.script.push_list_items(numbered(8), "11");
    let h = Harness::new(lw, paged());
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 4);
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 8);
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="10""#,
            r#"list rv="" limit=500"#,
            r#"watch rv="11""#
        ]
    );
}

// client-go: TestReflectorExpiredExactResourceVersion (reflector_test.go)
//
// client-go: the relist at "10" is Expired, so it lists again at "" at once (RVs "0",
// "10", ""). Ours never lists at a version; a list answered 410 is likewise listed
// again at once, without a backoff.
#[tokio::test(start_paused = true)]
async fn expired_exact_resource_version() {
    let lw = Recorded::new();
    lw.script.push_list_items(numbered(4), "10");
    lw.script.push_list(Err(gone()));
    lw.script.push_list_items(numbered(8), "11");
    let h = Harness::new(lw, paged());
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 4);
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 8);
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="10""#,
            r#"list rv="" limit=500"#,
            r#"list rv="" limit=500"#,
            r#"watch rv="11""#
        ]
    );
    let times = h.lw.times();
    assert_eq!(times[3], times[2], "listed again without a backoff");
}

// client-go: TestReflectorFullListIfExpired (reflector_test.go)
//
// client-go: the second page of the relist is Expired, and its pager falls back to
// one unpaged list at the same version (RVs "0", "10", "", "10"). Ours starts the
// paged list over, at once: an unpaged list is what paging avoids (peak memory).
#[tokio::test(start_paused = true)]
async fn full_list_if_expired() {
    let lw = Recorded::new();
    let pods = numbered(8);
    lw.script
        .push_list(Ok(page(pods[0..4].to_vec(), "10", None)));
    lw.script
        .push_list(Ok(page(pods[0..4].to_vec(), "11", Some("C1"))));
    lw.script.push_list(Err(gone()));
    lw.script
        .push_list(Ok(page(pods[0..4].to_vec(), "11", Some("C2"))));
    lw.script
        .push_list(Ok(page(pods[4..8].to_vec(), "11", None)));
    let h = Harness::new(lw, |r| r.with_watch_list(false).with_page_size(4));
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 4);
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), 8);
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=4"#,
            r#"watch rv="10""#,
            r#"list rv="" limit=4"#,
            r#"list rv="" limit=4 continue=C1"#,
            r#"list rv="" limit=4"#,
            r#"list rv="" limit=4 continue=C2"#,
            r#"watch rv="11""#
        ]
    );
    let times = h.lw.times();
    assert_eq!(times[4], times[3], "listed again without a backoff");
}

// client-go: TestReflectorFullListIfTooLarge (reflector_test.go)
//
// client-go: relists at "20", "30", "40" are answered "too large resource version"
// (three formats of it) and listed again at "". Ours lists at "" every time, so the
// answer cannot arise for a list. A *watch* can get it (its version is ahead of the
// API server's watch cache): it is retried after a backoff from the same version, as
// any watch that could not be started (on purpose, see the file header).
#[tokio::test(start_paused = true)]
async fn full_list_if_too_large() {
    let lw = Recorded::new();
    for rv in ["20", "30", "40", "50"] {
        lw.script.push_list_items(vec![], rv);
    }
    let h = Harness::new(lw, paged());
    for rv in ["20", "30", "40", "50"] {
        h.run_until_watch().await;
        assert_eq!(h.reflector.last_sync_resource_version(), rv);
    }
    let lists: Vec<String> =
        h.lw.summaries()
            .into_iter()
            .filter(|c| c.starts_with("list"))
            .collect();
    assert_eq!(lists, [r#"list rv="" limit=500"#; 4]);

    // A watch ahead of the server's cache.
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "20");
    lw.script.push_watch_error(cache::testing::api_error(
        504,
        "Timeout",
        "Too large resource version",
    ));
    let h = Harness::new(lw, paged());
    h.run_until_nth(2, is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [
            r#"list rv="" limit=500"#,
            r#"watch rv="20""#,
            r#"watch rv="20""#
        ]
    );
    let times = h.lw.times();
    assert!(
        times[2] - times[1] >= Duration::from_millis(800),
        "backed off"
    );
}

// client-go: TestReflectorListExtract (reflector_test.go)
//
// client-go checks with finalizers that the garbage collector frees a listed pod once
// it leaves the store, even while another pod of its page stays (the list's backing
// array must not be kept). Ours: once deleted from the store, nothing keeps a listed
// object alive, whatever else of its page is still stored.
#[tokio::test(start_paused = true)]
async fn list_extract() {
    const PER_PAGE: usize = 100;
    const PAGES: usize = 5;
    const EXEMPT: usize = PER_PAGE / 4;
    let lw = Recorded::new();
    let pods = numbered(PER_PAGE * PAGES);
    for p in 0..PAGES {
        let items = pods[p * PER_PAGE..(p + 1) * PER_PAGE].to_vec();
        let token = (p + 1 < PAGES).then_some("true");
        lw.script.push_list(Ok(page(items, "1", token)));
    }
    let h = Harness::new(lw, |r| {
        r.with_watch_list(false).with_page_size(PER_PAGE as u32)
    });
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.indexer.len(), PER_PAGE * PAGES);

    let key = |i: usize| format!("default/pod-{i}");
    let first_of_pages: Vec<Weak<_>> = (0..PAGES)
        .map(|p| Arc::downgrade(&h.indexer.get_by_key(&key(p * PER_PAGE)).unwrap()))
        .collect();
    let exempt: Vec<String> = (0..PAGES).map(|p| key(p * PER_PAGE + EXEMPT)).collect();
    for k in h.indexer.list_keys() {
        if !exempt.contains(&k) {
            h.indexer.delete(&k);
        }
    }
    for k in &exempt {
        assert!(h.indexer.contains_key(k), "{k} should stay stored");
    }
    for (p, weak) in first_of_pages.iter().enumerate() {
        assert!(
            weak.upgrade().is_none(),
            "the first object of page {p} is still alive"
        );
    }
}
