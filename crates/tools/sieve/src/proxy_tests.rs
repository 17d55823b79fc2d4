//! The recorder behind a real proxy, in front of a scripted fake API server: what the
//! controller (a client of the proxy) gets, what the server is asked, what is recorded.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use apiproxy::testing::{FakeApiServer, Pki, Reply, TestClient, next_data};
use bytes::Bytes;
use http::Method;

use super::*;
use crate::trace::{EventType, OwnerRef, WatchEvent, Write};

const DEPLOYMENT: &str = r#"{"kind":"Deployment","metadata":{"name":"web","namespace":"ns","resourceVersion":"12","finalizers":["f"],"ownerReferences":[{"kind":"Foo","name":"web","uid":"u1"}]}}"#;
const CONFLICT: &str = r#"{"kind":"Status","status":"Failure","reason":"Conflict","code":409,"details":{"name":"web","kind":"foos"}}"#;
const DELETED: &str =
    r#"{"kind":"Status","status":"Success","details":{"name":"old","kind":"deployments"}}"#;

/// A proxy with `recorder` in front of `server`, and a client of it.
async fn behind(pki: &Pki, server: &FakeApiServer, recorder: Recorder) -> (SieveProxy, TestClient) {
    let proxy = SieveProxy::start(pki.cert(), pki.key(), server.upstream(pki), recorder)
        .await
        .expect("the proxy");
    let client = TestClient::new(pki, proxy.addr());
    (proxy, client)
}

/// A proxy with `recorder` in front of a fake server that answers with `handler`.
async fn proxy_with(
    recorder: Recorder,
    handler: impl Fn(&apiproxy::testing::Seen) -> Reply + Send + Sync + 'static,
) -> (FakeApiServer, SieveProxy, TestClient) {
    let pki = Pki::new();
    let server = FakeApiServer::start(&pki, handler).await;
    let (proxy, client) = behind(&pki, &server, recorder).await;
    (server, proxy, client)
}

