//! A fault-injecting HTTPS proxy between the controllers and kube-apiserver: the
//! [`apiproxy`] crate's proxy (TLS termination with a certificate of the cluster CA,
//! forwarding with the admin credentials, bodies frame by frame) with the soak's fault
//! windows as its [`Interceptor`].
//!
//! Faults, each for a window (they overlap freely):
//!
//! | method | what the controllers see |
//! |---|---|
//! | [`Proxy::cut_all`] | every open connection closed at once (each watch, each request in flight) |
//! | [`Proxy::refuse_for`] | new connections accepted and closed at once (a partition) |
//! | [`Proxy::stall_for`] | requests hang before being forwarded and response bodies stop flowing |
//! | [`Proxy::slow_for`] | every request and every body frame is delayed |
//! | [`Proxy::errors_for`] | a fraction of requests answered 429 (`Retry-After: 1`), 500 or 503 with a `Status` body |

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use apiproxy::{Exchange, Interceptor, ProxyBody, Upstream, status_response};
use bytes::Bytes;
use http::{Response, request, response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::time::{Instant, Sleep, sleep_until};

use crate::error::ChaosError;

/// A copy of the proxy's counters, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProxyStats {
    /// TLS connections accepted and served.
    pub connections: u64,
    /// Connections closed by [`Proxy::cut_all`].
    pub connections_cut: u64,
    /// Connections closed at once during [`Proxy::refuse_for`].
    pub connections_refused: u64,
    /// Requests received.
    pub requests: u64,
    /// Requests answered 429 by the proxy.
    pub injected_429: u64,
    /// Requests answered 500 by the proxy.
    pub injected_500: u64,
    /// Requests answered 503 by the proxy.
    pub injected_503: u64,
    /// Requests the API server could not be reached for (answered 502).
    pub upstream_errors: u64,
}

/// The fault windows in effect.
#[derive(Debug, Default)]
struct Windows {
    stall_until: Option<Instant>,
    refuse_until: Option<Instant>,
    slow: Option<(Instant, Duration)>,
    errors: Option<(Instant, f64, u16)>,
}

/// The windows, shared by the interceptor and the response bodies it wraps.
#[derive(Debug, Default)]
struct FaultState {
    windows: Mutex<Windows>,
}

impl FaultState {
    fn stalled_until(&self) -> Option<Instant> {
        let until = self.windows.lock().stall_until?;
        (until > Instant::now()).then_some(until)
    }

    fn refusing(&self) -> bool {
        matches!(self.windows.lock().refuse_until, Some(t) if t > Instant::now())
    }

    fn slow_delay(&self) -> Option<Duration> {
        match self.windows.lock().slow {
            Some((until, delay)) if until > Instant::now() => Some(delay),
            _ => None,
        }
    }

    fn error_to_inject(&self) -> Option<u16> {
        match self.windows.lock().errors {
            Some((until, fraction, code))
                if until > Instant::now() && rand::random::<f64>() < fraction =>
            {
                Some(code)
            }
            _ => None,
        }
    }
}

/// The soak's [`Interceptor`]: refusals, stalls, delays and injected errors.
#[derive(Debug, Default)]
struct Faults {
    state: Arc<FaultState>,
    /// Requests answered 429, 500 and 503.
    injected: [AtomicU64; 3],
}

impl Interceptor for Faults {
    fn accept(&self) -> bool {
        !self.state.refusing()
    }

    async fn on_request(&self, _: &mut request::Parts) -> Option<Response<ProxyBody>> {
        while let Some(until) = self.state.stalled_until() {
            sleep_until(until).await;
        }
        if let Some(delay) = self.state.slow_delay() {
            tokio::time::sleep(delay).await;
        }
        let code = self.state.error_to_inject()?;
        let i = match code {
            429 => 0,
            500 => 1,
            _ => 2,
        };
        self.injected[i].fetch_add(1, Ordering::Relaxed);
        Some(status_response(code, "chaos proxy: injected error"))
    }

    fn on_response(&self, _: &Exchange, _: &mut response::Parts, body: ProxyBody) -> ProxyBody {
        FaultBody {
            body,
            state: Arc::clone(&self.state),
            sleep: None,
            delayed: false,
        }
        .boxed_unsync()
    }
}

/// The running proxy; stopped on drop.
#[derive(Debug)]
pub struct Proxy {
    proxy: apiproxy::Proxy<Faults>,
}

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) with the PEM `cert_chain` and `key`, and
    /// forwards to `upstream` with `upstream_config`'s TLS settings and credentials.
    pub async fn start(
        cert_chain: &[u8],
        key: &[u8],
        upstream: &kube::Config,
    ) -> Result<Self, ChaosError> {
        let setup = |e: apiproxy::Error| ChaosError::Setup(e.to_string());
        let upstream = Upstream::from_kube_config(upstream).map_err(setup)?;
        let proxy = apiproxy::Proxy::start(cert_chain, key, upstream, Faults::default())
            .await
            .map_err(setup)?;
        Ok(Self { proxy })
    }

    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.proxy.addr()
    }

    /// Closes every open connection now; returns how many were open.
    pub fn cut_all(&self) -> usize {
        self.proxy.cut_all()
    }

    fn windows(&self) -> parking_lot::MutexGuard<'_, Windows> {
        self.proxy.interceptor().state.windows.lock()
    }

    /// New connections are closed at once for `d`.
    pub fn refuse_for(&self, d: Duration) {
        self.windows().refuse_until = Some(Instant::now() + d);
    }

    /// Requests hang and response bodies stop for `d`.
    pub fn stall_for(&self, d: Duration) {
        self.windows().stall_until = Some(Instant::now() + d);
    }

    /// Every request and body frame is delayed by `delay` for `d`.
    pub fn slow_for(&self, d: Duration, delay: Duration) {
        self.windows().slow = Some((Instant::now() + d, delay));
    }

    /// For `d`, a `fraction` of requests is answered `code` (429, 500 or 503).
    pub fn errors_for(&self, d: Duration, fraction: f64, code: u16) {
        self.windows().errors = Some((Instant::now() + d, fraction, code));
    }

    /// Ends every fault window now.
    pub fn clear(&self) {
        *self.windows() = Windows::default();
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        let s = self.proxy.stats();
        let injected = &self.proxy.interceptor().injected;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ProxyStats {
            connections: s.connections,
            connections_cut: s.connections_cut,
            connections_refused: s.connections_refused,
            requests: s.requests,
            injected_429: get(&injected[0]),
            injected_500: get(&injected[1]),
            injected_503: get(&injected[2]),
            upstream_errors: s.upstream_errors,
        }
    }
}

/// The API server's response body under the stall and slow windows.
struct FaultBody {
    body: ProxyBody,
    state: Arc<FaultState>,
    sleep: Option<Pin<Box<Sleep>>>,
    delayed: bool,
}

impl Body for FaultBody {
    type Data = Bytes;
    type Error = apiproxy::body::BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        loop {
            if let Some(s) = &mut this.sleep {
                ready!(s.as_mut().poll(cx));
                this.sleep = None;
            }
            if let Some(until) = this.state.stalled_until() {
                this.sleep = Some(Box::pin(sleep_until(until)));
                continue;
            }
            if !this.delayed
                && let Some(delay) = this.state.slow_delay()
            {
                this.delayed = true;
                this.sleep = Some(Box::pin(sleep_until(Instant::now() + delay)));
                continue;
            }
            let frame = ready!(Pin::new(&mut this.body).poll_frame(cx));
            this.delayed = false;
            return Poll::Ready(frame);
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
