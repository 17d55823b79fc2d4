//! A fault-injecting HTTPS proxy between the controllers and kube-apiserver.
//!
//! It terminates TLS (HTTP/2 and HTTP/1.1 by ALPN, like kube-apiserver) with a serving
//! certificate signed by the cluster CA, so the controllers' kubeconfig differs from the
//! admin one only in its `server:`. Every request is forwarded to the API server with the
//! control plane's admin credentials over one pooled (HTTP/2) upstream client. Watches
//! and other streaming bodies are forwarded frame by frame.
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

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, Uri, Version, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use parking_lot::Mutex;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::error::ChaosError;

/// Counters of what the proxy did.
#[derive(Debug, Default)]
struct Stats {
    connections: AtomicU64,
    connections_cut: AtomicU64,
    connections_refused: AtomicU64,
    requests: AtomicU64,
    injected: [AtomicU64; 3],
    upstream_errors: AtomicU64,
}

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

struct Inner {
    upstream: String,
    client: Client<HttpsConnector<HttpConnector>, Incoming>,
    windows: Mutex<Windows>,
    cut: watch::Sender<u64>,
    stats: Stats,
}

impl Inner {
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

/// The running proxy; stopped on drop.
pub struct Proxy {
    inner: Arc<Inner>,
    addr: SocketAddr,
    stop: CancellationToken,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("addr", &self.addr)
            .field("upstream", &self.inner.upstream)
            .finish()
    }
}

impl Proxy {
    /// Listens on 127.0.0.1 (a free port) with the PEM `cert_chain` and `key`, and
    /// forwards to `upstream` with `upstream_config`'s TLS settings and credentials.
    pub async fn start(
        cert_chain: &[u8],
        key: &[u8],
        upstream: &kube::Config,
    ) -> Result<Self, ChaosError> {
        use kube::client::ConfigExt;
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};