/// The writes of `proxy`'s trace, once there are `n` (a write is recorded once the
/// proxy's connection has let go of its answer, which may be just after the client
/// read it).
async fn writes(proxy: &SieveProxy, n: usize) -> Vec<Write> {
    for _ in 0..500 {
        let trace = proxy.interceptor().trace();
        let writes: Vec<Write> = trace.writes().map(|(_, w)| w.clone()).collect();
        if writes.len() >= n {
            return writes;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("fewer than {n} writes recorded within 5 s");
}

#[test]
fn accept_headers_lose_protobuf() {
    assert_eq!(
        json_only("application/vnd.kubernetes.protobuf, application/json"),
        "application/json"
    );
    assert_eq!(
        json_only("application/vnd.kubernetes.protobuf;stream=watch"),
        "application/json"
    );
    assert_eq!(
        json_only("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
        "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"
    );
}

#[tokio::test]
async fn the_controller_speaks_json_and_lists_in_pages() {
    let (server, _proxy, client) = proxy_with(Recorder::new(None), |_| {
        Reply::Json(
            200,
            r#"{"kind":"PodList","metadata":{"resourceVersion":"9"},"items":[]}"#.into(),
        )
    })
    .await;
    let protobuf = [(
        "accept",
        "application/vnd.kubernetes.protobuf, application/json",
    )];
    let response = client
        .send(Method::GET, "/api/v1/pods?limit=500", &protobuf, "")
        .await;
    assert_eq!(response.status(), 200);
    let streaming = "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let (status, body) = client.call(Method::GET, streaming, "").await;
    assert_eq!(status, 422);
    assert!(body.contains(r#""reason":"Invalid""#), "{body}");
    assert!(body.contains("sendInitialEvents is forbidden"), "{body}");
    // The list reached the server asking for JSON only; the stream never did.
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].headers["accept"], "application/json");
}

#[tokio::test]
async fn writes_are_recorded_with_key_status_version_and_owners() {
    let recorder = Recorder::new(None);
    recorder.push(Event::StepBegin {
        step: 1,
        op: "create".into(),
        name: "web".into(),
    });
    let (_server, proxy, client) = proxy_with(recorder, |seen| match seen.method {
        Method::POST => Reply::Json(201, DEPLOYMENT.into()),
        Method::PUT => Reply::Json(409, CONFLICT.into()),
        _ => Reply::Json(200, DELETED.into()),
    })
    .await;
    let calls = [
        (Method::POST, "/apis/apps/v1/namespaces/ns/deployments"),
        (
            Method::PUT,
            "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/web/status",
        ),
        (
            Method::DELETE,
            "/apis/apps/v1/namespaces/ns/deployments/old",
        ),
        // Leader election: not the workload's, neither recorded nor counted.
        (
            Method::PUT,
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/lock",
        ),
    ];
    for (method, path) in calls {
        client.call(method, path, "{}").await;
    }
    let recorded = writes(&proxy, 3).await;
    assert_eq!(
        recorded[0],
        Write {
            method: crate::trace::Method::Post,
            resource: "deployments".into(),
            key: "ns/web".into(),
            subresource: None,
            status: 201,
            resource_version: Some("12".into()),
            owners: vec![OwnerRef {
                kind: "Foo".into(),
                name: "web".into(),
                uid: Some("u1".into()),
            }],
            removes_finalizer: false,
            // Sent when the trace held only the step's begin (record 1).
            sent_after: Some(1),
        }
    );
    assert_eq!(recorded[1].summary(), "PUT foos/status ns/web -> 409");
    assert_eq!(recorded[1].resource_version, None);
    assert_eq!(recorded[2].summary(), "DELETE deployments ns/old -> 200");
    // Let the lease's answer be let go of too: still three.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let trace = proxy.interceptor().trace();
    assert_eq!(trace.writes().count(), 3);
    assert!(matches!(
        trace.records[0].event,
        Event::StepBegin { step: 1, .. }
    ));
    assert!(!proxy.interceptor().reached());
}

#[tokio::test]
async fn the_crash_hook_fires_once_right_after_the_kth_write() {
    let fired_after = std::sync::Arc::new(Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&fired_after);
    let recorder = Recorder::new(Some(Perturbation::IntermediateState { after_write: 2 }));
    let trace_at_crash = std::sync::Arc::new(AtomicUsize::new(0));
    let at_crash = std::sync::Arc::clone(&trace_at_crash);
    let shared = std::sync::Arc::clone(&recorder.shared);
    let recorder = recorder.on_crash_point(move |_listener| {
        log.lock().expect("the log").push("crash");
        at_crash.store(shared.state.lock().trace.writes().count(), Ordering::SeqCst);
    });
    let (_server, proxy, client) =
        proxy_with(recorder, |_| Reply::Json(201, DEPLOYMENT.into())).await;
    for _ in 0..3 {
        client
            .call(
                Method::POST,
                "/apis/apps/v1/namespaces/ns/deployments",
                "{}",
            )
            .await;
    }
    writes(&proxy, 3).await;
    assert_eq!(*fired_after.lock().expect("the log"), ["crash"]);
    // Called with the second write recorded and the third not yet.
    assert_eq!(trace_at_crash.load(Ordering::SeqCst), 2);
    assert!(proxy.interceptor().reached());
}

fn event(kind: &str, name: &str, rv: &str) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"metadata":{{"name":"{name}","namespace":"ns","uid":"u-{name}","resourceVersion":"{rv}"}}}}}}"#
    ) + "\n"
}

#[tokio::test]
async fn watch_events_are_recorded_and_the_planned_one_withheld() {
    let plan = Perturbation::UnobservedState {
        resource: "foos".into(),
        key: "ns/a".into(),
        withheld_rv: "learned-2".into(),
        occurrence: 2,
    };
    let pki = Pki::new();
    let (server, tx) = FakeApiServer::one_stream(&pki).await;
    let (proxy, client) = behind(&pki, &server, Recorder::new(Some(plan))).await;
    let path =
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos?watch=true&resourceVersion=1";
    let mut body = client.send(Method::GET, path, &[], "").await.into_body();

    // Split across two frames: parsed, recorded and delivered once.
    let first = event("ADDED", "a", "1");
    let (head, tail) = first.split_at(30);
    tx.send(Bytes::from(head.to_string())).expect("sent");
    tx.send(Bytes::from(tail.to_string())).expect("sent");
    assert_eq!(next_data(&mut body).await, Some(Bytes::from(first)));
    // a's second event is withheld; b's and a's third arrive as they are; a bookmark
    // passes unrecorded.
    let bookmark =
        r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}}"#.to_string() + "\n";
    let rest = event("MODIFIED", "a", "2")
        + &event("ADDED", "b", "3")
        + &event("MODIFIED", "a", "4")
        + &bookmark;
    tx.send(Bytes::from(rest)).expect("sent");
    let delivered = next_data(&mut body).await.expect("a frame");
    assert_eq!(
        delivered,
        Bytes::from(event("ADDED", "b", "3") + &event("MODIFIED", "a", "4") + &bookmark)
    );
    assert!(proxy.interceptor().reached());
    let recorded: Vec<WatchEvent> = proxy
        .interceptor()
        .trace()
        .watch_events()
        .map(|(_, e)| e.clone())
        .collect();
    let summary: Vec<(EventType, &str, &str)> = recorded
        .iter()
        .map(|e| (e.event, e.key.as_str(), e.resource_version.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (EventType::Added, "ns/a", "1"),
            (EventType::Added, "ns/b", "3"),
            (EventType::Modified, "ns/a", "4"),
        ]
    );
    assert_eq!(recorded[0].resource, "foos");
    assert_eq!(recorded[0].uid.as_deref(), Some("u-a"));
    // Superseded by a's third event: nothing to release.
    assert!(!proxy.interceptor().release_withheld());
}

