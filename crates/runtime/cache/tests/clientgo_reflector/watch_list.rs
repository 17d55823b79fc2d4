//! reflector_watchlist_test.go: streaming lists (`sendInitialEvents`, KEP-3157).
//!
//! client-go's `WatchListClient` gate is ours `with_watch_list` (on by default); its
//! `IsWatchListSemanticsUnSupported` client is ours a server answering `422`.

use std::collections::BTreeMap;
use std::time::Duration;

use cache::testing::{api_error, gone, initial_events_end};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::WatchEvent;
use kube::core::TypeMeta;
use kube::core::watch::{Bookmark, BookmarkMeta};

use crate::common::eventually;
use crate::harness::{Harness, Recorded, cm, is_watch, plain_error, too_many_requests};

const WATCH_LIST: &str = r#"watchlist rv="""#;
const LIST: &str = r#"list rv="" limit=500"#;

/// The end bookmark with `k8s.io/initial-events-end` set to `value`.
fn end_bookmark(rv: &str, value: &str) -> WatchEvent<ConfigMap> {
    WatchEvent::Bookmark(Bookmark {
        types: TypeMeta::default(),
        metadata: BookmarkMeta {
            resource_version: rv.to_string(),
            annotations: BTreeMap::from([(
                cache::reflector::INITIAL_EVENTS_END.to_string(),
                value.to_string(),
            )]),
        },
    })
}

/// One item of a scripted watch.
type Event = Result<WatchEvent<ConfigMap>, kube::Error>;

fn added(name: &str, rv: &str) -> Event {
    Ok(WatchEvent::Added(cm(name, rv)))
}

/// Runs `h` until `done`, then stops it and applies the queue to the store.
async fn run_until_state(h: &Harness, what: &str, mut done: impl FnMut(&Harness) -> bool) {
    let running = h.spawn();
    eventually(what, || done(h)).await;
    running.stop().await;
    h.drain().await;
}

/// Runs `h` for a while (client-go cancels after its scripted events), then stops it
/// and applies the queue to the store.
async fn run_for_a_while(h: &Harness) {
    let running = h.spawn();
    tokio::time::sleep(Duration::from_millis(100)).await;
    running.stop().await;
    h.drain().await;
}

// client-go: TestNewReflectorWithDisablementWatchList (reflector_watchlist_test.go)
#[tokio::test(start_paused = true)]
async fn new_reflector_with_disablement_watch_list() {
    // "gate off, client supports WatchList": paged lists.
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "1");
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    h.run_until_watch().await;
    assert_eq!(h.lw.summaries()[0], LIST);

    // "gate on, client supports WatchList" and "gate on, the client does not say":
    // a streaming list.
    let lw = Recorded::new();
    lw.script
        .push_watch_list(vec![Ok(initial_events_end("1"))], false);
    let h = Harness::new(lw, |r| r.with_watch_list(true));
    h.run_until(|_| true).await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST]);
    let h = Harness::new(Recorded::new(), |r| r);
    h.run_until(|_| true).await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST], "on by default");

    // "gate on, client doesn't support WatchList": client-go never tries; ours learns
    // it from the first answer (422) and never tries again, not even on a relist.
    let lw = Recorded::new();
    lw.script.push_list_items(vec![], "1");
    lw.script.push_watch_error(gone());
    lw.script.push_list_items(vec![], "2");
    let h = Harness::new(lw, |r| r);
    h.run_until_nth(2, is_watch).await;
    assert_eq!(
        h.lw.summaries(),
        [WATCH_LIST, LIST, r#"watch rv="1""#, LIST, r#"watch rv="2""#]
    );
}

