//! Fault injection between a `kube::Client` and the real API server: watch latency,
//! and a log of every response, for tests that provoke (and count) what a lagging
//! informer cache makes a controller do.
//!
//! Two [tower layers](tower::Layer), added to a client with kube's
//! [`ClientBuilder::with_layer`](kube::client::ClientBuilder::with_layer):
//!
//! * [`WatchLatency`] delays the *response body* of the watch requests on one resource
//!   (`GET .../deployments?watch=true`, including the streaming lists an informer
//!   starts with, `sendInitialEvents=true`) by a constant latency: every frame of the
//!   body reaches the client `latency` after it arrived from the server, in order.
//!   Latencies do not add up: a frame that arrives while an earlier one is still held
//!   back is not held behind it for another `latency` (a task reads the body as it
//!   comes and stamps each frame; the body the client reads hands out each frame at
//!   its stamp plus the latency). The request itself and the response headers are not
//!   delayed, nor is anything else: lists, gets and writes answer at once. This is an
//!   informer that lags behind the API server by `latency`, as under a loaded API
//!   server or a watch cache that is behind etcd, while the controller's own writes
//!   (and their answers) are as fast as ever: the window in which a sync acts on a
//!   stale cache.
//! * [`ResponseLog`] records the method, path and status of every response, so a test
//!   can count, say, the `409 AlreadyExists` answers to `POST .../deployments` or the
//!   `409 Conflict` answers to `PUT .../foos/<name>/status`, and the content types of
//!   the request body and the answer (which wire a write was sent and answered in).
//!
//! # Why a client-side layer and not a proxy
//!
//! The obvious "latency-injecting proxy" sits on the TCP path between the client and
//! the API server. It cannot delay the watch of one resource and nothing else: over
//! HTTP/2 (what the controller binaries speak, as client-go does) every watch, list
//! and write of a client is a stream of *one* TLS connection, so a TCP proxy sees one
//! encrypted byte stream and can only delay all of it, writes included, which closes
//! the very window the test wants open. Terminating TLS in a proxy to demultiplex
//! HTTP/2 would be a second HTTP implementation in the test path. A tower layer sees
//! each request and response as `http` values, over HTTP/1.1 and HTTP/2 alike, after
//! kube's TLS and authentication and before its watch decoding: the informer code
//! under test is unchanged and reads a slower body.
//!
//! ```no_run
//! # async fn example(config: kube::Config) -> Result<(), kube::Error> {
//! use std::time::Duration;
//! use testenv::inject::{ResponseLog, WatchLatency};
//!
//! let log = ResponseLog::new();
//! let client = kube::client::ClientBuilder::try_from(config)?
//!     .with_layer(&WatchLatency::new("deployments", Duration::from_secs(1)))
//!     .with_layer(&log)
//!     .build();
//! // ... run a controller with `client`, then:
//! let duplicate_creates = log.count(|r| {
//!     r.method == http::Method::POST && r.resource() == Some("deployments") && r.status == 409
//! });
//! # let _ = (client, duplicate_creates);
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};

/// A Kubernetes API path taken apart: `/api/v1/namespaces/ns/pods/p/log`,
/// `/apis/apps/v1/namespaces/ns/deployments`, `/apis/g/v/foos/f/status`.
///
/// ```
/// use testenv::inject::ApiPath;
///
/// let p = ApiPath::parse("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/web/status").unwrap();
/// assert_eq!((p.namespace, p.resource, p.name, p.subresource), (Some("ns"), "foos", Some("web"), Some("status")));
/// let p = ApiPath::parse("/api/v1/namespaces/ns").unwrap();
/// assert_eq!((p.namespace, p.resource, p.name), (None, "namespaces", Some("ns")));
/// assert!(ApiPath::parse("/readyz").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiPath<'a> {
    /// The namespace of a namespaced request.
    pub namespace: Option<&'a str>,
    /// The resource (plural, lower case: `deployments`, `foos`).
    pub resource: &'a str,
    /// The object's name, for a request on one object.
    pub name: Option<&'a str>,
    /// The subresource (`status`, `scale`, ...).
    pub subresource: Option<&'a str>,
    /// The deprecated `/watch/` path form (`/apis/apps/v1/watch/namespaces/...`).
    pub legacy_watch: bool,
}

