//! Slow and greedy clients against the real server over real TLS: a request body that
//! never finishes is answered 408 and closed at the request deadline, while the API
//! server's reviews are still answered; the connection cap makes extra connections
//! wait, not fail; an idle keep-alive connection is closed after the idle timeout.
//!
//! The limits are shortened to seconds so the tests take seconds; timings are asserted
//! as "not before the deadline" (exact: the server cannot close earlier) and "within a
//! generous margin after it" (a busy machine only ever makes things later).

// Test code: an unwrap is an assertion (clippy.toml allows it inside #[test]
// functions; the helpers here are test code too).
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::StatusCode;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use webhook::ConnectionLimits;

use support::*;

/// How late after its deadline a close may come on a busy two-core machine.
const MARGIN: Duration = Duration::from_secs(5);

fn tls_config(ca: &CertificateDer<'static>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let provider = Arc::new(serving::certs::ring_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// A raw TLS connection to the server: bytes in, bytes out, no HTTP client in between.
async fn tls(addr: SocketAddr, ca: &CertificateDer<'static>) -> TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    tokio_rustls::TlsConnector::from(tls_config(ca))
        .connect(name, tcp)
        .await
        .unwrap()
}

/// Reads until the server closes (EOF, or a TLS close without close_notify).
async fn read_until_closed(stream: &mut TlsStream<TcpStream>) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads one response with a `content-length` and returns it whole.
async fn read_response(stream: &mut TlsStream<TcpStream>) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let text = String::from_utf8_lossy(&out).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("a content-length");
            if out.len() >= end + 4 + length {
                return text;
            }
        }
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed mid-response: {text}");
        out.extend_from_slice(&buf[..n]);
    }
}