/// A withheld event that nothing supersedes (the object's last change) is released
/// once: the open watch of its resource ends with an `ERROR` 410 event, as
/// kube-apiserver ends a watch it cannot serve, so the client relists and sees the
/// latest state.
#[tokio::test]
async fn a_withheld_last_change_is_released_by_an_error_event_ending_the_watch() {
    let plan = Perturbation::UnobservedState {
        resource: "foos".into(),
        key: "ns/a".into(),
        withheld_rv: "learned-2".into(),
        occurrence: 2,
    };
    let pki = Pki::new();
    let (server, tx) = FakeApiServer::one_stream(&pki).await;
    let (proxy, client) = behind(&pki, &server, Recorder::new(Some(plan))).await;
    let path =
        "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos?watch=true&resourceVersion=1";
    let mut body = client.send(Method::GET, path, &[], "").await.into_body();
    tx.send(Bytes::from(
        event("ADDED", "a", "1") + &event("MODIFIED", "a", "2"),
    ))
    .expect("sent");
    assert_eq!(
        next_data(&mut body).await,
        Some(Bytes::from(event("ADDED", "a", "1")))
    );
    assert!(proxy.interceptor().reached());
    assert!(
        proxy.interceptor().withheld_for().is_some(),
        "withheld, not superseded"
    );
    assert!(
        proxy.interceptor().release_withheld(),
        "nothing superseded it"
    );
    assert!(!proxy.interceptor().release_withheld(), "released once");
    assert_eq!(
        proxy.interceptor().withheld_for(),
        None,
        "nothing withheld now"
    );
    let error = next_data(&mut body).await.expect("the ERROR event");
    let error: serde_json::Value = serde_json::from_slice(&error).expect("one JSON line");
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 410);
    assert_eq!(error["object"]["reason"], "Expired");
    assert_eq!(next_data(&mut body).await, None, "and the watch ends");
}

#[tokio::test]
async fn stale_lists_are_served_at_the_old_version_and_nothing_else_changes() {
    let (server, proxy, client) = proxy_with(
        Recorder::new(Some(Perturbation::StaleState {
            at_step: 2,
            list_rv: "learned".into(),
        })),
        |_| {
            Reply::Json(
                200,
                r#"{"kind":"List","metadata":{"resourceVersion":"42"},"items":[]}"#.into(),
            )
        },
    )
    .await;
    // client-go's first list: resourceVersion=0, "any version" (the watch cache's).
    let list = "/apis/apps/v1/namespaces/ns/deployments?labelSelector=app%3Dweb&resourceVersion=0";
    let base = "/apis/apps/v1/namespaces/ns/deployments";
    client.call(Method::GET, list, "").await;
    proxy.interceptor().begin_stale("42");
    // A list for the most recent state first: a consistent read, never stale (issue 57,
    // A4: kubectl's own list inside `delete -l` was served stale).
    client
        .call(
            Method::GET,
            &format!("{base}?labelSelector=app%3Dweb&limit=500"),
            "",
        )
        .await;
    assert!(
        !proxy.interceptor().reached(),
        "a consistent list is not a stale one"
    );
    for (method, path) in [
        (Method::GET, list.to_string()),
        // "Not older than" a version before the stale one: it may be served stale.
        (Method::GET, format!("{base}?resourceVersion=10")),
        // "Not older than" a version after it, and an exact other version: not.
        (Method::GET, format!("{base}?resourceVersion=50")),
        (
            Method::GET,
            format!("{base}?resourceVersion=7&resourceVersionMatch=Exact"),
        ),
        (Method::GET, format!("{base}?limit=500&continue=abc%3D")),
        (Method::GET, format!("{base}?watch=true&resourceVersion=42")),
        (Method::GET, format!("{base}/web")),
        (Method::POST, base.to_string()),
    ] {
        client.call(method, &path, "{}").await;
    }
    proxy.interceptor().end_stale();
    client.call(Method::GET, list, "").await;
    let seen: Vec<String> = server.requests().into_iter().map(|s| s.uri).collect();
    assert_eq!(
        seen,
        [
            list.to_string(),
            format!("{base}?labelSelector=app%3Dweb&limit=500"),
            format!("{base}?labelSelector=app%3Dweb&resourceVersion=42&resourceVersionMatch=Exact"),
            format!("{base}?resourceVersion=42&resourceVersionMatch=Exact"),
            format!("{base}?resourceVersion=50"),
            format!("{base}?resourceVersion=7&resourceVersionMatch=Exact"),
            format!("{base}?limit=500&continue=abc%3D"),
            format!("{base}?watch=true&resourceVersion=42"),
            format!("{base}/web"),
            base.to_string(),
            list.to_string(),
        ]
    );
    assert!(proxy.interceptor().reached());
}