impl<'a> ApiPath<'a> {
    /// Parses `path` (without the query); `None` for a path that is not a resource
    /// under `/api/v1` or `/apis/<group>/<version>` (`/readyz`, discovery).
    pub fn parse(path: &'a str) -> Option<Self> {
        let mut segments = path.trim_matches('/').split('/');
        match segments.next()? {
            "api" => {
                segments.next()?;
            }
            "apis" => {
                segments.next()?;
                segments.next()?;
            }
            _ => return None,
        }
        let mut rest: Vec<&str> = segments.filter(|s| !s.is_empty()).collect();
        let legacy_watch = rest.first() == Some(&"watch");
        if legacy_watch {
            rest.remove(0);
        }
        let (namespace, rest) = match rest.as_slice() {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(*ns), rest),
            rest => (None, rest),
        };
        Some(Self {
            namespace,
            resource: rest.first()?,
            name: rest.get(1).copied(),
            subresource: rest.get(2).copied(),
            legacy_watch,
        })
    }
}

/// Whether `request` is a watch on `resource`: `?watch=true` (or `1`), which covers the
/// streaming lists informers start with, or the deprecated `/watch/` path.
fn is_watch_on<B>(request: &Request<B>, resource: &str) -> bool {
    let uri = request.uri();
    let Some(path) = ApiPath::parse(uri.path()) else {
        return false;
    };
    if path.resource != resource || path.subresource.is_some() {
        return false;
    }
    path.legacy_watch
        || uri.query().is_some_and(|query| {
            query
                .split('&')
                .any(|pair| matches!(pair, "watch=true" | "watch=1"))
        })
}

/// A [`tower::Layer`] that delays the response bodies of the watches on one resource
/// by a constant latency. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct WatchLatency {
    resource: Arc<str>,
    latency: Duration,
}

impl WatchLatency {
    /// Delays every frame of the watches on `resource` (plural, lower case, as in the
    /// URL: `deployments`, `foos`) by `latency`.
    pub fn new(resource: &str, latency: Duration) -> Self {
        Self {
            resource: resource.into(),
            latency,
        }
    }

    /// The resource whose watches are delayed.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The delay of each frame.
    pub fn latency(&self) -> Duration {
        self.latency
    }
}

impl<S> tower::Layer<S> for WatchLatency {
    type Service = WatchLatencyService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WatchLatencyService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`WatchLatency`] wraps around a client's stack.
#[derive(Debug, Clone)]
pub struct WatchLatencyService<S> {
    inner: S,
    layer: WatchLatency,
}

impl<S, ReqBody, ResBody> tower::Service<Request<ReqBody>> for WatchLatencyService<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: Body + Send + 'static,
    ResBody::Data: Send,
    ResBody::Error: Send,
{
    type Response = Response<InjectedBody<ResBody>>;
    type Error = S::Error;
    type Future = WatchLatencyFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let delay = is_watch_on(&request, &self.layer.resource).then_some(self.layer.latency);
        WatchLatencyFuture {
            inner: Box::pin(self.inner.call(request)),
            delay,
        }
    }
}

/// The response future of [`WatchLatencyService`].
pub struct WatchLatencyFuture<F> {
    inner: Pin<Box<F>>,
    delay: Option<Duration>,
}

impl<F> fmt::Debug for WatchLatencyFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchLatencyFuture")
            .field("delay", &self.delay)
            .finish_non_exhaustive()
    }
}