        let tls_err = |e: String| ChaosError::Setup(format!("proxy TLS: {e}"));
        let chain = CertificateDer::pem_slice_iter(cert_chain)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| tls_err(e.to_string()))?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| tls_err(e.to_string()))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_err(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| tls_err(e.to_string()))?;
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));

        let client_tls = upstream
            .rustls_client_config()
            .map_err(|e| tls_err(e.to_string()))?;
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(client_tls)
            .https_only()
            .enable_all_versions()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .build(https);

        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| ChaosError::io("binding the proxy", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ChaosError::io("the proxy's address", e))?;
        let upstream = upstream.cluster_url.to_string();
        let inner = Arc::new(Inner {
            upstream: upstream.trim_end_matches('/').to_string(),
            client,
            windows: Mutex::new(Windows::default()),
            cut: watch::channel(0).0,
            stats: Stats::default(),
        });
        let stop = CancellationToken::new();
        tokio::spawn(accept_loop(
            listener,
            acceptor,
            Arc::clone(&inner),
            stop.clone(),
        ));
        Ok(Self { inner, addr, stop })
    }

    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every open client connection now; returns how many were open.
    pub fn cut_all(&self) -> usize {
        let open = self.inner.cut.receiver_count();
        self.inner.cut.send_modify(|generation| *generation += 1);
        open
    }

    /// New connections are closed at once for `d`.
    pub fn refuse_for(&self, d: Duration) {
        self.inner.windows.lock().refuse_until = Some(Instant::now() + d);
    }

    /// Requests hang and response bodies stop for `d`.
    pub fn stall_for(&self, d: Duration) {
        self.inner.windows.lock().stall_until = Some(Instant::now() + d);
    }

    /// Every request and body frame is delayed by `delay` for `d`.
    pub fn slow_for(&self, d: Duration, delay: Duration) {
        self.inner.windows.lock().slow = Some((Instant::now() + d, delay));
    }

    /// For `d`, a `fraction` of requests is answered `code` (429, 500 or 503).
    pub fn errors_for(&self, d: Duration, fraction: f64, code: u16) {
        self.inner.windows.lock().errors = Some((Instant::now() + d, fraction, code));
    }

    /// Ends every fault window now.
    pub fn clear(&self) {
        *self.inner.windows.lock() = Windows::default();
    }

    /// The counters so far.
    pub fn stats(&self) -> ProxyStats {
        let s = &self.inner.stats;
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ProxyStats {
            connections: get(&s.connections),
            connections_cut: get(&s.connections_cut),
            connections_refused: get(&s.connections_refused),
            requests: get(&s.requests),
            injected_429: get(&s.injected[0]),
            injected_500: get(&s.injected[1]),
            injected_503: get(&s.injected[2]),
            upstream_errors: get(&s.upstream_errors),
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
        self.cut_all();
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    inner: Arc<Inner>,
    stop: CancellationToken,
) {
    loop {
        let tcp = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    tracing::warn!(error = %e, "proxy: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let (inner, acceptor) = (Arc::clone(&inner), acceptor.clone());
        tokio::spawn(async move {
            if inner.refusing() {
                inner
                    .stats
                    .connections_refused
                    .fetch_add(1, Ordering::Relaxed);
                return;
            }
            let mut cut = inner.cut.subscribe();
            let _ = tcp.set_nodelay(true);
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            inner.stats.connections.fetch_add(1, Ordering::Relaxed);
            let service_inner = Arc::clone(&inner);
            let service = service_fn(move |req| handle(Arc::clone(&service_inner), req));
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                _ = conn => {}
                _ = cut.changed() => {
                    inner.stats.connections_cut.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

/// Headers that belong to one hop, never forwarded.
const HOP_BY_HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

async fn handle(
    inner: Arc<Inner>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    inner.stats.requests.fetch_add(1, Ordering::Relaxed);
    while let Some(until) = inner.stalled_until() {
        sleep_until(until).await;
    }
    if let Some(delay) = inner.slow_delay() {
        tokio::time::sleep(delay).await;
    }
    if let Some(code) = inner.error_to_inject() {
        let i = match code {
            429 => 0,
            500 => 1,
            _ => 2,
        };
        inner.stats.injected[i].fetch_add(1, Ordering::Relaxed);
        return Ok(status_response(code, "chaos proxy: injected error"));
    }
    let (mut parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_string();
    let Ok(uri) = format!("{}{path}", inner.upstream).parse::<Uri>() else {
        return Ok(status_response(400, "chaos proxy: bad request path"));
    };
    parts.uri = uri;
    // The pooled client picks HTTP/2 by ALPN whatever the client spoke to us.
    parts.version = Version::HTTP_11;
    strip_hop_by_hop(&mut parts.headers);
    match inner.client.request(Request::from_parts(parts, body)).await {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            strip_hop_by_hop(&mut parts.headers);
            Ok(Response::from_parts(
                parts,
                ProxyBody::Upstream {
                    body,
                    inner,
                    sleep: None,
                    delayed: false,
                },
            ))
        }
        Err(e) => {
            inner.stats.upstream_errors.fetch_add(1, Ordering::Relaxed);
            Ok(status_response(502, &format!("chaos proxy: upstream: {e}")))
        }
    }
}

/// A Kubernetes `Status` response with `code`.
fn status_response(code: u16, message: &str) -> Response<ProxyBody> {
    let reason = match code {
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        400 => "BadRequest",
        _ => "BadGateway",
    };
    let body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    let mut response = Response::new(ProxyBody::Full(Full::new(Bytes::from(body.to_string()))));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_GATEWAY);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    if code == 429 || code == 503 {
        headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    }
    response
}

/// A response body: the proxy's own, or the API server's forwarded under the
/// stall and slow windows.
enum ProxyBody {
    Full(Full<Bytes>),
    Upstream {
        body: Incoming,
        inner: Arc<Inner>,
        sleep: Option<Pin<Box<Sleep>>>,
        delayed: bool,
    },
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.get_mut() {
            ProxyBody::Full(full) => Pin::new(full)
                .poll_frame(cx)
                .map_err(|never| match never {}),
            ProxyBody::Upstream {
                body,
                inner,
                sleep,
                delayed,
            } => loop {
                if let Some(s) = sleep {
                    ready!(s.as_mut().poll(cx));
                    *sleep = None;
                }
                if let Some(until) = inner.stalled_until() {
                    *sleep = Some(Box::pin(sleep_until(until)));
                    continue;
                }
                if !*delayed && let Some(delay) = inner.slow_delay() {
                    *delayed = true;
                    *sleep = Some(Box::pin(sleep_until(Instant::now() + delay)));
                    continue;
                }
                let frame = ready!(Pin::new(&mut *body).poll_frame(cx));
                *delayed = false;
                return Poll::Ready(frame);
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Full(full) => full.is_end_stream(),
            ProxyBody::Upstream { body, .. } => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Full(full) => full.size_hint(),
            ProxyBody::Upstream { body, .. } => body.size_hint(),
        }
    }
}