// client-go: TestWatchListResourceVersion (reflector_watchlist_test.go)
#[tokio::test(start_paused = true)]
async fn watch_list_resource_version() {
    let cases: [(&str, Vec<Event>, &str); 3] = [
        ("empty resource version", vec![], ""),
        (
            "empty resource version without bookmark event",
            vec![added("p1", "1")],
            "",
        ),
        (
            "non empty resource version with bookmark event and initial events annotation",
            vec![added("p1", "1"), Ok(initial_events_end("2"))],
            "2",
        ),
    ];
    for (name, events, rv) in cases {
        let lw = Recorded::new();
        lw.script.push_watch_list(events, false);
        let h = Harness::new(lw, |r| r);
        run_for_a_while(&h).await;
        assert_eq!(h.reflector.last_sync_resource_version(), rv, "{name}");
    }
}

// client-go: TestWatchList (reflector_watchlist_test.go)
#[tokio::test(start_paused = true)]
async fn watch_list() {
    // "the reflector won't be synced if the bookmark event hasn't been received"
    let lw = Recorded::new();
    lw.script.push_watch_list(vec![added("p1", "1")], false);
    let h = Harness::new(lw, |r| r);
    run_for_a_while(&h).await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST]);
    assert!(h.store().is_empty());
    assert!(!h.queue.has_synced());

    // "the reflector uses the old LIST/WATCH semantics if the UseWatchList is turned
    // off" (client-go lists at "0"; ours at "")
    let lw = Recorded::new();
    lw.script.push_list_items(vec![cm("p1", "1")], "1");
    let h = Harness::new(lw, |r| r.with_watch_list(false));
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.lw.summaries(), [LIST, r#"watch rv="1""#]);
    assert_eq!(h.store(), ["p1 1"]);

    // "returning any other error than apierrors.NewInvalid forces fallback", and "the
    // reflector can fall back to old LIST/WATCH semantics when a server doesn't
    // support streaming" (422 Invalid)
    for refusal in [
        plain_error("dummy error"),
        api_error(422, "Invalid", "streaming is not allowed"),
    ] {
        let lw = Recorded::new();
        lw.script.push_watch_list_error(refusal);
        lw.script.push_list_items(vec![cm("p1", "1")], "1");
        lw.script.push_watch(vec![added("p2", "2")], false);
        let h = Harness::new(lw, |r| r);
        run_until_state(&h, "p2", |h| {
            h.reflector.last_sync_resource_version() == "2"
        })
        .await;
        assert_eq!(h.lw.summaries(), [WATCH_LIST, LIST, r#"watch rv="1""#]);
        assert_eq!(h.store(), ["p1 1", "p2 2"]);
    }

    // "prove that the reflector is synced after receiving a bookmark event"
    let lw = Recorded::new();
    lw.script.push_watch_list(
        vec![
            added("p1", "1"),
            added("p2", "2"),
            Ok(initial_events_end("2")),
        ],
        false,
    );
    let h = Harness::new(lw, |r| r);
    run_until_state(&h, "synced", |h| {
        h.reflector.last_sync_resource_version() == "2"
    })
    .await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST]);
    assert_eq!(h.store(), ["p1 1", "p2 2"]);
    assert_eq!(h.reflector.last_sync_resource_version(), "2");

    // "check if Updates and Deletes events are propagated during streaming (until the
    // bookmark is received)". client-go applies them to its temporary store; ours
    // takes changes before the end bookmark for a server that ignores
    // `sendInitialEvents` (on purpose: the file header) and lists in pages instead.
    // The store ends up the same.
    let lw = Recorded::new();
    let mut modified = cm("p1", "3");
    modified.data = Some([("activeDeadlineSeconds".into(), "12".into())].into());
    lw.script.push_watch_list(
        vec![
            added("p1", "1"),
            added("p2", "2"),
            Ok(WatchEvent::Modified(modified.clone())),
            added("p3", "4"),
            Ok(WatchEvent::Deleted(cm("p3", "5"))),
            Ok(initial_events_end("5")),
        ],
        false,
    );
    lw.script
        .push_list_items(vec![cm("p2", "2"), modified], "5");
    let h = Harness::new(lw, |r| r);
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST, LIST, r#"watch rv="5""#]);
    assert_eq!(h.store(), ["p1 3", "p2 2"]);
    let p1 = h.indexer.get_by_key("default/p1").unwrap();
    assert_eq!(
        p1.data
            .as_ref()
            .and_then(|d| d.get("activeDeadlineSeconds")),
        Some(&"12".to_string())
    );

    // "checks if the reflector retries 429": back off, stream again (fixed: it used
    // to fall back to a paged list)
    let lw = Recorded::new();
    lw.script.push_watch_list_error(too_many_requests());
    lw.script.push_watch_list_error(too_many_requests());
    lw.script
        .push_watch_list(vec![added("p1", "1"), Ok(initial_events_end("2"))], false);
    let h = Harness::new(lw, |r| r);
    run_until_state(&h, "synced", |h| {
        h.reflector.last_sync_resource_version() == "2"
    })
    .await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST; 3]);
    assert_eq!(h.store(), ["p1 1"]);
    let times = h.lw.times();
    assert!(
        times[1] - times[0] >= Duration::from_millis(800),
        "backed off"
    );

    // "check if stopping a watcher before sync results in creating a new watch-list
    // request". client-go streams again; ours lists in pages that time (on purpose:
    // the file header).
    let lw = Recorded::new();
    lw.script.push_watch_list(vec![added("p1", "1")], true);
    lw.script.push_list_items(vec![cm("p1", "1")], "1");
    let h = Harness::new(lw, |r| r);
    h.run_until_watch().await;
    h.drain().await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST, LIST, r#"watch rv="1""#]);
    assert_eq!(h.store(), ["p1 1"]);

    // "stopping a watcher after synchronization results in creating a new watch
    // request", from the version of the last event
    let lw = Recorded::new();
    lw.script.push_watch_list(
        vec![
            added("p1", "1"),
            added("p2", "2"),
            Ok(initial_events_end("2")),
            added("p3", "3"),
        ],
        true,
    );
    lw.script.push_watch(vec![added("p4", "4")], false);
    let h = Harness::new(lw, |r| r);
    run_until_state(&h, "p4", |h| {
        h.reflector.last_sync_resource_version() == "4"
    })
    .await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST, r#"watch rv="3""#]);
    assert_eq!(h.store(), ["p1 1", "p2 2", "p3 3", "p4 4"]);

    // "expiring an established watcher results in returning an error from the
    // reflector": client-go's `ListAndWatch` returns the 410, and its `Run` relists;
    // ours relists inside `run`, streaming again.
    let lw = Recorded::new();
    lw.script.push_watch_list(
        vec![
            added("p1", "1"),
            Ok(initial_events_end("2")),
            added("p3", "3"),
        ],
        true,
    );
    lw.script.push_watch_error(gone());
    lw.script.push_watch_list(
        vec![
            added("p1", "1"),
            added("p3", "3"),
            Ok(initial_events_end("4")),
        ],
        false,
    );
    let h = Harness::new(lw, |r| r);
    run_until_state(&h, "relisted", |h| {
        h.reflector.last_sync_resource_version() == "4"
    })
    .await;
    assert_eq!(
        h.lw.summaries(),
        [WATCH_LIST, r#"watch rv="3""#, WATCH_LIST]
    );
    assert_eq!(h.store(), ["p1 1", "p3 3"]);

    // "prove that the reflector is checking the value of the initialEventsEnd
    // annotation"
    let lw = Recorded::new();
    lw.script.push_watch_list(
        vec![
            added("p1", "1"),
            added("p2", "2"),
            Ok(end_bookmark("2", "false")),
        ],
        false,
    );
    let h = Harness::new(lw, |r| r);
    run_for_a_while(&h).await;
    assert_eq!(h.lw.summaries(), [WATCH_LIST]);
    assert!(h.store().is_empty());
    assert_eq!(h.reflector.last_sync_resource_version(), "");
}