impl<F, B, E> Future for WatchLatencyFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Send,
{
    type Output = Result<Response<InjectedBody<B>>, E>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = ready!(self.inner.as_mut().poll(cx))?;
        let delay = self.delay;
        Poll::Ready(Ok(response.map(|body| match delay {
            Some(latency) => InjectedBody::Delayed(DelayedBody::new(body, latency)),
            None => InjectedBody::Direct(Box::pin(body)),
        })))
    }
}

/// A response body behind [`WatchLatency`]: the server's body as it is, or delayed.
pub enum InjectedBody<B: Body> {
    /// Not a delayed watch: the body as it is.
    Direct(Pin<Box<B>>),
    /// A delayed watch.
    Delayed(DelayedBody<B::Data, B::Error>),
}

impl<B: Body> fmt::Debug for InjectedBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InjectedBody::Direct(_) => f.write_str("InjectedBody::Direct"),
            InjectedBody::Delayed(d) => f.debug_tuple("InjectedBody::Delayed").field(d).finish(),
        }
    }
}

impl<B: Body> Body for InjectedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        // No field is structurally pinned: `Direct` is boxed, `DelayedBody` is Unpin.
        match self.get_mut() {
            InjectedBody::Direct(body) => body.as_mut().poll_frame(cx),
            InjectedBody::Delayed(body) => Pin::new(body).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            InjectedBody::Direct(body) => body.is_end_stream(),
            InjectedBody::Delayed(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            InjectedBody::Direct(body) => body.size_hint(),
            InjectedBody::Delayed(_) => SizeHint::default(),
        }
    }
}

type Stamped<D, E> = (Instant, Result<Frame<D>, E>);

/// A body whose frames are each handed out a constant latency after they arrived
/// (see the [module docs](self)). A task reads the wrapped body as fast as it
/// delivers; it stops when the wrapped body ends or fails, or when this is dropped
/// (which drops the wrapped body, closing a watch).
pub struct DelayedBody<D, E> {
    latency: Duration,
    frames: mpsc::UnboundedReceiver<Stamped<D, E>>,
    /// The next frame and when it is due.
    next: Option<Result<Frame<D>, E>>,
    sleep: Pin<Box<Sleep>>,
    reader: JoinHandle<()>,
}

// Nothing in a DelayedBody is structurally pinned (the timer is boxed).
impl<D, E> Unpin for DelayedBody<D, E> {}

impl<D, E> fmt::Debug for DelayedBody<D, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayedBody")
            .field("latency", &self.latency)
            .field("holding_a_frame", &self.next.is_some())
            .finish_non_exhaustive()
    }
}

impl<D: Send + 'static, E: Send + 'static> DelayedBody<D, E> {
    /// Starts reading `body` (on the current Tokio runtime) and returns the delayed
    /// view of it.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub fn new<B>(body: B, latency: Duration) -> Self
    where
        B: Body<Data = D, Error = E> + Send + 'static,
    {
        let (tx, frames) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut body = std::pin::pin!(body);
            loop {
                let frame = tokio::select! {
                    frame = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)) => frame,
                    // The delayed body was dropped: drop the server's body too.
                    () = tx.closed() => return,
                };
                let Some(frame) = frame else { return };
                let failed = frame.is_err();
                if tx.send((Instant::now(), frame)).is_err() || failed {
                    return;
                }
            }
        });
        Self {
            latency,
            frames,
            next: None,
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            reader,
        }
    }
}

