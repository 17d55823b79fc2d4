//! Client-side throttling: client-go's `rest.Config{QPS, Burst}` token bucket.
//!
//! Every request a controller sends - lists, watches, creates, status updates, Events -
//! first takes a token from one bucket per client: `burst` tokens, refilled at `qps` per
//! second. A controller that wakes up to 10,000 changed objects therefore ramps up to a
//! steady `qps` instead of hammering the API server (which would answer with 429s and
//! slow every other client of the cluster down). client-go's defaults are 5 QPS / 10
//! burst, tuned for 2015-era API servers; controller-runtime raised them to 20 / 30,
//! and so do we ([`DEFAULT_QPS`], [`DEFAULT_BURST`]). Set `--kube-api-qps 0` to disable
//! throttling (the server-side API Priority and Fairness still applies).
//!
//! The bucket is [`governor`]'s GCRA limiter: the same "burst, then a steady rate"
//! shape as client-go's `flowcontrol.NewTokenBucketRateLimiter`.

use std::fmt;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use prometheus_client::metrics::counter::Counter;

/// Default `--kube-api-qps` (controller-runtime's default).
pub const DEFAULT_QPS: f32 = 20.0;
/// Default `--kube-api-burst` (controller-runtime's default).
pub const DEFAULT_BURST: u32 = 30;

/// Counters of what the throttle did, shared by every clone of the layer; exported on
/// `/metrics` by [`register`](Self::register).
#[derive(Debug, Default)]
pub struct ThrottleStats {
    requests: Counter,
    throttled: Counter,
    waited_micros: AtomicU64,
    waited_seconds: Counter<f64, AtomicU64>,
}

impl ThrottleStats {
    /// Requests sent through the throttle.
    pub fn requests(&self) -> u64 {
        self.requests.get()
    }

    /// Requests that had to wait for a token.
    pub fn throttled(&self) -> u64 {
        self.throttled.get()
    }

    /// Total time requests spent waiting for tokens.
    pub fn waited(&self) -> Duration {
        Duration::from_micros(self.waited_micros.load(Ordering::Relaxed))
    }

    /// Exports the counters as `kube_client_requests_total`,
    /// `kube_client_throttled_requests_total` and
    /// `kube_client_rate_limiter_wait_seconds_total` (client-go reports the same facts
    /// as `rest_client_rate_limiter_duration_seconds`).
    pub fn register(&self, registry: &metrics::Registry) {
        registry.register(
            "kube_client_requests",
            "Requests to the Kubernetes API server, counted before client-side throttling.",
            self.requests.clone(),
        );
        registry.register(
            "kube_client_throttled_requests",
            "Requests that waited for a client-side rate limiter token (--kube-api-qps/--kube-api-burst).",
            self.throttled.clone(),
        );
        registry.register(
            "kube_client_rate_limiter_wait_seconds",
            "Seconds requests spent waiting for client-side rate limiter tokens.",
            self.waited_seconds.clone(),
        );
    }

    fn record_wait(&self, waited: Duration) {
        self.throttled.inc();
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        self.waited_micros.fetch_add(micros, Ordering::Relaxed);
        self.waited_seconds.inc_by(waited.as_secs_f64());
    }
}

/// A tower layer that throttles requests to `qps` per second with bursts of `burst`.
#[derive(Clone, Debug)]
pub struct ThrottleLayer {
    limiter: Option<Arc<DefaultDirectRateLimiter>>,
    stats: Arc<ThrottleStats>,
}

impl ThrottleLayer {
    /// A throttle at `qps` requests per second, `burst` at once. `qps <= 0` (or not a
    /// number) disables throttling; `burst` is at least 1.
    pub fn new(qps: f32, burst: u32) -> Self {
        let limiter = (qps.is_finite() && qps > 0.0).then(|| {
            // One token every 1/qps seconds, `burst` of them stored.
            let period = Duration::from_secs_f64(1.0 / f64::from(qps));
            let quota = Quota::with_period(period)
                .expect("period is positive")
                .allow_burst(NonZeroU32::new(burst.max(1)).expect("at least 1"));
            Arc::new(RateLimiter::direct(quota))
        });
        Self {
            limiter,
            stats: Arc::default(),
        }
    }