#[test]
fn a_write_that_drops_a_finalizer_is_marked() {
    let api = path::action(
        &Method::PUT,
        &"/apis/apps/v1/namespaces/ns/deployments/web"
            .parse()
            .expect("a URI"),
    )
    .expect("a resource request");
    let write =
        |before| answer::write(&api, 200, DEPLOYMENT.as_bytes(), before, None).expect("a write");
    assert!(write(Some(2)).removes_finalizer);
    assert!(!write(Some(1)).removes_finalizer);
    assert!(!write(None).removes_finalizer);
}

/// A shard group: each replica its own proxy listener. The crash hook names the
/// listener of the k-th write (the replica the runner kills), and lease requests (the
/// group's renewals, on a timer) are not counted as the controller's requests.
#[tokio::test]
async fn the_crash_hook_names_the_listener_of_the_kth_write_and_leases_are_not_requests() {
    let pki = Pki::new();
    let server = FakeApiServer::start(&pki, |_| Reply::Json(201, DEPLOYMENT.into())).await;
    let fired = std::sync::Arc::new(Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&fired);
    let recorder = Recorder::new(Some(Perturbation::IntermediateState { after_write: 2 }))
        .on_crash_point(move |listener| log.lock().expect("the log").push(listener));
    let proxy =
        SieveProxy::start_listeners(pki.cert(), pki.key(), server.upstream(&pki), recorder, 2)
            .await
            .expect("the proxy");
    let replicas = [
        TestClient::new(&pki, proxy.addrs()[0]),
        TestClient::new(&pki, proxy.addrs()[1]),
    ];
    let create = "/apis/apps/v1/namespaces/ns/deployments";
    replicas[0].call(Method::POST, create, "{}").await;
    writes(&proxy, 1).await;
    let lease = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/shard-0";
    replicas[1].call(Method::PUT, lease, "{}").await;
    replicas[1].call(Method::POST, create, "{}").await;
    writes(&proxy, 2).await;
    assert_eq!(*fired.lock().expect("the log"), [1]);
    assert_eq!(
        proxy.interceptor().requests(),
        2,
        "the lease renewal is not one"
    );
    assert_eq!(proxy.stats().requests, 3);
}

/// A shard group's replicas each watch for themselves (one listener each): the same
/// state seen by both is recorded once; the planned occurrence is withheld from each
/// replica's stream; the next state delivered to one replica supersedes only its own.
#[test]
fn replicas_count_and_withhold_per_stream_and_record_each_state_once() {
    let recorder = Recorder::new(Some(Perturbation::UnobservedState {
        resource: "foos".into(),
        key: "ns/a".into(),
        withheld_rv: "learned-2".into(),
        occurrence: 2,
    }));
    let shared = &recorder.shared;
    let watch = |kind: &str, rv: &str| {
        serde_json::from_str::<watch::WatchEvent>(event(kind, "a", rv).trim()).expect("an event")
    };
    let verdicts: Vec<bool> = [
        (0, watch("ADDED", "1")),
        (1, watch("ADDED", "1")),
        (1, watch("MODIFIED", "2")),
        (0, watch("MODIFIED", "2")),
        (0, watch("MODIFIED", "3")),
    ]
    .iter()
    .map(|(listener, e)| matches!(shared.watch_event(*listener, "foos", e), Verdict::Drop))
    .collect();
    assert_eq!(
        verdicts,
        [false, false, true, true, false],
        "rv 2 withheld from both"
    );
    let recorded: Vec<String> = recorder
        .trace()
        .records
        .iter()
        .filter_map(|r| match &r.event {
            Event::Watch(w) => Some(w.resource_version.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(recorded, ["1", "3"], "each state once");
    // Replica 0 saw rv 3; replica 1 has seen nothing after rv 1: still withheld there.
    assert!(recorder.withheld_for().is_some());
    assert!(recorder.release_withheld());
}
