//! The metrics and health probe servers over real HTTP on 127.0.0.1: what they
//! answer, readiness flipping, bind errors, "0" disabling, graceful stop.

// Test code: an unwrap is an assertion. (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too.)
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use controller::metrics::{ReconcileObserver, ReconcileResult};
use metrics::testing::{http_get, sample_value};
use metrics::{
    BindAddress, Error, Health, Metrics, bind_health, bind_metrics, serve_health, serve_metrics,
};
use tokio_util::sync::CancellationToken;
use workqueue::{QueueConfig, RateLimitingQueue, default_controller_rate_limiter};

fn loopback() -> BindAddress {
    "127.0.0.1:0".parse().unwrap()
}

/// Generous: CI runs several test binaries on two cores.
const TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn metrics_endpoint_shows_workqueue_and_reconcile_series_after_work() {
    let metrics = Metrics::new();
    let queue: RateLimitingQueue<String> = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        QueueConfig::named("foos").with_metrics_provider(Arc::new(metrics.workqueue.clone())),
    );
    let server = bind_metrics(&loopback(), metrics.registry.clone())
        .await
        .unwrap()
        .expect("enabled");
    let addr = server.local_addr();
    let cancel = CancellationToken::new();
    let serving = tokio::spawn(server.serve(cancel.clone()));

    // Some work: two keys, one sync succeeds, one fails and is retried.
    queue.add("default/a".to_string());
    queue.add("default/b".to_string());
    let a = queue.get().await.unwrap();
    metrics
        .reconcile
        .observe("foo", ReconcileResult::Success, Duration::from_millis(7));
    a.done();
    let b = queue.get().await.unwrap();
    metrics
        .reconcile
        .observe("foo", ReconcileResult::Error, Duration::from_millis(9));
    queue.add_rate_limited(b.clone());
    b.done();

    let response = tokio::time::timeout(TIMEOUT, http_get(addr, "/metrics"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(response.status, 200);
    assert!(
        response
            .headers
            .to_ascii_lowercase()
            .contains("content-type: application/openmetrics-text"),
        "{}",
        response.headers
    );
    let text = &response.body;
    let foos = [("name", "foos")];
    assert_eq!(
        sample_value(text, "workqueue_adds_total", &foos),
        Some(2.0),
        "{text}"
    );
    assert!(
        sample_value(text, "workqueue_depth", &foos).is_some(),
        "{text}"
    );
    assert_eq!(
        sample_value(text, "workqueue_retries_total", &foos),
        Some(1.0)
    );
    assert_eq!(
        sample_value(
            text,
            "controller_runtime_reconcile_total",
            &[("controller", "foo"), ("result", "success")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample_value(
            text,
            "controller_runtime_reconcile_errors_total",
            &[("controller", "foo")]
        ),
        Some(1.0)
    );
    assert!(text.ends_with("# EOF\n"));

    // Other paths and methods.
    assert_eq!(http_get(addr, "/nope").await.unwrap().status, 404);
    assert_eq!(
        http_get(addr, "/readyz").await.unwrap().status,
        404,
        "probes live on the other port"
    );

    cancel.cancel();
    tokio::time::timeout(TIMEOUT, serving)
        .await
        .unwrap()
        .unwrap();
    queue.shut_down();
}

#[tokio::test]
async fn readyz_turns_200_when_its_checks_pass_and_healthz_is_always_200() {
    let health = Health::new();
    let synced = Arc::new(AtomicBool::new(false));
    let flag = synced.clone();
    health
        .add_readyz_check("informers", move || flag.load(Ordering::SeqCst))
        .unwrap();
    let server = bind_health(&loopback(), health.clone())
        .await
        .unwrap()
        .unwrap();
    let addr = server.local_addr();
    let cancel = CancellationToken::new();
    let serving = tokio::spawn(server.serve(cancel.clone()));

    let healthz = http_get(addr, "/healthz").await.unwrap();
    assert_eq!((healthz.status, healthz.body.as_str()), (200, "ok"));
    let readyz = http_get(addr, "/readyz").await.unwrap();
    assert_eq!(readyz.status, 503);
    assert!(
        readyz.body.contains("[-]informers failed"),
        "{}",
        readyz.body
    );
    assert_eq!(
        http_get(addr, "/readyz/informers").await.unwrap().status,
        503
    );
    assert_eq!(http_get(addr, "/readyz/unknown").await.unwrap().status, 404);

    synced.store(true, Ordering::SeqCst);
    let readyz = http_get(addr, "/readyz").await.unwrap();
    assert_eq!((readyz.status, readyz.body.as_str()), (200, "ok"));
    let verbose = http_get(addr, "/readyz?verbose").await.unwrap();
    assert_eq!(verbose.status, 200);
    assert!(verbose.body.contains("[+]informers ok"), "{}", verbose.body);

    // A check added while serving is honoured at once.
    health.add_readyz_check("late", || false).unwrap();
    assert_eq!(http_get(addr, "/readyz").await.unwrap().status, 503);
    assert_eq!(http_get(addr, "/healthz").await.unwrap().status, 200);

    cancel.cancel();
    tokio::time::timeout(TIMEOUT, serving)
        .await
        .unwrap()
        .unwrap();
    // Stopped: nobody listens any more.
    assert!(http_get(addr, "/healthz").await.is_err());
}

#[tokio::test]
async fn a_busy_address_is_a_typed_error_naming_it() {
    let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: BindAddress = taken.local_addr().unwrap().to_string().parse().unwrap();
    let err = serve_metrics(&addr, metrics::Registry::new(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Bind {
                server: "metrics",
                ..
            }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&addr.to_string()) && message.contains("metrics"),
        "{message}"
    );

    let err = serve_health(&addr, Health::new(), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("health probes"), "{err}");
}

#[tokio::test]
async fn zero_disables_both_servers() {
    let disabled: BindAddress = "0".parse().unwrap();
    assert!(
        bind_metrics(&disabled, metrics::Registry::new())
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        bind_health(&disabled, Health::new())
            .await
            .unwrap()
            .is_none()
    );
    // serve_* return at once instead of waiting for a cancel that never comes.
    let never = CancellationToken::new();
    tokio::time::timeout(
        TIMEOUT,
        serve_metrics(&disabled, metrics::Registry::new(), never.clone()),
    )
    .await
    .unwrap()
    .unwrap();
    tokio::time::timeout(TIMEOUT, serve_health(&disabled, Health::new(), never))
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn cancel_stops_a_server_with_an_idle_keep_alive_connection() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = bind_health(&loopback(), Health::new())
        .await
        .unwrap()
        .unwrap();
    let addr = server.local_addr();
    let cancel = CancellationToken::new();
    let serving = tokio::spawn(server.serve(cancel.clone()));

    // A keep-alive client that made one request and keeps the connection open.
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = client.read(&mut buf).await.unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));

    cancel.cancel();
    // The server closes the idle connection and returns well before its 5 s grace.
    tokio::time::timeout(Duration::from_secs(4), serving)
        .await
        .expect("serve returned")
        .unwrap();
    let n = tokio::time::timeout(TIMEOUT, client.read(&mut buf))
        .await
        .unwrap()
        .unwrap_or(0);
    assert_eq!(n, 0, "connection closed by the server");
}

#[tokio::test]
async fn post_is_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = bind_metrics(&loopback(), metrics::Registry::new())
        .await
        .unwrap()
        .unwrap();
    let addr = server.local_addr();
    let cancel = CancellationToken::new();
    let serving = tokio::spawn(server.serve(cancel.clone()));
    let mut client = tokio::net::TcpStream::connect(addr).await.unwrap();
    client
        .write_all(
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let mut answer = String::new();
    client.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
    cancel.cancel();
    tokio::time::timeout(TIMEOUT, serving)
        .await
        .unwrap()
        .unwrap();
}