impl<D, E> Drop for DelayedBody<D, E> {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl<D: bytes::Buf, E> Body for DelayedBody<D, E> {
    type Data = D;
    type Error = E;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<D>, E>>> {
        let this = self.get_mut();
        if this.next.is_none() {
            match ready!(this.frames.poll_recv(cx)) {
                Some((arrived, frame)) => {
                    this.next = Some(frame);
                    this.sleep.as_mut().reset(arrived + this.latency);
                }
                None => return Poll::Ready(None),
            }
        }
        ready!(this.sleep.as_mut().poll(cx));
        Poll::Ready(this.next.take())
    }
}

/// One response seen by [`ResponseLog`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedResponse {
    /// The request's method.
    pub method: Method,
    /// The request's path, without the query.
    pub path: String,
    /// The response's status.
    pub status: StatusCode,
    /// The request body's `Content-Type` (a write's wire), if it had one.
    pub request_content_type: Option<String>,
    /// The request's `Accept` (what the client asked to be answered in), if any.
    pub accept: Option<String>,
    /// The response's `Content-Type` (the wire the server answered in), if any.
    pub content_type: Option<String>,
}

impl LoggedResponse {
    /// The path taken apart; `None` for non-resource paths.
    pub fn api_path(&self) -> Option<ApiPath<'_>> {
        ApiPath::parse(&self.path)
    }

    /// The resource (`deployments`, `foos`), for resource paths.
    pub fn resource(&self) -> Option<&str> {
        self.api_path().map(|p| p.resource)
    }

    /// The subresource (`status`), for requests on one.
    pub fn subresource(&self) -> Option<&str> {
        self.api_path().and_then(|p| p.subresource)
    }

    /// Whether the request was a write: `POST`, `PUT`, `PATCH` or `DELETE`.
    pub fn is_write(&self) -> bool {
        matches!(
            self.method,
            Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        )
    }
}

impl fmt::Display for LoggedResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} -> {}",
            self.method,
            self.path,
            self.status.as_u16()
        )
    }
}

/// A [`tower::Layer`] that records every response (method, path, status) a client
/// receives; clones share the log. Requests that fail without a response (a broken
/// connection) are not recorded. See the [module docs](self).
#[derive(Debug, Clone, Default)]
pub struct ResponseLog {
    entries: Arc<Mutex<Vec<LoggedResponse>>>,
}

impl ResponseLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every response so far, in the order they arrived.
    pub fn entries(&self) -> Vec<LoggedResponse> {
        self.lock().clone()
    }

    /// How many responses so far satisfy `matches`.
    pub fn count(&self, matches: impl Fn(&LoggedResponse) -> bool) -> usize {
        self.lock().iter().filter(|r| matches(r)).count()
    }

    /// Forgets every response so far.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<LoggedResponse>> {
        // A panic while holding the lock leaves a valid Vec: keep using it.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<S> tower::Layer<S> for ResponseLog {
    type Service = ResponseLogService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ResponseLogService {
            inner,
            log: self.clone(),
        }
    }
}

/// The service [`ResponseLog`] wraps around a client's stack.
#[derive(Debug, Clone)]
pub struct ResponseLogService<S> {
    inner: S,
    log: ResponseLog,
}

impl<S, ReqBody, ResBody> tower::Service<Request<ReqBody>> for ResponseLogService<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseLogFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        let content_type = content_type(request.headers());
        let accept = header(request.headers(), http::header::ACCEPT);
        ResponseLogFuture {
            inner: Box::pin(self.inner.call(request)),
            request: Some((method, path, content_type, accept)),
            log: self.log.clone(),
        }
    }
}

/// The response future of [`ResponseLogService`].
pub struct ResponseLogFuture<F> {
    inner: Pin<Box<F>>,
    request: Option<(Method, String, Option<String>, Option<String>)>,
    log: ResponseLog,
}

fn content_type(headers: &http::HeaderMap) -> Option<String> {
    header(headers, http::header::CONTENT_TYPE)
}

