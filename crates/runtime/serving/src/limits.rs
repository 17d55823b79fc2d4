//! What one client may cost a server: deadlines for a request's headers and for the
//! whole request, an idle keep-alive timeout, and a cap on concurrent connections.
//! Shared by the webhook server and the metrics server.
//!
//! # Why
//!
//! Without them, a client that sends a request's headers and a few bytes of a body it
//! announced as megabytes keeps its connection, and the buffer the server fills for
//! it, for as long as it likes; a few hundred such clients hold the server's memory
//! and file descriptors. Go's `net/http` server has a knob for each of these
//! (`ReadHeaderTimeout`, `ReadTimeout`, `IdleTimeout`; `netutil.LimitListener` for the
//! cap); controller-runtime sets only two of them (`pkg/internal/httpserver`:
//! `ReadHeaderTimeout` 32 s, `IdleTimeout` 90 s), so a slow body is not bounded there
//! either.
//!
//! # Why not hyper's own timeouts
//!
//! hyper 1.x has one, `http1::Builder::header_read_timeout`, and no body deadline and
//! no idle timeout. Its header timer also starts again as soon as a keep-alive
//! connection goes idle, so it is the idle timeout too: a short header deadline (good
//! against slow clients) would close idle keep-alive connections just as fast (bad:
//! see below), and a long one would let headers trickle in for minutes. So hyper's is
//! turned off and [`serve_connection`] keeps its own clock, watching the bytes that
//! arrive and the requests hyper hands to the service:
//!
//! ```text
//!            first byte                 headers parsed           body complete      response sent
//!  ──idle──────┬──────── head ─────────────┬──────── body ─────────────┬── handler ──────┬──idle──► ...
//!   idle_timeout│ header_read_timeout      │  request_read_timeout     │  (not bounded   │
//!   → close     │ → close                  │  from the first byte:     │   here)         │
//!               └──────────────────────────┴─ the body is an error ────┘                 │
//!                                             (a 408), then close                        │
//! ```
//!
//! A new connection starts in the head state: its first request is due within
//! [`header_read_timeout`](ConnectionLimits::header_read_timeout) of the connection
//! (after the TLS handshake), as in Go; only between requests does the longer
//! [`idle_timeout`](ConnectionLimits::idle_timeout) apply.
//!
//! # The numbers
//!
//! | limit | default | why |
//! |---|---|---|
//! | [`handshake_timeout`](ConnectionLimits::handshake_timeout) | 10 s | client-go's and Go's `TLSHandshakeTimeout`: no legitimate client takes longer |
//! | [`header_read_timeout`](ConnectionLimits::header_read_timeout) | 10 s | the API server's default webhook `timeoutSeconds`: it writes a request's headers at once, so headers still arriving after that belong to no useful request |
//! | [`request_read_timeout`](ConnectionLimits::request_read_timeout) | 30 s | the largest `timeoutSeconds` a webhook may have: after it, the API server has given up on the call, and holding the body longer helps nobody |
//! | [`idle_timeout`](ConnectionLimits::idle_timeout) | 120 s | longer than the 90 s `IdleConnTimeout` of the API server's and client-go's transport (apimachinery's `utilnet.SetTransportDefaults` takes Go's `DefaultTransport`'s), so the client always closes an idle connection first and never sends a request on one the server is closing |
//! | [`max_connections`](ConnectionLimits::max_connections) | 256 | above the 200 mutating requests an API server serves at once by default (`--max-mutating-requests-inflight`: admission webhooks are called on writes), while bounding what slow clients can pin: at most 256 request bodies |
//!
//! # The cap: stop accepting, not accept-and-close
//!
//! When all [`max_connections`](ConnectionLimits::max_connections) slots are taken,
//! [`accept`] stops calling `accept(2)` until a connection closes; new connections
//! wait in the kernel's listen backlog (golang.org/x/net's `netutil.LimitListener`
//! does the same: its `Accept` takes a slot first). Closing them at once instead would
//! turn a flood of slow clients into immediate failures for the API server's own calls
//! (and with `failurePolicy: Fail`, into refused writes), while waiting costs them at
//! most one deadline: every slot a slow client holds is freed within
//! [`request_read_timeout`](ConnectionLimits::request_read_timeout) (or
//! [`idle_timeout`](ConnectionLimits::idle_timeout) for an idle one).
//!
//! # What is not bounded here
//!
//! The handler's own time (webhook handlers are synchronous; the metrics server's
//! authentication bounds its reviews itself) and a client that reads the response
//! slowly (the kernel's socket buffer and the response size bound what it pins).

use std::error::Error as StdError;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod body;
mod connection;

pub use body::RequestBody;
pub use connection::serve_connection;

/// Default of [`ConnectionLimits::handshake_timeout`].
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`ConnectionLimits::header_read_timeout`].
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of [`ConnectionLimits::request_read_timeout`].
pub const DEFAULT_REQUEST_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`ConnectionLimits::idle_timeout`].
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// Default of [`ConnectionLimits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How long after the request deadline a connection whose handler has not answered
/// (the handler holds the body without reading it) is dropped. A handler that reads
/// the body gets [`BodyError::Timeout`] at the deadline and answers at once; this only
/// catches one that does not.
const ANSWER_GRACE: Duration = Duration::from_secs(2);

