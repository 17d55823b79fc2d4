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

/// Default `--kube-api-qps` (controller-runtime's default).
pub const DEFAULT_QPS: f32 = 20.0;
/// Default `--kube-api-burst` (controller-runtime's default).
pub const DEFAULT_BURST: u32 = 30;

/// Counters of what the throttle did, shared by every clone of the layer (and read by
/// the metrics endpoint and tests).
#[derive(Debug, Default)]
pub struct ThrottleStats {
    requests: AtomicU64,
    throttled: AtomicU64,
    waited_micros: AtomicU64,
}

impl ThrottleStats {
    /// Requests that went through the throttle (client-go's `rest_client_requests_total`
    /// before the status code is known).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests that had to wait for a token.
    pub fn throttled(&self) -> u64 {
        self.throttled.load(Ordering::Relaxed)
    }

    /// Total time requests spent waiting for tokens (client-go's
    /// `rest_client_rate_limiter_duration_seconds`, summed).
    pub fn waited(&self) -> Duration {
        Duration::from_micros(self.waited_micros.load(Ordering::Relaxed))
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
                        let stats = &self.layer.stats;
                        stats.throttled.fetch_add(1, Ordering::Relaxed);
                        let waited =
                            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                        stats.waited_micros.fetch_add(waited, Ordering::Relaxed);
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
        self.layer.stats.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer, Service, ServiceExt};

    async fn send(
        svc: &mut Throttle<tower::util::ServiceFn<fn(u32) -> std::future::Ready<Result<u32, ()>>>>,
        n: u32,
    ) {
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
