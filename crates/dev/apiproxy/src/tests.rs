//! The proxy against a scripted fake API server: forwarding, the interception hook,
//! watch streams event by event, cuts and refusals.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use bytes::Bytes;
use http::{Method, response};

use super::*;
use crate::testing::{FakeApiServer, Pki, Reply, TestClient, next_data};
use crate::watch::{Verdict, WatchEvent};

const POD: &str =
    r#"{"kind":"Pod","metadata":{"name":"web","namespace":"ns","resourceVersion":"5"}}"#;

#[tokio::test]
async fn requests_and_answers_pass_through_unchanged() {
    let pki = Pki::new();
    let server = FakeApiServer::start(&pki, |seen| match seen.method {
        Method::POST => Reply::Json(201, POD.to_string()),
        _ => Reply::Json(404, r#"{"kind":"Status","code":404}"#.to_string()),
    })
    .await;
    let proxy = Proxy::start(pki.cert(), pki.key(), server.upstream(&pki), Forward)
        .await
        .expect("the proxy");
    let client = TestClient::new(&pki, proxy.addr());
    let (status, body) = client
        .call(
            Method::POST,
            "/api/v1/namespaces/ns/pods?fieldManager=t",
            "{}",
        )
        .await;
    assert_eq!((status, body.as_str()), (201, POD));
    let (status, _) = client
        .call(Method::GET, "/api/v1/namespaces/ns/pods/gone", "")
        .await;
    assert_eq!(status, 404);
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].method, Method::POST);
    assert_eq!(seen[0].uri, "/api/v1/namespaces/ns/pods?fieldManager=t");
    let stats = proxy.stats();
    assert_eq!(
        (stats.connections, stats.requests, stats.upstream_errors),
        (1, 2, 0)
    );
}

/// Rewrites `?rv=old` to `?rv=new`, answers `/refused` itself, and logs every answer.
#[derive(Default)]
struct Hook {
    answers: Arc<Mutex<Vec<(String, u16, String)>>>,
    refuse_connections: AtomicBool,
}

impl Interceptor for Hook {
    fn accept(&self) -> bool {
        !self.refuse_connections.load(Ordering::Relaxed)
    }

    async fn on_request(&self, request: &mut request::Parts) -> Option<Response<ProxyBody>> {
        if request.uri.path().ends_with("/refused") {
            return Some(status_response(422, "refused by the hook"));
        }
        if path::query(&request.uri, "rv").as_deref() == Some("old") {
            request.uri = path::with_query(&request.uri, &[("rv", "new")]);
        }
        None
    }

    fn on_response(
        &self,
        exchange: &Exchange,
        response: &mut response::Parts,
        body: ProxyBody,
    ) -> ProxyBody {
        let (uri, status) = (exchange.uri.to_string(), response.status.as_u16());
        let answers = Arc::clone(&self.answers);
        body::on_complete(body, move |bytes| {
            answers.lock().expect("the log").push((
                uri,
                status,
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        })
    }
}

#[tokio::test]
async fn the_hook_rewrites_answers_and_sees_each_answer_whole() {
    let pki = Pki::new();
    let server = FakeApiServer::start(&pki, |_| Reply::Json(200, POD.to_string())).await;
    let proxy = Proxy::start(
        pki.cert(),
        pki.key(),
        server.upstream(&pki),
        Hook::default(),
    )
    .await
    .expect("the proxy");
    let client = TestClient::new(&pki, proxy.addr());
    let (status, body) = client
        .call(Method::GET, "/api/v1/pods?rv=old&limit=1", "")
        .await;
    assert_eq!((status, body.as_str()), (200, POD));
    let (status, body) = client.call(Method::GET, "/api/v1/refused", "").await;
    assert_eq!(status, 422);
    assert!(body.contains(r#""reason":"Invalid""#), "{body}");
    // Forwarded rewritten; the refused one never reached the server.
    let seen: Vec<String> = server.requests().into_iter().map(|s| s.uri).collect();
    assert_eq!(seen, ["/api/v1/pods?rv=new&limit=1"]);
    // The hook's own answer is not an answer of the API server. The callback runs once
    // the proxy's connection has dropped the body, which may be just after the client
    // read its end.
    let answers = eventually(|| {
        let answers = proxy.interceptor().answers.lock().expect("the log").clone();
        (!answers.is_empty()).then_some(answers)
    })
    .await;
    assert_eq!(
        answers,
        [(
            "/api/v1/pods?rv=new&limit=1".to_string(),
            200,
            POD.to_string()
        )]
    );

    proxy
        .interceptor()
        .refuse_connections
        .store(true, Ordering::Relaxed);
    let refused = TestClient::new(&pki, proxy.addr());
    let attempt = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tokio::spawn(async move { refused.call(Method::GET, "/api/v1/pods", "").await }),
    )
    .await
    .expect("an answer or a failure within 5 s");
    assert!(attempt.is_err(), "a refused connection got an answer");
    assert!(proxy.stats().connections_refused >= 1);
}

/// `check`'s first `Some`, polled for up to 5 s.
async fn eventually<T>(check: impl Fn() -> Option<T>) -> T {
    for _ in 0..500 {
        if let Some(found) = check() {
            return found;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("not within 5 s");
}

fn event(kind: &str, name: &str, rv: &str) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}}}"#
    ) + "\n"
}

/// Withholds `b`'s events, renames `c` to `d`, and counts each event it was shown.
struct Events {
    shown: Arc<Mutex<Vec<String>>>,
}

