//! One connection over an in-memory pipe, on tokio's paused clock: each limit fires
//! at its deadline exactly, and not before.

use std::convert::Infallible;
use std::io;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::service::{Service, service_fn};
use hyper::{Request, Response, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;

fn limits() -> ConnectionLimits {
    ConnectionLimits {
        handshake_timeout: Duration::from_secs(10),
        header_read_timeout: Duration::from_secs(10),
        request_read_timeout: Duration::from_secs(30),
        idle_timeout: Duration::from_secs(120),
        max_connections: 4,
    }
}

/// Answers with the body it read, 408 at the request deadline.
async fn echo(request: Request<RequestBody>) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match Limited::new(request.into_body(), 1 << 20).collect().await {
        Ok(body) => (StatusCode::OK, body.to_bytes()),
        Err(e) if is_body_timeout(e.as_ref()) => (StatusCode::REQUEST_TIMEOUT, Bytes::new()),
        Err(_) => (StatusCode::BAD_REQUEST, Bytes::new()),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    Ok(response)
}

/// The client's end of a pipe and the task serving the other end.
type Connected = (DuplexStream, JoinHandle<Result<(), ConnectionError>>);

/// A connection served by `echo`.
fn connect(cancel: &CancellationToken) -> Connected {
    connect_to(service_fn(echo), cancel)
}

/// A connection served by `service`.
fn connect_to<S, F>(service: S, cancel: &CancellationToken) -> Connected
where
    S: Service<Request<RequestBody>, Response = Response<Full<Bytes>>, Future = F>,
    S: Send + 'static,
    F: Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>> + Send,
{
    let (client, server) = tokio::io::duplex(64 * 1024);
    let cancel = cancel.clone();
    let task =
        tokio::spawn(async move { serve_connection(server, service, &limits(), &cancel).await });
    (client, task)
}

/// Reads until the connection closes; what arrived.
async fn until_closed(client: &mut DuplexStream) -> String {
    let mut out = Vec::new();
    let _ = client.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads one response that ends with `tail`.
async fn response_ending(client: &mut DuplexStream, tail: &str) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&out).ends_with(tail) {
        let n = client.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&out));
        out.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn assert_at(start: Instant, expected: Duration) {
    let elapsed = start.elapsed();
    assert!(
        elapsed >= expected && elapsed < expected + Duration::from_millis(100),
        "closed after {elapsed:?}, expected {expected:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn headers_that_never_finish_are_cut_at_the_header_deadline() {
    let cancel = CancellationToken::new();
    let (mut client, server) = connect(&cancel);
    let start = Instant::now();
    client
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    assert_eq!(until_closed(&mut client).await, "");
    assert_at(start, Duration::from_secs(10));
    let err = server.await.unwrap().unwrap_err();
    assert!(matches!(err, ConnectionError::HeaderTimeout(_)), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn a_connection_that_sends_nothing_gets_the_header_deadline_not_the_idle_one() {
    let cancel = CancellationToken::new();
    let (mut client, server) = connect(&cancel);
    let start = Instant::now();
    assert_eq!(until_closed(&mut client).await, "");
    assert_at(start, Duration::from_secs(10));
    assert!(matches!(
        server.await.unwrap(),
        Err(ConnectionError::HeaderTimeout(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_partial_body_is_answered_408_at_the_request_deadline_and_closed() {
    let cancel = CancellationToken::new();
    let (mut client, server) = connect(&cancel);
    let start = Instant::now();
    client
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1000000\r\n\r\n0123456789")
        .await
        .unwrap();
    let answer = until_closed(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_at(start, Duration::from_secs(30));
    // The handler answered: the backstop (deadline + grace) never fired.
    server.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_body_trickling_in_past_the_deadline_is_cut_off_too() {
    let cancel = CancellationToken::new();
    let (client, server) = connect(&cancel);
    let (mut read, mut write) = tokio::io::split(client);
    let start = Instant::now();
    let writer = tokio::spawn(async move {
        write
            .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 1000\r\n\r\n")
            .await?;
        for _ in 0..1000 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            write.write_all(b"x").await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut answer = Vec::new();
    let _ = read.read_to_end(&mut answer).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_at(start, Duration::from_secs(30));
    server.await.unwrap().unwrap();
    writer.abort();
}

#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_outlives_the_client_idle_timeout_then_closes() {
    let cancel = CancellationToken::new();
    let (mut client, server) = connect(&cancel);
    let request = b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi";
    client.write_all(request).await.unwrap();
    let first = response_ending(&mut client, "hi").await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");

    // 100 s idle: past the header deadline and the client's 90 s, still open.
    tokio::time::sleep(Duration::from_secs(100)).await;
    client.write_all(request).await.unwrap();
    let second = response_ending(&mut client, "hi").await;
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");

    let idle_from = Instant::now();
    assert_eq!(until_closed(&mut client).await, "");
    assert_at(idle_from, Duration::from_secs(120));
    server.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_header_deadline_of_a_later_request_counts_from_its_first_byte() {
    let cancel = CancellationToken::new();
    let (mut client, server) = connect(&cancel);
    client
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi")
        .await
        .unwrap();
    response_ending(&mut client, "hi").await;
    tokio::time::sleep(Duration::from_secs(50)).await;
    let start = Instant::now();
    client.write_all(b"POST / HTTP/1.1\r\n").await.unwrap();
    assert_eq!(until_closed(&mut client).await, "");
    assert_at(start, Duration::from_secs(10));
    assert!(matches!(
        server.await.unwrap(),
        Err(ConnectionError::HeaderTimeout(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_ignores_the_body_frees_the_connection_at_once() {
    let cancel = CancellationToken::new();
    let ignore = service_fn(|_request: Request<RequestBody>| async {
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"metrics"))))
    });
    let (mut client, task) = connect_to(ignore, &cancel);
    let start = Instant::now();
    client
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n0123456789")
        .await
        .unwrap();
    let answer = until_closed(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("metrics"), "{answer}");
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_holds_the_body_unread_is_cut_after_the_deadline_and_grace() {
    let cancel = CancellationToken::new();
    let hold = service_fn(|request: Request<RequestBody>| async move {
        let _body = request.into_body();
        std::future::pending::<()>().await;
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::new())))
    });
    let (mut client, task) = connect_to(hold, &cancel);
    let start = Instant::now();
    client
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n01234")
        .await
        .unwrap();
    assert_eq!(until_closed(&mut client).await, "");
    assert_at(start, Duration::from_secs(30) + ANSWER_GRACE);
    assert!(matches!(
        task.await.unwrap(),
        Err(ConnectionError::RequestTimeout(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn cancel_lets_the_request_in_flight_finish_then_closes() {
    let cancel = CancellationToken::new();
    let slow = service_fn(|_request: Request<RequestBody>| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"done"))))
    });
    let (mut client, task) = connect_to(slow, &cancel);
    let start = Instant::now();
    client
        .write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    cancel.cancel();
    let answer = until_closed(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("done"), "{answer}");
    assert_at(start, Duration::from_secs(5));
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn cancel_closes_an_idle_connection_at_once() {
    let cancel = CancellationToken::new();
    let (mut client, server) = connect(&cancel);
    client
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nhi")
        .await
        .unwrap();
    response_ending(&mut client, "hi").await;
    let start = Instant::now();
    cancel.cancel();
    assert_eq!(until_closed(&mut client).await, "");
    assert!(start.elapsed() < Duration::from_secs(1));
    server.await.unwrap().unwrap();
}

#[tokio::test]
async fn slots_cap_connections_and_free_on_drop() {
    let slots = ConnectionSlots::new(2);
    assert_eq!(slots.max(), 2);
    let first = slots.acquire().await;
    let _second = slots.try_acquire().expect("a second slot");
    assert_eq!(slots.available(), 0);
    assert!(slots.try_acquire().is_none());
    let waiting = tokio::spawn({
        let slots = slots.clone();
        async move { slots.acquire().await }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished());
    drop(first);
    let _third = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("a freed slot is handed to the waiter")
        .unwrap();
    assert_eq!(slots.available(), 0);
    // Zero would never serve anyone.
    assert_eq!(ConnectionSlots::new(0).max(), 1);
}

/// Real sockets, real clock: `accept` does not take a connection while the cap is
/// reached, takes it once a slot is freed, and gives up when cancelled.
#[tokio::test]
async fn accept_waits_for_a_free_slot() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let slots = ConnectionSlots::new(1);
    let cancel = CancellationToken::new();

    let _a = TcpStream::connect(addr).await.unwrap();
    let (_stream, _, slot) = accept(&listener, &slots, &cancel).await.unwrap();
    // The kernel completes the second handshake; the server does not take it.
    let _b = TcpStream::connect(addr).await.unwrap();
    let held = tokio::time::timeout(
        Duration::from_millis(300),
        accept(&listener, &slots, &cancel),
    )
    .await;
    assert!(held.is_err(), "accepted past the cap");

    drop(slot);
    let (_second, _, _slot) =
        tokio::time::timeout(Duration::from_secs(10), accept(&listener, &slots, &cancel))
            .await
            .expect("accepted once a slot is free")
            .unwrap();

    cancel.cancel();
    assert!(accept(&listener, &slots, &cancel).await.is_none());
}

#[test]
fn body_timeouts_are_recognised_through_boxes_and_sources() {
    let timeout: Box<dyn StdError + Send + Sync> = Box::new(BodyError::Timeout {
        timeout: Duration::from_secs(1),
    });
    assert!(is_body_timeout(timeout.as_ref()));
    let read: Box<dyn StdError + Send + Sync> =
        Box::new(BodyError::Read(io::Error::other("reset").into()));
    assert!(!is_body_timeout(read.as_ref()));
    assert!(!is_body_timeout(&io::Error::other("other")));
    #[derive(Debug, thiserror::Error)]
    #[error("handling the request")]
    struct Outer(#[source] BodyError);
    let wrapped = Outer(BodyError::Timeout {
        timeout: Duration::from_secs(1),
    });
    assert!(is_body_timeout(&wrapped));
}

#[test]
fn the_defaults_keep_the_idle_timeout_above_the_clients() {
    let limits = ConnectionLimits::default();
    // client-go's / the API server's transport closes idle connections after 90 s.
    assert!(limits.idle_timeout > Duration::from_secs(90));
    // The API server's largest webhook timeout.
    assert_eq!(limits.request_read_timeout, Duration::from_secs(30));
    assert!(limits.header_read_timeout <= limits.request_read_timeout);
}