fn review_request(uid: &str, close: bool) -> Vec<u8> {
    let body = review(uid, "CREATE", foo("a", "web", 3), Value::Null).to_string();
    let connection = if close { "connection: close\r\n" } else { "" };
    format!(
        "POST {VALIDATE} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         {connection}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The resident memory of this process, in bytes (Linux).
fn rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[tokio::test]
async fn partial_bodies_are_cut_at_the_deadline_while_reviews_are_answered() {
    const SLOW: usize = 20;
    const SENT: usize = 256 * 1024;
    let deadline = Duration::from_secs(4);
    let dir = TempDir::new("slow-bodies");
    let pki = Pki::new("ca-slow");
    pki.write_to(&dir);
    let server = start(&dir, |s| {
        s.with_limits(ConnectionLimits {
            request_read_timeout: deadline,
            ..ConnectionLimits::default()
        })
    })
    .await;
    let client = client(&pki.ca_der);
    // Warm up (TLS, the handler, the allocator), then take the baseline.
    let (status, _) = post_review(
        &client,
        server.addr,
        VALIDATE,
        &review("warm", "CREATE", foo("a", "web", 3), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let baseline = rss();

    // Each: the headers of a 7 MB review and 256 KiB of it, then silence.
    let mut slow = Vec::new();
    for _ in 0..SLOW {
        // Before the handshake: the server's deadline counts from its end (the first
        // request of a connection is due from its start), so never before this.
        let started = Instant::now();
        let mut stream = tls(server.addr, &pki.ca_der).await;
        let head = format!(
            "POST {VALIDATE} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             content-length: 7000000\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&vec![b' '; SENT]).await.unwrap();
        stream.flush().await.unwrap();
        slow.push(tokio::spawn(async move {
            let answer = read_until_closed(&mut stream).await;
            (started.elapsed(), answer)
        }));
    }

    // Meanwhile the API server's review, on a fresh connection, is answered at once.
    let asked = Instant::now();
    let (status, body) = post_review(
        &client,
        server.addr,
        VALIDATE,
        &review("u-meanwhile", "CREATE", foo("a", "web", 3), Value::Null),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["response"]["uid"], "u-meanwhile");
    assert!(
        asked.elapsed() < deadline,
        "the review waited for the slow clients: {:?}",
        asked.elapsed()
    );
    // Every slow client's request is being read (an event, waited for: the server
    // may not have parsed the last headers yet).
    let in_flight = || {
        server.metric(
            "controller_runtime_webhook_requests_in_flight",
            &[("webhook", VALIDATE)],
        )
    };
    let waiting = Instant::now();
    while in_flight() != Some(SLOW as f64) {
        assert!(
            waiting.elapsed() < deadline,
            "in flight: {:?}, expected {SLOW}",
            in_flight()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Bounded by what the clients sent, not by what they announced (20 x 7 MB):
    // both ends of each connection are in this process, so twice what was sent, plus
    // room for the allocator and the other tests of this binary.
    if let (Some(before), Some(during)) = (baseline, rss()) {
        let bound = (2 * SLOW * SENT) as u64 + 48 * 1024 * 1024;
        eprintln!(
            "resident memory grew by {} KiB with {SLOW} slow clients",
            during.saturating_sub(before) / 1024
        );
        assert!(
            during.saturating_sub(before) < bound,
            "resident memory grew by {} bytes (bound {bound})",
            during.saturating_sub(before)
        );
    }

    for task in slow {
        let (elapsed, answer) = tokio::time::timeout(deadline + MARGIN, task)
            .await
            .expect("every slow client is closed")
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("was not read within"), "{answer}");
        assert!(
            elapsed >= deadline,
            "closed before the deadline: {elapsed:?}"
        );
        assert!(elapsed < deadline + MARGIN, "closed late: {elapsed:?}");
    }
    assert_eq!(in_flight(), Some(0.0));
    assert_eq!(
        server.metric(
            "controller_runtime_webhook_requests_total",
            &[("webhook", VALIDATE), ("code", "408")]
        ),
        Some(SLOW as f64)
    );
    server.stop().await;
}

#[tokio::test]
async fn connections_over_the_cap_wait_and_are_served_once_others_close() {
    const CAP: usize = 3;
    let dir = TempDir::new("cap");
    let pki = Pki::new("ca-cap");
    pki.write_to(&dir);
    let server = start(&dir, |s| {
        s.with_limits(ConnectionLimits {
            max_connections: CAP,
            ..ConnectionLimits::default()
        })
    })
    .await;

    // CAP keep-alive connections, each answered once and then held open.
    let mut held = Vec::new();
    for i in 0..CAP {
        let mut stream = tls(server.addr, &pki.ca_der).await;
        stream
            .write_all(&review_request(&format!("held-{i}"), false))
            .await
            .unwrap();
        assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
        held.push(stream);
    }

    // Two more: the kernel completes their TCP handshakes, the server does not take
    // them (their TLS handshake cannot even start).
    let extra = |uid: &'static str| {
        let (addr, ca) = (server.addr, pki.ca_der.clone());
        tokio::spawn(async move {
            let mut stream = tls(addr, &ca).await;
            stream.write_all(&review_request(uid, true)).await.unwrap();
            read_until_closed(&mut stream).await
        })
    };
    let (first, second) = (extra("extra-1"), extra("extra-2"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !first.is_finished() && !second.is_finished(),
        "served over the cap"
    );

    // One held connection closes: the extras get its slot in turn.
    drop(held.remove(0));
    for extra in [first, second] {
        let answer = tokio::time::timeout(Duration::from_secs(10), extra)
            .await
            .expect("served once a slot is free")
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    drop(held);
    server.stop().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let (header, idle) = (Duration::from_secs(1), Duration::from_secs(3));
    let dir = TempDir::new("idle");
    let pki = Pki::new("ca-idle");
    pki.write_to(&dir);
    let server = start(&dir, |s| {
        s.with_limits(ConnectionLimits {
            header_read_timeout: header,
            idle_timeout: idle,
            ..ConnectionLimits::default()
        })
    })
    .await;

    let mut stream = tls(server.addr, &pki.ca_der).await;
    stream
        .write_all(&review_request("keep-alive", false))
        .await
        .unwrap();
    assert!(read_response(&mut stream).await.starts_with("HTTP/1.1 200"));
    let idle_from = Instant::now();
    let closed = tokio::time::timeout(idle + MARGIN, read_until_closed(&mut stream)).await;
    assert_eq!(closed.expect("closed when idle"), "");
    let elapsed = idle_from.elapsed();
    // The idle timeout, not the (shorter) header deadline, closed it. (The server's
    // idle clock starts as it sends the response, a moment before `idle_from`.)
    assert!(
        elapsed + Duration::from_millis(500) >= idle,
        "closed after {elapsed:?}"
    );
    assert!(elapsed < idle + MARGIN, "closed after {elapsed:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_stalled_handshake_and_stalled_headers_are_closed_at_their_deadlines() {
    let (handshake, header) = (Duration::from_secs(2), Duration::from_secs(2));
    let dir = TempDir::new("stalled");
    let pki = Pki::new("ca-stalled");
    pki.write_to(&dir);
    let server = start(&dir, |s| {
        s.with_limits(ConnectionLimits {
            handshake_timeout: handshake,
            header_read_timeout: header,
            ..ConnectionLimits::default()
        })
    })
    .await;

    // TCP only, no TLS ClientHello. (Each clock starts before the server's can.)
    let started = Instant::now();
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(handshake + MARGIN, tcp.read(&mut buf)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "not closed: {read:?}"
    );
    let elapsed = started.elapsed();
    assert!(elapsed >= handshake, "closed after {elapsed:?}");

    // TLS, then half a request line and nothing more: the first request's headers are
    // due within the header deadline of the handshake.
    let started = Instant::now();
    let mut stream = tls(server.addr, &pki.ca_der).await;
    stream.write_all(b"POST /validate").await.unwrap();
    let closed = tokio::time::timeout(header + MARGIN, read_until_closed(&mut stream)).await;
    assert_eq!(closed.expect("closed at the header deadline"), "");
    let elapsed = started.elapsed();
    assert!(elapsed >= header, "closed after {elapsed:?}");
    server.stop().await;
}