/// How often [`accept`] warns that the connection cap is reached, at most.
const FULL_WARNING_INTERVAL: Duration = Duration::from_secs(60);

/// The limits one server puts on its clients. [`Default`] holds the numbers of the
/// [module docs](self) and why; tests shorten them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client may take to complete the TLS handshake (for the caller to
    /// apply: [`serve_connection`] starts after it).
    pub handshake_timeout: Duration,
    /// How long a request's headers may take to arrive, counted from its first byte
    /// (from the start of the connection for its first request).
    pub header_read_timeout: Duration,
    /// How long a whole request, headers and body, may take to arrive, counted like
    /// [`header_read_timeout`](Self::header_read_timeout). A body still arriving then
    /// fails with [`BodyError::Timeout`] (the handler answers 408) and the connection
    /// is closed.
    pub request_read_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How many connections are served at once; more wait to be accepted.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            request_read_timeout: DEFAULT_REQUEST_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Why [`serve_connection`] closed a connection other than normally (the client
/// closing, the idle timeout, a graceful shutdown). Only the client is to blame:
/// callers log these at debug.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// A request's headers did not arrive within the header deadline.
    #[error("the request headers did not arrive within {0:?}")]
    HeaderTimeout(Duration),
    /// A request's body did not arrive within the request deadline and the handler did
    /// not answer (it normally answers 408 and the connection ends normally).
    #[error("the request was not read within {0:?}")]
    RequestTimeout(Duration),
    /// hyper's error: a malformed request, the client going away mid-request, ...
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

/// Why reading a [`RequestBody`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body had not fully arrived by the request deadline.
    #[error("the request was not read within {timeout:?}")]
    Timeout {
        /// [`ConnectionLimits::request_read_timeout`].
        timeout: Duration,
    },
    /// The underlying body failed (the client closed the connection, a bad chunk).
    #[error("reading the request body: {0}")]
    Read(#[source] Box<dyn StdError + Send + Sync>),
}

impl BodyError {
    /// Whether this is the request deadline (answer 408 Request Timeout).
    pub fn is_timeout(&self) -> bool {
        matches!(self, BodyError::Timeout { .. })
    }
}

/// Whether `error`, or an error it wraps (through `source()` or as a boxed error, as
/// `http_body_util::Limited` returns them), is [`BodyError::Timeout`].
pub fn is_body_timeout(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error
            .downcast_ref::<BodyError>()
            .is_some_and(BodyError::is_timeout)
        {
            return true;
        }
        next = error.source();
    }
    false
}

/// The cap on concurrent connections: one [`ConnectionSlot`] per connection, held
/// until it closes. Clones share the slots.
#[derive(Debug, Clone)]
pub struct ConnectionSlots {
    semaphore: Arc<Semaphore>,
    max: usize,
    /// When [`accept`] last warned that the cap is reached.
    warned: Arc<Mutex<Option<Instant>>>,
}

/// One connection's place under the cap; dropping it frees the place.
#[derive(Debug)]
pub struct ConnectionSlot {
    _permit: OwnedSemaphorePermit,
}

impl ConnectionSlots {
    /// `max` slots (at least one: a server with none would never answer).
    pub fn new(max: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            semaphore: Arc::new(Semaphore::new(max)),
            max,
            warned: Arc::new(Mutex::new(None)),
        }
    }

    /// A slot, waiting for one to be freed if all are taken.
    pub async fn acquire(&self) -> ConnectionSlot {
        let permit = self
            .semaphore
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        ConnectionSlot { _permit: permit }
    }

    /// A slot if one is free now.
    pub fn try_acquire(&self) -> Option<ConnectionSlot> {
        let permit = self.semaphore.clone().try_acquire_owned().ok()?;
        Some(ConnectionSlot { _permit: permit })
    }

    /// How many slots are free now.
    pub fn available(&self) -> usize {
        self.semaphore.available_permits()
    }

    /// How many slots there are.
    pub fn max(&self) -> usize {
        self.max
    }
}

/// The next connection on `listener`, once a slot is free (see the [module
/// docs](self) on the cap); `None` when `cancel` is cancelled first. A failing
/// `accept` (out of file descriptors, a connection reset before it was accepted) is
/// logged and retried after a short pause, not in a hot loop.
pub async fn accept(
    listener: &TcpListener,
    slots: &ConnectionSlots,
    cancel: &CancellationToken,
) -> Option<(TcpStream, SocketAddr, ConnectionSlot)> {
    let slot = match slots.try_acquire() {
        Some(slot) => slot,
        None => {
            warn_full(slots);
            tokio::select! {
                _ = cancel.cancelled() => return None,
                slot = slots.acquire() => slot,
            }
        }
    };
    loop {
        let accepted = tokio::select! {
            _ = cancel.cancelled() => return None,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => return Some((stream, peer, slot)),
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::select! {
                    _ = cancel.cancelled() => return None,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        }
    }
}

fn warn_full(slots: &ConnectionSlots) {
    let now = Instant::now();
    let mut warned = slots.warned.lock();
    if warned.is_none_or(|at| now.duration_since(at) >= FULL_WARNING_INTERVAL) {
        *warned = Some(now);
        tracing::warn!(
            max_connections = slots.max,
            "connection limit reached: new connections wait until one closes"
        );
    }
}

#[cfg(test)]
mod tests;