impl Interceptor for Events {
    fn on_response(&self, _: &Exchange, _: &mut response::Parts, body: ProxyBody) -> ProxyBody {
        let shown = Arc::clone(&self.shown);
        watch::transform(body, move |event: &WatchEvent| {
            let key = event.key().unwrap_or_default();
            shown
                .lock()
                .expect("the log")
                .push(format!("{} {key}", event.event_type));
            match key.as_str() {
                "ns/b" => Verdict::Drop,
                "ns/c" => {
                    let mut renamed =
                        serde_json::json!({"type": event.event_type, "object": event.object});
                    renamed["object"]["metadata"]["name"] = "d".into();
                    Verdict::Replace(renamed)
                }
                _ => Verdict::Forward,
            }
        })
    }
}

#[tokio::test]
async fn a_watch_is_transformed_event_by_event_whatever_the_frames() {
    let pki = Pki::new();
    let (server, tx) = FakeApiServer::one_stream(&pki).await;
    let shown = Arc::new(Mutex::new(Vec::new()));
    let hook = Events {
        shown: Arc::clone(&shown),
    };
    let proxy = Proxy::start(pki.cert(), pki.key(), server.upstream(&pki), hook)
        .await
        .expect("the proxy");
    let client = TestClient::new(&pki, proxy.addr());
    let response = client
        .send(Method::GET, "/api/v1/pods?watch=true", &[], "")
        .await;
    let mut body = response.into_body();

    // One event split across two frames arrives once, whole.
    let a = event("ADDED", "a", "1");
    let (head, tail) = a.split_at(20);
    tx.send(Bytes::from(head.to_string())).expect("sent");
    tx.send(Bytes::from(tail.to_string())).expect("sent");
    assert_eq!(next_data(&mut body).await, Some(Bytes::from(a.clone())));
    // A withheld event sends nothing: the next frame carries the one after it.
    tx.send(Bytes::from(event("ADDED", "b", "2")))
        .expect("sent");
    tx.send(Bytes::from(
        event("MODIFIED", "a", "3") + &event("ADDED", "c", "4"),
    ))
    .expect("sent");
    let frame = next_data(&mut body).await.expect("a frame");
    let text = String::from_utf8_lossy(&frame).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], event("MODIFIED", "a", "3").trim_end());
    let renamed: WatchEvent = serde_json::from_str(lines[1]).expect("an event");
    assert_eq!(renamed.key().as_deref(), Some("ns/d"));
    // Not an event, and an unterminated end: forwarded as they are.
    tx.send(Bytes::from_static(b"not json\n{\"type\""))
        .expect("sent");
    assert_eq!(
        next_data(&mut body).await,
        Some(Bytes::from_static(b"not json\n"))
    );
    drop(tx);
    assert_eq!(
        next_data(&mut body).await,
        Some(Bytes::from_static(b"{\"type\""))
    );
    assert_eq!(next_data(&mut body).await, None);
    assert_eq!(
        shown.lock().expect("the log").clone(),
        ["ADDED ns/a", "ADDED ns/b", "MODIFIED ns/a", "ADDED ns/c"]
    );
}

#[tokio::test]
async fn cut_all_closes_open_watches() {
    let pki = Pki::new();
    let (server, tx) = FakeApiServer::one_stream(&pki).await;
    let proxy = Proxy::start(pki.cert(), pki.key(), server.upstream(&pki), Forward)
        .await
        .expect("the proxy");
    let client = TestClient::new(&pki, proxy.addr());
    let mut body = client
        .send(Method::GET, "/api/v1/pods?watch=true", &[], "")
        .await
        .into_body();
    tx.send(Bytes::from(event("ADDED", "a", "1")))
        .expect("sent");
    assert!(next_data(&mut body).await.is_some());
    assert_eq!(proxy.cut_all(), 1);
    let end = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        use http_body_util::BodyExt;
        body.frame().await
    })
    .await
    .expect("the watch ends within 5 s");
    assert!(
        matches!(end, None | Some(Err(_))),
        "the watch went on: {end:?}"
    );
    assert_eq!(proxy.stats().connections_cut, 1);
}

/// Notes the [`Listener`] each request came in on.
#[derive(Default)]
struct Listeners(Arc<Mutex<Vec<(String, usize)>>>);

impl Interceptor for Listeners {
    async fn on_request(&self, request: &mut http::request::Parts) -> Option<Response<ProxyBody>> {
        let listener = request.extensions.get::<Listener>().map(|l| l.0);
        self.0.lock().expect("the log").push((
            request.uri.path().to_string(),
            listener.unwrap_or(usize::MAX),
        ));
        None
    }
}

#[tokio::test]
async fn each_request_carries_the_listener_it_came_in_on() {
    let pki = Pki::new();
    let server = FakeApiServer::start(&pki, |_| Reply::Json(201, POD.to_string())).await;
    let seen = Listeners::default();
    let log = Arc::clone(&seen.0);
    let proxy = Proxy::start_listeners(pki.cert(), pki.key(), server.upstream(&pki), seen, 2)
        .await
        .expect("the proxy");
    assert_eq!(proxy.addrs().len(), 2);
    assert_ne!(proxy.addrs()[0], proxy.addrs()[1]);
    assert_eq!(proxy.addr(), proxy.addrs()[0]);
    for (index, path) in [
        (1, "/api/v1/namespaces/ns/pods/b"),
        (0, "/api/v1/namespaces/ns/pods/a"),
    ] {
        let client = TestClient::new(&pki, proxy.addrs()[index]);
        let (status, _) = client.call(Method::GET, path, "").await;
        assert_eq!(status, 201);
    }
    assert_eq!(
        *log.lock().expect("the log"),
        [
            ("/api/v1/namespaces/ns/pods/b".to_string(), 1),
            ("/api/v1/namespaces/ns/pods/a".to_string(), 0)
        ]
    );
}
