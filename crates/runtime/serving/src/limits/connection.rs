//! [`serve_connection`]: hyper's HTTP/1.1 connection with the clock of the limits
//! around it (see the [parent module](super)).

use std::error::Error as StdError;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{ANSWER_GRACE, ConnectionError, ConnectionLimits, RequestBody};

/// Serves HTTP/1.1 requests on `io` (a TCP stream, or a TLS stream after its
/// handshake) with `service` until the client closes, a limit of `limits` is hit,
/// or `cancel` is cancelled; then lets the request in flight finish (a graceful
/// shutdown, still under the limits) and returns.
///
/// `service` gets each request with a [`RequestBody`] that fails at the request
/// deadline; answer 408 when [`is_body_timeout`](super::is_body_timeout) says so. An idle connection closed
/// after [`idle_timeout`](ConnectionLimits::idle_timeout) returns `Ok(())`.
pub async fn serve_connection<I, S, B>(
    io: I,
    service: S,
    limits: &ConnectionLimits,
    cancel: &CancellationToken,
) -> Result<(), ConnectionError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: Service<Request<RequestBody>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>> + Send,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let tracker = Arc::new(Tracker::new(limits));
    let io = TokioIo::new(Watched {
        io,
        tracker: tracker.clone(),
    });
    let service = Tracked {
        inner: service,
        tracker: tracker.clone(),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // Ours replaces it (see the module docs); without a timer hyper sets none.
    builder.header_read_timeout(None);
    let connection = builder.serve_connection(io, service);
    tokio::pin!(connection);
    let mut shutting_down = false;
    loop {
        let changed = tracker.changed.notified();
        let deadline = tracker.deadline();
        tokio::select! {
            result = connection.as_mut() => return result.map_err(ConnectionError::Http),
            _ = cancel.cancelled(), if !shutting_down => {
                shutting_down = true;
                connection.as_mut().graceful_shutdown();
            }
            _ = sleep_until(deadline.map(|(at, _)| at)) => {
                // Re-read: a byte or a request may have moved the deadline meanwhile.
                match tracker.deadline() {
                    Some((at, expiry)) if at <= Instant::now() => {
                        return expiry.close(limits);
                    }
                    _ => {}
                }
            }
            _ = changed => {}
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Where a connection is in its current request, and since when.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request's headers, the first byte having arrived at `started`
    /// (or the connection having opened then).
    Head { started: Instant },
    /// The headers were read; the body is still due by `started` +
    /// `request_read_timeout`.
    Body { started: Instant },
    /// The body is complete (or dropped): the handler and the response are under way.
    Busy,
    /// No request since `since` (the end of the last response, or its last write).
    Idle { since: Instant },
}

/// Which limit a deadline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    Header,
    Request,
    Idle,
}

impl Expiry {
    fn close(self, limits: &ConnectionLimits) -> Result<(), ConnectionError> {
        match self {
            Expiry::Idle => {
                tracing::debug!(timeout = ?limits.idle_timeout, "closing an idle keep-alive connection");
                Ok(())
            }
            Expiry::Header => Err(ConnectionError::HeaderTimeout(limits.header_read_timeout)),
            Expiry::Request => Err(ConnectionError::RequestTimeout(limits.request_read_timeout)),
        }
    }
}

/// One connection's clock, moved by its IO ([`Watched`]), its requests ([`Tracked`])
/// and their bodies ([`Done`]); the loop of [`serve_connection`] waits on it.
struct Tracker {
    phase: Mutex<Phase>,
    changed: Notify,
    header_read_timeout: Duration,
    request_read_timeout: Duration,
    idle_timeout: Duration,
}

impl Tracker {
    fn new(limits: &ConnectionLimits) -> Self {
        Self {
            phase: Mutex::new(Phase::Head {
                started: Instant::now(),
            }),
            changed: Notify::new(),
            // The headers are part of the request: never due after it.
            header_read_timeout: limits.header_read_timeout.min(limits.request_read_timeout),
            request_read_timeout: limits.request_read_timeout,
            idle_timeout: limits.idle_timeout,
        }
    }

    fn set(&self, phase: Phase) {
        *self.phase.lock() = phase;
        // notify_one keeps a permit when the loop is not waiting yet: no change is lost.
        self.changed.notify_one();
    }

    /// Bytes arrived: on an idle connection, a request begins.
    fn on_read(&self) {
        let mut phase = self.phase.lock();
        if let Phase::Idle { .. } = *phase {
            *phase = Phase::Head {
                started: Instant::now(),
            };
            drop(phase);
            self.changed.notify_one();
        }
    }

    /// Bytes left: the end of a response being flushed still counts as activity.
    fn on_write(&self) {
        let mut phase = self.phase.lock();
        if let Phase::Idle { .. } = *phase {
            *phase = Phase::Idle {
                since: Instant::now(),
            };
        }
    }

    /// hyper parsed a request's headers; returns the body's deadline.
    fn request_started(&self) -> Instant {
        let started = match *self.phase.lock() {
            Phase::Head { started } => started,
            // Headers that were already buffered (pipelined) when the last response
            // ended: their request starts now.
            _ => Instant::now(),
        };
        self.set(Phase::Body { started });
        after(started, self.request_read_timeout)
    }

    fn body_done(&self) {
        let mut phase = self.phase.lock();
        if let Phase::Body { .. } = *phase {
            *phase = Phase::Busy;
            drop(phase);
            self.changed.notify_one();
        }
    }

    fn response_done(&self) {
        self.set(Phase::Idle {
            since: Instant::now(),
        });
    }

    fn deadline(&self) -> Option<(Instant, Expiry)> {
        match *self.phase.lock() {
            Phase::Head { started } => {
                Some((after(started, self.header_read_timeout), Expiry::Header))
            }
            Phase::Body { started } => Some((
                after(
                    started,
                    self.request_read_timeout.saturating_add(ANSWER_GRACE),
                ),
                Expiry::Request,
            )),
            Phase::Busy => None,
            Phase::Idle { since } => Some((after(since, self.idle_timeout), Expiry::Idle)),
        }
    }
}

/// `at + duration`, or about a year after `at` when that overflows (a limit of
/// `Duration::MAX` means none).
fn after(at: Instant, duration: Duration) -> Instant {
    at.checked_add(duration)
        .unwrap_or_else(|| at + Duration::from_secs(365 * 24 * 3600))
}

/// Marks the request body done when dropped (or taken at its end).
pub(super) struct Done(Arc<Tracker>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.body_done();
    }
}