fn header(headers: &http::HeaderMap, name: http::header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

impl<F> fmt::Debug for ResponseLogFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseLogFuture")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

impl<F, B, E> Future for ResponseLogFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let result = ready!(self.inner.as_mut().poll(cx));
        if let (Ok(response), Some((method, path, request_content_type, accept))) =
            (&result, self.request.take())
        {
            self.log.lock().push(LoggedResponse {
                method,
                path,
                status: response.status(),
                request_content_type,
                accept,
                content_type: content_type(response.headers()),
            });
        }
        Poll::Ready(result)
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use bytes::Bytes;
    use http_body_util::BodyExt;
    use tower::{Layer, Service, ServiceExt};

    use super::*;

    /// A response body the test feeds by hand, one frame per `send`.
    struct ChannelBody(mpsc::UnboundedReceiver<Bytes>);

    impl Body for ChannelBody {
        type Data = Bytes;
        type Error = Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
            self.0
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
        }
    }

    /// A local "API server": answers every request with a body the test feeds through
    /// the returned sender's receiver (one per request, taken in order), status 200
    /// for GET, 409 for POST, 201 otherwise.
    fn server(
        bodies: Vec<ChannelBody>,
    ) -> impl tower::Service<
        Request<()>,
        Response = Response<ChannelBody>,
        Error = Infallible,
        Future: Send,
    > + Clone {
        let bodies = Arc::new(Mutex::new(bodies.into_iter()));
        tower::service_fn(move |request: Request<()>| {
            let body = bodies.lock().unwrap().next().expect("a body per request");
            let status = match *request.method() {
                Method::GET => StatusCode::OK,
                Method::POST => StatusCode::CONFLICT,
                _ => StatusCode::CREATED,
            };
            async move { Ok::<_, Infallible>(Response::builder().status(status).body(body).unwrap()) }
        })
    }

    fn channel() -> (mpsc::UnboundedSender<Bytes>, ChannelBody) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, ChannelBody(rx))
    }

    fn get(uri: &str) -> Request<()> {
        Request::get(uri).body(()).unwrap()
    }

    /// Reads the next data frame and returns it with the (virtual) time it came.
    async fn next_frame<B: Body<Data = Bytes> + Unpin>(
        body: &mut B,
        start: Instant,
    ) -> Option<(String, Duration)>
    where
        B::Error: fmt::Debug,
    {
        let frame = body.frame().await?.expect("no error");
        let data = frame.into_data().expect("a data frame");
        Some((String::from_utf8(data.to_vec()).unwrap(), start.elapsed()))
    }

    const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/ns/deployments";

    #[test]
    fn watches_on_the_resource_are_recognised() {
        let watch = |uri: &str| is_watch_on(&get(uri), "deployments");
        assert!(watch(&format!(
            "{DEPLOYMENTS}?watch=true&resourceVersion=5"
        )));
        assert!(watch(&format!(
            "{DEPLOYMENTS}?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"
        )));
        assert!(watch("/apis/apps/v1/deployments?watch=1"));
        assert!(watch("/apis/apps/v1/watch/namespaces/ns/deployments"));
        // Not watches, or not on deployments.
        assert!(!watch(DEPLOYMENTS));
        assert!(!watch(&format!("{DEPLOYMENTS}?limit=500")));
        assert!(!watch(&format!("{DEPLOYMENTS}?watch=false")));
        assert!(!watch(&format!("{DEPLOYMENTS}/web")));
        assert!(!watch("/apis/apps/v1/namespaces/ns/replicasets?watch=true"));
        assert!(!watch(
            "/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos?watch=true"
        ));
        assert!(!watch(
            "/apis/apps/v1/namespaces/ns/deployments/web/scale?watch=true"
        ));
        assert!(!watch("/readyz?watch=true"));
    }

    #[test]
    fn api_paths_are_taken_apart() {
        let p = ApiPath::parse("/apis/apps/v1/namespaces/ns/deployments").unwrap();
        assert_eq!(
            (p.namespace, p.resource, p.name),
            (Some("ns"), "deployments", None)
        );
        let p = ApiPath::parse("/api/v1/namespaces/ns/pods/p/log").unwrap();
        assert_eq!(
            (p.namespace, p.resource, p.name, p.subresource),
            (Some("ns"), "pods", Some("p"), Some("log"))
        );
        let p = ApiPath::parse("/api/v1/namespaces").unwrap();
        assert_eq!(
            (p.namespace, p.resource, p.name),
            (None, "namespaces", None)
        );
        let p = ApiPath::parse("/apis/apps/v1/watch/deployments").unwrap();
        assert_eq!((p.resource, p.legacy_watch), ("deployments", true));
        assert_eq!(ApiPath::parse("/apis/apps/v1"), None);
        assert_eq!(ApiPath::parse("/version"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn every_frame_of_a_watch_comes_a_constant_latency_after_it_arrived() {
        let latency = Duration::from_secs(1);
        let (tx, body) = channel();
        let mut svc = WatchLatency::new("deployments", latency).layer(server(vec![body]));
        let start = Instant::now();
        let response = svc
            .ready()
            .await
            .unwrap()
            .call(get(&format!("{DEPLOYMENTS}?watch=true")))
            .await
            .unwrap();
        // The headers are not delayed.
        assert_eq!(start.elapsed(), Duration::ZERO);
        let mut body = response.into_body();
        assert!(matches!(body, InjectedBody::Delayed(_)));

        // Frames arrive at 0, 300 ms, 310 ms and 2.5 s.
        let feeder = tokio::spawn(async move {
            tx.send(Bytes::from("a")).unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            tx.send(Bytes::from("b")).unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            tx.send(Bytes::from("c")).unwrap();
            tokio::time::sleep(Duration::from_millis(2190)).await;
            tx.send(Bytes::from("d")).unwrap();
        });
        let ms = Duration::from_millis;
        // Each one second after it arrived, in order; no frame waits for another's
        // delay on top of its own.
        assert_eq!(
            next_frame(&mut body, start).await,
            Some(("a".into(), ms(1000)))
        );
        assert_eq!(
            next_frame(&mut body, start).await,
            Some(("b".into(), ms(1300)))
        );
        assert_eq!(
            next_frame(&mut body, start).await,
            Some(("c".into(), ms(1310)))
        );
        assert_eq!(
            next_frame(&mut body, start).await,
            Some(("d".into(), ms(3500)))
        );
        feeder.await.unwrap();
        // The server's body ended (the sender is gone): so does the delayed one.
        assert_eq!(next_frame(&mut body, start).await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_does_not_add_the_latency_again() {
        let latency = Duration::from_millis(500);
        let (tx, body) = channel();
        let mut svc = WatchLatency::new("deployments", latency).layer(server(vec![body]));
        let start = Instant::now();
        let mut body = svc
            .call(get(&format!("{DEPLOYMENTS}?watch=true")))
            .await
            .unwrap()
            .into_body();
        for chunk in ["1", "2", "3"] {
            tx.send(Bytes::from(chunk)).unwrap();
        }
        // The reader comes back only after 2 s: every frame is overdue, none waits.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for chunk in ["1", "2", "3"] {
            assert_eq!(
                next_frame(&mut body, start).await,
                Some((chunk.into(), Duration::from_secs(2)))
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn lists_writes_and_other_resources_are_not_delayed() {
        let (list_tx, list) = channel();
        let (other_tx, other) = channel();
        let (post_tx, post) = channel();
        let mut svc = WatchLatency::new("deployments", Duration::from_secs(5))
            .layer(server(vec![list, other, post]));
        let start = Instant::now();
        for (request, tx) in [
            (get(DEPLOYMENTS), list_tx),
            (get("/api/v1/namespaces/ns/configmaps?watch=true"), other_tx),
            (Request::post(DEPLOYMENTS).body(()).unwrap(), post_tx),
        ] {
            let mut body = svc.call(request).await.unwrap().into_body();
            assert!(matches!(body, InjectedBody::Direct(_)));
            tx.send(Bytes::from("x")).unwrap();
            assert_eq!(
                next_frame(&mut body, start).await,
                Some(("x".into(), Duration::ZERO))
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_a_delayed_body_drops_the_servers_body() {
        let (tx, body) = channel();
        let mut svc =
            WatchLatency::new("deployments", Duration::from_secs(1)).layer(server(vec![body]));
        let body = svc
            .call(get(&format!("{DEPLOYMENTS}?watch=true")))
            .await
            .unwrap()
            .into_body();
        tx.send(Bytes::from("held")).unwrap();
        tokio::task::yield_now().await;
        drop(body);
        // The reader task ends and drops the server's body: the watch is closed.
        tokio::time::timeout(Duration::from_secs(1), tx.closed())
            .await
            .expect("the server's body is dropped");
    }

    #[tokio::test]
    async fn the_log_records_method_path_and_status_of_every_response() {
        let bodies = (0..3).map(|_| channel().1).collect();
        let log = ResponseLog::new();
        let mut svc = log.layer(server(bodies));
        svc.call(
            Request::post(format!("{DEPLOYMENTS}?fieldManager=x"))
                .body(())
                .unwrap(),
        )
        .await
        .unwrap();
        svc.call(
            Request::put("/apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/web/status")
                .body(())
                .unwrap(),
        )
        .await
        .unwrap();
        svc.call(get(&format!("{DEPLOYMENTS}?watch=true")))
            .await
            .unwrap();

        let entries = log.entries();
        assert_eq!(
            entries.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                format!("POST {DEPLOYMENTS} -> 409"),
                "PUT /apis/samplecontroller.k8s.io/v1alpha1/namespaces/ns/foos/web/status -> 201"
                    .to_string(),
                format!("GET {DEPLOYMENTS} -> 200"),
            ]
        );
        assert_eq!(
            log.count(|r| r.method == Method::POST
                && r.resource() == Some("deployments")
                && r.status == StatusCode::CONFLICT),
            1
        );
        assert_eq!(
            log.count(|r| r.resource() == Some("foos") && r.subresource() == Some("status")),
            1
        );
        assert_eq!(log.count(LoggedResponse::is_write), 2);
        // Clones share the log.
        log.clone().clear();
        assert!(log.entries().is_empty());
    }

    /// Both layers on a `kube::Client`, as a test builds it: kube's watch decoding
    /// reads the delayed body event by event.
    #[tokio::test(start_paused = true)]
    async fn a_kube_client_with_both_layers_sees_watch_events_late() {
        use futures::StreamExt;
        use k8s_openapi::api::apps::v1::Deployment;
        use kube::api::{Api, WatchEvent, WatchParams};

        let (tx, body) = channel();
        let log = ResponseLog::new();
        let svc = tower::service_fn({
            let body = Arc::new(Mutex::new(Some(body)));
            move |_request: Request<kube::client::Body>| {
                let body = body.lock().unwrap().take().expect("one request");
                async move { Ok::<_, Infallible>(Response::new(body)) }
            }
        });
        let client = kube::client::ClientBuilder::new(svc, "ns")
            .with_layer(&WatchLatency::new("deployments", Duration::from_secs(1)))
            .with_layer(&log)
            .build();
        let api: Api<Deployment> = Api::namespaced(client, "ns");
        let start = Instant::now();
        let mut events = api
            .watch(&WatchParams::default(), "0")
            .await
            .unwrap()
            .boxed();
        let event = serde_json::json!({
            "type": "ADDED",
            "object": {
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7"},
                "spec": {"selector": {}, "template": {}}
            }
        });
        tx.send(Bytes::from(format!("{event}\n"))).unwrap();
        let Some(Ok(WatchEvent::Added(d))) = events.next().await else {
            panic!("an ADDED event");
        };
        assert_eq!(d.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        assert_eq!(log.count(|r| r.resource() == Some("deployments")), 1);
    }
}