    /// The counters of this throttle.
    pub fn stats(&self) -> Arc<ThrottleStats> {
        Arc::clone(&self.stats)
    }
}

impl<S> tower::Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;

    fn layer(&self, inner: S) -> Throttle<S> {
        Throttle {
            inner,
            layer: self.clone(),
            wait: None,
            permit: false,
        }
    }
}

/// The service [`ThrottleLayer`] wraps around the HTTP client.
///
/// The token is taken in `poll_ready`, so a request that is over the limit waits
/// before it is sent, and requests leave in the order they became ready (kube's client
/// puts a buffer in front of this service, whose worker drives `poll_ready`).
pub struct Throttle<S> {
    inner: S,
    layer: ThrottleLayer,
    /// Waiting for a token, and since when.
    wait: Option<(BoxFuture<'static, ()>, Instant)>,
    /// A token is held for the next `call`.
    permit: bool,
}

impl<S: fmt::Debug> fmt::Debug for Throttle<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttle")
            .field("inner", &self.inner)
            .field("waiting", &self.wait.is_some())
            .field("permit", &self.permit)
            .finish()
    }
}

impl<S, Req> tower::Service<Req> for Throttle<S>
where
    S: tower::Service<Req>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.permit {
            match &self.layer.limiter {
                None => self.permit = true,
                Some(limiter) => {
                    if self.wait.is_none() {
                        if limiter.check().is_ok() {
                            self.permit = true;
                        } else {
                            let limiter = Arc::clone(limiter);
                            let wait: BoxFuture<'static, ()> =
                                Box::pin(async move { limiter.until_ready().await });
                            self.wait = Some((wait, Instant::now()));
                        }
                    }
                    if let Some((wait, started)) = self.wait.as_mut() {
                        ready!(wait.as_mut().poll(cx));
                        self.layer.stats.record_wait(started.elapsed());
                        self.wait = None;
                        self.permit = true;
                    }
                }
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> S::Future {
        self.permit = false;
        self.layer.stats.requests.inc();
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer, Service, ServiceExt};

    type Echo = tower::util::ServiceFn<fn(u32) -> std::future::Ready<Result<u32, ()>>>;

    async fn send(svc: &mut Throttle<Echo>, n: u32) {
        svc.ready().await.unwrap().call(n).await.unwrap();
    }

    fn echo(n: u32) -> std::future::Ready<Result<u32, ()>> {
        std::future::ready(Ok(n))
    }

    #[tokio::test]
    async fn a_burst_passes_at_once_then_the_rate_holds() {
        let layer = ThrottleLayer::new(50.0, 5);
        let mut svc = layer.layer(tower::service_fn(echo as fn(u32) -> _));
        let started = Instant::now();
        for i in 0..5 {
            send(&mut svc, i).await;
        }
        assert!(
            started.elapsed() < Duration::from_millis(15),
            "the burst is free"
        );
        assert_eq!(layer.stats().throttled(), 0);
        // 10 more at 50 QPS: at least 9 full periods of 20 ms.
        for i in 0..10 {
            send(&mut svc, i).await;
        }
        assert!(
            started.elapsed() >= Duration::from_millis(180),
            "{:?}",
            started.elapsed()
        );
        let stats = layer.stats();
        assert_eq!(stats.requests(), 15);
        assert!(stats.throttled() >= 9, "{}", stats.throttled());
        assert!(stats.waited() >= Duration::from_millis(150));
    }

    #[tokio::test]
    async fn zero_qps_disables_throttling() {
        let layer = ThrottleLayer::new(0.0, 1);
        let mut svc = layer.layer(tower::service_fn(echo as fn(u32) -> _));
        let started = Instant::now();
        for i in 0..1000 {
            send(&mut svc, i).await;
        }
        assert!(started.elapsed() < Duration::from_secs(1));
        assert_eq!(layer.stats().requests(), 1000);
        assert_eq!(layer.stats().throttled(), 0);
    }
}