/// Marks the response done when dropped: hyper drops the response body once it has
/// taken its last frame (or the service failed).
struct Answered(Arc<Tracker>);

impl Drop for Answered {
    fn drop(&mut self) {
        self.0.response_done();
    }
}

/// The connection's IO, telling the tracker when bytes come and go.
struct Watched<I> {
    io: I,
    tracker: Arc<Tracker>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(poll, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.tracker.on_read();
        }
        poll
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.tracker.on_write();
        }
        poll
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.tracker.on_write();
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The caller's service, with each request's body put under the deadline and the end
/// of each response reported to the tracker.
struct Tracked<S> {
    inner: S,
    tracker: Arc<Tracker>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<Incoming>> for Tracked<S>
where
    S: Service<Request<RequestBody>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send,
    B: Body + Send + 'static,
{
    type Response = Response<AnsweredBody<B>>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let deadline = self.tracker.request_started();
        let answered = Answered(self.tracker.clone());
        let done = Done(self.tracker.clone());
        let timeout = self.tracker.request_read_timeout;
        let request = request.map(|body| RequestBody::tracked(body, deadline, timeout, done));
        let future = self.inner.call(request);
        Box::pin(async move {
            let response = future.await?;
            Ok(response.map(|body| AnsweredBody {
                inner: Box::pin(body),
                _answered: answered,
            }))
        })
    }
}

/// A response body that reports the response done when hyper drops it.
struct AnsweredBody<B> {
    inner: Pin<Box<B>>,
    _answered: Answered,
}

impl<B: Body> Body for AnsweredBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        self.get_mut().inner.as_mut().poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
